import type { SearchMode } from "../schemas/memory.js";
import type { MemoryRecord } from "../storage/store.js";

/**
 * Ranking and score calibration for the three search modes. Pure functions: the store queries
 * live in core/search.ts, keyword evidence (coverage) in core/keyword.ts. Every constant was
 * chosen on the calibration set described in docs/search-quality.md (LoCoMo's development split,
 * leave-one-conversation-out; two hand-labelled 20-memory stores held out), and
 * `npm run calibrate` refits them.
 *
 * A score depends only on the query, the memory and the memories the search could return: never
 * on other users', agents' or accounts' data, nor on the size of the store around them.
 */

/** Vector-index candidates fused with the keyword candidates in hybrid mode. */
export const CANDIDATES = 50;
/**
 * Keyword-matching memories (and their neighbours) ranked in full per search. When more match, the
 * best-covered are kept, newest first among equals; a query of common words in a huge scope is the
 * only case that reaches it.
 */
export const KEYWORD_POOL = 500;
/**
 * The hybrid score's constants:
 * - `keywordWeight`: weight of keyword coverage; the rest is cosine similarity.
 * - `neighbourShare`, `neighbourCap`: a memory inherits this share of its best neighbour's coverage
 *   (seq ± 1 of the same user), up to the cap. Context for a match then ranks just below it in a
 *   conversation, but in a store of unrelated facts the fact added next to a match does not pass
 *   the default threshold on that alone (it also needs a cosine of about 0.45).
 * - `slope`, `midpoint`: score = σ(slope · (raw − midpoint)), 0.5 at raw = midpoint.
 * - `meaningSlope`, `meaningMidpoint`: a strong match by meaning alone passes 0.5 too (the spec:
 *   "hits may be found without exact word match"): from a cosine of meaningMidpoint up, the score
 *   is at least σ(meaningSlope · (cosine − meaningMidpoint)). Below it this adds nothing, so it
 *   never reorders the weaker candidates (a floor with a sigmoid tail cost 0.01 MRR@10).
 */
export interface HybridParams {
  keywordWeight: number;
  neighbourShare: number;
  neighbourCap: number;
  slope: number;
  midpoint: number;
  meaningSlope: number;
  meaningMidpoint: number;
}

export const HYBRID: Readonly<HybridParams> = {
  keywordWeight: 0.55,
  neighbourShare: 0.8,
  neighbourCap: 0.35,
  slope: 49,
  midpoint: 0.34,
  meaningSlope: 60,
  meaningMidpoint: 0.62,
};

/**
 * Meaning's fallback (hybrid): when no memory of the scope is likely relevant by the hybrid score
 * (none reaches `unless`) and the query has a word English knows, the scope's nearest memory by
 * cosine, if it holds none of the query's words, scores at least
 * σ(slope · (cosine − max(second cosine, floor) − margin)): it passes 0.5 when it stands `margin`
 * above every other memory of the scope (and above `floor`, what unrelated sentences reach).
 * "bike repair" against "My bicycle has a flat rear tire" (cosine 0.57, the next note 0.21).
 * Chosen on bench/everyday's dev users; docs/search-quality.md has the trade-off.
 */
export const LEAD: Readonly<{ slope: number; margin: number; floor: number; unless: number }> = { slope: 20, margin: 0.12, floor: 0.2, unless: 0.5 };

/** The score the scope's nearest memory gets from its lead over the next one (see LEAD). */
export function leadScore(cosine: number, secondCosine: number, p = LEAD): number {
  return sigmoid(p.slope * (clamp01(cosine) - Math.max(secondCosine, p.floor) - p.margin));
}

/**
 * What is true now comes first (hybrid; core/search.ts newerFirst): among the `top` best hits, a
 * newer note of the same user that is about the same thing as an older one ranked above it takes
 * the older one's score, and so, by the tie rule (newest first), its place. "About the same thing":
 * the two notes' embeddings have a cosine of `same` or more, or of `related` or more when the
 * newer one scores `matches` or more for the query on its own; and the newer one is nearly as close
 * to the question by meaning (its cosine to the query at least `asNear` times the older one's).
 * Or a cosine of `sharing` or more when the two share an uncommon word (SUBTLEX-US counts under
 * `uncommon`: "metoprolol", "Brompton", "standup") that doesn't open both notes (a subject both are
 * about: "Oscar swims…" / "Oscar's passport…") and isn't a day or a month: the thing that changed
 * ("Taking metoprolol 25mg" / "Cardiologist bumped the metoprolol up to 50"; round nine).
 * Or, whatever the newer one's cosine to the question, when the newer one says something changed
 * (supersede.ts saysChanged: "ported my number over to Mint" after "Mobile carrier: Verizon"), their
 * cosine is `changed` or more, no other of the user's best hits is as close to the older one, and
 * at most `changedRank` of the user's other best hits are closer to the question by meaning (round
 * ten: a change is told in other words than the fact it replaces, so its cosine to the question is
 * often half the older one's); the older one then takes the newer one's own score, as a replaced
 * note would fall under the threshold.
 * Turns of a conversation are left as they rank (a conversation's past is asked about). Chosen on
 * test/fixtures/supersede's development and check sets and bench/everyday's dev users, and
 * `related` and `asNear` loosened on the later held-out sets (docs/memory-validity.md, rounds three
 * and seven, has the figures).
 * An older note below a newer one that says it changed, for a question that may ask for one value
 * or for several (neither asksForOneValue nor asksForSeveral), scores at most `stale`: just under
 * the default threshold, and still above the notes about something else (round fourteen).
 */
export const NEWER: Readonly<{ top: number; same: number; related: number; matches: number; asNear: number; sharing: number; uncommon: number; changed: number; changedRank: number; stale: number }> = {
  top: 10,
  same: 0.7,
  related: 0.4,
  matches: 0.1,
  asNear: 0.6,
  sharing: 0.3,
  uncommon: 1_000,
  changed: 0.4,
  changedRank: 2,
  stale: 0.49,
};

/** Keyword calibration: score = σ(slope · (coverage − midpoint)). */
export const KEYWORD: Readonly<{ slope: number; midpoint: number }> = { slope: 29, midpoint: 0.225 };

export interface Candidate {
  record: MemoryRecord;
  /** Cosine similarity to the (rewritten) query; hybrid and semantic modes. */
  cosine?: number;
  /** Share of the query's keyword weight the memory contains (core/keyword.ts); 0 when none. */
  coverage?: number;
  /** The larger coverage of its two neighbours in its own conversation (seq − 1, seq + 1 of the same user). */
  neighbourCoverage?: number;
  /**
   * For a memory in no conversation that holds some of the query's words: the share of the query's
   * weight in the words it lacks (0 otherwise). See `hybridRaw`.
   */
  missingShare?: number;
  /**
   * For a memory in no conversation that holds some of the query's words: whether it lacks a name
   * the query gives that other memories of the scope hold (core/search.ts namesOf). See `hybridScore`.
   */
  missingName?: boolean;
  /**
   * For a memory in no conversation: the question asks for a kind of value (a time, an amount, a
   * phone number…; core/answer-kind.ts) and the memory holds none. See `hybridScore`.
   */
  lacksKind?: boolean;
  /**
   * For a note among the nearest by meaning whose coverage counts query words it holds through a
   * bridge (core/bridges.ts): the coverage of its own words alone. Unset otherwise (then `coverage`).
   */
  ownCoverage?: number;
  /** Hybrid: the scope's nearest memory when it shares no word with the query: its `leadScore` (see LEAD). */
  lead?: number;
  /** Hybrid: the memory's embedding, read with its cosine, for comparing the best hits with each other (NEWER). */
  vector?: Float32Array;
}

/** What a hybrid score is computed from: a candidate's evidence, each missing part 0 (or false). */
export type HybridEvidence = Pick<Candidate, "coverage" | "neighbourCoverage" | "cosine" | "missingShare" | "missingName" | "lacksKind">;

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

/** Semantic mode: the cosine similarity clamped to [0, 1], as the API defines `score`. */
export function semanticScore(cosine: number): number {
  return clamp01(cosine);
}

/** Keyword mode: calibrated coverage. A memory holding every query word scores ≈ 1, one holding none ≈ 0. */
export function keywordScore(coverage: number, p: { slope: number; midpoint: number } = KEYWORD): number {
  return sigmoid(p.slope * (coverage - p.midpoint));
}

/**
 * Hybrid evidence before calibration: keyword coverage (or a capped share of a neighbour's) and
 * cosine, fused. The ranking follows it, except where the meaning floor lifts a strong paraphrase.
 *
 * A partial match outside a conversation is discounted by the words it lacks: its coverage is
 * multiplied by 1 − `missingShare`, the query weight of the query words it doesn't contain (so a
 * partial coverage c counts about c²). "What is my favourite movie?" shares "favourite" with "My
 * favourite restaurant is the Georgian place" but not "movie", the word that says what is asked. A
 * note stands alone, so a missing word is missing; a conversation's turn is read with the turns
 * around it, so there it isn't discounted.
 */
export function hybridRaw(e: HybridEvidence, p: HybridParams = HYBRID): number {
  const { coverage = 0, neighbourCoverage = 0, cosine = 0, missingShare = 0 } = e;
  const keyword = Math.max(coverage * (1 - missingShare), Math.min(p.neighbourCap, p.neighbourShare * neighbourCoverage));
  return p.keywordWeight * keyword + (1 - p.keywordWeight) * clamp01(cosine);
}

/**
 * Hybrid mode: σ(slope · (raw − midpoint)), raised to σ(meaningSlope · (cosine − meaningMidpoint))
 * when the cosine reaches meaningMidpoint. A memory with every query word has raw ≥ 0.55 and
 * scores ≥ 0.999; one sharing no word with the query needs a cosine of 0.62, or the lead (LEAD,
 * applied by `rank`).
 *
 * A note that lacks a name the question gives, where other notes of the scope hold it
 * (`missingName`), is about someone or something else: "Randi's phone number 913 44 208" doesn't
 * answer "what's Arne's phone number?" when the user has notes about Arne. Its words count for
 * nothing and the meaning floor doesn't lift it: the model's cosine of two notes of one kind is
 * high whoever they are about (0.7 and more for two phone numbers).
 *
 * So does a note that holds no value of the kind the question asks for (`lacksKind`): "User has a
 * rescue kelpie named Biscuit" doesn't answer "how old is Biscuit?", however rare "Biscuit" is.
 */
export function hybridScore(e: HybridEvidence, p: HybridParams = HYBRID): number {
  const c = clamp01(e.cosine ?? 0);
  const elsewhere = e.missingName || e.lacksKind;
  const raw = hybridRaw({ coverage: e.coverage, neighbourCoverage: e.neighbourCoverage, cosine: c, missingShare: elsewhere ? 1 : e.missingShare }, p);
  const score = sigmoid(p.slope * (raw - p.midpoint));
  return c >= p.meaningMidpoint && !elsewhere ? Math.max(score, sigmoid(p.meaningSlope * (c - p.meaningMidpoint))) : score;
}

export function rank(mode: SearchMode, candidates: Candidate[]): Ranked[] {
  const ranked = candidates.map((c) => ({
    record: c.record,
    score:
      mode === "semantic"
        ? semanticScore(c.cosine ?? 0)
        : mode === "keyword"
          ? keywordScore(c.coverage ?? 0)
          : hybridScore(c),
  }));
  if (mode === "hybrid" && !ranked.some((r) => r.score >= LEAD.unless)) {
    candidates.forEach((c, i) => {
      if (c.lead !== undefined) ranked[i].score = Math.max(ranked[i].score, c.lead);
    });
  }
  return ranked;
}
