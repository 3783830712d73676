import { speakerOf } from "./conversation.js";
import { englishCount, stemWord, type Term } from "./keyword.js";
import { sigmoid, wordsOf } from "./ranking.js";
import { FITTED } from "./scorer-params.js";

/**
 * The hybrid score: one fitted function of two signals of the query and the note itself.
 *
 *   score = σ(bias + c·cosine + k·keyword + k2·keyword² + a·[keyword = 1] + s·speaker + l·length)      (0..1)
 *
 * - `cosine`: the query's and the note's embeddings, clamped to 0..1.
 * - `keyword`: the share of the query's word weight the note holds. A word's weight is how rare it
 *   is in everyday English (SUBTLEX-US counts, english-frequencies.ts), never in the store: a
 *   note's keyword signal is the same whatever else is stored. A note that holds every word of the
 *   query gets `a` more ("what's my passport number?" asks for a number as much as a passport).
 *
 * There are two sets of constants: one for notes, one for conversation turns (core/conversation.ts),
 * which answer less on their own. A turn opens with its speaker's name ("Caroline: I went…"), so
 * every turn of that speaker holds it: a query word naming the speaker says who spoke, not what was
 * said. For a turn it counts as `speaker` (1 when the query names the speaker), not as keyword
 * evidence (turnEvidence). And a turn's `length` counts: "thanks!" or "wait, really??" rarely holds
 * an answer, a turn of thirty words often does (turnLength). Each comes from a
 * logistic regression (scripts/calibrate.mjs, `npm run calibrate`), one per embedding model, every
 * weight at least 0 so that more evidence never lowers a score. A note's score then reads as the
 * probability that it answers the query; a turn's is set so that the default threshold keeps most
 * of the answers ranked in the top ten (docs/search-quality.md has both figures). Nothing here
 * reads another note: a score is explainable from the query and the note alone.
 */
export interface Signals {
  cosine: number;
  keyword: number;
  /** 1 for a conversation turn, 0 for a note: which set of constants applies. */
  turn: number;
  /** Turns only: 1 when the query names the turn's speaker (those words are then not in `keyword`). */
  speaker?: number;
  /** Turns only: how long the turn is, 0..1 (turnLength). */
  length?: number;
}

export interface Weights {
  bias: number;
  cosine: number;
  keyword: number;
  keyword2: number;
  /** Added when the note holds every word of the query (keyword = 1). */
  every: number;
  /** Added when the query names a turn's speaker (0 for notes, which have none). */
  speaker: number;
  /** Times a turn's length (0 for notes: a note's length was measured to say nothing). */
  length: number;
}

export interface ScorerParams {
  /** The embedder these were fitted for (`<provider>:<model>`), or "fallback". */
  model: string;
  notes: Weights;
  turns: Weights;
}

/**
 * For an embedder nothing was fitted on (transformers, openai): its cosine counts only when high
 * (0.5 at a cosine of 0.8 with no word in common; unrelated sentences stay well under it for the
 * models mm supports), and a note holding every word of the query passes with a cosine of 0.4.
 * Conservative: a paraphrase needs a close meaning. `npm run calibrate` fits a store's own model.
 */
const CONSERVATIVE: Weights = { bias: -8, cosine: 10, keyword: 2, keyword2: 2, every: 0, speaker: 0, length: 0 };
export const FALLBACK: Readonly<ScorerParams> = { model: "fallback", notes: CONSERVATIVE, turns: CONSERVATIVE };

/** The parameters fitted for an embedder (its id, `<provider>:<model>`), or FALLBACK. */
export function paramsFor(embedderId: string): ScorerParams {
  const p = FITTED[embedderId];
  return p ? { model: embedderId, ...p } : FALLBACK;
}

/** Each signal's part of the logit, and the score. */
export interface Explanation {
  score: number;
  signals: Signals;
  /** What each term added to the logit (before σ); their sum is the logit. */
  contributions: { bias: number; cosine: number; keyword: number; speaker?: number; length?: number };
  /** The embedder the constants were fitted for, or "fallback". */
  model: string;
}

export function explain(s: Signals, p: ScorerParams): Explanation {
  const w = s.turn ? p.turns : p.notes;
  const contributions: Explanation["contributions"] = { bias: w.bias, cosine: w.cosine * s.cosine, keyword: w.keyword * s.keyword + w.keyword2 * s.keyword * s.keyword + w.every * holdsEveryWord(s.keyword) };
  if (s.turn && s.speaker !== undefined) contributions.speaker = w.speaker * s.speaker;
  if (s.turn && s.length !== undefined) contributions.length = w.length * s.length;
  const logit = contributions.bias + contributions.cosine + contributions.keyword + (contributions.speaker ?? 0) + (contributions.length ?? 0);
  return { score: unit(sigmoid(logit)), signals: s, contributions, model: p.model };
}

export function score(s: Signals, p: ScorerParams): number {
  return explain(s, p).score;
}

/** 1 when a keyword share is the whole query's (the note holds every word of it), else 0. */
export function holdsEveryWord(keyword: number): number {
  return keyword >= 1 - 1e-9 ? 1 : 0;
}

/** A value clamped to 0..1, 0 when it is no finite number: a cosine as a signal, and a score. */
export function unit(x: number): number {
  return Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0;
}

/**
 * A query word's weight: how rare it is in everyday English, ln(1 + (1 − p)/p) with p its rate per
 * memory (an unseen word is rare, not infinitely so). The same in every store.
 */
export function wordWeight(stem: string): number {
  const p = Math.min(0.5, (englishCount(stem) + 30) / 1_000_000);
  return Math.log(1 + (1 - p) / p);
}

/** The share of the query's word weight held: `holds(i)` says whether the note holds term i. */
export function keywordShare(terms: Term[], holds: (i: number) => boolean): number {
  let have = 0;
  let all = 0;
  terms.forEach((t, i) => {
    const w = wordWeight(t.stem);
    all += w;
    if (holds(i)) have += w;
  });
  return all > 0 ? have / all : 0;
}

/**
 * A conversation turn's keyword evidence: `speaker` is 1 when a query word the turn holds names its
 * speaker (speakerOf), and `keyword` is the share of the other query words' weight it holds. Only
 * held words are set aside, so a turn's keyword share is never above its plain share (search bounds
 * the score of a candidate it hasn't read by that plain share).
 */
export function turnEvidence(terms: Term[], holds: (i: number) => boolean, content: string): { keyword: number; speaker: number } {
  const name = speakerOf(content);
  const named = name ? speakerStems(name) : undefined;
  // The query's words that stay keyword evidence, by their index: all but the held ones naming the speaker.
  const kept = terms.flatMap((t, i) => (named?.has(t.stem) && holds(i) ? [] : [i]));
  if (kept.length === terms.length) return { keyword: keywordShare(terms, holds), speaker: 0 };
  return { keyword: keywordShare(kept.map((i) => terms[i]), (j) => holds(kept[j])), speaker: 1 };
}

/**
 * A speaker's name as keyword stems, remembered: a conversation has a few speakers and thousands of
 * turns, and search reads a turn's speaker for every keyword candidate it bounds (stemming the name
 * was three quarters of turnEvidence's time: 2.7 of 3.7 µs a turn on LoCoMo). At most
 * SPEAKERS_KEPT names; when full, it starts again.
 */
function speakerStems(name: string): Set<string> {
  let stems = SPEAKERS.get(name);
  if (!stems) {
    if (SPEAKERS.size >= SPEAKERS_KEPT) SPEAKERS.clear();
    stems = stemsOfText(name);
    SPEAKERS.set(name, stems);
  }
  return stems;
}
const SPEAKERS = new Map<string, Set<string>>();
const SPEAKERS_KEPT = 1024;

/**
 * A conversation turn's length signal: ln(1 + words) / ln(81), so 0 for an empty turn, 0.5 at 8
 * words and 1 from 80 words on (words as the keyword side counts them, wordsOf).
 */
export function turnLength(content: string): number {
  return Math.min(1, Math.log1p(wordsOf(content).length) / Math.log(81));
}

/** A text's words as the keyword side sees them (wordsOf, then Porter2-stemmed), every word kept. */
export function stemsOfText(text: string): Set<string> {
  return new Set(wordsOf(text).map(stemWord));
}

/**
 * A question an agent asks about its user, as the user would ask it: "where does the user live?"
 * is read as "where do I live?", "the user's wifi password" as "my wifi password". Agents are the
 * main callers over MCP and hooks, and a person's notes say "I" and "my"; "user" itself is then no
 * query word, so it doesn't match every "User …" fact an agent stored.
 */
export function asAskedByUser(query: string): string {
  if (!/\buser\b/iu.test(query)) return query;
  const verbs: Record<string, string> = { is: "am", has: "have", does: "do", was: "was", goes: "go" };
  return query
    .replace(/\b(?:the |this |our |my )?user['’]s\b/giu, "my")
    .replace(/\b(does|do|is|has|have|was|did|can|could|will|would|should|shall|may|might|must)\s+(?:the |this |our )?user\b/giu, (_m, aux: string) => `${({ does: "do", is: "am", has: "have" } as Record<string, string>)[aux.toLowerCase()] ?? aux.toLowerCase()} I`)
    .replace(/\b(?:the |this |our )?user\s+([a-z]+)\b/giu, (m, verb: string) => {
      const v = verb.toLowerCase();
      if (verbs[v]) return `I ${verbs[v]}`;
      if (/^(?:to|and|or|in|on|at|with|for|of|about)$/u.test(v)) return m.replace(/(?:the |this |our )?user/iu, "me");
      if (/(?:ches|shes|sses|xes|zes)$/u.test(v)) return `I ${v.slice(0, -2)}`;
      if (/[^s]s$/u.test(v) && !/(?:ss|us|is)$/u.test(v)) return `I ${v.slice(0, -1)}`;
      return `I ${v}`;
    })
    .replace(/\b(about|for|to|with|of|from|by|tell|remind|help)\s+(?:the |this |our )?user\b/giu, "$1 me")
    .replace(/\b(?:the |this |our )?user\b/giu, "I");
}
