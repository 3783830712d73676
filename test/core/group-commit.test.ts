import { describe, expect, it, vi } from "vitest";
import { openContext } from "../../src/core/context.js";
import { createEntity } from "../../src/core/entities.js";
import { groupCommitStats } from "../../src/core/group-commit.js";
import { createMemory, getMemory, listMemories } from "../../src/core/memories.js";
import { Store } from "../../src/storage/store.js";
import { client, startTestServer } from "../helpers/http-server.js";
import { createTestEmbedder, withEmbed } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

describe("group commit", () => {
  it("gathers concurrent creates into few embedding calls and commits, and each resolves to its own stored memory", async () => {
    const embedder = createTestEmbedder();
    const ctx = await openContext({ storeDir: await tempDir(), embedder });
    const made = await Promise.all(Array.from({ length: 40 }, (_, i) => createMemory(ctx, { content: `note ${i}`, userId: `u${i % 3}` })));
    const stats = groupCommitStats(ctx);
    expect(stats.creates).toBe(40);
    expect(stats.groups).toBeLessThan(10);
    expect(embedder.calls).toBe(stats.groups);
    expect(stats.commits).toBeLessThanOrEqual(stats.groups);
    made.forEach((m, i) => expect(m.content).toBe(`note ${i}`));
    for (const m of made) expect((await getMemory(ctx, m.id)).content).toBe(m.content);
    // Each user's memories are numbered in the order their creates arrived.
    const { items } = await listMemories(ctx, { userId: "u0", limit: 100 });
    expect(items).toHaveLength(14);
    await ctx.close();
  });

  it("commits together the groups embedded while a commit runs: one commit for them all, each create resolved to its own memory, numbered in arrival order", async () => {
    const embedder = createTestEmbedder();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let hold = true;
    const ctx = await openContext({
      storeDir: await tempDir(),
      embedder,
      // The first commit waits here until the later creates have each been embedded on their own.
      hooks: async (point) => {
        if (point !== "billed-commit:before" || !hold) return;
        hold = false;
        await released;
      },
    });
    const writes = vi.spyOn(ctx.store, "write");
    const until = async (done: () => boolean) => {
      for (const start = Date.now(); !done(); await new Promise((r) => setTimeout(r, 2))) {
        if (Date.now() - start > 5000) throw new Error("still waiting after 5 s");
      }
    };
    const made = [createMemory(ctx, { content: "note 0", userId: "u" })];
    await until(() => writes.mock.calls.length === 1);
    for (let i = 1; i <= 4; i++) {
      made.push(createMemory(ctx, { content: `note ${i}`, userId: "u" }));
      await until(() => groupCommitStats(ctx).groups === i + 1);
    }
    release();
    const memories = await Promise.all(made);
    memories.forEach((m, i) => expect(m.content).toBe(`note ${i}`));
    expect(writes).toHaveBeenCalledTimes(2);
    expect(groupCommitStats(ctx)).toEqual({ groups: 5, commits: 2, creates: 5 });
    const stored = await ctx.store.memoriesByIds({ accountId: ctx.accountId }, memories.map((m) => m.id));
    const seqOf = new Map(stored.map((r) => [r.id, r.seq]));
    expect(memories.map((m) => seqOf.get(m.id))).toEqual([1, 2, 3, 4, 5]);
    await ctx.close();
  });

  it("fails only the create whose link is missing; its neighbours in the group are stored", async () => {
    const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder() });
    const { entity } = await createEntity(ctx, { name: "Ada", type: "PERSON" });
    const results = await Promise.allSettled([
      createMemory(ctx, { content: "linked", userId: "u", entityIds: [entity.id] }),
      createMemory(ctx, { content: "broken link", userId: "u", entityIds: ["ent_01M80JM828M4632K32S3QPJX"] }),
      createMemory(ctx, { content: "plain", userId: "u" }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason.code).toBe("ENTITY_NOT_FOUND");
    expect((await listMemories(ctx, {})).pagination.total).toBe(2);
    await ctx.close();
  });

  it("fails a whole group when the model fails, and the next group works again", async () => {
    let fail = true;
    const base = createTestEmbedder();
    const embedder = withEmbed(async (texts) => {
      if (fail) throw new Error("model down");
      return base.embed(texts);
    });
    const ctx = await openContext({ storeDir: await tempDir(), embedder });
    const first = await Promise.allSettled([createMemory(ctx, { content: "a", userId: "u" }), createMemory(ctx, { content: "b", userId: "u" })]);
    expect(first.every((r) => r.status === "rejected")).toBe(true);
    fail = false;
    expect((await createMemory(ctx, { content: "c", userId: "u" })).content).toBe("c");
    expect((await listMemories(ctx, {})).pagination.total).toBe(1);
    await ctx.close();
  });

  it("over HTTP: 50 concurrent creates, one invalid: 49 stored, one 400, every acknowledged id readable at once", async () => {
    const server = await startTestServer();
    try {
      const api = client(server.url, (await server.account("acme")).key);
      const bodies = Array.from({ length: 50 }, (_, i) => (i === 17 ? { content: "", userId: "u" } : { content: `memory ${i}`, userId: "u" }));
      const answers = await Promise.all(bodies.map((body) => api.post("/v1/memories", { body })));
      expect(answers.filter((a) => a.status === 201)).toHaveLength(49);
      expect(answers[17].status).toBe(400);
      expect(answers[17].body.error.code).toBe("VALIDATION_ERROR");
      for (const a of answers.filter((a) => a.status === 201)) {
        const got = await api.get(`/v1/memories/${a.body.id}`);
        expect(got.status).toBe(200);
        expect(got.body.content).toBe(a.body.content);
      }
      expect((await api.get("/v1/memories", { query: { limit: 1 } })).body.pagination.total).toBe(49);
      // Quota counted every request, the refused one included.
      expect((await api.get("/v1/memories", { query: { limit: 1 } })).headers.get("x-quota-used")).toBe(String(50 + 49 + 2));
    } finally {
      await server.close();
    }
  });

  it("over HTTP: concurrent creates past the quota: each is billed or refused on its own, and exactly the billed ones are stored", async () => {
    const server = await startTestServer();
    try {
      const free = await server.account("tight", "free");
      const other = await server.account("roomy");
      await server.ledger.charge(free.id, 1000, "read", 995); // 5 operations left this month
      const tight = client(server.url, free.key);
      const roomy = client(server.url, other.key);
      // Both accounts' creates arrive together, so they share groups (and commits).
      const answers = await Promise.all(
        Array.from({ length: 24 }, (_, i) => (i % 2 ? roomy : tight).post("/v1/memories", { body: { content: `note ${i}`, userId: "u" } })),
      );
      const mine = answers.filter((_, i) => i % 2 === 0);
      expect(mine.filter((a) => a.status === 201)).toHaveLength(5);
      for (const a of mine.filter((a) => a.status !== 201)) expect([a.status, a.body.error.code]).toEqual([403, "QUOTA_EXCEEDED"]);
      expect(answers.filter((_, i) => i % 2 === 1).every((a) => a.status === 201)).toBe(true);
      expect((await server.ledger.usage(free.id, 1000)).used).toBe(1000);
      expect((await server.ledger.usage(other.id, null)).used).toBe(12);
      const store = await Store.open(server.storeDir);
      expect(await store.countMemories({ accountId: free.id })).toBe(5);
      expect(await store.countMemories({ accountId: other.id })).toBe(12);
      store.close();
    } finally {
      await server.close();
    }
  });
});
