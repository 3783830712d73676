import { beforeAll, afterAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openContext, type Context } from "../../src/core/context.js";
import { createMemory, searchMemories } from "../../src/core/memories.js";
import { paramsFor, score } from "../../src/core/scorer.js";

/** Real model (use-lite, bundled), real store: does search find meaning, not words? */
describe("semantic search with the real model", () => {
  const related: [memory: string, query: string][] = [
    ["I adopted a kitten last week", "new pet cat"],
    ["My flight to Tokyo departs at dawn", "airplane journey into Japan"],
    ["The doctor prescribed antibiotics for my infection", "medicine from a physician"],
    ["We are renovating the kitchen this spring", "home remodeling project"],
  ];
  const unrelated = ["The quarterly budget report is due on Friday", "Remember to rotate the car tyres", "Python lists are zero-indexed"];
  let dir: string;
  let ctx: Context;
  const ids = new Map<string, string>();

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "mm-quality-"));
    ctx = await openContext({ storeDir: dir });
    for (const text of [...related.map((r) => r[0]), ...unrelated]) {
      ids.set(text, (await createMemory(ctx, { content: text, userId: "alice" })).id);
    }
  });
  afterAll(async () => {
    await ctx.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each(related.flatMap(([m, q]) => (["semantic", "hybrid"] as const).map((mode) => [m, q, mode] as const)))("finds %j for %j although they share no word, above every unrelated memory (%s)", async (memory, query, mode) => {
    const words = (s: string) => new Set(s.toLowerCase().match(/[a-z]+/g));
    const shared = [...words(query)].filter((w) => words(memory).has(w));
    expect(shared).toEqual([]);
    const { results } = await searchMemories(ctx, { query, userId: "alice", threshold: 0, mode });
    expect(results[0].id).toBe(ids.get(memory));
    // Semantic: the score is the cosine, above 0.5 for every pair here. Hybrid: the fitted score of
    // that cosine with no word in common (core/scorer.ts), whatever the other memories are.
    const [cosine] = (await searchMemories(ctx, { query, userId: "alice", threshold: 0, mode: "semantic", limit: 1 })).results.map((r) => r.score);
    expect(cosine).toBeGreaterThan(0.5);
    if (mode === "hybrid") expect(results[0].score).toBeCloseTo(score({ cosine, keyword: 0, turn: 0 }, paramsFor("use-lite:universal-sentence-encoder-lite")), 9);
    for (const text of unrelated) {
      const hit = results.find((h) => h.id === ids.get(text))!;
      expect(hit.score).toBeLessThan(0.5);
      expect(hit.score).toBeLessThan(results[0].score);
    }
  });

  it.each(["semantic", "hybrid"] as const)("keeps unrelated memories below the default threshold of 0.5 (%s)", async (mode) => {
    const { results } = await searchMemories(ctx, { query: "new pet cat", userId: "alice", mode });
    expect(results.map((h) => h.id)).toEqual([ids.get("I adopted a kitten last week")]);
  });

  it("prefilters by user: another user's exact match cannot crowd out the requested user's memory", async () => {
    const other = await mkdtemp(join(tmpdir(), "mm-quality-"));
    const c = await openContext({ storeDir: other });
    try {
      const mine = await createMemory(c, { content: "I adopted a kitten last week", userId: "alice" });
      for (let i = 0; i < 30; i++) await createMemory(c, { content: i % 2 ? "new pet cat" : "a new pet cat", userId: `bob${i}` });
      for (const mode of ["semantic", "keyword", "hybrid"] as const) {
        const { results } = await searchMemories(c, { query: mode === "keyword" ? "adopted kitten" : "new pet cat", userId: "alice", limit: 1, threshold: 0, mode });
        expect(results.map((h) => h.id), mode).toEqual([mine.id]);
      }
      const all = await searchMemories(c, { query: "new pet cat", limit: 5, threshold: 0 });
      expect(all.results.every((h) => h.userId !== "alice")).toBe(true);
    } finally {
      await c.close();
      await rm(other, { recursive: true, force: true });
    }
  });
});
