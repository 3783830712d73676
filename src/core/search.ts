import { parseSearchMemories, type SearchMemoriesInput } from "../schemas/memory.js";
import type { MemoryFilter, MemoryRecord, MemoryWordHit, RowAt, VectorHit } from "../storage/store.js";
import { embedQuery, type Context } from "./context.js";
import { conversationOf } from "./conversation.js";
import { DAYS, fold, MONTHS } from "./frames.js";
import { observationSubject } from "./observation.js";
import { coverage, englishCount, queryTerms, stemWord, termWeights, type Term } from "./keyword.js";
import { saysChanged, saysItAdds } from "./supersede.js";
import { cosine } from "../embedder/types.js";
import { answerKind, holdsKind } from "./answer-kind.js";
import { BRIDGE, bridgesOf, stemsOf } from "./bridges.js";
import { CANDIDATES, KEYWORD_POOL, LEAD, NEWER, denseQuery, hybridScore, keywordQuery, leadScore, rank, type Candidate, type Ranked } from "./ranking.js";
import { replacedAfterReplacing, validityFilter } from "./validity.js";

/** A search hit (spec §2.1): no metadata, no updatedAt; agentId and tags only when set. */
export interface MemorySearchHit {
  id: string;
  content: string;
  score: number;
  userId: string;
  agentId?: string;
  tags?: string[];
  createdAt: string;
  /** Only with includeSuperseded or asOf (beyond the spec): the memory that replaced this one, and when. */
  supersededBy?: string;
  supersededAt?: string;
}

/**
 * Search in one of three modes (core/ranking.ts says how each scores): `semantic` (embedding
 * cosine), `keyword` (coverage of the query's words) and `hybrid` (both plus conversational
 * neighbours; the default). User, agent and tag filters are applied inside every index query, so
 * other users' data can't crowd a user's results out, and every statistic a score uses is taken
 * within them, so other users' and accounts' data can't move a score either.
 */
export async function searchMemories(ctx: Context, raw: unknown): Promise<{ results: MemorySearchHit[] }> {
  const input = parseSearchMemories(raw);
  const scope = scopeOf(ctx, input);
  // By default (hybrid mode, current memories) the replaced memories are searched too, each lending
  // its score to the memory that replaced it (inherited), and none returned. Not in semantic or
  // keyword mode: there the store's query takes the `limit` best, and replaced ones would take
  // current ones' places.
  const inheriting = scope.current === true && input.mode === "hybrid";
  const candidates = await gatherCandidates(ctx, input, inheriting ? { ...scope, current: undefined } : scope, { prune: true });
  const results = rankHits(input, candidates, inheriting ? await replacersOf(ctx, scope, candidates) : undefined);
  return { results: results.map(({ record, score }) => toSearchHit(record, score)) };
}

/**
 * The memory that is current now for each replaced candidate (following supersededBy to the end
 * of its chain), when the search's scope admits it. Those among the candidates come from there; the
 * others are read, a round per step of a chain (most chains are one step).
 */
async function replacersOf(ctx: Context, scope: MemoryFilter, candidates: Candidate[]): Promise<Map<string, MemoryRecord>> {
  const known = new Map(candidates.map((c) => [c.record.id, c.record]));
  const out = new Map<string, MemoryRecord>();
  let waiting = candidates.filter((c) => c.record.supersededBy).map((c) => ({ from: c.record.id, at: c.record.supersededBy! }));
  for (let step = 0; waiting.length && step < MAX_CHAIN; step++) {
    const missing = [...new Set(waiting.map((w) => w.at).filter((id) => !known.has(id)))];
    if (missing.length) for (const r of await ctx.store.memoriesByIds({ ...scope, current: undefined }, missing)) known.set(r.id, r);
    const next: typeof waiting = [];
    for (const w of waiting) {
      const r = known.get(w.at);
      if (!r) continue; // deleted, or outside the scope (another agent's, other tags)
      if (r.supersededBy) next.push({ from: w.from, at: r.supersededBy });
      else out.set(w.from, r);
    }
    waiting = next;
  }
  return out;
}

/** Steps of a replacement chain a search follows to the memory current now. */
const MAX_CHAIN = 8;

/**
 * Replaced memories out of the ranking, each lending its score to the memory current now in its
 * place: "Keys handed back to the agency, we sleep in the Montreuil house tonight" answers "where
 * do we live?" as well as the "flat above the bakery on Rue Oberkampf" it replaced did, though
 * told in other words. A memory keeps its own score when that is higher. (Round eleven,
 * docs/memory-validity.md.)
 */
function inherited(ranked: Ranked[], replacers: Map<string, MemoryRecord>): Ranked[] {
  const lent = new Map<string, { record: MemoryRecord; score: number }>();
  for (const h of ranked) {
    const r = h.record.supersededBy ? replacers.get(h.record.id) : undefined;
    if (r && h.score > (lent.get(r.id)?.score ?? -Infinity)) lent.set(r.id, { record: r, score: h.score });
  }
  const out = ranked.filter((h) => !h.record.supersededBy).map((h) => {
    const l = lent.get(h.record.id);
    lent.delete(h.record.id);
    return l && l.score > h.score ? { ...h, score: l.score } : h;
  });
  return [...out, ...lent.values()];
}

/**
 * A search's hits from its candidates: scored, newer notes first (hybrid), the `limit` best at or
 * above the threshold, and a replaced memory after its replacement. Exported so a test can rank
 * every candidate (`searchCandidates`) the way a search ranks the pruned ones.
 */
export function rankHits(input: SearchMemoriesInput, candidates: Candidate[], replacers?: Map<string, MemoryRecord>): Ranked[] {
  let ranked = rank(input.mode, candidates);
  if (replacers) ranked = inherited(ranked, replacers);
  if (input.mode === "hybrid") ranked = newerFirst(ranked, candidates, input.query);
  return replacedAfterReplacing(best(ranked, input.threshold, input.limit));
}

/**
 * What is true now comes first (ranking.ts NEWER): among the best hits, a newer note of the same
 * user about the same thing as an older one ranked above it (their embeddings close) takes the
 * older one's score, and with it, by the tie rule, its place, when it is nearly as close to the
 * question by meaning: "Moved to Berlin last month, I live in Kreuzberg now" above "I live in a
 * small flat in Paris" for "where do I live?", whether or not the replacement was detected when it
 * was stored; and a newer note that says something changed ("ported my number over to Mint") above
 * the note it is nearest to ("Mobile carrier: Verizon"), though told in other words, the older one
 * taking the newer one's score in exchange. Nothing is hidden: two facts that are both true both
 * keep their place in the list. Turns of a conversation are left as they rank, and so are
 * observations mm named with their entity ("Luis Ferreira: drives the white F-250"): the shared
 * name makes their embeddings close whatever they say; nor, over a note holding a number the
 * question names, a newer note without it. And when the question asks for one value
 * (asksForOneValue), an older note below a newer one surely about the same thing (close by the
 * model, said changed, or holding no more of the question's words) scores its score times one
 * minus the newer one's, so it usually falls under the threshold; when it asks for neither one
 * value nor several (asksForSeveral), an older note below a newer one that says it changed falls
 * just under the default threshold (NEWER.stale): "Farida moved our 1:1 to Fridays at 11" over "1:1
 * with Farida Mondays 2pm" for "When is my 1:1 with Farida?". The vectors come with the cosines the
 * search reads anyway.
 */
function newerFirst(ranked: Ranked[], candidates: Candidate[], query: string): Ranked[] {
  const top = [...ranked]
    .sort(byScore)
    .slice(0, NEWER.top)
    .filter((h) => conversationOf(h.record.metadata, h.record.tags) === null && observationSubject(h.record.metadata) === undefined);
  // Two hits of one user: one may be lifted over the other, or the other lowered under it (a newer
  // note ranked first on its own still makes an older one stale).
  if (!top.some((h, i) => top.slice(i + 1).some((n) => n.record.userId === h.record.userId))) return ranked;
  const byId = new Map(candidates.map((c) => [c.record.id, c]));
  // A number in the question picks out the note it asks about ("note 7 on chess", "flight TP1337"):
  // a newer note without it doesn't take that note's place.
  const numbers = query.match(/\d+/g) ?? [];
  const lifted = new Map<string, number>();
  /** Older notes a newer one says changed, with the newer one's own score (round ten). */
  const lowered = new Map<string, number>();
  const scoreOf = (h: Ranked) => lifted.get(h.record.id) ?? h.score;
  // Each note's words are stemmed, and read for a word of change or of adding, once, however many pairs it is in.
  const stems = new Map<string, string[]>();
  const stemsOf = (r: MemoryRecord) => stems.get(r.id) ?? stems.set(r.id, wordStems(r.content)).get(r.id)!;
  const changes = new Map<string, boolean>();
  const saysChange = (r: MemoryRecord) => changes.get(r.id) ?? changes.set(r.id, saysChanged(r.content)).get(r.id)!;
  const adds = new Map<string, boolean>();
  const saysAdds = (r: MemoryRecord) => adds.get(r.id) ?? adds.set(r.id, saysItAdds(r.content)).get(r.id)!;
  const others = (a: Ranked, b: Ranked) => top.filter((h) => h !== a && h !== b && h.record.userId === a.record.userId);
  /** Of the user's best hits, the newer note is the nearest to the older one (their cosine `c`). */
  const nearestTo = (older: Ranked, n: Ranked, o: Candidate, c: number) => others(older, n).every((h) => { const v = byId.get(h.record.id)?.vector; return !v || cosine(o.vector!, v) < c; });
  /** It says the older one changed, and is the nearest to it: the change is about that note. */
  const saysItChanged = (older: Ranked, n: Ranked, o: Candidate, c: number) => c >= NEWER.changed && saysChange(n.record) && nearestTo(older, n, o, c);
  // A newer note that says something changed, nearest the older one of all the user's best hits
  // and among the closest to the question by meaning (round ten). The two exchange scores.
  const changedFrom = (older: Ranked, n: Ranked, o: Candidate, m: Candidate, c: number) =>
    saysItChanged(older, n, o, c) &&
    top.filter((h) => h !== n && h.record.userId === n.record.userId && (byId.get(h.record.id)?.cosine ?? 0) > (m.cosine ?? 0)).length <= NEWER.changedRank;
  for (const [i, older] of top.entries()) {
    for (const n of top.slice(i + 1)) {
      if (n.record.userId !== older.record.userId || !newer(n.record, older.record) || scoreOf(n) >= scoreOf(older)) continue;
      if (numbers.some((x) => hasNumber(older.record.content, x) && !hasNumber(n.record.content, x))) continue;
      const [o, m] = [byId.get(older.record.id), byId.get(n.record.id)];
      if (!o?.vector || !m?.vector) continue;
      const c = cosine(o.vector, m.vector);
      const near = (m.cosine ?? 0) >= NEWER.asNear * (o.cosine ?? 0);
      const about = c >= NEWER.same || (c >= NEWER.related && scoreOf(n) >= NEWER.matches) || (c >= NEWER.sharing && sharesUncommonWord(stemsOf(older.record), stemsOf(n.record)));
      if (near && about) lifted.set(n.record.id, scoreOf(older));
      else if (changedFrom(older, n, o, m, c)) {
        // It says the older note changed: the older note takes its score in exchange.
        lowered.set(older.record.id, Math.min(lowered.get(older.record.id) ?? older.score, n.score));
        lifted.set(n.record.id, scoreOf(older));
      }
    }
  }
  const scoreNow = (h: Ranked) => lifted.get(h.record.id) ?? lowered.get(h.record.id) ?? h.score;
  // A question that asks for one value has one answer now: an older note below a newer one about
  // the same thing answers it only as far as the newer one doesn't (round twelve). A question that
  // doesn't ask for several things has its answer in a newer note that says the older one changed
  // (round fourteen); "which deals have closed?" is asked of "The Denver deal closed…" and "The
  // Boulder deal closed…" alike.
  const stale = new Map<string, number>();
  const oneValue = asksForOneValue(query);
  if (oneValue || !asksForSeveral(query)) {
    for (const older of top) {
      for (const n of top) {
        if (n === older || n.record.userId !== older.record.userId || !newer(n.record, older.record) || scoreNow(n) < scoreNow(older) || saysAdds(n.record)) continue;
        const [o, m] = [byId.get(older.record.id), byId.get(n.record.id)];
        if (!o?.vector || !m?.vector) continue;
        const c = cosine(o.vector, m.vector);
        // Surely about the same thing, as ordering alone needn't be: close by the model, or a newer
        // note that says it changed and is the older one's nearest, or one that holds as much of
        // the question's words as the older one, which holds some (round thirteen): "school
        // finishes at 3.45 this term so pickup is later" after "pick up kids 3.15 from school". Not
        // "Mia's sister arrives Christmas Eve" after "Mia's birthday is 3 Nov", for "when is Mia's
        // birthday?": it lacks "birthday".
        const answersToo = (o.coverage ?? 0) > 0 && (m.coverage ?? 0) >= (o.coverage ?? 0);
        const same = oneValue ? c >= NEWER.same || saysItChanged(older, n, o, c) || answersToo : saysItChanged(older, n, o, c);
        // Asked for one value, the older note answers only as far as the newer one doesn't; otherwise
        // it falls just under the default threshold and keeps its place under the newer one.
        const score = oneValue ? scoreNow(older) * (1 - scoreNow(n)) : Math.min(scoreNow(older), NEWER.stale);
        if (same) stale.set(older.record.id, Math.min(stale.get(older.record.id) ?? scoreNow(older), score));
      }
    }
  }
  if (!lifted.size && !stale.size) return ranked;
  return ranked.map((h) => {
    const score = stale.get(h.record.id) ?? lifted.get(h.record.id) ?? lowered.get(h.record.id);
    return score === undefined ? h : { ...h, score };
  });
}

/**
 * Whether a question asks for one value of what it is about, so that two notes about the same
 * thing can't both be its answer now: "what's my dentist's name?", "which bank am I with?", "what's
 * Lina's house number?", "when is the standup?", "how much is the rent?", "where do I live now?" (a
 * word such as "now", "currently", "these days" asks for what is true today). Not a question that
 * asks for several ("what pets do we have?", "what are my allergies?", "who is coming and what can
 * they eat?", "any…", "all…"), nor one about what someone likes, has or can do, of which there are
 * often several ("what food do I like?", "what can Nico do now?"), nor one about what a place holds
 * ("what's in the spare room now?"). "What do I do for work?" or "where do I work?" are left out
 * too: people hold two jobs.
 */
export function asksForOneValue(question: string): boolean {
  const q = fold(question).replace(/[?!.]/g, "").trim();
  const words = q.split(/\s+/u);
  const says = (re: RegExp) => words.some((w) => re.test(w));
  if (says(/^(?:all|both|each|every|and|or|any)$/u) || says(/^(?:like|likes|love|loves|enjoy|enjoys|prefer|prefers|have|has|own|owns|can|could)$/u)) return false;
  if (/^what(?:'s| is) in /u.test(q)) return false;
  if (says(/^(?:now|currently|nowadays|current|latest|anymore|still)$/u) || /(?:^| )(?:these days|at the moment|at present|any more|right now)(?: |$)/u.test(q)) return true;
  // The head noun asked about, the last word of "what's my phone number" or "which mobile carrier am I…", in the singular.
  const one = (phrase: string) => !/s$/u.test(phrase.split(/\s+/u).pop()!) || /(?:ss|us|is|'s)$/u.test(phrase);
  const whose = q.match(/^(?:what|who|which|where|when|how much|what time)(?:'s| is| was)\s+(?:the|my|our|your|his|her|their|(?:the )?[\p{L}-]+'s?)\s+([\p{L}' -]+)$/u);
  if (whose) return one(whose[1].trim());
  const which = q.match(/^(?:which|what)\s+((?:[\p{L}-]+\s+){0,2}?[\p{L}-]+)\s+(?:do|does|am|is|did)(?:\s|$)/u);
  return !!which && !which[1].split(/\s+/u).some((w) => /^(?:do|does|did|am|is|are|was|were|i|we|you|he|she|they|it|the|user)$/u.test(w)) && one(which[1]);
}

/**
 * Whether a question asks for several things, of which two notes can both be an answer now, so that
 * a newer note saying something changed doesn't make an older one stale (newerFirst; round
 * fourteen). Read from its words alone:
 * - a list: "and", "or", "all", "both", "each", "every", "any", "else", "other";
 * - a plural: "what are…", "when are the releases?", "how much are lattes…", or a plural noun after
 *   "what"/"which" ("what food allergies does Ari have?", "which days…");
 * - members of a group: "who in the family…", "which of my cousins…";
 * - what a day or a list holds: "what's on Monday?", "what's new…", "what's booked…", "what does the
 *   building no longer allow?", "what can Nico do now?", "what do I like about…";
 * - what has happened or piled up: "what have I sold…", "when did I last…", "how did I…", "…so
 *   far", "…this week", "…today", "…lately";
 * - what someone has: "what support do I have?" (but "how many cats do we have?" is one count).
 */
export function asksForSeveral(question: string): boolean {
  const q = fold(question).replace(/[?!.]/g, "").trim();
  if (q.split(/\s+/u).some((w) => /^(?:and|or|all|both|each|every|any|else|other|others)$/u.test(w))) return true;
  if (/\b(?:are|were)\b/u.test(q) || /^(?:who|which|what) (?:in|of|among|from)\b/u.test(q)) return true;
  if (/^(?:what|which|who|when|where|how)(?:'s| is) (?:on|new|booked|planned|due)\b/u.test(q) || /\b(?:no longer|like about)\b/u.test(q)) return true;
  if (/\bnow\b/u.test(q) && /\b(?:can|could|have|has)\b/u.test(q)) return true;
  if (/^(?:what|which|who|when|where|how|why)\b.*\b(?:have|has|did)\s+[\p{L}-]+/u.test(q)) return true;
  if (/\b(?:so far|lately|recently|this week|this month|this year|today)\b/u.test(q)) return true;
  if (/\b(?:have|has|own|owns)$/u.test(q) && !/^how many\b/u.test(q)) return true;
  const head = q.match(/^(?:what|which)\s+((?:[\p{L}-]+\s+){0,2}?[\p{L}-]+)\s+(?:do|does|did|am|is|have|has|was|go|goes)\b/u);
  return !!head && /s$/u.test(head[1]) && !/(?:ss|us|is|'s)$/u.test(head[1]);
}

/** Days and months (and their abbreviations) as stems: two notes on one day are not about one thing. */
const CALENDAR = new Set(`${DAYS}|${MONTHS}`.split("|").map(stemWord));

/** A note's words as stems (a possessive "'s" dropped), in order. */
function wordStems(text: string): string[] {
  return (text.match(/\p{L}[\p{L}'’-]*/gu) ?? []).map((w) => stemWord(w.replace(/['’]s$/u, "")));
}

/**
 * Whether two notes (their words' stems, `wordStems`) share a word English rarely uses (fewer than
 * NEWER.uncommon occurrences in SUBTLEX-US): what a change is about, "metoprolol" or "Brompton",
 * whatever the new value is. Not a word that opens both notes, which names who or what both are
 * about ("Oscar swims…" / "Oscar's passport…", "User prefers…" / "User's birthday…"), nor a day or
 * a month.
 */
function sharesUncommonWord(a: string[], b: string[]): boolean {
  const uncommon = (w: string) => w.length >= 3 && !CALENDAR.has(w) && englishCount(w) < NEWER.uncommon && !(w === a[0] && w === b[0]);
  const inOlder = new Set(a.filter(uncommon));
  return b.some((w) => inOlder.has(w));
}

/** Whether `text` holds the number `n` as a number of its own (not within a longer one: "47" doesn't hold "7"). */
function hasNumber(text: string, n: string): boolean {
  return (text.match(/\d+/g) ?? ([] as string[])).includes(n);
}

/** Created later; within one batch (the same createdAt), stored later. */
function newer(a: MemoryRecord, b: MemoryRecord): boolean {
  return a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.userId === b.userId && a.seq > b.seq);
}

/**
 * The memories a search would rank, with the evidence its score is computed from (cosine, keyword
 * coverage, neighbours' coverage), before calibration and the threshold, and without the pruning
 * that skips candidates the current constants can't rank high enough. For the calibration script
 * (scripts/calibrate.mjs) and tests; the API never returns these.
 */
export async function searchCandidates(ctx: Context, raw: unknown): Promise<Candidate[]> {
  const input = parseSearchMemories(raw);
  return gatherCandidates(ctx, input, scopeOf(ctx, input), { prune: false });
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

/** What a search may look at: the account and the input's filters, and which memories are valid (asOf, includeSuperseded). */
function scopeOf(ctx: Context, input: SearchMemoriesInput): MemoryFilter {
  return {
    accountId: ctx.accountId,
    userId: input.userId,
    agentId: input.agentId,
    tags: input.tags,
    entityId: input.entityId,
    metadata: input.metadata,
    ...validityFilter(input),
  };
}

/** Keyword candidates whose exact cosine is fetched together (hybrid mode). */
const COSINE_BATCH = 50;

async function gatherCandidates(ctx: Context, input: SearchMemoriesInput, filter: MemoryFilter, options: { prune: boolean }): Promise<Candidate[]> {
  if (input.mode === "semantic") {
    return (await ctx.store.searchMemories(embedQuery(ctx, input.query), filter, input.limit)).map((h) => ({ record: h.record, cosine: 1 - h.distance }));
  }
  const terms = queryTerms(keywordQuery(input.query));
  if (input.mode === "keyword") {
    if (!terms.length) return [];
    const matches = await keywordMatches(ctx, terms, filter);
    // Keyword scores follow coverage alone, so only the `limit` best-covered need their records.
    const top = matches.pool().filter((p) => p.coverage > 0);
    top.sort((a, b) => b.coverage - a.coverage || cmp(b.id!, a.id!));
    const records = await ctx.store.memoriesByIds(filter, top.slice(0, options.prune ? input.limit : KEYWORD_POOL).map((p) => p.id!));
    return records.map((record) => ({ record, coverage: matches.evidenceOf(record).coverage }));
  }

  // The keyword lookups and the vector search's routing run while the query embeds; the vector
  // search itself starts as soon as the embedding is there. In object storage, hits found through
  // a vector index come without their vectors, read afterwards for the few that newerFirst
  // compares (topVectors).
  const embedding = embedQuery(ctx, denseQuery(input.query));
  const [vector, matches, vectorHits] = await Promise.all([
    embedding,
    terms.length ? keywordMatches(ctx, terms, filter, namesOf(input.query)) : undefined,
    ctx.store.searchMemories(embedding, filter, CANDIDATES, { withVectors: true }),
  ]);
  const byId = new Map<string, Candidate>();
  /** Where each hit's row is, when it came without its vector (topVectors). */
  const rowsAt = new Map<string, RowAt>();
  // A note that holds no value of the kind the question asks for ("how old is Biscuit?") doesn't
  // answer it (answer-kind.ts); a conversation's turn may have its value in the next turn.
  const kind = answerKind(input.query);
  // Bridges (bridges.ts) are looked for in the notes nearest by meaning alone: a keyword candidate
  // further away is ranked by its own words, so pruning's bound holds for it.
  const add = ({ record, distance, vector, at }: VectorHit, bridged: boolean) => {
    if (at) rowsAt.set(record.id, at);
    byId.set(record.id, {
      record,
      cosine: 1 - distance,
      vector,
      ...(matches?.evidenceOf(record, bridged) ?? { coverage: 0, neighbourCoverage: 0, missingShare: 0, missingName: false }),
      lacksKind: kind !== undefined && !holdsKind(record.content, kind) && conversationOf(record.metadata, record.tags) === null,
    });
  };
  for (const h of vectorHits) add(h, true);
  // Fewer vector hits than asked for means the scope has no other memory: every keyword match and
  // neighbour is among them already.
  if (!matches || vectorHits.length < CANDIDATES) return topVectors(ctx, filter, withLead([...byId.values()], terms, 0), rowsAt);

  // Keyword matches and their neighbours (seq ± 1 of the same user: context for a match is often the
  // turn before or after it) need their exact cosine. A memory outside the vector search's nearest
  // has a cosine no higher than the farthest of them, which bounds its score: once the best
  // remaining keyword candidate can't beat the `limit`-th score so far, none of the rest can. (A
  // bound that left out the discount for missing words would stay high while the scores fall, and
  // fetch every batch: hybrid p50 22 -> 68 ms in the 10k bench before the discount was counted.)
  const farthest = Math.min(...vectorHits.map((h) => 1 - h.distance));
  const pool = matches.pool().filter((p) => !(p.id && byId.has(p.id)));
  // Each entry's bound worked out once, not once per comparison of the sort.
  const bounds = new Map(pool.map((p) => [p, hybridScore({ ...p, cosine: farthest })]));
  const bound = (p: (typeof pool)[number]) => bounds.get(p)!;
  pool.sort((a, b) => bound(b) - bound(a) || cmp(b.id ?? "", a.id ?? "") || b.seq - a.seq);
  let unfetched = 0;
  for (let i = 0; i < Math.min(pool.length, KEYWORD_POOL); i += COSINE_BATCH) {
    if (options.prune) {
      // The best NEWER.top are needed whatever the limit: newerFirst compares them.
      const limit = Math.max(input.limit, NEWER.top);
      const threshold = Math.min(input.threshold, NEWER.matches);
      const kept = best(rank("hybrid", [...byId.values()]), threshold, limit);
      const cut = kept.length < limit ? threshold : kept[kept.length - 1].score;
      if (bound(pool[i]) < cut) {
        unfetched = bound(pool[i]);
        break;
      }
    }
    const batch = pool.slice(i, Math.min(i + COSINE_BATCH, KEYWORD_POOL));
    const ids = batch.flatMap((p) => (p.id ? [p.id] : []));
    const seqs = new Map<string, number[]>();
    for (const p of batch) if (!p.id) seqs.set(p.userId, [...(seqs.get(p.userId) ?? []), p.seq]);
    for (const h of await ctx.store.nearestAmong(vector, filter, { ids, seqs }, true)) if (!byId.has(h.record.id)) add(h, false);
  }
  return topVectors(ctx, filter, withLead([...byId.values()], terms, unfetched), rowsAt);
}

/**
 * The vectors newerFirst compares, the best NEWER.top candidates' (as hybrid ranks them), where
 * candidates came without vectors (found through an index in object storage:
 * StoreTuning.vectorsFromIndex): one read of those few rows instead of every candidate's vector.
 */
async function topVectors(ctx: Context, filter: MemoryFilter, candidates: Candidate[], rowsAt: Map<string, RowAt>): Promise<Candidate[]> {
  if (!ctx.store.tuning.vectorsFromIndex) return candidates;
  const byId = new Map(candidates.map((c) => [c.record.id, c]));
  const lacking = rank("hybrid", candidates)
    .sort(byScore)
    .slice(0, NEWER.top)
    .filter((h) => !byId.get(h.record.id)!.vector)
    .map((h) => h.record.id);
  if (!lacking.length) return candidates;
  const vectors = await ctx.store.vectorsOf(filter, lacking.map((id) => ({ id, at: rowsAt.get(id) })));
  for (const id of lacking) byId.get(id)!.vector = vectors.get(id);
  return candidates;
}

/**
 * Marks the scope's nearest memory with its lead over the next (ranking.ts LEAD) when it shares no
 * word with the query and the query has a word English knows. `rank` applies it only when no
 * memory reaches LEAD.unless by the hybrid score; `unfetchedBound` bounds the hybrid score of the
 * keyword candidates pruning left out, so the lead isn't set when one of them might reach it.
 * The candidates hold the scope's nearest memories, so the two best cosines here are the scope's.
 */
function withLead(candidates: Candidate[], terms: Term[], unfetchedBound: number): Candidate[] {
  if (unfetchedBound >= LEAD.unless || !terms.some((t) => englishCount(t.stem) > 0)) return candidates;
  const byCosine = [...candidates].sort((a, b) => (b.cosine ?? 0) - (a.cosine ?? 0));
  const top = byCosine[0];
  // Only a lead that passes counts: a weaker one would reorder memories it doesn't speak for (a
  // note that merely shares no word ranked above the partial matches of a question's words).
  const lead = top && !(top.ownCoverage ?? top.coverage ?? 0) && !top.lacksKind ? leadScore(top.cosine ?? 0, byCosine[1]?.cosine ?? 0) : 0;
  if (lead >= LEAD.unless) top.lead = lead;
  return candidates;
}

/** Most memories a query word is looked up in: beyond it, the word counts as occurring in this many. */
const WORD_LOOKUP_MAX = 5_000;

/** A keyword candidate: a matched memory (with its id) or the unmatched neighbour of one (a position only). */
interface PoolEntry {
  id?: string;
  userId: string;
  seq: number;
  coverage: number;
  /** For a matched memory, its conversation neighbours' best coverage; for an unmatched neighbour, a bound on it. */
  neighbourCoverage: number;
  /** For a matched memory in no conversation, the query weight share of the words it lacks (ranking.ts hybridRaw); else 0. */
  missingShare: number;
  /** For a matched memory in no conversation, whether it lacks a name of the query that other memories of the scope hold (ranking.ts hybridScore). */
  missingName: boolean;
}

/**
 * The stems of the names whose possession a question asks about: the capitalised words before an
 * "'s" ("what's Arne's phone number?" → arne; "Jens Bauer's email" → jens, bauer). A name that only
 * sets the scene ("what's my flight to Lisbon?", "the door code for the Kraków Airbnb") is left
 * out: a newer note about the same flight or door often doesn't repeat it ("TAP cancelled my
 * morning flight…"), and counting such names cost three replaced-fact scenarios their newest note
 * ranked first (docs/search-quality.md).
 */
export function namesOf(query: string): Set<string> {
  const names = new Set<string>();
  for (const m of query.matchAll(/(?<![\p{L}\p{N}])((?:\p{Lu}[\p{L}-]*\.?\s+)*\p{Lu}[\p{L}-]*)['’]s(?![\p{L}\p{N}])/gu)) {
    for (const w of m[1].split(/\s+/u)) names.add(stemWord(w.replace(/\.$/u, "")));
  }
  return names;
}

/**
 * Which of the scope's memories contain which query words (from the full-text index, one lookup per
 * word), how many memories the scope holds, and so each memory's keyword coverage and its
 * neighbours', and for a note, the query words it holds through a bridge (bridges.ts). Everything
 * here is scoped to the search's own filter: other users' and accounts' memories never enter a
 * weight.
 *
 * Neighbours (seq ± 1 of the same user) lend coverage only when both are turns of the same
 * conversation (core/conversation.ts): a person's separate notes lend each other nothing.
 */
async function keywordMatches(ctx: Context, terms: Term[], filter: MemoryFilter, names = new Set<string>()) {
  const [size, ...perTerm] = await Promise.all([ctx.store.countMemories(filter), ...terms.map((t) => ctx.store.memoriesWithWord(t.word, filter, WORD_LOOKUP_MAX))]);
  const weights = termWeights(terms, { size, docFreq: perTerm.map((rows) => rows.length) });
  const at = (userId: string, seq: number) => `${userId}\u0000${seq}`;
  const matched = new Map<string, MemoryWordHit & { terms: Set<number> }>();
  perTerm.forEach((rows, i) => {
    for (const r of rows) {
      const m = matched.get(r.id) ?? { ...r, terms: new Set<number>() };
      m.terms.add(i);
      matched.set(r.id, m);
    }
  });
  const absentTotal = weights.absent.reduce((a, b) => a + b, 0);
  /** The query's names that some memory of the scope holds. */
  const named = terms.flatMap((t, i) => (names.has(t.stem) && perTerm[i].length ? [i] : []));
  type Info = { coverage: number; missing: number; missingName: boolean; conversation: string | null };
  /** Each matched memory's coverage, the query weight share of the words it lacks, whether it lacks a name, and its conversation. */
  const infos = new Map<string, Info>();
  /** The same, by position (user and seq), for the neighbours' evidence. */
  const byPosition = new Map<string, Info>();
  /**
   * A memory's evidence from how much of each query word it holds (`held`: 1 its own word,
   * BRIDGE.share one it holds through a bridge, 0 none): its coverage (keyword.ts), the query weight
   * share of what it lacks, and whether it lacks, as its own word, a name of the query that other
   * memories hold.
   */
  const holding = (held: (i: number) => number) => {
    let lacks = 0;
    for (let i = 0; i < terms.length; i++) lacks += (1 - held(i)) * weights.absent[i];
    return { coverage: coverage(weights, held), missing: absentTotal > 0 ? lacks / absentTotal : 0, missingName: named.some((i) => held(i) !== 1) };
  };
  for (const m of matched.values()) {
    const info = { ...holding((i) => (m.terms.has(i) ? 1 : 0)), conversation: conversationOf(m.metadata, m.tags) };
    infos.set(m.id, info);
    if (m.seq > 0) byPosition.set(at(m.userId, m.seq), info);
  }
  /** The best coverage among the matched neighbours (seq ± 1) whose conversation `accepts` takes. */
  const neighbourBest = (userId: string, seq: number, accepts: (conversation: string | null) => boolean) => {
    let best = 0;
    for (const n of [byPosition.get(at(userId, seq - 1)), byPosition.get(at(userId, seq + 1))]) if (n && accepts(n.conversation)) best = Math.max(best, n.coverage);
    return best;
  };
  /**
   * A memory's keyword evidence: its coverage; its neighbours' best coverage in its own
   * conversation (0 outside any); and, outside a conversation, the query weight share of the query
   * words it lacks (ranking.ts hybridRaw).
   */
  const evidence = (id: string, userId: string, seq: number, conversation: string | null) => {
    const info = infos.get(id);
    return {
      coverage: info?.coverage ?? 0,
      neighbourCoverage: seq > 0 && conversation !== null ? neighbourBest(userId, seq, (c) => c === conversation) : 0,
      missingShare: conversation === null ? (info?.missing ?? 0) : 0,
      missingName: conversation === null && (info?.missingName ?? false),
    };
  };
  /**
   * A note's evidence with the query words it holds through a bridge (bridges.ts) counted at
   * BRIDGE.share of their weight, in its coverage and in what it lacks; `ownCoverage` keeps the
   * coverage of its own words (the lead, LEAD, is for a note that holds none). A name of the query
   * is never bridged, so a bridged note that lacks one is about someone else, as a matched one is.
   * Unchanged when no word bridges.
   */
  const bridged = (r: MemoryRecord, own: ReturnType<typeof evidence>) => {
    const has = matched.get(r.id)?.terms;
    let stems: Set<string> | undefined;
    const through = terms.map((t, i) => {
      if (has?.has(i)) return false;
      const others = bridgesOf(t.stem);
      if (!others.size) return false;
      stems ??= stemsOf(r.content);
      for (const s of stems) if (others.has(s)) return true;
      return false;
    });
    if (!through.includes(true)) return own;
    const e = holding((i) => (has?.has(i) ? 1 : through[i] ? BRIDGE.share : 0));
    return { ...own, coverage: e.coverage, missingShare: e.missing, missingName: e.missingName, ownCoverage: own.coverage };
  };
  return {
    /**
     * A fetched memory's evidence; a matched one's conversation is already known. With `bridges`, a
     * note's words that bridge to the query's count too.
     */
    evidenceOf: (r: MemoryRecord, bridges = false) => {
      const conversation = infos.has(r.id) ? infos.get(r.id)!.conversation : conversationOf(r.metadata, r.tags);
      const own = evidence(r.id, r.userId, r.seq, conversation);
      return bridges && conversation === null ? bridged(r, own) : own;
    },
    /**
     * Matched memories, and the unmatched neighbours in a conversation of matched ones (by position;
     * no id yet). A neighbour's conversation isn't known until it is fetched: its bound takes any
     * neighbour that is in a conversation.
     */
    pool(): PoolEntry[] {
      const out: PoolEntry[] = [];
      for (const [id, info] of infos) {
        const m = matched.get(id)!;
        out.push({ id, userId: m.userId, seq: m.seq, ...evidence(id, m.userId, m.seq, info.conversation) });
      }
      const seen = new Set(byPosition.keys());
      for (const m of matched.values()) {
        if (m.seq <= 0 || infos.get(m.id)!.conversation === null) continue;
        for (const seq of [m.seq - 1, m.seq + 1]) {
          if (seq < 1 || seen.has(at(m.userId, seq))) continue;
          seen.add(at(m.userId, seq));
          out.push({ userId: m.userId, seq, coverage: 0, neighbourCoverage: neighbourBest(m.userId, seq, (c) => c !== null), missingShare: 0, missingName: false });
        }
      }
      return out;
    },
  };
}

function toSearchHit(r: MemoryRecord, score: number): MemorySearchHit {
  const hit: MemorySearchHit = { id: r.id, content: r.content, score, userId: r.userId } as MemorySearchHit;
  if (r.agentId !== null) hit.agentId = r.agentId;
  if (r.tags.length) hit.tags = r.tags;
  hit.createdAt = r.createdAt;
  if (r.supersededBy) Object.assign(hit, { supersededBy: r.supersededBy, supersededAt: r.supersededAt ?? undefined });
  return hit;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
