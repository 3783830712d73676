import { createRequire } from "node:module";
import { STEM_COUNTS } from "./english-frequencies.js";

/**
 * The keyword side's words: a query's terms as the full-text index sees them (folded, lower-cased,
 * Porter2-stemmed), and how often English uses each (SUBTLEX-US counts, english-frequencies.ts),
 * which is what a word weighs in a note's keyword signal (core/scorer.ts). Nothing here reads the
 * store: a word weighs the same in every store.
 */

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

