import { describe, expect, it } from "vitest";
import { openContext } from "../../src/core/context.js";
import { addMemoriesFromLines, createMemory, deleteMemory, searchMemories, updateMemory } from "../../src/core/memories.js";
import { maintainIfDue } from "../../src/storage/maintenance.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

async function setup() {
  return openContext({ storeDir: await tempDir(), embedder: createTestEmbedder() });
}

const ids = (r: { results: { id: string }[] }) => r.results.map((h) => h.id);

describe("search modes", () => {
  it("keyword mode finds stemmed forms through the full-text index, prefiltered by user", async () => {
    const ctx = await setup();
    const painted = await createMemory(ctx, { content: "Melanie painted a sunrise over the lake", userId: "mel" });
    await createMemory(ctx, { content: "Caroline went to a support group", userId: "mel" });
    const other = await createMemory(ctx, { content: "Someone else is painting sunrises daily", userId: "bob" });
    const r = await searchMemories(ctx, { query: "paintings of sunrises", userId: "mel", mode: "keyword", threshold: 0 });
    expect(ids(r)).toEqual([painted.id]);
    const all = await searchMemories(ctx, { query: "painting", mode: "keyword", threshold: 0 });
    expect(new Set(ids(all))).toEqual(new Set([painted.id, other.id]));
    for (const h of all.results) expect(h.score).toBeGreaterThanOrEqual(0), expect(h.score).toBeLessThanOrEqual(1);
    expect(all.results[0].score).toBeGreaterThanOrEqual(all.results[1].score);
    await ctx.close();
  });

  it("keeps the text index current through updates and deletes", async () => {
    const ctx = await setup();
    const m = await createMemory(ctx, { content: "walrus facts", userId: "u" });
    expect(ids(await searchMemories(ctx, { query: "walrus", mode: "keyword", threshold: 0 }))).toEqual([m.id]);
    await updateMemory(ctx, m.id, { content: "penguin facts" });
    expect(ids(await searchMemories(ctx, { query: "walrus", mode: "keyword", threshold: 0 }))).toEqual([]);
    expect(ids(await searchMemories(ctx, { query: "penguins", mode: "keyword", threshold: 0 }))).toEqual([m.id]);
    await deleteMemory(ctx, m.id);
    expect(ids(await searchMemories(ctx, { query: "penguin", mode: "keyword", threshold: 0 }))).toEqual([]);
    await ctx.close();
  });

  it("hybrid returns memories found by either index; semantic by the vector index only", async () => {
    const ctx = await setup();
    const a = await createMemory(ctx, { content: "zebra crossing near school", userId: "u" });
    const b = await createMemory(ctx, { content: "quokka island holiday", userId: "u" });
    const hybrid = await searchMemories(ctx, { query: "zebra crossing", mode: "hybrid", threshold: 0 });
    expect(ids(hybrid)[0]).toBe(a.id);
    expect(new Set(ids(hybrid))).toEqual(new Set([a.id, b.id]));
    const semantic = await searchMemories(ctx, { query: "zebra crossing", mode: "semantic", threshold: 0, limit: 1 });
    expect(ids(semantic)).toEqual([a.id]);
    await ctx.close();
  });

  it("rejects an unknown mode", async () => {
    const ctx = await setup();
    const err = await searchMemories(ctx, { query: "x", mode: "fuzzy" }).catch((e) => e);
    expect(err.code).toBe("VALIDATION_ERROR");
    expect(err.extra.details[0].field).toBe("mode");
    await ctx.close();
  });

  it("maintenance folds a large batch into the text index, so keyword search never scans thousands of unindexed rows", async () => {
    const ctx = await setup();
    const lines = Array.from({ length: 2600 }, (_, i) => JSON.stringify({ content: `note ${i} about topic${i % 50}`, userId: "u" }));
    const r = await addMemoriesFromLines(ctx, lines, { batchSize: 1000 });
    expect(r.added).toBe(2600);
    await maintainIfDue(ctx.store); // what the CLI runs after a batch (and, for long ones, during it)
    const stats = await ctx.store.stats();
    expect(stats.memories.indices).toBeGreaterThanOrEqual(1);
    expect(stats.memories.unindexedTextRows).toBeLessThanOrEqual(2000);
    expect((await searchMemories(ctx, { query: "topic7", mode: "keyword", threshold: 0, limit: 100 })).results).toHaveLength(52);
    await ctx.close();
  });
});
