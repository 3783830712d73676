import { describe, expect, it } from "vitest";
import { openContext } from "../../src/core/context.js";
import { addMemoriesFromLines, searchMemories } from "../../src/core/memories.js";
import { ALPHA, KAPPA, NEIGHBOUR_WEIGHT, denseQuery, keywordQuery, rankHybrid, rankKeyword, rankSemantic, sigmoid, HYBRID_SLOPE, HYBRID_MIDPOINT, type Candidate } from "../../src/core/ranking.js";
import type { MemoryRecord } from "../../src/storage/store.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

function rec(id: string, seq: number, userId = "u"): MemoryRecord {
  return { id, accountId: "acct_default", content: id, userId, agentId: null, tags: [], metadata: null, entityIds: [], createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z", seq };
}

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
    expect(rankSemantic([{ record: rec("a", 1), cosine: 0.7 }, { record: rec("b", 2), cosine: -0.2 }]).map((r) => r.score)).toEqual([0.7, 0]);
  });

  it("keyword rises with BM25 and stays in (0, 1)", () => {
    const s = rankKeyword([0, 2, 8, 30, 1000].map((bm25, i) => ({ record: rec(`k${i}`, i + 1), bm25 }))).map((r) => r.score);
    for (let i = 1; i < s.length; i++) expect(s[i]).toBeGreaterThan(s[i - 1]);
    for (const x of s) expect(x > 0 && x < 1).toBe(true);
  });

  it("hybrid: a neighbour of a keyword match inherits 0.9 of it (max, not sum), and only within one user", () => {
    const candidates: Candidate[] = [
      { record: rec("hit", 5), bm25: 20, cosine: 0.3 },
      { record: rec("before", 4), cosine: 0.3 },
      { record: rec("after", 6), bm25: 1, cosine: 0.3 },
      { record: rec("far", 9), cosine: 0.3 },
      { record: rec("otherUser", 4, "v"), cosine: 0.3 },
    ];
    const byId = Object.fromEntries(rankHybrid(candidates, { semanticFloor: false }).map((r) => [r.record.id, r.score]));
    const expected = (b: number, cos: number) => sigmoid(HYBRID_SLOPE * (ALPHA * (b / (b + KAPPA)) + (1 - ALPHA) * cos - HYBRID_MIDPOINT));
    expect(byId.hit).toBeCloseTo(expected(20, 0.3), 10);
    expect(byId.before).toBeCloseTo(expected(NEIGHBOUR_WEIGHT * 20, 0.3), 10);
    expect(byId.after).toBeCloseTo(expected(NEIGHBOUR_WEIGHT * 20, 0.3), 10);
    expect(byId.before).toBeLessThan(byId.hit);
    expect(byId.far).toBeCloseTo(expected(0, 0.3), 10);
    expect(byId.otherUser).toBeCloseTo(expected(0, 0.3), 10);
  });

  it("hybrid lets a strong meaning-only match pass 0.5, and keeps weak ones out", () => {
    const [strong, weak] = rankHybrid([
      { record: rec("s", 1), cosine: 0.7 },
      { record: rec("w", 2), cosine: 0.35 },
    ]);
    expect(strong.score).toBeGreaterThan(0.5);
    expect(weak.score).toBeLessThan(0.1);
  });
});

describe("hybrid search end to end", () => {
  it("returns a keyword match's conversational neighbours right after it", async () => {
    const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder() });
    const turns = ["Hi, how was your week?", "Great! I finally adopted Biscuit from the shelter", "Aww, what breed is he?", "A beagle mix, very energetic", "Unrelated: the budget meeting moved"];
    const ids: string[] = [];
    await addMemoriesFromLines(ctx, turns.map((content) => JSON.stringify({ content, userId: "u" })), { onResult: (r) => ids.push(r.memory!.id) });
    const { results } = await searchMemories(ctx, { query: "When did she adopt Biscuit?", userId: "u", threshold: 0 });
    expect(results[0].id).toBe(ids[1]);
    expect(results.slice(1, 3).map((r) => r.id).sort()).toEqual([ids[0], ids[2]].sort());
    expect(results[1].score).toBeLessThan(results[0].score);
    await ctx.close();
  });
});
