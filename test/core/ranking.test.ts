import { describe, expect, it } from "vitest";
import { openContext } from "../../src/core/context.js";
import { addMemoriesFromLines, rankHits, searchCandidates, searchMemories } from "../../src/core/memories.js";
import { dot } from "../../src/embedder/types.js";
import { denseQuery, keywordQuery, keywordScore, semanticScore } from "../../src/core/ranking.js";
import { paramsFor } from "../../src/core/scorer.js";
import { parseSearchMemories } from "../../src/schemas/memory.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();


describe("dot", () => {
  it("sums every product, whatever the length", () => {
    for (const n of [0, 1, 3, 4, 7, 512, 513]) {
      const a = Float32Array.from({ length: n }, (_, i) => Math.sin(i + 1));
      const b = Float32Array.from({ length: n }, (_, i) => Math.cos(3 * i));
      let naive = 0;
      for (let i = 0; i < n; i++) naive += a[i] * b[i];
      expect(dot(a, b)).toBeCloseTo(naive, 10);
    }
  });
});

describe("query rewriting", () => {
  it("keeps only topical words for the keyword index", () => {
    expect(keywordQuery("When did Caroline go to the LGBTQ support group?")).toBe("caroline go lgbtq support group");
    expect(keywordQuery("What is it?")).toBe("");
    expect(keywordQuery("Où est Zoë?")).toBe("ou est zoe");
  });

  it("drops question words and '?' for the embedding, keeping case, and never empties the query", () => {
    expect(denseQuery("When did Caroline go to the LGBTQ support group?")).toBe("Caroline go to the LGBTQ support group");
    expect(denseQuery("Why?")).toBe("Why?");
  });
});

describe("scores", () => {
  it("semantic is the clamped cosine", () => {
    expect(semanticScore(0.7)).toBe(0.7);
    expect(semanticScore(-0.2)).toBe(0);
  });

  it("keyword rises with coverage, passes 0.5 at full coverage and stays far below it without a match", () => {
    const s = [0, 0.2, 0.5, 0.8, 1].map((c) => keywordScore(c));
    for (let i = 1; i < s.length; i++) expect(s[i]).toBeGreaterThan(s[i - 1]);
    expect(s[0]).toBeLessThan(0.01);
    expect(s[4]).toBeGreaterThan(0.99);
    for (const x of s) expect(x > 0 && x < 1).toBe(true);
  });
});

describe("hybrid search's pruning", () => {
  it("returns exactly what ranking every keyword candidate would, in a store larger than the vector candidates", async () => {
    const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder() });
    const topics = ["garden", "tea", "dentist", "marathon", "cello", "lisbon", "budget", "kitten", "plumber", "novel"];
    const lines = Array.from({ length: 400 }, (_, i) => {
      const text = `${topics[i % 10]} and ${topics[(i * 3) % 10]} ${i % 7 ? "again" : "with the family"}${i % 4 ? "" : " and then some more words about the day, the weather and the trip home"}`;
      // Some are turns of short conversations, scored with the turns' constants (Ana's and Ben's:
      // a query naming one reads it as the speaker); the rest are notes.
      const turn = i % 5 < 2;
      return JSON.stringify({ content: turn ? `${i % 2 ? "Ana" : "Ben"}: ${text}` : `note ${i}: ${text}`, userId: i % 3 ? "u" : "v", ...(turn ? { metadata: { session: Math.floor(i / 5) } } : {}) });
    });
    await addMemoriesFromLines(ctx, lines, { batchSize: 100 });
    for (const query of ["garden tea", "when is the dentist?", "family marathon cello", "kitten", "budget lisbon novel plumber", "again", "what did Ana say about the garden?", "Ben kitten weather"]) {
      for (const userId of ["u", undefined]) {
        for (const limit of [1, 10, 40]) {
          const got = await searchMemories(ctx, { query, userId, limit, threshold: 0 });
          const all = rankHits(parseSearchMemories({ query, userId, limit, threshold: 0 }), await searchCandidates(ctx, { query, userId, limit }), paramsFor(ctx.store.config.embedder.provider + ":" + ctx.store.config.embedder.model));
          expect(got.results.map((r) => [r.id, r.score]), `${query} ${userId} ${limit}`).toEqual(all.map((r) => [r.record.id, r.score]));
        }
      }
    }
    await ctx.close();
  });

  it("fetches the cosines of every keyword match that could reach the results in one query, not in batches of 50 one after another", async () => {
    const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder() });
    // 60 memories near the query by their words (the vector search's nearest 50 are among them),
    // and 300 that hold the query's rarer word, each beside words of its own.
    const lines = [
      ...Array.from({ length: 60 }, (_, i) => JSON.stringify({ content: `crossing crossing crossing n${i}`, userId: "u" })),
      ...Array.from({ length: 300 }, (_, i) => JSON.stringify({ content: `zebra w${i} x${i} y${i}`, userId: "u" })),
    ];
    await addMemoriesFromLines(ctx, lines, { batchSize: 100 });
    const fetches: number[] = [];
    const nearestAmong = ctx.store.nearestAmong.bind(ctx.store);
    ctx.store.nearestAmong = async (vector, filter, among) => (fetches.push(among.ids.length), nearestAmong(vector, filter, among));
    const input = { query: "zebra crossing", userId: "u", limit: 10, threshold: 0.01 };
    const got = await searchMemories(ctx, input);
    expect(fetches.length, `${fetches}`).toBe(1);
    expect(fetches[0]).toBeGreaterThan(50);
    const all = rankHits(parseSearchMemories(input), await searchCandidates(ctx, input), paramsFor(ctx.store.config.embedder.provider + ":" + ctx.store.config.embedder.model));
    expect(got.results.map((r) => [r.id, r.score])).toEqual(all.map((r) => [r.record.id, r.score]));
    await ctx.close();
  });
});
