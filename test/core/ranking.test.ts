import { describe, expect, it } from "vitest";
import { openContext } from "../../src/core/context.js";
import { addMemoriesFromLines, rankHits, searchCandidates, searchMemories } from "../../src/core/memories.js";
import { dot } from "../../src/embedder/types.js";
import { HYBRID, LEAD, denseQuery, hybridRaw, hybridScore, keywordQuery, keywordScore, leadScore, rank } from "../../src/core/ranking.js";
import { parseSearchMemories } from "../../src/schemas/memory.js";
import type { MemoryRecord } from "../../src/storage/store.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

function rec(id: string, seq: number, userId = "u"): MemoryRecord {
  return { id, accountId: "acct_default", content: id, userId, agentId: null, tags: [], metadata: null, entityIds: [], createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z", seq };
}

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
    expect(rank("semantic", [{ record: rec("a", 1), cosine: 0.7 }, { record: rec("b", 2), cosine: -0.2 }]).map((r) => r.score)).toEqual([0.7, 0]);
  });

  it("keyword rises with coverage, passes 0.5 at full coverage and stays far below it without a match", () => {
    const s = [0, 0.2, 0.5, 0.8, 1].map((c) => keywordScore(c));
    for (let i = 1; i < s.length; i++) expect(s[i]).toBeGreaterThan(s[i - 1]);
    expect(s[0]).toBeLessThan(0.01);
    expect(s[4]).toBeGreaterThan(0.99);
    for (const x of s) expect(x > 0 && x < 1).toBe(true);
  });

  it("hybrid: a memory holding every query word scores ≥ 0.99 whatever its cosine", () => {
    for (const cosine of [-0.3, 0, 0.1, 0.5]) expect(hybridScore({ coverage: 1, cosine })).toBeGreaterThan(0.99);
  });

  it("hybrid: a neighbour inherits a capped share of a match's coverage, so a fact added next to a match needs meaning too", () => {
    const matchRaw = hybridRaw({ coverage: 1, cosine: 0.3 });
    const neighbourRaw = hybridRaw({ neighbourCoverage: 1, cosine: 0.3 });
    expect(neighbourRaw).toBeLessThan(matchRaw);
    expect(neighbourRaw).toBeCloseTo(HYBRID.keywordWeight * HYBRID.neighbourCap + (1 - HYBRID.keywordWeight) * 0.3, 10);
    // An unrelated neighbour (cosine 0.3) stays under 0.5; a related one (0.5) passes.
    expect(hybridScore({ neighbourCoverage: 1, cosine: 0.3 })).toBeLessThan(0.5);
    expect(hybridScore({ neighbourCoverage: 1, cosine: 0.5 })).toBeGreaterThan(0.5);
    // Own coverage wins over a neighbour's share when larger.
    expect(hybridRaw({ coverage: 0.6, neighbourCoverage: 1, cosine: 0.3 })).toBeCloseTo(HYBRID.keywordWeight * 0.6 + (1 - HYBRID.keywordWeight) * 0.3, 10);
  });

  it("hybrid lets a strong meaning-only match pass 0.5, and keeps weak ones far out", () => {
    expect(hybridScore({ cosine: 0.7 })).toBeGreaterThan(0.9);
    expect(hybridScore({ cosine: HYBRID.meaningMidpoint + 0.01 })).toBeGreaterThan(0.5);
    expect(hybridScore({ cosine: 0.45 })).toBeLessThan(0.05);
    expect(hybridScore({ cosine: 0.35 })).toBeLessThan(0.01);
  });

  it("the scope's nearest memory sharing no query word passes 0.5 by its lead over the next, only when nothing else is likely relevant", () => {
    expect(leadScore(0.2 + LEAD.margin, 0.1)).toBeCloseTo(0.5, 10); // the floor stands in for a weak second
    expect(leadScore(0.5, 0.5 - LEAD.margin)).toBeCloseTo(0.5, 10);
    expect(leadScore(0.52, 0.31)).toBeGreaterThan(0.8);
    expect(leadScore(0.45, 0.4)).toBeLessThan(0.25);
    expect(leadScore(0.45, 0.4)).toBeLessThan(leadScore(0.5, 0.4));
    const lone = { record: rec("a", 1), cosine: 0.52, coverage: 0, neighbourCoverage: 0, lead: leadScore(0.52, 0.31) };
    expect(rank("hybrid", [lone, { record: rec("b", 2), cosine: 0.31, coverage: 0, neighbourCoverage: 0 }])[0].score).toBe(lone.lead);
    // A memory that passes by its words wins, and the lead is not applied at all.
    const byWords = { record: rec("c", 3), cosine: 0.3, coverage: 1, neighbourCoverage: 0 };
    const ranked = rank("hybrid", [lone, byWords]);
    expect(ranked[1].score).toBeGreaterThan(0.99);
    expect(ranked[0].score).toBe(hybridScore({ cosine: 0.52 }));
    // Other modes ignore it.
    expect(rank("semantic", [lone])[0].score).toBe(0.52);
  });

  it("rank scores each candidate by its mode", () => {
    const c = [{ record: rec("a", 1), cosine: 0.4, coverage: 1, neighbourCoverage: 0 }];
    expect(rank("semantic", c)[0].score).toBe(0.4);
    expect(rank("keyword", c)[0].score).toBe(keywordScore(1));
    expect(rank("hybrid", c)[0].score).toBe(hybridScore({ coverage: 1, cosine: 0.4 }));
  });
});

describe("hybrid search end to end", () => {
  const turns = ["Hi, how was your week?", "Great! I finally adopted Biscuit from the shelter", "Aww, what breed is he?", "A beagle mix, very energetic", "Unrelated: the budget meeting moved"];
  async function store(extra: (i: number) => object) {
    const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder() });
    const ids: string[] = [];
    await addMemoriesFromLines(ctx, turns.map((content, i) => JSON.stringify({ content, userId: "u", ...extra(i) })), { onResult: (r) => ids.push(r.memory!.id) });
    return { ctx, ids };
  }

  it.each([
    ["a session id in metadata", (i: number) => ({ metadata: { sessionId: i < 4 ? "s1" : "s2" } })],
    ["a session tag", (i: number) => ({ tags: [i < 4 ? "session_1" : "session_2"] })],
  ])("returns a keyword match's conversational neighbours right after it (turns marked by %s)", async (_, extra) => {
    const { ctx, ids } = await store(extra);
    const { results } = await searchMemories(ctx, { query: "When did she adopt Biscuit?", userId: "u", threshold: 0 });
    expect(results[0].id).toBe(ids[1]);
    expect(results.slice(1, 3).map((r) => r.id).sort()).toEqual([ids[0], ids[2]].sort());
    expect(results[1].score).toBeLessThan(results[0].score);
    await ctx.close();
  });

  it("lends nothing to the notes stored next to a match when they are no conversation, or another one", async () => {
    for (const extra of [() => ({}), (i: number) => ({ metadata: { sessionId: `s${i}` } })]) {
      const { ctx, ids } = await store(extra);
      const candidates = await searchCandidates(ctx, { query: "When did she adopt Biscuit?", userId: "u", threshold: 0 });
      const of = (id: string) => candidates.find((c) => c.record.id === id);
      expect(of(ids[1])?.coverage).toBe(1);
      for (const i of [0, 2]) expect(of(ids[i])?.neighbourCoverage ?? 0).toBe(0);
      await ctx.close();
    }
  });
});

describe("hybrid search's pruning", () => {
  it("returns exactly what ranking every keyword candidate would, in a store larger than the vector candidates", async () => {
    const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder() });
    const topics = ["garden", "tea", "dentist", "marathon", "cello", "lisbon", "budget", "kitten", "plumber", "novel"];
    const lines = Array.from({ length: 400 }, (_, i) =>
      // A third are turns of short conversations, whose neighbours share their evidence; the rest are notes.
      JSON.stringify({ content: `note ${i}: ${topics[i % 10]} and ${topics[(i * 3) % 10]} ${i % 7 ? "again" : "with the family"}`, userId: i % 3 ? "u" : "v", ...(i % 5 < 2 ? { metadata: { session: Math.floor(i / 5) } } : {}) }),
    );
    await addMemoriesFromLines(ctx, lines, { batchSize: 100 });
    for (const query of ["garden tea", "when is the dentist?", "family marathon cello", "kitten", "budget lisbon novel plumber", "again"]) {
      for (const userId of ["u", undefined]) {
        for (const limit of [1, 10, 40]) {
          const got = await searchMemories(ctx, { query, userId, limit, threshold: 0 });
          const all = rankHits(parseSearchMemories({ query, userId, limit, threshold: 0 }), await searchCandidates(ctx, { query, userId, limit }));
          expect(got.results.map((r) => [r.id, r.score]), `${query} ${userId} ${limit}`).toEqual(all.map((r) => [r.record.id, r.score]));
        }
      }
    }
    await ctx.close();
  });
});
