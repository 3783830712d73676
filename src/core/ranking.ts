import type { MemoryRecord } from "../storage/store.js";

/**
 * A search's candidates, how a query is read, and the scores of the semantic and keyword modes.
 * Pure functions: the store queries live in core/search.ts, the hybrid score in core/scorer.ts.
 * A score depends only on the query and the memory: never on other memories, users, agents or
 * accounts, nor on the size of the store around them.
 */

/** Vector-index candidates fused with the keyword candidates in hybrid mode. */
export const CANDIDATES = 50;
/**
 * Keyword-matching memories ranked in full per search. When more match, the
 * best-covered are kept, newest first among equals; a query of common words in a huge scope is the
 * only case that reaches it.
 */
export const KEYWORD_POOL = 500;
/** Keyword calibration: score = σ(slope · (coverage − midpoint)). */
export const KEYWORD: Readonly<{ slope: number; midpoint: number }> = { slope: 29, midpoint: 0.225 };

export interface Candidate {
  record: MemoryRecord;
  /** Cosine similarity to the (analysed) query; hybrid and semantic modes. */
  cosine?: number;
  /** Share of the query's word weight the memory holds (core/scorer.ts keywordShare); 0 when none. */
  coverage?: number;
  /** Whether the memory is a turn of a conversation (core/conversation.ts). */
  turn?: boolean;
  /** Turns: 1 when the query names the turn's speaker (core/scorer.ts turnEvidence). */
  speaker?: number;
  /** Turns: how long the turn is, 0..1 (core/scorer.ts turnLength). */
  length?: number;
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
  return wordsOf(query)
    .filter((w) => !STOP_WORDS.has(w) && !QUESTION_WORDS.has(w))
    .join(" ");
}

/** A text's words as the keyword side reads them: accents folded, lower-cased, letters and digits. */
export function wordsOf(text: string): string[] {
  return text.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
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

/** Semantic mode: the cosine similarity clamped to [0, 1], as the API defines `score`. */
export function semanticScore(cosine: number): number {
  return clamp01(cosine);
}

/** Keyword mode: calibrated coverage. A memory holding every query word scores ≈ 1, one holding none ≈ 0. */
export function keywordScore(coverage: number, p: { slope: number; midpoint: number } = KEYWORD): number {
  return sigmoid(p.slope * (coverage - p.midpoint));
}

