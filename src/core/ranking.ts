import type { SearchMode } from "../schemas/memory.js";
import type { MemoryRecord } from "../storage/store.js";

export interface Ranked {
  record: MemoryRecord;
  score: number;
}

/** How many candidates each index contributes before fusion: enough that fusion can reorder the top. */
export function candidatePool(mode: SearchMode, limit: number): number {
  return mode === "semantic" ? limit : Math.max(50, limit * 3);
}

/**
 * Turns raw index hits into scored results in [0, 1].
 * - semantic: cosine similarity of unit vectors, clamped to [0, 1] (decisions.md).
 * - keyword: BM25 relative to the best hit of the query.
 * - hybrid: a convex combination of the two.
 */
export function rank(
  mode: SearchMode,
  vectorHits: { record: MemoryRecord; distance: number }[],
  textHits: { record: MemoryRecord; score: number }[],
): Ranked[] {
  const cosine = new Map(vectorHits.map((h) => [h.record.id, clamp01(1 - h.distance)]));
  if (mode === "semantic") return vectorHits.map((h) => ({ record: h.record, score: cosine.get(h.record.id)! }));
  const top = Math.max(0, ...textHits.map((h) => h.score));
  const keyword = new Map(textHits.map((h) => [h.record.id, top > 0 ? h.score / top : 0]));
  if (mode === "keyword") return textHits.map((h) => ({ record: h.record, score: keyword.get(h.record.id)! }));
  const records = new Map([...vectorHits, ...textHits].map((h) => [h.record.id, h.record]));
  return [...records.values()].map((record) => ({
    record,
    score: clamp01(0.5 * (keyword.get(record.id) ?? 0) + 0.5 * (cosine.get(record.id) ?? 0)),
  }));
}

export function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}
