import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { openContext, type Context } from "../../src/core/context.js";
import { addMemoriesFromLines, searchMemories } from "../../src/core/memories.js";
import { newId } from "../../src/core/ids.js";
import type { MemoryRow } from "../../src/storage/store.js";

/**
 * Real model, real store. A score must be a property of the query, the memory and the memories
 * the search could return: thousands of other users' and other accounts' memories, full of the
 * query's own words, must not move it, nor change what a user's search returns.
 */
interface Fixture {
  memories: { id: string; content: string }[];
  queries: { query: string; kind: string; relevant: string[] }[];
}
const fixture = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "calibration", "small-store-a.json"), "utf8")) as Fixture;
const MODES = ["hybrid", "keyword", "semantic"] as const;

describe("search scores do not depend on anyone else's data", () => {
  let dir: string;
  let ctx: Context;
  const queries = fixture.queries.map((q) => q.query);

  async function snapshot(filter: { userId?: string }, accountCtx = ctx) {
    const out: Record<string, { id: string; score: number }[]> = {};
    for (const mode of MODES) {
      for (const query of queries) {
        const { results } = await searchMemories(accountCtx, { query, ...filter, mode, threshold: 0, limit: 100 });
        out[`${mode} ${query}`] = results.map((r) => ({ id: r.id, score: r.score }));
      }
    }
    return out;
  }

  /**
   * Rows for someone else: the fixture's own sentences and queries, so every query word is there,
   * thousands of times over. Vectors are real embeddings of a few of them, reused: they can't change
   * a filtered user's cosines anyway, and embedding thousands of texts would take minutes.
   */
  async function flood(accountId: string, userIds: string[], count: number) {
    const texts = [...fixture.memories.map((m) => m.content), ...queries];
    const vectors = await (await ctx.embedder()).embed(texts.slice(0, 8));
    const now = new Date();
    const rows: MemoryRow[] = Array.from({ length: count }, (_, i) => ({
      id: newId("mem", now.getTime() + i),
      accountId,
      content: `${texts[i % texts.length]} ${texts[(i * 7) % texts.length]}`,
      userId: userIds[i % userIds.length],
      agentId: null,
      tags: [],
      metadata: null,
      entityIds: [],
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      seq: 0,
      vector: vectors[i % vectors.length],
    }));
    for (let i = 0; i < rows.length; i += 1000) await ctx.store.write((w) => w.insertMemories(rows.slice(i, i + 1000)));
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "mm-invariance-"));
    ctx = await openContext({ storeDir: dir });
    await addMemoriesFromLines(ctx, fixture.memories.map((m) => JSON.stringify({ content: m.content, userId: "alice" })));
  });
  afterAll(async () => {
    await ctx.close();
    await rm(dir, { recursive: true, force: true });
  });

  function expectSame(after: Record<string, { id: string; score: number }[]>, before: typeof after) {
    for (const key of Object.keys(before)) {
      expect(after[key].map((r) => r.id), key).toEqual(before[key].map((r) => r.id));
      after[key].forEach((r, i) => expect(Math.abs(r.score - before[key][i].score), `${key}: ${r.id}`).toBeLessThan(1e-9));
    }
  }

  it("results and scores stay the same with 1,500 memories of another account and 1,500 of other users beside them", async () => {
    const userBefore = await snapshot({ userId: "alice" });
    const accountBefore = await snapshot({});
    expect(userBefore["keyword dentist"].length).toBeGreaterThan(0);

    // Another account, with its own "alice": nothing it holds reaches this account's scores.
    await flood("acct_other", ["alice", "erin"], 1500);
    expectSame(await snapshot({ userId: "alice" }), userBefore);
    expectSame(await snapshot({}), accountBefore);

    // Other users of the same account: a search filtered to alice sees only alice's memories.
    await flood("acct_default", ["bob", "carol", "dave"], 1500);
    expect(await ctx.store.countMemories()).toBe(3020);
    expectSame(await snapshot({ userId: "alice" }), userBefore);
  });
});
