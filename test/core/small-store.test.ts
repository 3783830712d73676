import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { openContext, type Context } from "../../src/core/context.js";
import { addMemoriesFromLines, searchMemories } from "../../src/core/memories.js";

/**
 * The default threshold on a small personal store, with the real model: the two hand-labelled
 * 20-memory stores of the calibration set (test/fixtures/calibration, docs/search-quality.md).
 * Store A was fitted on, store B was not. Short exact-word queries must find their memory at 0.5;
 * queries about things the store doesn't hold return nothing in keyword mode, almost nothing in
 * hybrid (below).
 */
interface Fixture {
  memories: { id: string; content: string }[];
  queries: { query: string; kind: "one-word" | "all-words" | "question" | "paraphrase" | "unrelated"; relevant: string[] }[];
}
const load = (name: string) =>
  JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "calibration", `small-store-${name}.json`), "utf8")) as Fixture;

describe.each(["a", "b"])("a 20-memory store at the default threshold (calibration store %s)", (name) => {
  const fixture = load(name);
  let dir: string;
  let ctx: Context;
  const idOf = new Map<string, string>();

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "mm-small-"));
    ctx = await openContext({ storeDir: dir });
    await addMemoriesFromLines(
      ctx,
      fixture.memories.map((m) => JSON.stringify({ content: m.content, userId: "me" })),
      { onResult: (r) => idOf.set(fixture.memories[r.line - 1].id, r.memory!.id) },
    );
  });
  afterAll(async () => {
    await ctx.close();
    await rm(dir, { recursive: true, force: true });
  });

  const exact = fixture.queries.filter((q) => q.kind === "one-word" || q.kind === "all-words");
  it.each(exact.flatMap((q) => (["hybrid", "keyword"] as const).map((mode) => [q.query, mode, q.relevant] as const)))(
    "finds the memory holding every word of %j first (%s)",
    async (query, mode, relevant) => {
      const { results } = await searchMemories(ctx, { query, userId: "me", mode, threshold: 0 });
      expect(results[0]?.id, JSON.stringify(results)).toBe(idOf.get(relevant[0]));
      // Hybrid's fitted score for a one-word query holding a name with a low cosine can sit under 0.5
      // (docs/search-quality.md, "Limits"): it ranks first, which is what this store checks.
      if (mode === "keyword") expect(results[0].score).toBeGreaterThanOrEqual(0.5);
    },
  );

  const unrelated = fixture.queries.filter((q) => q.kind === "unrelated");
  // Semantic mode is left out: its score is the bare cosine, which the API fixes, and use-lite puts
  // some unrelated pairs above 0.5 (docs/search-quality.md).
  it.each(unrelated.map((q) => q.query))("keyword mode returns nothing for %j, which no memory is about", async (query) => {
    expect((await searchMemories(ctx, { query, userId: "me", mode: "keyword" })).results).toEqual([]);
  });

  // Each memory scores on its own (core/scorer.ts): a paraphrase sharing no word with its memory
  // ranks it first most of the time, and an unrelated question rarely passes 0.5.
  it("hybrid ranks first the memory of half the paraphrases sharing no word with it, and answers at most 2 of 10 unrelated questions, with one memory each", async () => {
    let found = 0;
    for (const q of fixture.queries.filter((x) => x.kind === "paraphrase")) {
      const { results } = await searchMemories(ctx, { query: q.query, userId: "me", threshold: 0, limit: 1 });
      if (results.some((r) => q.relevant.map((id) => idOf.get(id)).includes(r.id))) found++;
    }
    expect(found).toBeGreaterThanOrEqual(5);
    let answered = 0;
    for (const q of unrelated) {
      const { results } = await searchMemories(ctx, { query: q.query, userId: "me" });
      expect(results.length, q.query).toBeLessThanOrEqual(1);
      answered += results.length;
    }
    expect(answered).toBeLessThanOrEqual(2);
  });
});
