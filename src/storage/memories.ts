import { cosine } from "../embedder/types.js";
import { MmError } from "../errors.js";
import { userKey, type CurrentRows } from "./current-rows.js";
import type { RecentView, RecentWrites } from "./recent-writes.js";
import { contentTerms, indexTerm } from "./fts-terms.js";
import { MAX_VECTOR_PARTITIONS, vectorIndexOf, type VectorIndexInfo } from "./indexes.js";
import { isVersionGone, loadLance, sqlString, sqlStringList, type Table, type VectorQuery } from "./lance.js";
import { cmp, newestFirstPage, NEWEST_FIRST, OLDEST_FIRST, type PageWindow } from "./pages.js";
import type { Segment } from "./segments.js";
import type { SearchPlan, StoreTuning } from "./store-types.js";

/** A user's memories in the reverse of the order they were stored in (seq ties: any order). */
const LATEST_STORED = [{ columnName: "seq", ascending: false }];

/**
 * How many more rows than `perUser` for each user Store.currentMemoriesMatching's first query asks
 * for: the users of a group commit don't share the latest rows evenly, and one with fewer than its
 * share among them must be asked again, a second round of requests under the write lock.
 */
export const ASKED_BEYOND = 1.5;

/**
 * Memories, over segments (storage/segments.ts): one LanceDB table per segment, every read asks
 * each segment and merges, every insert goes to the newest. MemoryReads are the store's reads;
 * MemoryWrites are reachable only inside Store.write, which holds the store's write lock.
 */

/** A memory as stored: metadata is kept as JSON text so arbitrary shapes need no schema. */
export interface MemoryRecord {
  id: string;
  accountId: string;
  content: string;
  userId: string;
  agentId: string | null;
  tags: string[];
  metadata: string | null;
  entityIds: string[];
  createdAt: string;
  updatedAt: string;
  /** Position in the user's sequence; assigned on insert (0 until then). */
  seq: Seq;
  /** The memory that replaced this one (core/supersede.ts), or null while it is current. */
  supersededBy: string | null;
  /** When it stopped being true: the moment it was replaced; null while current. */
  supersededAt: string | null;
  /**
   * What a new memory is matched on (core/supersede.ts): its folded text (duplicates) and the
   * single-valued facts it states ("fact:self.home"…, replacements), so a new memory finds the older
   * ones saying the same, or stating the same fact, with one filtered query instead of a scan.
   */
  matchKeys: string[];
  /** The project it belongs to (core/project.ts), or null for a global memory. */
  project: string | null;
}

export interface MemoryRow extends MemoryRecord {
  vector: Float32Array;
  /** Earlier versions and replacement events, as JSON text (core/history.ts); null when none. */
  history: string | null;
}

/**
 * A memory's place in its user's sequence (1, 2, 3… in insertion order, assigned under the write
 * lock): the order a user's memories were stored in (ties of createdAt, newest first).
 */
export type Seq = number;

/** How Store.searchMemories searches, beyond its filter and limit. */
export interface SearchOptions {
  /** Search a scope of more rows than this through the vector index even where exact search would be chosen (segmentPlan). */
  approximateAbove?: number;
  /**
   * Under the write lock: the active segment as this process recently wrote it (throughRecent,
   * storage/recent-writes.ts). Only for filters of account, user, agent and current, without vectors.
   */
  recent?: boolean;
}

/** A vector search's hit: the record and its distance. */
export interface VectorHit {
  record: MemoryRecord;
  distance: number;
}

/** Where a memory sits: its id, and its place in its user's sequence. */
export interface MemoryPosition {
  id: string;
  userId: string;
  seq: Seq;
}

/**
 * A memory that contains a searched word: its position, and what a search reads its signals from
 * besides the word (whether it is a conversation turn, core/conversation.ts; a turn's speaker and
 * length, core/scorer.ts), so a keyword candidate's score is known before its cosine is fetched.
 */
export interface MemoryWordHit extends MemoryPosition {
  metadata: string | null;
  tags: string[];
  content: string;
}

export interface MemoryFilter {
  accountId: string;
  userId?: string;
  agentId?: string;
  /** Every tag must be present (AND). */
  tags?: string[];
  /** Only memories linked to this entity. */
  entityId?: string;
  /** Every key holds its value (compared as text), at any depth of the metadata. */
  metadata?: Record<string, string>;
  /** That project's memories and the global ones (no project); with `projectOnly`, that project's alone. */
  project?: string;
  projectOnly?: boolean;
  /** Only memories not replaced by another (supersededBy unset). */
  current?: boolean;
  /** Only memories that existed and were current at this ISO 8601 instant (overrides `current`). */
  asOf?: string;
}

export const RECORD_COLUMNS = ["id", "accountId", "content", "userId", "agentId", "tags", "metadata", "entityIds", "createdAt", "updatedAt", "seq", "supersededBy", "supersededAt", "matchKeys", "project"];
/** A whole row but its vector: what a rewrite of the row must carry over. */
export const ROW_COLUMNS = [...RECORD_COLUMNS, "history"];
/** Columns added after stores existed (Store.open adds them, null, to every segment that lacks them). */
const LATER_COLUMNS = ["supersededBy", "supersededAt", "matchKeys", "history", "project"];
/** Rows a match-key refresh rewrites per commit (MemoryWrites.refreshMatchKeys). */
const REFRESH_BATCH = 1000;
/** Partitions an unfiltered top-10 search probes (recall@10 = 1.000 at 100k rows, measured). */
const BASE_PROBES = 20;
/** Most rows of one result MemoryReads.atVersion keeps (a word in more memories is looked up again). */
const VERSION_CACHE_ROWS = 500;
/**
 * Partitions an exact search through the index probes (StoreTuning.vectorsFromIndex): every
 * partition of any index mm trains, whatever this process last read of it (LanceDB probes no more
 * than the index has; measured: the same requests and time as the index's own count).
 */
const EVERY_PARTITION = MAX_VECTOR_PARTITIONS;
/** How long a process trusts what it last read of a vector index before asking LanceDB again. */
const VECTOR_INDEX_CACHE_MS = 5_000;

interface IndexCacheEntry {
  at: number;
  value: VectorIndexInfo | null;
}

/**
 * The last sequence number this process gave each user in the active segment. Only writers under
 * the write lock change a sequence number (an insert adds the next one, a delete may take away the
 * last); a maintenance commit moves the segment's version but changes none. So the numbers hold
 * while no other process has written since this one's last write (`othersWrote` false: the store's
 * `write` stamp, object stores), whatever the version; or, where that isn't known (a local store),
 * while the segment is at the version this process's own commits left it.
 */
export interface LastSeqs {
  segment: string;
  version: number;
  /** `accountId\0userId` → the user's last sequence number, least recently written first. */
  byUser: Map<string, number>;
  /** Set by Store.withWriteLock: another process may have written since this one's last write (always true on a local store). */
  othersWrote: boolean;
}

/** Whether the numbers `known` holds are still the users' last ones in `active` (see LastSeqs): not after a seal, nor after another process's write. */
async function lastSeqsHold(known: LastSeqs, active: Segment): Promise<boolean> {
  return known.segment === active.name && !(known.othersWrote && known.version !== (await active.table.version()));
}

/** The user's highest sequence number: in the newest segment that has any of their memories (0 for none). */
async function lastSeqIn(segments: Segment[], accountId: string, userId: string): Promise<number> {
  for (const { table } of [...segments].reverse()) {
    const rows = await table
      .query()
      .where(`accountId = ${sqlString(accountId)} AND userId = ${sqlString(userId)}`)
      .orderBy({ columnName: "seq", ascending: false })
      .select(["seq"])
      .limit(1)
      .toArray();
    if (rows.length) return Number(rows[0].seq);
  }
  return 0;
}

/**
 * The last sequence numbers of these users (each an account and a user), in their order: from
 * `known` while it holds (lastSeqsHold; else it is emptied and starts over from the active
 * segment's version now), and for the users it doesn't hold, asked (one query each, side by side:
 * one round of requests, not one per user; object storage: ~20 ms each, and a group of 8 users
 * after a compaction took 8 rounds) and kept in it. Under the write lock only, where no other
 * process can add a memory.
 */
export async function lastSeqsOf(known: LastSeqs, segments: Segment[], users: { accountId: string; userId: string }[]): Promise<number[]> {
  const active = segments[segments.length - 1];
  if (!(await lastSeqsHold(known, active))) {
    known.byUser.clear();
    known.segment = active.name;
    known.version = await active.table.version();
  }
  const unknown = new Map(users.filter((u) => !known.byUser.has(userKey(u))).map((u) => [userKey(u), u]));
  for (const [key, last] of await Promise.all([...unknown].map(async ([key, u]) => [key, await lastSeqIn(segments, u.accountId, u.userId)] as const))) known.byUser.set(key, last);
  return users.map((u) => known.byUser.get(userKey(u))!);
}

/** Users whose last sequence number a store keeps (~100 bytes each). */
const LAST_SEQS_KEPT = 10_000;

/** What a store's views share: vector index lists and routing counts, per segment. */
export interface RoutingCache {
  indexes: Map<string, IndexCacheEntry>;
  counts: Map<string, { at: number; count: number }>;
  /** Read results by segment and table version (StoreTuning.versionCacheEntries); absent: off. */
  atVersion?: Map<string, unknown>;
}

/** The store's reads of memories, over whatever segments `segments()` gives (the live ones, or a snapshot's). */
export abstract class MemoryReads {
  abstract readonly config: { embedder: { dims: number } };
  abstract readonly tuning: StoreTuning;
  protected abstract readonly routing: RoutingCache;
  /** The memory segments, oldest first; the last is the active one. */
  abstract segments(): Promise<Segment[]>;

  /** `fn` on every segment at once, results in segment order. */
  protected eachSegment<T>(fn: (segment: Segment) => Promise<T>): Promise<T[]> {
    return this.afresh(async () => Promise.all((await this.segments()).map(fn)));
  }

  /**
   * Moves every table handle to its latest version after a read found its own version removed;
   * false where the handles must keep their versions (a snapshot).
   */
  protected abstract toLatest(): Promise<boolean>;

  /**
   * `read`, and once more on the tables' latest versions when it failed because the version it
   * read was removed meanwhile: another process's `mm store optimize --keep-minutes 0` deletes
   * every version but the newest, with the data files only they used. A process reading a table
   * through a handle opened or checked before that (up to the read-consistency interval, 1 s on an
   * object store) would fail with "Not found: …/_versions/….manifest" or "…/data/….lance" until
   * its next check. The latest version holds every committed row, so the read again on it answers
   * what a read a moment later would have.
   */
  protected async afresh<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (err) {
      if (!isVersionGone(err) || !(await this.toLatest())) throw err;
      return read();
    }
  }

  /** Memory rows from every segment for the same query. */
  protected async fromSegments(build: (table: Table) => { toArrow(): Promise<unknown> }, withVectors = false): Promise<ReadRow[]> {
    return (await this.eachSegment((s) => readMemoryRows(build(s.table), withVectors))).flat();
  }

  /**
   * The active segment as this process recently wrote it, for a read under the write lock
   * (storage/recent-writes.ts), or undefined to read the segment as it is.
   */
  protected recentView(_active: Segment): Promise<RecentView | undefined> {
    return Promise.resolve(undefined);
  }

  /** Forgets what recentView keeps (a read through it failed). */
  protected forgetRecent(): void {}

  /**
   * One read on every segment, the active one through recentView when it gives a view: the read
   * on the view's base version, less the rows this process wrote since, plus those rows that the
   * read matches (`recent`: the row as the read returns it, or undefined). A read that keeps the
   * `best` `limit` rows asks the base for as many more as the view hides from it within the read's
   * `scope` (its account and users: a nearest-notes search of one user asked for 5 rows and as many
   * more as every user's rows rewritten since the base, hundreds where notes replace each other),
   * and the active segment's rows are cut to `limit` again.
   */
  protected async throughRecent<T extends { id: string }>(
    read: (table: Table, extra: number, segment: Segment) => Promise<T[]>,
    recent: (row: MemoryRow) => T | undefined,
    best?: { limit: number; order: (a: T, b: T) => number; scope: (row: MemoryRow) => boolean },
  ): Promise<T[]> {
    const parts = await this.eachSegment(async (s) => {
      const view = s.sealed ? undefined : await this.recentView(s);
      if (!view) return read(s.table, 0, s);
      let older: T[];
      try {
        older = await read(view.table, best ? view.rewrittenIn(best.scope) : 0, s);
      } catch {
        this.forgetRecent();
        return read(s.table, 0, s);
      }
      const rows = [...older.filter((r) => !view.rows.has(r.id)), ...[...view.rows.values()].flatMap((r) => recent(r) ?? [])];
      return best ? rows.sort(best.order).slice(0, best.limit) : rows;
    });
    return parts.flat();
  }

  async countMemories(filter?: MemoryFilter): Promise<number> {
    const where = filter ? memoryWhere(filter) : undefined;
    return sum(await this.eachSegment((s) => this.atVersion(s, `count\u0000${where ?? ""}`, () => s.table.countRows(where))));
  }

  /**
   * `read` of one segment, remembered by the segment's table version when the store keeps such a
   * cache (object storage: there each query costs object-store requests, several per fragment). A
   * table version never changes, so a remembered result is exactly what the query would return
   * again: nothing here can be stale. Kept only when the version is the same before and after the
   * read (a handle may move to a newer version meanwhile). For reads a search repeats: a scope's
   * count and its memories with a word. (A table dropped and made again restarts its versions:
   * only resetEmbedder does that, and it returns a new Store, with a new cache.)
   */
  private async atVersion<T>(segment: Segment, key: string, read: () => Promise<T>, rows: (value: T) => number = (v) => (Array.isArray(v) ? v.length : 0)): Promise<T> {
    const cache = this.routing.atVersion;
    if (!cache) return read();
    const version = await segment.table.version();
    const full = `${segment.name}\u0000${version}\u0000${key}`;
    if (cache.has(full)) {
      const value = cache.get(full) as T;
      cache.delete(full);
      cache.set(full, value); // most recently used last
      return value;
    }
    const value = await read();
    // A large result stays out: the cache's memory stays bounded by entries × VERSION_CACHE_ROWS.
    if (rows(value) > VERSION_CACHE_ROWS || (await segment.table.version()) !== version) return value;
    cache.set(full, value);
    if (cache.size > this.tuning.versionCacheEntries) cache.delete(cache.keys().next().value!);
    return value;
  }

  async getMemory(accountId: string, id: string): Promise<MemoryRecord | undefined> {
    const where = `accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`;
    return (await this.fromSegments((t) => t.query().where(where).select(RECORD_COLUMNS).limit(1)))[0];
  }

  /** Newest first (createdAt, then id, descending): stable across pages whatever the physical order. */
  async listMemories(filter: MemoryFilter, page: PageWindow): Promise<{ records: MemoryRecord[]; total: number }> {
    return this.afresh(async () => {
      const where = memoryWhere(filter);
      const segments = await this.segments();
      if (segments.length === 1) return newestFirstPage(segments[0].table, where, RECORD_COLUMNS, page, (q) => readMemoryRows(q, false));
      // Each segment's newest offset+limit, merged: the page is among them whichever segments hold it.
      const counts = await Promise.all(segments.map((s) => s.table.countRows(where)));
      const total = sum(counts);
      if (page.offset >= total) return { records: [], total };
      const windows = await Promise.all(
        segments.map((s, i) =>
          counts[i] ? readMemoryRows(s.table.query().where(where).orderBy(NEWEST_FIRST).limit(page.offset + page.limit).select(RECORD_COLUMNS), false) : [],
        ),
      );
      const merged = windows.flat().sort((a, b) => cmp(b.createdAt, a.createdAt) || cmp(b.id, a.id));
      return { records: merged.slice(page.offset, page.offset + page.limit), total };
    });
  }

  /**
   * Nearest memories by cosine distance. The filter is applied inside the vector query
   * (LanceDB prefilters `where` by default), so other users' closer memories cannot crowd
   * the requested user's out of the top k. Each segment answers with its own nearest `limit`
   * (through its own index, or exactly: see vectorPlans) and the closest of those win.
   * `vector` may still be on its way (being embedded): the searches are routed meanwhile.
   */
  async searchMemories(
    vector: Float32Array | Promise<Float32Array>,
    filter: MemoryFilter,
    limit: number,
    { approximateAbove, recent = false }: SearchOptions = {},
  ): Promise<VectorHit[]> {
    if (recent) return this.searchRecent(vector, filter, limit, approximateAbove);
    return this.afresh(async () => {
      const where = memoryWhere(filter);
      const routed = this.segments().then((segments) => Promise.all(segments.map(async (s) => ({ segment: s, plan: await this.segmentPlan(s, where, limit, approximateAbove) }))));
      const [v, plans] = await Promise.all([vector, routed]);
      const query = this.queryOf(v);
      const parts = await Promise.all(plans.map(({ segment, plan }) => this.nearestIn(segment.table, query, where, limit, plan)));
      return parts.length === 1 ? parts[0] : parts.flat().sort(nearestFirst).slice(0, limit);
    });
  }

  /**
   * searchMemories through throughRecent: each segment's nearest by its own plan (the base version
   * for the active one), and this process's recent rows of the scope by their cosine, as LanceDB's
   * cosine distance has it.
   */
  private async searchRecent(vector: Float32Array | Promise<Float32Array>, filter: MemoryFilter, limit: number, approximateAbove?: number): Promise<VectorHit[]> {
    if (filter.tags?.length || filter.entityId !== undefined || filter.metadata || filter.asOf !== undefined) throw new Error("searchRecent: account, user, agent and current only");
    const where = memoryWhere(filter);
    const v = await vector;
    const query = this.queryOf(v);
    const inScope = (r: MemoryRow) => r.accountId === filter.accountId && (filter.userId === undefined || r.userId === filter.userId);
    const hits = await this.throughRecent<VectorHit & { id: string }>(
      async (t, extra, segment) => {
        // Routed by the rows it searches: counted on the base version (its small fragments
        // compacted, so the count reads the user index alone), less the few this process wrote since.
        const counted = t === segment.table ? segment : { ...segment, name: `${segment.name}\u0000base`, table: t };
        const plan = await this.segmentPlan(segment, where, limit, approximateAbove, counted);
        return (await this.nearestIn(t, query, where, limit + extra, plan)).map((h) => ({ id: h.record.id, ...h }));
      },
      (r) =>
        inScope(r) && (filter.agentId === undefined || r.agentId === filter.agentId) && inProject(r, filter) && (!filter.current || !r.supersededBy)
          ? { id: r.id, record: recordOf(r), distance: 1 - cosine(v, r.vector) }
          : undefined,
      { limit, order: nearestFirst, scope: inScope },
    );
    return hits.sort(nearestFirst).slice(0, limit).map(({ record, distance }) => ({ record, distance }));
  }

  /** A query vector as LanceDB takes it, refused when it isn't the store's size. */
  private queryOf(v: Float32Array): number[] {
    if (v.length !== this.config.embedder.dims) {
      throw new MmError("EMBEDDER_MISMATCH", `Query vector has ${v.length} dims; the store's vectors have ${this.config.embedder.dims}.`);
    }
    return Array.from(v);
  }

  /** `table`'s (a segment's, or its base version's) nearest `limit` to `query` in the filter, by `plan`. */
  private nearestIn(table: Table, query: number[], where: string, limit: number, plan: SearchPlan): Promise<VectorHit[]> {
    const q = table.query().nearestTo(query).distanceType("cosine").where(where).limit(limit);
    return readHits(plan.nprobes === undefined ? q.bypassVectorIndex() : q.nprobes(plan.nprobes));
  }

  /** How each segment would answer a vector search with this filter (for tests and the bench). */
  async vectorPlans(where: string, limit: number, approximateAbove?: number): Promise<SearchPlan[]> {
    return this.eachSegment((s) => this.segmentPlan(s, where, limit, approximateAbove));
  }

  /**
   * Exact or approximate, per segment? Without a vector index, or when the filter leaves few rows
   * (a user's own memories, read through the B-tree), exact search is both fast and exact.
   * Otherwise the IVF index probes partitions: BASE_PROBES for an unfiltered top-10, scaled up by
   * 1/selectivity (a filter keeping a quarter of the rows leaves a quarter of each partition) and
   * by the square root of limit/10. Once that would read more than a quarter of the partitions,
   * exact search is cheaper again. Rows the index hasn't absorbed yet are always searched exactly
   * (LanceDB does this itself), so no row is ever missed.
   *
   * A caller that can do with the nearest found approximately (`approximateAbove`: detection's
   * nearest older notes, core/validity.ts) has a scope of more rows than that searched through the
   * index whatever its size, probing a quarter of the partitions at most: at 100,000 memories, a
   * user's 5,000 searched exactly took 57 ms and through the index 9 (locally, one at a time).
   */
  private async segmentPlan(segment: Segment, where: string, limit: number, approximateAbove?: number, counted = segment): Promise<SearchPlan> {
    const index = await this.vectorIndex(segment);
    if (!index) return { exact: true };
    const exact: SearchPlan = this.tuning.vectorsFromIndex ? { exact: true, nprobes: EVERY_PARTITION } : { exact: true };
    const [total, scope] = await Promise.all([this.cachedCount(counted, ""), this.cachedCount(counted, where)]);
    const approximate = approximateAbove !== undefined && scope > approximateAbove;
    if (scope <= this.tuning.exactSearchMaxRows && !approximate) return exact;
    const nprobes = Math.ceil(BASE_PROBES * (total / scope) * Math.sqrt(Math.max(1, limit / 10)));
    if (nprobes > index.partitions / 4) return approximate ? { exact: false, nprobes: Math.max(1, Math.floor(index.partitions / 4)) } : exact;
    return { exact: false, nprobes };
  }

  /**
   * Row counts for routing searches, cached for a few seconds: at 1M rows a filtered count costs
   * about 10 ms, and a count a few seconds old routes just as well (both routes return the right
   * rows; the count only picks the faster one and the number of partitions to probe).
   */
  private async cachedCount(segment: Segment, where: string): Promise<number> {
    const counts = this.routing.counts;
    const key = `${segment.name}\u0000${where}`;
    const hit = counts.get(key);
    const now = Date.now();
    if (hit && now - hit.at <= VECTOR_INDEX_CACHE_MS) return hit.count;
    const count = where ? await segment.table.countRows(where) : await segment.table.countRows();
    if (counts.size >= 1024) counts.delete(counts.keys().next().value!);
    counts.set(key, { at: now, count });
    return count;
  }

  /** A segment's vector index, if it has one (cached for a few seconds across this process's views). */
  private async vectorIndex(segment: Segment): Promise<VectorIndexInfo | null> {
    const now = Date.now();
    const hit = this.routing.indexes.get(segment.name);
    if (hit && now - hit.at <= VECTOR_INDEX_CACHE_MS) return hit.value;
    const value = vectorIndexOf(await segment.table.listIndices());
    this.routing.indexes.set(segment.name, { at: now, value });
    return value;
  }

  /** Forgets cached index lists and counts (after maintenance changed them). */
  forgetRouting(): void {
    this.routing.indexes.clear();
    this.routing.counts.clear();
  }

  /**
   * For each of `words`, the scope's memories whose content contains it as the full-text index
   * analyses it (stemmed, accents folded), at most `max` of them: which memories a query's words
   * touch, for keyword coverage (core/search.ts). The same memories as asking the index once per
   * word (`perWord`, the reference the tests hold this to), in one query when it can be:
   *
   * One full-text query for all the words returns the memories that hold any of them, with their
   * content; which word each holds is then read from the content with the index's own analysis
   * (storage/fts-terms.ts). Where that analysis can't be done here, the index is asked after all,
   * per word: a word that isn't plain ASCII, and, for a memory whose content has other characters
   * (an accented letter, another script), each word not found among its plain words, asked of
   * those memories alone. When the one query returns ONE_QUERY_ROWS rows, there may be more, and
   * every word is asked on its own, as before. A hybrid search of a 15-word prompt made 15 queries
   * of about 1.5 ms each on 2 cores; now it makes one (docs/performance.md, 8 December). Each hit
   * carries its metadata, tags and content: search scores a keyword candidate from them before
   * fetching its cosine (a turn's speaker and length).
   */
  async memoriesWithWords(words: string[], filter: MemoryFilter, max: number, options: { perWord?: boolean } = {}): Promise<MemoryWordHit[][]> {
    if (!words.length) return [];
    const where = memoryWhere(filter);
    const key = `words\u0000${max}\u0000${options.perWord ? "each" : "one"}\u0000${words.join(" ")}\u0000${where}`;
    const parts = await this.eachSegment((s) => this.atVersion(s, key, () => segmentWordHits(s.table, words, where, max, options.perWord === true), (v) => sum(v.map((hits) => hits.length))));
    return words.map((_, i) => parts.flatMap((p) => p[i]).slice(0, max));
  }

  /**
   * Exact cosine distance from `vector` to exactly the given memories of the scope: those ids, and
   * each user's memories at the given sequence positions. For ranking keyword matches and their
   * neighbours beside the vector index's own nearest; a few hundred rows, so no index is used, but
   * in object storage, where bypassing the index reads the segment's whole vector column and the
   * index probed at every partition gives the same distances (StoreTuning.vectorsFromIndex).
   */
  async nearestAmong(vector: Float32Array, filter: MemoryFilter, among: { ids: string[]; seqs: Map<string, number[]> }): Promise<VectorHit[]> {
    const parts = among.ids.length ? [`id IN (${among.ids.map(sqlString).join(", ")})`] : [];
    for (const [userId, seqs] of among.seqs) {
      const valid = [...new Set(seqs)].filter((n) => Number.isInteger(n) && n > 0);
      if (valid.length) parts.push(`(userId = ${sqlString(userId)} AND seq IN (${valid.join(", ")}))`);
    }
    if (!parts.length) return [];
    const limit = among.ids.length + [...among.seqs.values()].reduce((n, s) => n + s.length, 0);
    const where = `${memoryWhere(filter)} AND (${parts.join(" OR ")})`;
    const query = Array.from(vector);
    const found = await this.eachSegment(async (s) => {
      const q = s.table.query().nearestTo(query).distanceType("cosine").where(where).limit(limit);
      const throughIndex = this.tuning.vectorsFromIndex && (await this.vectorIndex(s)) !== null;
      return readHits(throughIndex ? q.nprobes(EVERY_PARTITION) : q.bypassVectorIndex());
    });
    return found.flat();
  }

  /**
   * The memories linked to at least one entity (to any of `entityIds`, when given), oldest first:
   * the reference memory server's "observations" (core/mcp-memory.ts).
   */
  async linkedMemories(filter: MemoryFilter, entityIds?: string[]): Promise<MemoryRecord[]> {
    const base = `${memoryWhere(filter)} AND array_length(entityIds) > 0`;
    const out = new Map<string, MemoryRecord>();
    const chunks = entityIds === undefined ? [undefined] : Array.from({ length: Math.ceil(entityIds.length / 500) }, (_, i) => entityIds.slice(i * 500, i * 500 + 500));
    for (const chunk of chunks) {
      if (chunk && !chunk.length) continue;
      const where = chunk ? `${base} AND array_has_any(entityIds, ${sqlStringList(chunk)})` : base;
      for (const r of await this.fromSegments((t) => t.query().where(where).select(RECORD_COLUMNS))) out.set(r.id, r);
    }
    return [...out.values()].sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id));
  }

  /**
   * Each user's current memories with any of that user's match keys (core/supersede.ts), oldest
   * first, for several users of one account in one query: a group commit of creates from 8 users
   * asked once, not 8 times (each query a round of object-store requests under the write lock).
   * The query takes every user's keys; each row is kept only for its own user, and only if it has
   * one of that user's keys.
   *
   * With `newest`, a user's rows are only those with one of `newest.exact` keys (every one of
   * them, however old) and the latest stored `newest.perUser` of the rest: the highest sequence
   * numbers (seq), not the latest createdAt. A user with thousands of notes of one shape shares a
   * key with all of them, and reading them all cost a create at 100,000 memories 40 of its 100 ms.
   * The query asks for the perUser × users rows of highest seq, for more than one user half as many
   * again (ASKED_BEYOND), and beside it a second one for the exact keys alone (when every key is exact, that one alone); only when the first
   * gets that many rows does it ask again, per user, for each user with fewer than perUser rows
   * among them (another's may have crowded theirs out; a user with perUser rows there has its
   * latest). Asking for exactly
   * perUser × users, a group of 8 creates at 100,000 memories had users crowded out in 10 groups
   * of 50, each a second round of requests under the write lock (125 ms on Azurite); half as many
   * again, none, and the first round took no longer
   * (docs/measurements/object-storage-rounds.md, "Fewer rounds under the lock (27 November, tenth pass)").
   * Each user keeps its latest perUser of them. Sorting the matches by seq, a 4-byte integer,
   * instead of createdAt, a 24-character string, cut this query on Azurite from 88 requests (3 MB)
   * to 12 (1.1 MB) for 8 users at 100,000 memories (130–170 → 42–49 ms); the two orders differ only
   * for memories imported after newer ones, and for memories from before sequence numbers (all 0,
   * ties in any order).
   *
   * Records only, without vectors or history: detection reads whole the few of them the model's
   * reading needs (core/validity.ts), and the ones it marks replaced.
   */
  async currentMemoriesMatching(
    accountId: string,
    keysByUser: Map<string, string[]>,
    newest?: { perUser: number; exact: Set<string> },
  ): Promise<Map<string, MemoryRecord[]>> {
    const out = new Map<string, MemoryRecord[]>();
    const users = [...keysByUser].filter(([, keys]) => keys.length);
    for (const [userId] of keysByUser) out.set(userId, []);
    if (!users.length) return out;
    const read = async (userIds: string[], keys: string[], limit?: number): Promise<MemoryRecord[]> => {
      if (!keys.length) return [];
      const where = `${memoryWhere({ accountId, current: true })} AND userId IN (${userIds.map(sqlString).join(", ")}) AND array_has_any(matchKeys, ${sqlStringList([...new Set(keys)])})`;
      const wanted = new Set(keys);
      const users = new Set(userIds);
      const inScope = (r: MemoryRow) => r.accountId === accountId && users.has(r.userId);
      return this.throughRecent(
        (t, extra) => readMemoryRows((limit ? t.query().where(where).orderBy(LATEST_STORED).limit(limit + extra) : t.query().where(where)).select(RECORD_COLUMNS), false),
        (r) => (inScope(r) && !r.supersededBy && r.matchKeys.some((k) => wanted.has(k)) ? recordOf(r) : undefined),
        limit ? { limit, order: (a, b) => b.seq - a.seq, scope: inScope } : undefined,
      );
    };
    // One user can't be crowded out: asked for exactly its perUser.
    const cap = newest && (users.length > 1 ? Math.ceil(newest.perUser * users.length * ASKED_BEYOND) : newest.perUser);
    const userIds = users.map(([u]) => u);
    const exact = newest ? users.flatMap(([, keys]) => keys.filter((k) => newest.exact.has(k))) : [];
    // The rows of the exact keys are asked beside the first query, not after it: on an object
    // store each query is a round of requests, and a group of creates from users with many
    // memories hits the cap nearly every time.
    // Keys that are all exact-text keys (a note that states no fact: only its duplicates are looked
    // for) need the second query alone: the first would read the same rows again.
    const inexact = newest ? users.some(([, keys]) => keys.some((k) => !newest.exact.has(k))) : true;
    let [rows, exactRows] = await Promise.all([inexact ? read(userIds, users.flatMap(([, keys]) => keys), cap) : [], read(userIds, exact)]);
    if (newest && rows.length >= cap!) {
      // The cap of them all latest stored (each segment gave its cap; a user's sequence numbers go
      // on across segments). A user with perUser rows among them has its latest; one with fewer
      // may have been crowded out.
      rows = rows.sort(latestFirst).slice(0, cap);
      const count = new Map<string, number>();
      for (const r of rows) count.set(r.userId, (count.get(r.userId) ?? 0) + 1);
      const crowded = users.filter(([u]) => (count.get(u) ?? 0) < newest.perUser);
      const asked = await Promise.all(crowded.map(([u, keys]) => read([u], keys.filter((k) => !newest.exact.has(k)), newest.perUser)));
      rows = [...rows.filter((r) => !crowded.some(([u]) => u === r.userId)), ...asked.flat()];
    }
    if (newest) rows = latestOfEach(rows, newest.perUser);
    rows = [...new Map([...rows, ...exactRows].map((r) => [r.id, r])).values()];
    rows.sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id));
    const wanted = new Map(users.map(([u, keys]) => [u, new Set(keys)]));
    for (const r of rows) if (r.matchKeys.some((k) => wanted.get(r.userId)?.has(k))) out.get(r.userId)!.push(r);
    return out;
  }

  /** The account's memories that `id` replaced (supersededBy = id), oldest first. */
  async replacedBy(accountId: string, id: string): Promise<MemoryRecord[]> {
    const where = `accountId = ${sqlString(accountId)} AND supersededBy = ${sqlString(id)}`;
    const rows = await this.fromSegments((t) => t.query().where(where).select(RECORD_COLUMNS));
    return rows.sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id));
  }

  /** Whole rows, vectors and history included, of the account's memories with these ids (for rewriting them). */
  async getMemoryRows(accountId: string, ids: string[], { recent = false }: { recent?: boolean } = {}): Promise<MemoryRow[]> {
    if (!ids.length) return [];
    const wanted = new Set(ids);
    const where = `accountId = ${sqlString(accountId)} AND id IN (${[...wanted].map(sqlString).join(", ")})`;
    const read = (t: Table) => readMemoryRows(t.query().where(where).select([...ROW_COLUMNS, "vector"]), true);
    const rows = recent
      ? await this.throughRecent(read, (r) => (r.accountId === accountId && wanted.has(r.id) ? { ...r } : undefined))
      : (await this.eachSegment((s) => read(s.table))).flat();
    return rows.map((r) => ({ ...r, history: r.history ?? null }) as MemoryRow);
  }

  /** A memory's whole row but its vector (history included), or undefined. */
  async getMemoryFull(accountId: string, id: string): Promise<(MemoryRecord & { history: string | null }) | undefined> {
    const where = `accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`;
    const [row] = await this.fromSegments((t) => t.query().where(where).select(ROW_COLUMNS).limit(1));
    return row && { ...row, history: row.history ?? null };
  }

  /** The scope's memories with these ids (no vectors), in no particular order. */
  async memoriesByIds(filter: MemoryFilter, ids: string[]): Promise<MemoryRecord[]> {
    if (!ids.length) return [];
    const where = `${memoryWhere(filter)} AND id IN (${ids.map(sqlString).join(", ")})`;
    return this.fromSegments((t) => t.query().where(where).select(RECORD_COLUMNS).limit(ids.length));
  }

  /**
   * Whole rows, vectors included, of the current memories of these users of one account, oldest
   * first (createdAt, then id), at most `limit` of them (the oldest). For detection
   * (core/validity.ts) among users known to have few memories: one query for all of them, instead
   * of a candidates query, a vector search per user and a read of the candidates' vectors.
   */
  async currentMemoriesOf(accountId: string, userIds: string[], limit: number): Promise<MemoryRow[]> {
    if (!userIds.length) return [];
    const where = `${memoryWhere({ accountId, current: true })} AND userId IN (${userIds.map(sqlString).join(", ")})`;
    const rows = await this.fromSegments((t) => t.query().where(where).orderBy(OLDEST_FIRST).limit(limit).select([...ROW_COLUMNS, "vector"]), true);
    return rows.sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id)).slice(0, limit).map((r) => ({ ...r, history: r.history ?? null }) as MemoryRow);
  }

  /**
   * One page of the scope's memories, oldest first (createdAt, then id), after the given position:
   * a keyset page, so an export streams a table of any size in stable pages while others write.
   */
  async memoriesAfter(filter: MemoryFilter, after: { createdAt: string; id: string } | undefined, limit: number, withVectors: boolean): Promise<MemoryRecord[] | MemoryRow[]> {
    const where = after
      ? `${memoryWhere(filter)} AND (createdAt > ${sqlString(after.createdAt)} OR (createdAt = ${sqlString(after.createdAt)} AND id > ${sqlString(after.id)}))`
      : memoryWhere(filter);
    const columns = withVectors ? [...ROW_COLUMNS, "vector"] : ROW_COLUMNS;
    const rows = await this.fromSegments((t) => t.query().where(where).orderBy(OLDEST_FIRST).limit(limit).select(columns), withVectors);
    return rows.sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id)).slice(0, limit);
  }
}

/** Memory writes, on the segments as the write lock was taken (only a writer changes the list, and it holds the lock). */
export abstract class MemoryWrites {
  constructor(
    protected readonly segments: Segment[],
    /** Users' last sequence numbers as this process last wrote them (kept by the store across writes). */
    private readonly lastSeqs: LastSeqs,
    /** Users' every current memory as this process last read or wrote them: each commit here updates it. */
    private readonly currentRows: CurrentRows,
    /** The rows this process wrote since the active segment's last other commit: each commit here updates it. */
    private readonly recentWrites: RecentWrites,
  ) {}

  private get active(): Table {
    return this.segments[this.segments.length - 1].table;
  }

  /** The segment holding memory `where` (one id), or undefined. */
  private async segmentWith(where: string): Promise<Table | undefined> {
    const counts = await Promise.all(this.segments.map((s) => s.table.countRows(where)));
    const i = counts.findIndex((n) => n > 0);
    return i < 0 ? undefined : this.segments[i].table;
  }

  /**
   * Inserts in one commit into the active segment, numbering each user's new memories after their
   * last one. `rewritten`, whole rows already stored (as read by getMemoryRow), change in that same
   * commit when the active segment holds them (a replacement's marks: the new memory and the mark on
   * the one it replaces are one commit, and an object store saves a commit's round of requests).
   * Returns those another segment holds, for the caller to rewrite after (replaceMemories).
   */
  async insertMemories(rows: MemoryRow[], rewritten: MemoryRow[] = []): Promise<MemoryRow[]> {
    if (rows.length === 0) return rewritten;
    // A user's last sequence number costs a query (~12 ms locally: a filter, a sort; two rounds of
    // requests on an object store); a group commit of 8 creates for 8 users spent 50 of its 60 ms on
    // them. The numbers this process wrote last are kept while they hold (LastSeqs): a seal, this
    // process's deletes, and another process's writes make them be asked for again.
    const known = this.lastSeqs;
    const segment = this.segments[this.segments.length - 1];
    const last = await lastSeqsOf(known, this.segments, rows);
    const next = new Map<string, number>();
    rows.forEach((row, i) => {
      const key = userKey(row);
      if (!next.has(key)) next.set(key, last[i] + 1);
      row.seq = next.get(key)!;
      next.set(key, row.seq + 1);
    });
    const homes = rewritten.length ? await this.homesOf(rewritten) : new Map<string, Segment>();
    const here = rewritten.filter((r) => (homes.get(r.id) ?? segment) === segment);
    const before = await this.active.version();
    try {
      if (here.length) await this.active.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute([...rows, ...here].map(toArrowRow));
      else await this.active.add(rows.map(toArrowRow));
    } catch (err) {
      known.byUser.clear();
      this.currentRows.forget();
      this.recentWrites.forget();
      throw err;
    }
    const after = await this.active.version();
    this.currentRows.committed(segment.name, before, after, rows, here, !known.othersWrote);
    this.recentWrites.committed(segment.name, before, after, rows, here);
    for (const [key, after] of next) {
      known.byUser.delete(key); // most recent last, so the oldest go first when there are too many
      known.byUser.set(key, after - 1);
    }
    for (const key of known.byUser.keys()) {
      if (known.byUser.size <= LAST_SEQS_KEPT) break;
      known.byUser.delete(key);
    }
    known.segment = segment.name;
    known.version = after;
    return rewritten.filter((r) => !here.includes(r));
  }

  /**
   * Which segment holds each of these rows (one query per segment, side by side, not a count per
   * row per segment one after another: a create that replaced 20 notes spent 100 ms of 2 s on
   * them). A store of one segment (up to segmentRows memories) holds them all in it: no query.
   */
  private async homesOf(rows: MemoryRow[]): Promise<Map<string, Segment>> {
    const home = new Map<string, Segment>();
    if (this.segments.length === 1) return home;
    const where = `id IN (${[...new Set(rows.map((r) => r.id))].map(sqlString).join(", ")})`;
    const held = await Promise.all(this.segments.map((s) => s.table.query().where(where).select(["id"]).toArray()));
    held.forEach((found, i) => found.forEach((r) => home.has(String(r.id)) || home.set(String(r.id), this.segments[i])));
    return home;
  }

  /**
   * Rewrites whole memory rows (as read by getMemoryRow): one merge-insert commit per segment that
   * holds some of them, so rows of one segment change together or not at all.
   */
  async replaceMemories(rows: MemoryRow[]): Promise<void> {
    if (!rows.length) return;
    const home = await this.homesOf(rows);
    const bySegment = new Map<Segment, MemoryRow[]>();
    for (const row of rows) {
      const segment = home.get(row.id) ?? this.segments[this.segments.length - 1];
      bySegment.set(segment, [...(bySegment.get(segment) ?? []), row]);
    }
    for (const [{ name, table }, group] of bySegment) {
      const before = await table.version();
      // A rewrite keeps every row's sequence number: the last ones stay known past its commit.
      const known = table === this.active && this.lastSeqs.version === before;
      try {
        await table.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(group.map(toArrowRow));
      } catch (err) {
        this.currentRows.forget();
        this.recentWrites.forget();
        throw err;
      }
      const after = await table.version();
      if (known) this.lastSeqs.version = after;
      this.currentRows.committed(name, before, after, [], group, !this.lastSeqs.othersWrote);
      this.recentWrites.committed(name, before, after, [], group);
    }
  }

  /**
   * Works out again, with `keysOf`, the match keys of every current memory whose stored keys lack
   * `mark` (the version of the rules that worked them out), and rewrites those rows: memories an
   * older mm stored are then found by what the rules read now. A segment at a time, a thousand rows
   * a commit; the rest of each row is carried over as it is. Returns how many rows changed.
   */
  async refreshMatchKeys(keysOf: (content: string) => string[], mark: string): Promise<number> {
    const stale = `supersededBy IS NULL AND (matchKeys IS NULL OR NOT array_has(matchKeys, ${sqlString(mark)}))`;
    let refreshed = 0;
    for (const segment of [...this.segments]) {
      const ids = (await readMemoryRows(segment.table.query().where(stale).select(["id"]), false)).map((r) => r.id);
      for (let at = 0; at < ids.length; at += REFRESH_BATCH) {
        const where = `id IN (${ids.slice(at, at + REFRESH_BATCH).map(sqlString).join(", ")})`;
        const rows = (await readMemoryRows(segment.table.query().where(where).select([...ROW_COLUMNS, "vector"]), true)) as MemoryRow[];
        await this.replaceMemories(rows.map((r) => ({ ...r, history: r.history ?? null, matchKeys: keysOf(r.content) })));
        refreshed += rows.length;
      }
    }
    return refreshed;
  }

  /** Deletes one memory; false when it doesn't exist for this account. */
  async deleteMemory(accountId: string, id: string): Promise<boolean> {
    const where = `accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`;
    const table = await this.segmentWith(where);
    if (!table) return false;
    // The user's last sequence number may be the deleted one's: asked again, it is given again.
    this.lastSeqs.byUser.clear();
    this.currentRows.forget();
    this.recentWrites.forget();
    await table.delete(where);
    return true;
  }

  async getMemoryRow(accountId: string, id: string): Promise<MemoryRow | undefined> {
    const where = `accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`;
    for (const rows of await Promise.all(this.segments.map((s) => readMemoryRows(s.table.query().where(where).select([...ROW_COLUMNS, "vector"]).limit(1), true)))) {
      if (rows.length) return rows[0] as MemoryRow;
    }
    return undefined;
  }
}

/** Whether a row is in a filter's project scope, as memoryWhere's SQL has it. */
function inProject(r: { project?: string | null }, filter: MemoryFilter): boolean {
  if (filter.project === undefined) return true;
  return (r.project ?? null) === filter.project || (!filter.projectOnly && (r.project ?? null) === null);
}

export function memoryWhere(filter: MemoryFilter): string {
  const parts = [`accountId = ${sqlString(filter.accountId)}`];
  if (filter.userId !== undefined) parts.push(`userId = ${sqlString(filter.userId)}`);
  if (filter.agentId !== undefined) parts.push(`agentId = ${sqlString(filter.agentId)}`);
  if (filter.tags && filter.tags.length) parts.push(`array_has_all(tags, ${sqlStringList(filter.tags)})`);
  if (filter.entityId !== undefined) parts.push(`array_has(entityIds, ${sqlString(filter.entityId)})`);
  if (filter.project !== undefined) parts.push(filter.projectOnly ? `project = ${sqlString(filter.project)}` : `(project = ${sqlString(filter.project)} OR project IS NULL)`);
  for (const [key, value] of Object.entries(filter.metadata ?? {})) parts.push(metadataMatch(key, value));
  if (filter.asOf !== undefined) {
    const at = sqlString(filter.asOf);
    parts.push(`createdAt <= ${at} AND (supersededAt IS NULL OR supersededAt > ${at})`);
  } else if (filter.current) parts.push("supersededBy IS NULL");
  return parts.join(" AND ");
}

/**
 * `"key":value` in the metadata's JSON text (stored as JSON.stringify writes it): the string
 * `value`, or, when `value` reads as a JSON number, boolean or null, that literal ended by `,` or
 * `}` (so 18 doesn't match 1843). LIKE's wildcards and escape in the text are escaped.
 */
function metadataMatch(key: string, value: string): string {
  const like = (s: string) => sqlString(`%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  const pair = (text: string) => `${JSON.stringify(key)}:${text}`;
  const options = [`metadata LIKE ${like(pair(JSON.stringify(value)))}`];
  let literal: unknown;
  try {
    literal = JSON.parse(value);
  } catch {
    literal = undefined;
  }
  if (literal !== undefined && typeof literal !== "string" && typeof literal !== "object") {
    const text = JSON.stringify(literal);
    options.push(`metadata LIKE ${like(`${pair(text)},`)}`, `metadata LIKE ${like(`${pair(text)}}`)}`);
  }
  return `(${options.join(" OR ")})`;
}

export function memorySchema(dims: number) {
  const { arrow } = loadLance();
  const utf8List = () => new arrow.List(new arrow.Field("item", new arrow.Utf8(), true));
  return new arrow.Schema([
    new arrow.Field("id", new arrow.Utf8(), false),
    new arrow.Field("accountId", new arrow.Utf8(), false),
    new arrow.Field("content", new arrow.Utf8(), false),
    new arrow.Field("userId", new arrow.Utf8(), false),
    new arrow.Field("agentId", new arrow.Utf8(), true),
    new arrow.Field("tags", utf8List(), false),
    new arrow.Field("metadata", new arrow.Utf8(), true),
    new arrow.Field("entityIds", utf8List(), false),
    new arrow.Field("createdAt", new arrow.Utf8(), false),
    new arrow.Field("updatedAt", new arrow.Utf8(), false),
    new arrow.Field("vector", new arrow.FixedSizeList(dims, new arrow.Field("item", new arrow.Float32(), true)), false),
    new arrow.Field("seq", new arrow.Int32(), false),
    ...laterFields(),
  ]);
}

/** The memory columns added for replaced facts, history and projects (all nullable, so old rows read as current, global, with no history). */
function laterFields() {
  const { arrow } = loadLance();
  return [
    new arrow.Field("supersededBy", new arrow.Utf8(), true),
    new arrow.Field("supersededAt", new arrow.Utf8(), true),
    new arrow.Field("matchKeys", new arrow.List(new arrow.Field("item", new arrow.Utf8(), true)), true),
    new arrow.Field("history", new arrow.Utf8(), true),
    new arrow.Field("project", new arrow.Utf8(), true),
  ];
}

/** Whether a segment's schema has every column added after stores existed (else Store.open runs addLaterColumns). */
export function hasLaterColumns(schema: { fields: { name: string }[] }): boolean {
  const names = new Set(schema.fields.map((f) => f.name));
  return LATER_COLUMNS.every((c) => names.has(c));
}

/**
 * Gives every segment made before replaced facts (or projects) existed their columns, null: such memories are
 * current and have no history. Under the write lock, once per store (the check is a schema read).
 */
export async function addLaterColumns(withWriteLock: <T>(fn: () => Promise<T>) => Promise<T>, segments: Segment[]): Promise<void> {
  const lacking = async () => {
    const out: Table[] = [];
    for (const { table } of segments) {
      const names = new Set((await table.schema()).fields.map((f) => f.name));
      if (LATER_COLUMNS.some((c) => !names.has(c))) out.push(table);
    }
    return out;
  };
  if (!(await lacking()).length) return;
  await withWriteLock(async () => {
    for (const table of await lacking()) {
      const names = new Set((await table.schema()).fields.map((f) => f.name));
      await table.addColumns(laterFields().filter((f) => !names.has(f.name)));
    }
  });
}

/**
 * Memory rows from a query, read column by column from the Arrow result rather than through
 * per-row proxies (a neighbour fetch of 150 rows: 22 → ~10 ms).
 */
export type ReadRow = MemoryRecord & { vector?: Float32Array; history?: string | null; _score?: number; _distance?: number };

/** A vector query's hits: each row's record and its cosine distance. */
async function readHits(query: VectorQuery): Promise<VectorHit[]> {
  return (await readMemoryRows(query.select(RECORD_COLUMNS), false)).map(({ _distance, ...record }) => ({ record, distance: Number(_distance) }));
}

/** Nearest first; ties by id, so every segment's merge gives the same order. */
function nearestFirst(a: VectorHit, b: VectorHit): number {
  return a.distance - b.distance || cmp(a.record.id, b.record.id);
}

/** A whole row as a read of RECORD_COLUMNS returns it: no vector, no history. */
function recordOf({ vector: _vector, history: _history, ...record }: MemoryRow): MemoryRecord {
  return { ...record, tags: [...record.tags], entityIds: [...record.entityIds], matchKeys: [...record.matchKeys] };
}

export async function readMemoryRows(query: { toArrow(): Promise<unknown> }, withVectors: boolean): Promise<ReadRow[]> {
  const table = (await query.toArrow()) as ArrowTable;
  const n = table.numRows;
  const col = (name: string) => table.getChild(name);
  const strings = (name: string) => columnValues(table, name) as (string | null)[];
  const [id, accountId, content, userId, agentId, metadata, createdAt, updatedAt, supersededBy, supersededAt, history, project] = [
    "id", "accountId", "content", "userId", "agentId", "metadata", "createdAt", "updatedAt", "supersededBy", "supersededAt", "history", "project",
  ].map(strings);
  const [matchKeys, tags, entityIds] = ["matchKeys", "tags", "entityIds"].map((name) => stringLists(col(name), n));
  const withHistory = col("history") !== null;
  const seq = col("seq")?.toArray() ?? [];
  const score = col("_score")?.toArray();
  const distance = col("_distance")?.toArray();
  const vector = withVectors ? col("vector") : null;
  const out: ReadRow[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      id: String(id[i]),
      accountId: String(accountId[i]),
      content: String(content[i]),
      userId: String(userId[i]),
      agentId: agentId[i] ?? null,
      tags: tags[i],
      metadata: metadata[i] ?? null,
      entityIds: entityIds[i],
      createdAt: String(createdAt[i]),
      updatedAt: String(updatedAt[i]),
      seq: Number(seq[i] ?? 0),
      supersededBy: supersededBy[i] ?? null,
      supersededAt: supersededAt[i] ?? null,
      matchKeys: matchKeys[i],
      project: project[i] ?? null,
      ...(withHistory ? { history: history[i] ?? null } : {}),
      ...(vector ? { vector: toFloat32(vector.get(i)) } : {}),
      ...(score ? { _score: Number(score[i]) } : {}),
      ...(distance ? { _distance: Number(distance[i]) } : {}),
    });
  }
  return out;
}

/** Rows the one full-text query of memoriesWithWords reads; a query that returns this many may have more, and each word is asked on its own. */
const ONE_QUERY_ROWS = 1000;

/** What a word hit reads of each row (MemoryWordHit). */
const WORD_HIT_COLUMNS = ["id", "userId", "seq", "metadata", "tags", "content"];

/** One segment's part of memoriesWithWords: for each word, its memories there (at most `max`). */
async function segmentWordHits(table: Table, words: string[], where: string, max: number, perWord: boolean): Promise<MemoryWordHit[][]> {
  const ask = async (word: string, among?: string[]) =>
    wordHits(await table.query().fullTextSearch(word, { columns: ["content"] }).where(among ? `${where} AND id IN (${among.map(sqlString).join(", ")})` : where).select(WORD_HIT_COLUMNS).limit(max).toArrow());
  if (perWord) return Promise.all(words.map((w) => ask(w)));
  const limit = Math.min(max, ONE_QUERY_ROWS);
  const any = await table.query().fullTextSearch(words.join(" "), { columns: ["content"] }).where(where).select(WORD_HIT_COLUMNS).limit(limit).toArrow();
  const rows = wordHits(any);
  // As many rows as asked for: there may be more, and which would come is the index's choice.
  if (rows.length >= limit) return Promise.all(words.map((w) => ask(w)));
  const contents = rows.map((r) => contentTerms(r.content));
  return Promise.all(
    words.map(async (word) => {
      const term = indexTerm(word);
      if (term === undefined) return ask(word); // not plain ASCII: only the index knows; its matches are among `rows`
      if (term === null) return []; // a stop word: the index matches nothing
      const held = rows.filter((_, i) => contents[i].terms.has(term));
      const unsure = rows.filter((_, i) => !contents[i].complete && !contents[i].terms.has(term));
      return unsure.length ? [...held, ...(await ask(word, unsure.map((r) => r.id)))] : held;
    }),
  );
}

/**
 * Word hits, read a column at a time like readMemoryRows: a common word of a big scope matches
 * thousands of memories, and Arrow's row proxies (`toArray()`) allocated about 30 MB per
 * account-wide search on a store of 3,000 (docs/safety.md, "Memory under load").
 */
function wordHits(table: unknown): MemoryWordHit[] {
  const t = table as ArrowTable;
  const [id, userId, seq, metadata, content] = ["id", "userId", "seq", "metadata", "content"].map((name) => columnValues(t, name));
  const tags = stringLists(t.getChild("tags"), t.numRows);
  return id.map((_, i) => ({ id: String(id[i]), userId: String(userId[i]), seq: Number(seq[i]), metadata: metadata[i] == null ? null : String(metadata[i]), tags: tags[i], content: String(content[i] ?? "") }));
}

/** What readMemoryRows and wordHits read of a query's Arrow table. */
type ArrowTable = { numRows: number; getChild(name: string): { get(i: number): unknown; toArray(): ArrayLike<unknown> } | null };

/** A column's values as a plain array, decoded at once; nulls where the query didn't select it. */
function columnValues(table: ArrowTable, name: string): unknown[] {
  const column = table.getChild(name);
  return column ? Array.from(column.toArray()) : new Array(table.numRows).fill(null);
}

/**
 * A list-of-strings column as one array per row ([] for null): each chunk's strings decoded at
 * once, and cut by the chunk's offsets. Reading cell by cell (`get(i)`, a Vector per cell) took
 * 70 ms for the three list columns of 5,000 rows, the better part of reading them at all: a
 * create's candidates for detection (core/validity.ts), a long list, an export.
 */
function stringLists(column: unknown, n: number): string[][] {
  if (!column) return Array.from({ length: n }, () => []);
  const { makeVector } = loadLance().arrow;
  const out: string[][] = [];
  for (const data of (column as { data: ListData[] }).data) {
    const child = data.children?.[0];
    const values = child ? Array.from(makeVector(child as Parameters<typeof makeVector>[0]).toArray() as ArrayLike<unknown>, String) : [];
    const at = (i: number) => Number(data.valueOffsets?.[i] ?? 0); // Int32Array, or BigInt64Array for a large list
    for (let i = 0; i < data.length; i++) out.push(child && data.getValid(i) ? values.slice(at(i), at(i + 1)) : []);
  }
  return out;
}

/** What stringLists reads of an Arrow list column's chunk (its offsets are already its own slice's). */
interface ListData {
  length: number;
  valueOffsets?: ArrayLike<number | bigint>;
  children?: unknown[];
  getValid(i: number): boolean;
}

/**
 * An Arrow vector cell as a Float32Array: one typed-array copy through `toArray()`, not 512
 * element reads through Arrow's row proxy (measured 27 → 8 ms for 150 rows).
 */
function toFloat32(cell: unknown): Float32Array {
  const fast = (cell as { toArray?: () => ArrayLike<number> }).toArray?.();
  return new Float32Array(fast ?? (cell as ArrayLike<number>));
}

export function toArrowRow(row: MemoryRow): Record<string, unknown> {
  return { ...row, history: row.history ?? null, vector: Array.from(row.vector) };
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

/** Each user's latest stored `perUser` rows (highest seq). */
function latestOfEach(rows: MemoryRecord[], perUser: number): MemoryRecord[] {
  const byUser = new Map<string, MemoryRecord[]>();
  for (const r of rows) {
    const mine = byUser.get(r.userId);
    if (mine) mine.push(r);
    else byUser.set(r.userId, [r]);
  }
  return [...byUser.values()].flatMap((mine) => (mine.length > perUser ? mine.sort(latestFirst).slice(0, perUser) : mine));
}

/** Latest stored first: by sequence number, then (memories from before sequence numbers, all 0) by createdAt and id. */
function latestFirst(a: MemoryRecord, b: MemoryRecord): number {
  return b.seq - a.seq || cmp(b.createdAt, a.createdAt) || cmp(b.id, a.id);
}
