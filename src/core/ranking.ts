import type { SearchMode } from "../schemas/memory.js";
import type { MemoryRecord } from "../storage/store.js";

/**
 * Ranking and score calibration for the three search modes. Every constant here was chosen on
 * the LoCoMo development split by leave-one-conversation-out cross-validation (tuned on four
 * conversations, tested on the fifth) and is documented with its figures in the README
 * ("Search quality"). Pure functions: the store queries live in core/memories.ts.
 */

/** Candidates each index contributes before fusion (30 or 100 measured the same). */
export const CANDIDATES = 50;
/** BM25 saturation: bm / (bm + KAPPA) maps LanceDB's BM25 into [0, 1). */
export const KAPPA = 12;
/** Weight of the keyword signal in the hybrid; the rest is cosine similarity. */
export const ALPHA = 0.7;
/** A memory inherits this share of its best neighbour's keyword score (seq ± 1 of the same user). */
export const NEIGHBOUR_WEIGHT = 0.9;
/** Hybrid calibration: score = σ(S · (raw − T0)); 0.5 at raw = T0. */
export const HYBRID_SLOPE = 38;
export const HYBRID_MIDPOINT = 0.378;
/** Keyword calibration: σ(S · (bm/(bm+KAPPA) − T0)). Weak evidence on its own (see README). */
export const KEYWORD_SLOPE = 31;
export const KEYWORD_MIDPOINT = 0.332;
/**
 * A strong meaning-only match must be able to pass the default threshold in hybrid mode too, or a
 * paraphrase sharing no word with the query could never be found there. σ(S·(cos − T0)) with a
 * high midpoint: only clearly similar text (cosine ≥ ~0.6 with use-lite) gets past 0.5.
 */
export const SEMANTIC_SLOPE = 30;
export const SEMANTIC_MIDPOINT = 0.6;

export interface Candidate {
  record: MemoryRecord;
  /** Cosine similarity to the (rewritten) query, when known. */
  cosine?: number;
  /** Raw BM25 from the full-text index, when the memory matched the keyword query. */
  bm25?: number;
}

export interface Ranked {
  record: MemoryRecord;
  score: number;
}

/** Words that carry no topic: a short English stop list plus question words. */
const STOP_WORDS = new Set(
  (
    "a an and are as at be been being but by for from had has have having he her hers him his i if in into is it its " +
    "itself me my myself no nor not of off on once only or our ours ourselves out over own same she so some such than " +
    "that the their theirs them themselves then there these they this those through to too under until up very was we " +
    "were what when where which while who whom whose why will with you your yours yourself yourselves " +
    "about above after again against all am any because before below between both can could did do does doing down " +
    "during each few further here how just more most other should s t don now would shall may might must ever also"
  ).split(" "),
);
const QUESTION_WORDS = new Set(
  "what when where which who whom whose why how did do does done is are was were be been has have had can could would should will shall may might kind type sort".split(" "),
);

/**
 * The keyword query: lower-cased, accents stripped, stop words and question words dropped.
 * LanceDB's own English stop list is short; dropping these ourselves measured +0.06 R@10.
 */
export function keywordQuery(query: string): string {
  const words = query
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .match(/[\p{L}\p{N}]+/gu);
  return (words ?? []).filter((w) => !STOP_WORDS.has(w) && !QUESTION_WORDS.has(w)).join(" ");
}

/** The text embedded for the vector side: the question without "?" and question words (+0.09 R@10 dense). */
export function denseQuery(query: string): string {
  const kept = query
    .replace(/\?/g, " ")
    .split(/\s+/)
    .filter((w) => w && !QUESTION_WORDS.has(w.toLowerCase().replace(/[^\p{L}\p{N}]/gu, "")));
  return kept.length ? kept.join(" ") : query;
}

export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

export function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}

/** Semantic mode: the cosine similarity clamped to [0, 1], as decisions.md defines `score`. */
export function rankSemantic(candidates: Candidate[]): Ranked[] {
  return candidates.map((c) => ({ record: c.record, score: clamp01(c.cosine ?? 0) }));
}

/** Keyword mode: calibrated saturated BM25. */
export function rankKeyword(candidates: Candidate[]): Ranked[] {
  return candidates.map((c) => {
    const b = c.bm25 ?? 0;
    return { record: c.record, score: sigmoid(KEYWORD_SLOPE * (b / (b + KAPPA) - KEYWORD_MIDPOINT)) };
  });
}

/**
 * Hybrid mode. For each candidate (both indexes' top hits and their neighbours):
 *   b   = max(bm25, NEIGHBOUR_WEIGHT × max(bm25 of seq−1, seq+1))   (max-propagation: a turn next
 *         to a keyword match is context for it, and can only rank just below it)
 *   raw = ALPHA · b/(b+KAPPA) + (1−ALPHA) · cosine
 *   score = max(σ(HYBRID_SLOPE·(raw − HYBRID_MIDPOINT)), σ(SEMANTIC_SLOPE·(cosine − SEMANTIC_MIDPOINT)))
 * Neighbours are memories of the same user adjacent in insertion order (`seq`).
 */
export function rankHybrid(candidates: Candidate[], options: { semanticFloor?: boolean } = {}): Ranked[] {
  const bySeq = new Map<string, Candidate>();
  const key = (r: MemoryRecord, seq: number) => `${r.accountId}\u0000${r.userId}\u0000${seq}`;
  for (const c of candidates) bySeq.set(key(c.record, c.record.seq), c);
  return candidates.map((c) => {
    const own = c.bm25 ?? 0;
    const prev = c.record.seq > 0 ? bySeq.get(key(c.record, c.record.seq - 1))?.bm25 ?? 0 : 0;
    const next = c.record.seq > 0 ? bySeq.get(key(c.record, c.record.seq + 1))?.bm25 ?? 0 : 0;
    const b = Math.max(own, NEIGHBOUR_WEIGHT * Math.max(prev, next));
    const cosine = clamp01(c.cosine ?? 0);
    const raw = ALPHA * (b / (b + KAPPA)) + (1 - ALPHA) * cosine;
    let score = sigmoid(HYBRID_SLOPE * (raw - HYBRID_MIDPOINT));
    if (options.semanticFloor !== false) score = Math.max(score, sigmoid(SEMANTIC_SLOPE * (cosine - SEMANTIC_MIDPOINT)));
    return { record: c.record, score };
  });
}

export function rank(mode: SearchMode, candidates: Candidate[], options: { semanticFloor?: boolean } = {}): Ranked[] {
  if (mode === "semantic") return rankSemantic(candidates);
  if (mode === "keyword") return rankKeyword(candidates);
  return rankHybrid(candidates, options);
}
