import { createRequire } from "node:module";
import { STEM_COUNTS } from "./english-frequencies.js";

/**
 * Keyword evidence that means the same in every store. A search's keyword score must not move
 * when other users or other accounts add memories, nor leak what they wrote (BM25 statistics over
 * a whole table do both), so the evidence here depends only on the query, the memory and the
 * memories the search could return (its scope: account plus filters):
 *
 *   coverage(query, memory) = Σ weight of the query's words the memory contains
 *                             ÷ Σ weight of all the query's words              (0..1)
 *
 * A memory holding every word of the query covers it fully (1), whatever the store. A word's
 * weight is its inverse document frequency, estimated from how often it occurs in the scope's
 * *other* memories, smoothed towards its frequency in everyday English (english-frequencies.ts):
 *
 *   p(word) = (df_others + MU · p_english) / (scope size − 1 + MU),  weight = ln(1 + (1 − p) / p)
 *
 * In a tiny store the English prior dominates ("dentist" is rare, "time" is not); in a big scope
 * the scope's own statistics do (a name that starts every memory of a conversation weighs little
 * there). Counting the *other* memories means a word is not discounted for occurring in the very
 * memory being scored: in a one-memory store, that memory's words weigh what English says.
 * Constants were chosen on the calibration set (docs/search-quality.md).
 */

/** How many pseudo-memories the English prior is worth against the scope's own counts. */
export const PRIOR_WEIGHT = 20;
/** The corpus is counted in words; as a frequency per memory it is read as this many memories. */
export const PRIOR_MEMORIES = 1_000_000;
/** Every English count is raised by this much, so an unseen word is rare, not infinitely rare. */
export const PRIOR_COUNT_FLOOR = 30;

const require = createRequire(import.meta.url);
const stem = require("wink-porter2-stemmer") as (word: string) => string;

let counts: Map<string, number> | undefined;

/** How often a stem occurs in the English corpus (0 when unseen); the table is parsed on first use. */
export function englishCount(s: string): number {
  if (!counts) {
    counts = new Map();
    for (const group of STEM_COUNTS.split("|")) {
      const colon = group.indexOf(":");
      const n = Number(group.slice(0, colon));
      for (const w of group.slice(colon + 1).split(" ")) counts.set(w, n);
    }
  }
  return counts.get(s) ?? 0;
}

/** Share of memories one would expect to contain the stem, from English alone. */
function englishRate(s: string): number {
  return Math.min(0.5, (englishCount(s) + PRIOR_COUNT_FLOOR) / PRIOR_MEMORIES);
}

/**
 * A word as the full-text index sees it: accents folded, lower-cased, Porter2-stemmed (the
 * index's English stemmer). Words with digits are kept as they are: the stemmer mangles some
 * ("2023" → "202i").
 */
export function stemWord(word: string): string {
  const folded = word.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
  return /\p{N}/u.test(folded) ? folded : stem(folded);
}

/** A query's keyword terms: its words (from keywordQuery), each kept once per stem, with the word the index is asked for. */
export interface Term {
  word: string;
  stem: string;
}

export function queryTerms(keywords: string): Term[] {
  const seen = new Set<string>();
  const out: Term[] = [];
  for (const word of keywords.split(" ")) {
    if (!word) continue;
    const s = stemWord(word);
    if (seen.has(s)) continue;
    seen.add(s);
    out.push({ word, stem: s });
  }
  return out;
}

/** What a search's scope says about each term: how many of its memories contain it. */
export interface ScopeStats {
  /** Memories the search could return (account and filters). */
  size: number;
  /** Per term (same order as the terms): memories of the scope that contain it. */
  docFreq: number[];
}

/** Weights of each term for a memory that contains it and for one that doesn't (see the top of this file). */
export function termWeights(terms: Term[], scope: ScopeStats): { present: number[]; absent: number[] } {
  const weight = (i: number, inMemory: boolean) => {
    const others = Math.max(0, scope.docFreq[i] - (inMemory ? 1 : 0));
    const memories = Math.max(0, scope.size - 1);
    const p = (others + PRIOR_WEIGHT * englishRate(terms[i].stem)) / (memories + PRIOR_WEIGHT);
    return Math.log(1 + (1 - p) / p);
  };
  return { present: terms.map((_, i) => weight(i, true)), absent: terms.map((_, i) => weight(i, false)) };
}

/**
 * The share of the query's weight a memory contains: 1 when it holds every term, 0 when none.
 * `holds` says whether it contains a term, or what share of one it holds without containing it (a
 * bridged word, core/bridges.ts), counted at that share of the term's absent weight.
 */
export function coverage(weights: { present: number[]; absent: number[] }, holds: (termIndex: number) => boolean | number): number {
  let have = 0;
  let all = 0;
  for (let i = 0; i < weights.present.length; i++) {
    const share = Number(holds(i));
    const weight = share === 1 ? weights.present[i] : weights.absent[i];
    have += share * weight;
    all += weight;
  }
  return all > 0 ? have / all : 0;
}
