import { parseSearchMemories, type SearchMemoriesInput } from "../schemas/memory.js";
import type { MemoryFilter, MemoryRecord, MemoryWordHit } from "../storage/store.js";
import { embedQuery, type Context } from "./context.js";
import { conversationOf } from "./conversation.js";
import { queryTerms, type Term } from "./keyword.js";
import { CANDIDATES, KEYWORD_POOL, keywordQuery, keywordScore, semanticScore, type Candidate, type Ranked } from "./ranking.js";
import { asAskedByUser, explain, keywordShare, paramsFor, turnEvidence, turnLength, type Explanation, type ScorerParams, type Signals, unit } from "./scorer.js";
import { replacedAfterReplacing, validityFilter } from "./validity.js";

/** A search hit (spec §2.1): no metadata, no updatedAt; agentId and tags only when set. */
export interface MemorySearchHit {
  id: string;
  content: string;
  score: number;
  userId: string;
  agentId?: string;
  tags?: string[];
  /** Beyond the spec (core/project.ts): the memory's project; absent for a global memory. */
  project?: string;
  createdAt: string;
  /** Only with includeSuperseded or asOf (beyond the spec): the memory that replaced this one, and when. */
  supersededBy?: string;
  supersededAt?: string;
  /** Only with `explain` (beyond the spec): the signals of the query and this memory, and what each added. */
  explanation?: HitExplanation;
}

/** How a hit's score came about: its signals and each one's part of the score's logit (hybrid), or the mode's one signal. */
export type HitExplanation =
  | ({ mode: "hybrid" } & Explanation)
  | { mode: "semantic"; score: number; signals: { cosine: number } }
  | { mode: "keyword"; score: number; signals: { keyword: number } };

/**
 * Search in one of three modes: `semantic` (the embedding cosine), `keyword` (the share of the
 * query's words the memory holds) and `hybrid` (the default: one fitted function of both, with
 * constants of their own for conversation turns; core/scorer.ts). A memory's score depends on the
 * query and that memory only: never on which other memories are stored beside it. User, agent and
 * tag filters are applied inside every index query, so other users' data can't crowd a user's
 * results out. Replaced memories are left out unless asked for (includeSuperseded, asOf), through
 * the links recorded when they were replaced.
 */
export async function searchMemories(ctx: Context, raw: unknown): Promise<{ results: MemorySearchHit[] }> {
  const input = parseSearchMemories(raw);
  const scope = scopeOf(ctx, input);
  const params = paramsFor(embedderId(ctx));
  const candidates = await gatherCandidates(ctx, input, scope, params, { prune: true });
  const results = rankHits(input, candidates, params);
  return { results: results.map((h) => toSearchHit(h, input.explain === true)) };
}

/** The store's embedder as `<provider>:<model>`, the key its scorer parameters are fitted under. */
export function embedderId(ctx: Context): string {
  const e = ctx.store.config.embedder;
  return `${e.provider}:${e.model}`;
}

/** A ranked hit with how its score came about. */
export interface ScoredHit extends Ranked {
  explanation: HitExplanation;
}

/**
 * A search's hits from its candidates: each scored on its own, the `limit` best at or above the
 * threshold (ties newest first), a replaced memory after its replacement. Exported so a test can
 * rank every candidate (`searchCandidates`) the way a search ranks the pruned ones.
 */
export function rankHits(input: SearchMemoriesInput, candidates: Candidate[], params: ScorerParams): ScoredHit[] {
  const scored = candidates.map((c) => scoreOf(input.mode, c, params));
  return replacedAfterReplacing(best(scored, input.threshold, input.limit));
}

/** One candidate's score in a mode, from its own signals. */
export function scoreOf(mode: SearchMemoriesInput["mode"], c: Candidate, params: ScorerParams): ScoredHit {
  if (mode === "semantic") {
    const score = semanticScore(c.cosine ?? 0);
    return { record: c.record, score, explanation: { mode, score, signals: { cosine: unit(c.cosine ?? 0) } } };
  }
  if (mode === "keyword") {
    const score = keywordScore(c.coverage ?? 0);
    return { record: c.record, score, explanation: { mode, score, signals: { keyword: c.coverage ?? 0 } } };
  }
  const e = explain(signalsOf(c), params);
  return { record: c.record, score: e.score, explanation: { mode: "hybrid", ...e } };
}

/** A candidate's hybrid signals. */
export function signalsOf(c: Omit<Candidate, "record">): Signals {
  return c.turn ? { cosine: unit(c.cosine ?? 0), keyword: c.coverage ?? 0, turn: 1, speaker: c.speaker ?? 0, length: c.length ?? 0 } : { cosine: unit(c.cosine ?? 0), keyword: c.coverage ?? 0, turn: 0 };
}

/**
 * The memories a search would rank, with the signals their scores are computed from, before the
 * threshold and without the pruning that skips candidates that can't reach the `limit` best. For
 * tests; the API never returns these.
 */
export async function searchCandidates(ctx: Context, raw: unknown): Promise<Candidate[]> {
  const input = parseSearchMemories(raw);
  return gatherCandidates(ctx, input, scopeOf(ctx, input), paramsFor(embedderId(ctx)), { prune: false });
}

/** The `limit` best at or above `threshold`: score descending, ties newest first. */
function best<T extends Ranked>(scored: T[], threshold: number, limit: number): T[] {
  return scored
    .filter((h) => Number.isFinite(h.score) && h.score >= threshold)
    .sort(byScore)
    .slice(0, limit);
}

/** Score descending; ties newest first. */
function byScore(a: Ranked, b: Ranked): number {
  return b.score - a.score || (newer(b.record, a.record) ? 1 : newer(a.record, b.record) ? -1 : 0);
}

/** Created later; within one batch (the same createdAt), stored later. */
function newer(a: MemoryRecord, b: MemoryRecord): boolean {
  return a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.userId === b.userId && a.seq > b.seq);
}

/** What a search may look at: the account and the input's filters, and which memories are valid (asOf, includeSuperseded). */
function scopeOf(ctx: Context, input: SearchMemoriesInput): MemoryFilter {
  return {
    accountId: ctx.accountId,
    userId: input.userId,
    agentId: input.agentId,
    tags: input.tags,
    entityId: input.entityId,
    metadata: input.metadata,
    project: input.project,
    projectOnly: input.projectOnly,
    ...validityFilter(input),
  };
}

/** Keyword candidates whose exact cosine is fetched together (hybrid mode). */
const COSINE_BATCH = 50;

/** The query as a search reads it: an agent's "the user" as the user's own "I" (scorer.ts asAskedByUser). */
function analysed(query: string): { embedded: string; terms: Term[] } {
  const asked = asAskedByUser(query);
  return { embedded: asked, terms: queryTerms(keywordQuery(asked)) };
}

/** The candidates of a search; `params` bound what a keyword candidate not yet fetched could score. */
async function gatherCandidates(ctx: Context, input: SearchMemoriesInput, filter: MemoryFilter, params: ScorerParams, options: { prune: boolean }): Promise<Candidate[]> {
  const { embedded, terms } = analysed(input.query);
  if (input.mode === "semantic") {
    return (await ctx.store.searchMemories(embedQuery(ctx, embedded), filter, input.limit)).map((h) => ({ record: h.record, cosine: 1 - h.distance }));
  }
  if (input.mode === "keyword") {
    if (!terms.length) return [];
    const matches = await keywordMatches(ctx, terms, filter);
    // Keyword scores follow coverage alone, so only the `limit` best-covered need their records.
    const top = matches.pool().filter((p) => p.coverage > 0);
    top.sort((a, b) => b.coverage - a.coverage || cmp(b.id, a.id));
    const records = await ctx.store.memoriesByIds(filter, top.slice(0, options.prune ? input.limit : KEYWORD_POOL).map((p) => p.id));
    return records.map((record) => ({ record, coverage: matches.coverageOf(record.id) }));
  }

  // The keyword lookups run while the query embeds; the vector search starts as soon as the
  // embedding is there.
  const embedding = embedQuery(ctx, embedded);
  const [vector, matches, vectorHits] = await Promise.all([embedding, terms.length ? keywordMatches(ctx, terms, filter) : undefined, ctx.store.searchMemories(embedding, filter, CANDIDATES)]);
  const byId = new Map<string, Candidate>();
  const add = (record: MemoryRecord, distance: number) => {
    const turn = conversationOf(record.metadata, record.tags) !== null;
    byId.set(record.id, { record, cosine: 1 - distance, turn, ...wordSignals(terms, matches, record.id, record.content, turn) });
  };
  for (const h of vectorHits) add(h.record, h.distance);
  // Fewer vector hits than asked for means the scope has no other memory: every keyword match is
  // among them already.
  if (!matches || vectorHits.length < CANDIDATES) return [...byId.values()];

  // Keyword matches need their exact cosine. One outside the vector search's nearest has a cosine no higher than the
  // farthest of them, which bounds its score (the score rises with every signal): once the best
  // remaining keyword candidate can't beat the `limit`-th score so far, none of the rest can.
  const farthest = Math.min(...vectorHits.map((h) => 1 - h.distance));
  const pool = matches.pool().filter((p) => !byId.has(p.id));
  // A keyword candidate's bound: its score at that cosine (its other signals are known from the lookups).
  const boundOf = (p: PoolEntry) => explain(signalsOf({ cosine: farthest, turn: p.turn, ...wordSignals(terms, matches, p.id, p.content, p.turn) }), params).score;
  const bounds = new Map(pool.map((p) => [p, boundOf(p)]));
  const bound = (p: PoolEntry) => bounds.get(p)!;
  pool.sort((a, b) => bound(b) - bound(a) || cmp(b.id, a.id));
  const end = Math.min(pool.length, KEYWORD_POOL);
  for (let i = 0; i < end; ) {
    let next = Math.min(i + COSINE_BATCH, end);
    if (options.prune) {
      const kept = best(
        [...byId.values()].map((c) => scoreOf("hybrid", c, params)),
        input.threshold,
        input.limit,
      );
      const cut = kept.length < input.limit ? input.threshold : kept[kept.length - 1].score;
      if (bound(pool[i]) < cut) break;
      // Every candidate whose bound reaches the cut, in one fetch: the cut only rises as candidates
      // are added, so none after them can reach it, and one fetched that doesn't can't reach the
      // `limit` best either (its score is under its bound). Batches of 50 fetched one after another
      // cost the URL hook (threshold 0.05: most keyword matches reach the cut) about 9 ms each on
      // 400 memories; one fetch of 150 costs little more than one of 50.
      while (next < end && bound(pool[next]) >= cut) next = Math.min(next + COSINE_BATCH, end);
    }
    const ids = pool.slice(i, next).map((p) => p.id);
    for (const h of await ctx.store.nearestAmong(vector, filter, { ids, seqs: new Map() })) if (!byId.has(h.record.id)) add(h.record, h.distance);
    i = next;
  }
  return [...byId.values()];
}

type KeywordMatches = Awaited<ReturnType<typeof keywordMatches>>;

/**
 * A candidate's signals besides its cosine, from its words: its keyword share, and for a turn
 * whether the query names its speaker (scorer.ts turnEvidence) and its length.
 */
function wordSignals(terms: Term[], matches: KeywordMatches | undefined, id: string, content: string, turn: boolean): Pick<Candidate, "coverage" | "speaker" | "length"> {
  if (!turn) return { coverage: matches?.coverageOf(id) ?? 0 };
  const e = turnEvidence(terms, (i) => matches?.holds(id, i) ?? false, content);
  return { coverage: e.keyword, speaker: e.speaker, length: turnLength(content) };
}

/** Most memories a query word's lookup returns: a word held by more is keyword evidence for these alone (the vector search still finds the rest by meaning). */
const WORD_LOOKUP_MAX = 5_000;

/** A keyword candidate: a memory that holds some of the query's words. */
interface PoolEntry {
  id: string;
  seq: number;
  coverage: number;
  /** A conversation turn (core/conversation.ts), scored with the turns' constants. */
  turn: boolean;
  /** What a turn's speaker and length are read from. */
  content: string;
}

/**
 * Which of the scope's memories contain which query words (from the full-text index: one query for
 * all of them where it can, storage/memories.ts memoriesWithWords), and so each memory's keyword
 * share (scorer.ts keywordShare: English word weights, the same in every store).
 */
async function keywordMatches(ctx: Context, terms: Term[], filter: MemoryFilter) {
  const perTerm = await ctx.store.memoriesWithWords(terms.map((t) => t.word), filter, WORD_LOOKUP_MAX);
  const matched = new Map<string, MemoryWordHit & { terms: Set<number> }>();
  perTerm.forEach((rows, i) => {
    for (const r of rows) {
      const m = matched.get(r.id) ?? { ...r, terms: new Set<number>() };
      m.terms.add(i);
      matched.set(r.id, m);
    }
  });
  const coverage = new Map([...matched.values()].map((m) => [m.id, keywordShare(terms, (i) => m.terms.has(i))]));
  return {
    /** A memory's keyword share (0 when it holds no query word). */
    coverageOf: (id: string) => coverage.get(id) ?? 0,
    /** Whether the memory holds query term `i`. */
    holds: (id: string, i: number) => matched.get(id)?.terms.has(i) ?? false,
    /** Every matched memory. */
    pool: (): PoolEntry[] => [...matched.values()].map((m) => ({ id: m.id, seq: m.seq, coverage: coverage.get(m.id)!, turn: conversationOf(m.metadata, m.tags) !== null, content: m.content })),
  };
}

function toSearchHit({ record: r, score, explanation }: ScoredHit, withExplanation: boolean): MemorySearchHit {
  const hit: MemorySearchHit = { id: r.id, content: r.content, score, userId: r.userId } as MemorySearchHit;
  if (r.agentId !== null) hit.agentId = r.agentId;
  if (r.tags.length) hit.tags = r.tags;
  if (r.project) hit.project = r.project;
  hit.createdAt = r.createdAt;
  if (r.supersededBy) Object.assign(hit, { supersededBy: r.supersededBy, supersededAt: r.supersededAt ?? undefined });
  if (withExplanation) hit.explanation = explanation;
  return hit;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
