import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, ENDPOINTS, MmApiError } from "../../src/client/index.js";
import { MmError } from "../../src/errors.js";
import { rejection } from "../helpers/errors.js";
import { startTestServer, type TestAccount, type TestServer } from "../helpers/http-server.js";
import { createTestEmbedder, withEmbed } from "../helpers/test-embedder.js";

/**
 * The typed client against a real `mm serve` on a real port: every endpoint of the served OpenAPI
 * document, the error class, retries (429 after the wait the server names, 503 and network errors
 * only where a request may be repeated), the per-request timeout and an AbortSignal.
 */

/** A fetch that records `METHOD /path/template` of every request it sends. */
function recordingFetch(seen: string[]) {
  return (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    const path = new URL(String(input)).pathname.replace(/\/(mem|ent|rel)_[0-9A-Z]{24}/g, "/{id}");
    seen.push(`${init?.method ?? "GET"} ${path}`);
    return fetch(input, init);
  };
}

const catchError = (p: Promise<unknown>) => rejection(p, MmApiError);

describe("every endpoint", () => {
  let server: TestServer;
  let alice: TestAccount;
  beforeAll(async () => {
    server = await startTestServer();
    alice = await server.account("alice");
  });
  afterAll(() => server.close());

  it("reaches every operation of the served OpenAPI document, with typed answers", async () => {
    const seen: string[] = [];
    const mm = createClient({ baseUrl: server.url, apiKey: alice.key, fetch: recordingFetch(seen) });

    const memory = await mm.memories.create({ content: "Ada prefers green tea", userId: "ada", tags: ["prefs"] });
    expect(memory).toMatchObject({ content: "Ada prefers green tea", userId: "ada", tags: ["prefs"] });
    expect((await mm.memories.get(memory.id)).id).toBe(memory.id);
    expect((await mm.memories.update(memory.id, { tags: ["drinks"] })).tags).toEqual(["drinks"]);
    const hits = await mm.memories.search({ query: "green tea", userId: "ada", threshold: 0 });
    expect(hits.results.map((r) => r.id)).toContain(memory.id);
    expect((await mm.memories.list({ userId: "ada" })).pagination.total).toBe(1);

    const ada = await mm.entities.create({ name: "Ada Lovelace", type: "PERSON" });
    const babbage = await mm.entities.create({ name: "Charles Babbage", type: "PERSON" });
    expect((await mm.entities.get(ada.id)).name).toBe("Ada Lovelace");
    expect((await mm.entities.update(ada.id, { description: "mathematician" })).description).toBe("mathematician");
    expect((await mm.entities.list({ search: "ada" })).items.map((e) => e.id)).toEqual([ada.id]);
    await mm.memories.update(memory.id, { entityIds: [ada.id] });
    expect((await mm.entities.memories(ada.id)).items.map((m) => m.id)).toEqual([memory.id]);

    const knows = await mm.relations.create({ sourceId: ada.id, targetId: babbage.id, type: "KNOWS" });
    expect((await mm.relations.get(knows.id)).source.name).toBe("Ada Lovelace");
    expect((await mm.relations.update(knows.id, { type: "WORKED_WITH" })).type).toBe("WORKED_WITH");
    expect((await mm.relations.list({ sourceId: ada.id })).items).toHaveLength(1);
    expect((await mm.entities.neighbors(ada.id)).nodes.map((e) => e.id)).toContain(babbage.id);
    expect((await mm.graph.path({ from: ada.id, to: babbage.id })).edges.map((r) => r.id)).toEqual([knows.id]);
    expect((await mm.graph.export()).entities).toHaveLength(2);

    // Replaced facts and their history (beyond the spec), and merging entities.
    const bike = await mm.memories.create({ content: "Ada's bicycle is red", userId: "ada", dedupe: false });
    expect((await mm.memories.supersede(memory.id, { by: bike.id })).supersededBy).toBe(bike.id);
    expect((await mm.memories.restore(memory.id)).supersededBy).toBeUndefined();
    const history = await mm.memories.history(memory.id);
    expect(history.events.map((e) => e.type)).toEqual(["superseded", "restored"]);
    const twin = await mm.entities.create({ name: "A. Lovelace", type: "PERSON" });
    expect((await mm.entities.merge(ada.id, { other: twin.id })).merged.id).toBe(twin.id);
    await mm.memories.delete(bike.id);

    expect(await mm.relations.delete(knows.id)).toEqual({ success: true, id: knows.id });
    expect(await mm.entities.delete(babbage.id)).toMatchObject({ success: true, id: babbage.id, deletedRelations: 0 });
    expect(await mm.memories.delete(memory.id)).toEqual({ success: true, id: memory.id });

    const document = (await mm.openapi()) as { paths: Record<string, Record<string, { operationId: string }>> };
    const served = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
    expect(served.length).toBeGreaterThan(0);
    expect(new Set(seen.filter((s) => !s.endsWith("/openapi.json")))).toEqual(new Set(served));
    // And the table the client is built from names each one by its operationId.
    const byId = Object.values(document.paths).flatMap((methods) => Object.values(methods).map((o) => o.operationId));
    expect(Object.keys(ENDPOINTS).sort()).toEqual(byId.sort());
  });

  it("iterates a whole list, page after page", async () => {
    const seen: string[] = [];
    const mm = createClient({ baseUrl: server.url, apiKey: alice.key, fetch: recordingFetch(seen) });
    const made = [];
    for (let i = 0; i < 7; i++) made.push((await mm.memories.create({ content: `note ${i}`, userId: "pages" })).id);
    const ent = await mm.entities.create({ name: "Pager", type: "CONCEPT" });
    for (const id of made) await mm.memories.update(id, { entityIds: [ent.id] });
    seen.length = 0;
    const all: string[] = [];
    for await (const m of mm.memories.listAll({ userId: "pages", limit: 3 })) all.push(m.id);
    expect(all.sort()).toEqual([...made].sort());
    expect(seen).toHaveLength(3);
    const linked: string[] = [];
    for await (const m of mm.entities.memoriesAll(ent.id, { limit: 2 })) linked.push(m.id);
    expect(linked.sort()).toEqual([...made].sort());
    const entities: string[] = [];
    for await (const e of mm.entities.listAll()) entities.push(e.name);
    expect(entities).toContain("Pager");
    const other = await mm.entities.create({ name: "Reader", type: "PERSON" });
    await mm.relations.create({ sourceId: ent.id, targetId: other.id, type: "RELATED_TO" });
    await mm.relations.create({ sourceId: other.id, targetId: ent.id, type: "KNOWS" });
    const relations: string[] = [];
    for await (const r of mm.relations.listAll({ limit: 1 })) relations.push(r.id);
    expect(relations).toHaveLength(2);
    expect(relations.sort()).toEqual((await mm.relations.list()).items.map((r) => r.id).sort());
  });

  it("throws the spec's code, status, message and extra fields as MmApiError", async () => {
    const mm = createClient({ baseUrl: server.url, apiKey: alice.key });
    const missing = await catchError(mm.memories.get("mem_00000000000000000000000000"));
    expect(missing).toMatchObject({ code: "MEMORY_NOT_FOUND", status: 404, name: "MmApiError" });
    expect(missing.message).toMatch(/mem_0+/);

    const invalid = await catchError(mm.memories.create({ content: "", userId: "ada" }));
    expect(invalid.status).toBe(400);
    expect(invalid.code).toMatch(/VALIDATION_ERROR|INVALID_USER_ID|CONTENT/);
    expect(invalid.extra.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: "content" })]));

    const stranger = createClient({ baseUrl: server.url, apiKey: "mm_" + "x".repeat(40), retries: 0 });
    expect(await catchError(stranger.memories.list())).toMatchObject({ code: "UNAUTHORIZED", status: 401 });
  });
});

describe("retries", () => {
  it("waits out a 429 for the time the server names, then succeeds (reads and creates alike)", async () => {
    const server = await startTestServer({ rateLimits: { read: 1, write: 1, search: 1 } });
    try {
      const alice = await server.account("alice");
      const slept: number[] = [];
      const seen: string[] = [];
      const mm = createClient({
        baseUrl: server.url,
        apiKey: alice.key,
        fetch: recordingFetch(seen),
        // The server's rate window runs on the test clock: waiting is moving it.
        sleep: async (ms) => {
          slept.push(ms);
          server.clock.advance(ms);
        },
      });
      await mm.memories.list();
      const before = await fetch(`${server.url}/v1/memories`, { headers: { Authorization: `Bearer ${alice.key}` } });
      expect(before.status).toBe(429);
      const retryAfter = Number((await before.json()).error.retryAfter);
      expect(retryAfter).toBeGreaterThan(0);

      expect((await mm.memories.list()).items).toEqual([]);
      expect(seen.filter((s) => s === "GET /v1/memories")).toHaveLength(3);
      expect(slept).toHaveLength(1);
      expect(slept[0]).toBeGreaterThanOrEqual(retryAfter * 1000 - server.clock.peek().getTime() % 1000);

      await mm.memories.create({ content: "first", userId: "ada" });
      const created = await mm.memories.create({ content: "second", userId: "ada" });
      expect(created.content).toBe("second");
      expect(slept).toHaveLength(2);
      expect(seen.filter((s) => s === "POST /v1/memories")).toHaveLength(3);
      expect((await mm.memories.list({ userId: "ada" })).pagination.total).toBe(2);
    } finally {
      await server.close();
    }
  });

  it("takes the wait from Retry-After when the body has no retryAfter, and gives up past maxRetryAfterMs", async () => {
    const server = await startTestServer({ rateLimits: { read: 1 } });
    try {
      const alice = await server.account("alice");
      const slept: number[] = [];
      // The server's real answer, with retryAfter taken out of its body: only the header is left.
      const headerOnly = async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
        const res = await fetch(input, init);
        if (res.status !== 429) return res;
        const body = await res.json();
        delete body.error.retryAfter;
        return new Response(JSON.stringify(body), { status: 429, headers: res.headers });
      };
      const sleep = async (ms: number) => {
        slept.push(ms);
        server.clock.advance(ms);
      };
      const mm = createClient({ baseUrl: server.url, apiKey: alice.key, fetch: headerOnly, sleep });
      await mm.memories.list();
      await mm.memories.list();
      expect(slept).toHaveLength(1);
      expect(slept[0]).toBeGreaterThanOrEqual(1000);

      const impatient = createClient({ baseUrl: server.url, apiKey: alice.key, sleep, maxRetryAfterMs: 0 });
      const err = await catchError(impatient.memories.list());
      expect(err).toMatchObject({ code: "RATE_LIMIT_EXCEEDED", status: 429 });
      expect(err.extra.retryAfter).toBeGreaterThan(0);
      expect(slept).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it("retries a 503 for a search, never for a create", async () => {
    let failures = 1;
    const base = createTestEmbedder();
    const flaky = withEmbed(async (texts) => {
      if (failures-- > 0) throw new MmError("EMBEDDER_UNAVAILABLE", "the model is away");
      return base.embed(texts);
    });
    const server = await startTestServer({ embedder: flaky });
    try {
      const alice = await server.account("alice");
      const seen: string[] = [];
      const mm = createClient({ baseUrl: server.url, apiKey: alice.key, fetch: recordingFetch(seen), sleep: async () => undefined });
      const refused = await catchError(mm.memories.create({ content: "tea", userId: "ada" }));
      expect(refused).toMatchObject({ code: "EMBEDDER_UNAVAILABLE", status: 503 });
      expect(seen).toEqual(["POST /v1/memories"]);

      await mm.memories.create({ content: "green tea", userId: "ada" });
      failures = 2;
      const hits = await mm.memories.search({ query: "green tea", userId: "ada", threshold: 0 });
      expect(hits.results).toHaveLength(1);
      expect(seen.filter((s) => s === "POST /v1/memories/search")).toHaveLength(3);
    } finally {
      await server.close();
    }
  });

  it("retries a network error for a read, with growing jittered waits, never for a create", async () => {
    const server = await startTestServer();
    const url = server.url;
    await server.close();
    const seen: string[] = [];
    const slept: number[] = [];
    const mm = createClient({ baseUrl: url, apiKey: "mm_x", fetch: recordingFetch(seen), retries: 3, baseDelayMs: 100, sleep: async (ms) => void slept.push(ms) });
    expect(await catchError(mm.memories.list())).toMatchObject({ code: "NETWORK_ERROR", status: 0 });
    expect(seen).toHaveLength(4);
    expect(slept).toHaveLength(3);
    slept.forEach((ms, i) => expect(ms).toBeLessThanOrEqual(100 * 2 ** i));
    seen.length = 0;
    await catchError(mm.memories.create({ content: "x", userId: "y" }));
    expect(seen).toHaveLength(1);
  });
});

describe("timeouts and cancellation", () => {
  let server: TestServer;
  let alice: TestAccount;
  beforeAll(async () => {
    const base = createTestEmbedder();
    const slow = withEmbed(async (texts) => {
      await new Promise((r) => setTimeout(r, 600));
      return base.embed(texts);
    });
    server = await startTestServer({ embedder: slow });
    alice = await server.account("alice");
  });
  afterAll(() => server.close());

  it("gives up on a request after timeoutMs with TIMEOUT, once for a create, again for a search", async () => {
    const seen: string[] = [];
    const mm = createClient({ baseUrl: server.url, apiKey: alice.key, fetch: recordingFetch(seen), timeoutMs: 150, retries: 1, sleep: async () => undefined });
    const started = Date.now();
    const err = await catchError(mm.memories.create({ content: "slow", userId: "ada" }));
    expect(err).toMatchObject({ code: "TIMEOUT", status: 0, extra: { timeoutMs: 150 } });
    expect(Date.now() - started).toBeLessThan(550);
    expect(seen).toEqual(["POST /v1/memories"]);
    seen.length = 0;
    expect(await catchError(mm.memories.search({ query: "slow" }))).toMatchObject({ code: "TIMEOUT" });
    expect(seen).toHaveLength(2);
    // A longer timeout for one call only.
    expect((await mm.memories.search({ query: "slow", userId: "ada" }, { timeoutMs: 5000 })).results).toBeDefined();
  });

  it("stops at once when the caller's AbortSignal fires, with the signal's reason and no retry", async () => {
    const seen: string[] = [];
    const mm = createClient({ baseUrl: server.url, apiKey: alice.key, fetch: recordingFetch(seen) });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("user left")), 50);
    await expect(mm.memories.search({ query: "tea" }, { signal: controller.signal })).rejects.toThrow("user left");
    expect(seen).toHaveLength(1);
    await expect(mm.memories.list({}, { signal: controller.signal })).rejects.toThrow("user left");
    expect(seen).toHaveLength(1);
  });
});

describe("read-your-writes", () => {
  it("sends the newest X-MM-Consistency token its writes were answered with on every later request; not with readYourWrites: false", async () => {
    const server = await startTestServer();
    try {
      const alice = await server.account("alice");
      const sent: (string | null)[] = [];
      const spy = (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
        sent.push(new Headers(init?.headers).get("X-MM-Consistency"));
        return fetch(input, init);
      };
      const mm = createClient({ baseUrl: server.url, apiKey: alice.key, fetch: spy });
      await mm.memories.list({});
      const first = await mm.memories.create({ content: "Ada prefers green tea", userId: "ada" });
      await mm.memories.get(first.id);
      await mm.memories.create({ content: "Ada moved to Porto", userId: "ada" });
      await mm.memories.search({ query: "tea", userId: "ada" });
      expect(sent[0]).toBeNull();
      expect(sent[1]).toBeNull();
      expect(sent[2]).toMatch(/^memories:\d+,graph:\d+$/);
      const version = (token: string | null) => Number(/memories:(\d+)/.exec(token!)![1]);
      expect(version(sent[4])).toBeGreaterThan(version(sent[2]));

      const off: (string | null)[] = [];
      const plain = createClient({ baseUrl: server.url, apiKey: alice.key, readYourWrites: false, fetch: (input, init) => (off.push(new Headers(init?.headers).get("X-MM-Consistency")), fetch(input, init)) });
      await plain.memories.create({ content: "Ada reads Saramago", userId: "ada" });
      await plain.memories.list({});
      expect(off).toEqual([null, null]);
    } finally {
      await server.close();
    }
  });
});

describe("the AI SDK tools in a project", () => {
  let server: TestServer;
  let account: TestAccount;
  beforeAll(async () => {
    server = await startTestServer();
    account = await server.account("tools");
  });
  afterAll(() => server.close());

  it("remember stores in the project, and recall sees it and the global memories, never another project's", async () => {
    const { memoryTools } = await import("../../src/integrations/ai-sdk.js");
    const mm = createClient({ baseUrl: server.url, apiKey: account.key });
    const global = await mm.memories.create({ content: "Dana writes TypeScript", userId: "dana" });
    const other = await mm.memories.create({ content: "the blog builds with Hugo", userId: "dana", project: "blog" });
    const tools = memoryTools({ client: mm, userId: "dana", project: "shop", threshold: 0 });
    const call = { toolCallId: "1", messages: [] };
    const saved = await tools.remember.execute!({ content: "the shop builds with Vite" }, call);
    expect((await mm.memories.get(saved.id)).project).toBe("shop");
    const found = await tools.recall.execute!({ query: "how does it build?", limit: 20 }, call);
    const ids = found.map((h: { id: string }) => h.id);
    expect(ids).toEqual(expect.arrayContaining([saved.id, global.id]));
    expect(ids).not.toContain(other.id);
  });
});
