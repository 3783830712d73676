import { mkdir, open, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { MmError } from "../errors.js";
import type { EmbedderConfig } from "../embedder/types.js";
import { describeEmbedder } from "../embedder/index.js";
import { withWriteLock } from "./lock.js";
import { restrictUmask, tightenStore } from "./private-files.js";
import { lanceSession, loadLance, sqlString, sqlStringList, toStringArray, type Connection, type Session, type Table } from "./lance.js";

export const STORE_FORMAT_VERSION = 1;

export interface StoreConfig {
  formatVersion: number;
  createdAt: string;
  embedder: EmbedderConfig;
  /** Defaults for `mm serve` (flags override): host, port, per-minute rate limits, body limit. */
  server?: {
    host?: string;
    port?: number;
    rateLimits?: { read?: number; write?: number; search?: number };
    bodyLimitBytes?: number;
    headersTimeoutMs?: number;
    requestTimeoutMs?: number;
    keepAliveTimeoutMs?: number;
  };
}

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
}

export interface MemoryRow extends MemoryRecord {
  vector: Float32Array;
}

/**
 * A memory's place in its user's sequence (1, 2, 3… in insertion order, assigned under the write
 * lock). Memories of one user arrive as a conversation, and a memory's neighbours (seq ± 1) are
 * context that search uses (see core/ranking.ts).
 */
export type Seq = number;

/** Where a memory sits: its id, and its place in its user's sequence. */
export interface MemoryPosition {
  id: string;
  userId: string;
  seq: Seq;
}

export interface MemoryFilter {
  accountId: string;
  userId?: string;
  agentId?: string;
  /** Every tag must be present (AND). */
  tags?: string[];
  /** Only memories linked to this entity. */
  entityId?: string;
}

export interface EntityRecord {
  id: string;
  accountId: string;
  name: string;
  /** `foldName(name)`: what search and duplicate detection compare. */
  nameKey: string;
  type: string;
  description: string | null;
  metadata: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface RelationRecord {
  id: string;
  accountId: string;
  sourceId: string;
  targetId: string;
  type: string;
  metadata: string | null;
  createdAt: string;
}

export interface RelationFilter {
  accountId: string;
  sourceId?: string;
  targetId?: string;
  type?: string;
}

export interface StoreStats {
  path: string;
  embedder: EmbedderConfig;
  memories: TableStats & { unindexedTextRows: number; vectorIndex: VectorIndexStats | null };
  graph: TableStats & { entities: number; relations: number };
  diskBytes: number;
}

export interface TableStats {
  rows: number;
  fragments: number;
  smallFragments: number;
  versions: number;
  indices: number;
  bytes: number;
}

export interface VectorIndexStats {
  name: string;
  type: "IVF_FLAT";
  partitions: number;
  indexedRows: number;
  unindexedRows: number;
}

/**
 * The sizes at which the store changes strategy. The defaults come from measurements on a 2-core
 * machine (README, "Speed, memory and scale"); tests shrink them to exercise the same code paths
 * on small tables.
 */
export interface StoreTuning {
  /** Maintenance builds a vector index once the memories table holds this many rows. */
  vectorIndexMinRows: number;
  /** A search whose filter leaves at most this many rows stays exact even when there is an index. */
  exactSearchMaxRows: number;
  /** LanceDB's metadata cache for this store (see lanceSession): 64 MiB. */
  metadataCacheBytes: number;
}

export const DEFAULT_TUNING: StoreTuning = { vectorIndexMinRows: 50_000, exactSearchMaxRows: 20_000, metadataCacheBytes: 64 * 1024 * 1024 };

export interface OptimizeResult {
  fragmentsRemoved: number;
  fragmentsAdded: number;
  oldVersionsRemoved: number;
  bytesRemoved: number;
  tempFilesRemoved: number;
  /** Set when this pass built (or retrained) the vector index. */
  vectorIndexBuilt?: { partitions: number; rows: number };
}

const MEMORIES = "memories";
const TEXT_INDEX = "content_fts";
const USER_INDEX = "userId_btree";
/** Maintenance also runs once this many rows sit outside the text index (scanning them is slow). */
const MAX_UNINDEXED_TEXT_ROWS = 2_000;
/**
 * Entities and relations share one table (`kind` tells them apart) so that deleting an entity
 * and every relation touching it is one LanceDB commit: atomic, with no moment, even after a
 * crash, where a reader could see a relation whose endpoint is gone.
 */
const GRAPH = "graph";
const ENTITY_COLUMNS = ["id", "accountId", "name", "nameKey", "type", "description", "metadata", "createdAt", "updatedAt"];
const RELATION_COLUMNS = ["id", "accountId", "sourceId", "targetId", "type", "metadata", "createdAt"];
const RECORD_COLUMNS = ["id", "accountId", "content", "userId", "agentId", "tags", "metadata", "entityIds", "createdAt", "updatedAt", "seq"];
/** Auto-maintenance runs when the table's version crosses a multiple of this, times one step per 100k rows (maintenanceDue). */
const MAINTENANCE_EVERY_VERSIONS = 32;
/**
 * Maintenance rewrites every fragment under LanceDB's 1M-row target, so its cost grows with the
 * table. To keep the total work proportional to what is written (amortised), both triggers scale
 * with size: the version interval by one step per this many rows, and the unindexed-row trigger
 * to a fixed fraction of the table.
 */
const MAINTENANCE_ROWS_PER_STEP = 100_000;
const MAINTENANCE_GROWTH_FRACTION = 0.2;
/** Vector index name prefix; the suffix is the partition count it was trained with. */
const VECTOR_INDEX_PREFIX = "vector_ivf_flat_p";
/** Partitions an unfiltered top-10 search probes (recall@10 = 1.000 at 100k rows, measured). */
const BASE_PROBES = 20;
/** How long a process trusts what it last read of the vector index before asking LanceDB again. */
const VECTOR_INDEX_CACHE_MS = 5_000;
/** Old versions younger than this are kept, so a concurrent reader's snapshot stays readable. */
const DEFAULT_KEEP_VERSIONS_MS = 10 * 60_000;
/** LanceDB leaves `data/.tmp*` behind after a kill -9; only ones this old are surely orphaned. */
const ORPHAN_TMP_AGE_MS = 60 * 60_000;

/**
 * The embedded store: a directory with `config.json` (which embedder made the vectors) and a
 * LanceDB database. Reads need no lock; every write goes through `write()`, which holds the
 * cross-process write lock, so two `mm` processes never lose each other's writes, and read-
 * modify-write operations (PATCH, delete-if-exists) are atomic.
 */
export class Store {
  /**
   * Fault injection for crash tests: called at named points inside multi-step writes. The CLI
   * sets it only when MM_TEST_CRASH_AT is set, to kill itself exactly there.
   */
  hooks?: (point: string) => void | Promise<void>;
  private pinned = false;

  private constructor(
    readonly dir: string,
    readonly config: StoreConfig,
    private readonly db: Connection,
    private memories: Table,
    private graph: Table,
    readonly tuning: StoreTuning,
    /** Shared with snapshot views, so a view doesn't re-read the index list. */
    private readonly indexCache: { at: number; value: VectorIndexInfo | null; counts: Map<string, { at: number; count: number }> },
    private readonly session: Session,
  ) {}

  /** Bytes in LanceDB's caches for this store (metadata and index), for tests and memory measurements. */
  cacheBytes(): number {
    return Number(this.session.sizeBytes());
  }

  /**
   * Opens the store at `dir`, creating it with `create` as its embedder when it doesn't exist.
   * Refuses a non-empty directory that isn't a store, so a mistyped `--store ~` litters nothing.
   */
  static async open(dir: string, options: { create?: EmbedderConfig; now?: () => Date; tuning?: Partial<StoreTuning> } = {}): Promise<Store> {
    restrictUmask();
    let config = await readConfig(dir);
    if (!config) {
      if (!options.create) {
        throw new MmError("STORE_ERROR", `No mm store at ${dir}. Run \`mm init\` to create one.`);
      }
      const init = options.create;
      await ensureDirForNewStore(dir);
      config = await withWriteLock(dir, async () => {
        const again = await readConfig(dir);
        if (again) return again;
        const fresh: StoreConfig = {
          formatVersion: STORE_FORMAT_VERSION,
          createdAt: (options.now?.() ?? new Date()).toISOString(),
          embedder: init,
        };
        const { db } = await connect(dir);
        await db.createEmptyTable(MEMORIES, memorySchema(init.dims), { mode: "create", existOk: true });
        await db.createEmptyTable(GRAPH, graphSchema(), { mode: "create", existOk: true });
        await writeConfig(dir, fresh);
        return fresh;
      });
    }
    await tightenStore(dir);
    if (config.formatVersion > STORE_FORMAT_VERSION) {
      throw new MmError("STORE_ERROR", `The store at ${dir} was written by a newer mm (format ${config.formatVersion}); upgrade mm.`);
    }
    // The metadata reads below don't depend on each other; each is a round trip to LanceDB's
    // threads, so they run together (a cold `mm` command opens the store every time).
    const tuning = { ...DEFAULT_TUNING, ...options.tuning };
    const { db, session } = await connect(dir, tuning);
    const [memories, tables] = await Promise.all([db.openTable(MEMORIES), db.tableNames()]);
    const [schema, indices, graph] = await Promise.all([
      memories.schema(),
      memories.listIndices(),
      tables.includes(GRAPH) ? db.openTable(GRAPH) : undefined,
    ]);
    if (!schema.fields.some((f) => f.name === "seq")) {
      // Stores made before sequence numbers: old memories get 0 (no neighbours), new ones count from 1.
      await withWriteLock(dir, () => memories.addColumns([{ name: "seq", valueSql: "CAST(0 AS INT)" }]));
    }
    if (!graph) {
      // Stores made before the knowledge graph existed gain its table on first open.
      await withWriteLock(dir, () => db.createEmptyTable(GRAPH, graphSchema(), { mode: "create", existOk: true }));
    }
    const indexCache = { at: Date.now(), value: vectorIndexOf(indices), counts: new Map() };
    const store = new Store(dir, config, db, memories, graph ?? (await db.openTable(GRAPH)), tuning, indexCache, session);
    await store.ensureIndexes(indices);
    return store;
  }

  /**
   * A read-only view with both tables pinned at their current versions, so the several queries of
   * one read (a count and a page, a relation and its endpoints) all see the same moment even
   * while other processes write. About 1 ms to take. Close it after use.
   */
  async snapshot(): Promise<Store> {
    const [memories, graph] = await Promise.all([this.db.openTable(MEMORIES), this.db.openTable(GRAPH)]);
    await Promise.all([memories.checkout(await memories.version()), graph.checkout(await graph.version())]);
    const view = new Store(this.dir, this.config, this.db, memories, graph, this.tuning, this.indexCache, this.session);
    view.pinned = true;
    return view;
  }

  /**
   * Indexes every store keeps:
   * - full-text (BM25) on memory content: English tokenizer, lower-cased, ASCII-folded, stemmed,
   *   stop words removed;
   * - a B-tree on memories' userId, so a per-user search or list reads that user's rows, not the
   *   table (measured at 100k rows: 517 → 46 ms for a prefiltered exact vector search).
   * New rows are searchable at once (LanceDB scans rows an index hasn't absorbed yet); maintenance
   * folds them in, because scanning many is slow. `indices` is the index list read at open.
   */
  private async ensureIndexes(indices: { name: string }[]): Promise<void> {
    if ([TEXT_INDEX, USER_INDEX].every((n) => indices.some((i) => i.name === n))) return;
    const { lancedb } = loadLance();
    await withWriteLock(this.dir, async () => {
      // Another process may have built them meanwhile.
      const existing = new Set((await this.memories.listIndices()).map((i) => i.name));
      if (!existing.has(TEXT_INDEX)) {
        await this.memories.createIndex("content", {
          name: TEXT_INDEX,
          config: lancedb.Index.fts({ baseTokenizer: "simple", language: "English", stem: true, removeStopWords: true, lowercase: true, asciiFolding: true, withPosition: false }),
        });
      }
      if (!existing.has(USER_INDEX)) await this.memories.createIndex("userId", { name: USER_INDEX, config: lancedb.Index.btree() });
    });
  }

  /** True when `dir` holds a store, without creating or opening anything. */
  static async exists(dir: string): Promise<boolean> {
    return (await readConfig(dir)) !== undefined;
  }

  /** The store's `config.json` (its embedder, among others), without opening the store; undefined if none. */
  static configAt(dir: string): Promise<StoreConfig | undefined> {
    return readConfig(dir);
  }

  /**
   * Refuses to pair this store with an embedder that makes other vectors. Vectors from two
   * models live in unrelated spaces; mixing them would make every score meaningless.
   */
  assertEmbedder(e: { provider: string; model: string; dims: number }): void {
    const mine = this.config.embedder;
    if (mine.provider !== e.provider || mine.model !== e.model || mine.dims !== e.dims) {
      throw new MmError(
        "EMBEDDER_MISMATCH",
        `The store at ${this.dir} holds vectors from ${describeEmbedder(mine)}, but the embedder in use is ${describeEmbedder(e)}. ` +
          "Use the store's own embedder, or a new store for the other one.",
        { storeEmbedder: describeEmbedder(mine), requestedEmbedder: describeEmbedder(e) },
      );
    }
  }

  async countMemories(filter?: MemoryFilter): Promise<number> {
    return this.memories.countRows(filter ? memoryWhere(filter) : undefined);
  }

  async getMemory(accountId: string, id: string): Promise<MemoryRecord | undefined> {
    const q = this.memories.query().where(`accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`).select(RECORD_COLUMNS).limit(1);
    return (await readMemoryRows(q, false))[0];
  }

  /** Newest first (createdAt, then id, descending): stable across pages whatever the physical order. */
  async listMemories(filter: MemoryFilter, page: PageWindow): Promise<{ records: MemoryRecord[]; total: number }> {
    return newestFirstPage(this.memories, memoryWhere(filter), RECORD_COLUMNS, page, (q) => readMemoryRows(q, false));
  }

  /**
   * Nearest memories by cosine distance. The filter is applied inside the vector query
   * (LanceDB prefilters `where` by default), so other users' closer memories cannot crowd
   * the requested user's out of the top k. `vector` may still be on its way (being embedded):
   * the search is routed (see vectorPlan) meanwhile.
   */
  async searchMemories(
    vector: Float32Array | Promise<Float32Array>,
    filter: MemoryFilter,
    limit: number,
  ): Promise<{ record: MemoryRecord; distance: number }[]> {
    const where = memoryWhere(filter);
    const [v, plan] = await Promise.all([vector, this.vectorPlan(where, limit)]);
    if (v.length !== this.config.embedder.dims) {
      throw new MmError("EMBEDDER_MISMATCH", `Query vector has ${v.length} dims; the store's vectors have ${this.config.embedder.dims}.`);
    }
    let q = this.memories.query().nearestTo(Array.from(v)).distanceType("cosine").where(where).select(RECORD_COLUMNS).limit(limit);
    q = plan.exact ? q.bypassVectorIndex() : q.nprobes(plan.nprobes);
    return (await readMemoryRows(q, false)).map(({ _distance, ...record }) => ({ record, distance: Number(_distance) }));
  }

  /**
   * Exact or approximate? Without a vector index, or when the filter leaves few rows (a user's own
   * memories, read through the B-tree), exact search is both fast and exact. Otherwise the IVF
   * index probes partitions: BASE_PROBES for an unfiltered top-10, scaled up by 1/selectivity (a
   * filter keeping a quarter of the rows leaves a quarter of each partition) and by the square
   * root of limit/10. Once that would read more than a quarter of the partitions, exact search is
   * cheaper again.
   */
  async vectorPlan(where: string, limit: number): Promise<{ exact: true } | { exact: false; nprobes: number }> {
    const index = await this.vectorIndex();
    if (!index) return { exact: true };
    const [total, scope] = await Promise.all([this.cachedCount(""), this.cachedCount(where)]);
    if (scope <= this.tuning.exactSearchMaxRows) return { exact: true };
    const nprobes = Math.ceil(BASE_PROBES * (total / scope) * Math.sqrt(Math.max(1, limit / 10)));
    if (nprobes > index.partitions / 4) return { exact: true };
    return { exact: false, nprobes };
  }

  /**
   * Row counts for routing searches, cached for a few seconds: at 1M rows a filtered count costs
   * about 10 ms, and a count a few seconds old routes just as well (both routes return the right
   * rows; the count only picks the faster one and the number of partitions to probe).
   */
  private async cachedCount(where: string): Promise<number> {
    const counts = this.indexCache.counts;
    const hit = counts.get(where);
    const now = Date.now();
    if (hit && now - hit.at <= VECTOR_INDEX_CACHE_MS) return hit.count;
    const count = where ? await this.memories.countRows(where) : await this.memories.countRows();
    if (counts.size >= 1024) counts.delete(counts.keys().next().value!);
    counts.set(where, { at: now, count });
    return count;
  }

  /** The vector index, if the table has one (cached for a few seconds across this process's views). */
  private async vectorIndex(): Promise<VectorIndexInfo | null> {
    const now = Date.now();
    if (now - this.indexCache.at > VECTOR_INDEX_CACHE_MS) {
      this.indexCache.value = vectorIndexOf(await this.memories.listIndices());
      this.indexCache.at = now;
    }
    return this.indexCache.value;
  }

  /**
   * The scope's memories whose content contains `word` as the full-text index analyses it
   * (stemmed, accents folded), at most `max` of them: which memories a query word touches, and how
   * many, for keyword coverage (core/keyword.ts). Only ids and positions; no content.
   */
  async memoriesWithWord(word: string, filter: MemoryFilter, max: number): Promise<MemoryPosition[]> {
    const rows = await this.memories.query().fullTextSearch(word, { columns: ["content"] }).where(memoryWhere(filter)).select(["id", "userId", "seq"]).limit(max).toArray();
    return rows.map((r) => ({ id: String(r.id), userId: String(r.userId), seq: Number(r.seq) }));
  }

  /**
   * Exact cosine distance from `vector` to exactly the given memories of the scope: those ids, and
   * each user's memories at the given sequence positions. For ranking keyword matches and their
   * neighbours beside the vector index's own nearest; a few hundred rows, so no index is used.
   */
  async nearestAmong(
    vector: Float32Array,
    filter: MemoryFilter,
    among: { ids: string[]; seqs: Map<string, number[]> },
  ): Promise<{ record: MemoryRecord; distance: number }[]> {
    const parts = among.ids.length ? [`id IN (${among.ids.map(sqlString).join(", ")})`] : [];
    for (const [userId, seqs] of among.seqs) {
      const valid = [...new Set(seqs)].filter((n) => Number.isInteger(n) && n > 0);
      if (valid.length) parts.push(`(userId = ${sqlString(userId)} AND seq IN (${valid.join(", ")}))`);
    }
    if (!parts.length) return [];
    const limit = among.ids.length + [...among.seqs.values()].reduce((n, s) => n + s.length, 0);
    const q = this.memories
      .query()
      .nearestTo(Array.from(vector))
      .distanceType("cosine")
      .where(`${memoryWhere(filter)} AND (${parts.join(" OR ")})`)
      .bypassVectorIndex()
      .select(RECORD_COLUMNS)
      .limit(limit);
    return (await readMemoryRows(q, false)).map(({ _distance, ...record }) => ({ record, distance: Number(_distance) }));
  }

  /** The scope's memories with these ids (no vectors), in no particular order. */
  async memoriesByIds(filter: MemoryFilter, ids: string[]): Promise<MemoryRecord[]> {
    if (!ids.length) return [];
    const q = this.memories.query().where(`${memoryWhere(filter)} AND id IN (${ids.map(sqlString).join(", ")})`).select(RECORD_COLUMNS).limit(ids.length);
    return readMemoryRows(q, false);
  }

  async getEntity(accountId: string, id: string): Promise<EntityRecord | undefined> {
    const row = await this.graphRowById("entity", ENTITY_COLUMNS, accountId, id);
    return row && toEntity(row);
  }

  /** One row of the graph table (an entity or a relation) by id, or undefined. */
  private async graphRowById(kind: "entity" | "relation", columns: string[], accountId: string, id: string): Promise<Record<string, unknown> | undefined> {
    const rows = await this.graph
      .query()
      .where(`kind = '${kind}' AND accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`)
      .select(columns)
      .limit(1)
      .toArray();
    return rows[0];
  }

  /** The entities among `ids` that exist for this account, by id. */
  async getEntities(accountId: string, ids: string[]): Promise<Map<string, EntityRecord>> {
    const out = new Map<string, EntityRecord>();
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += 500) {
      const chunk = unique.slice(i, i + 500);
      const rows = await this.graph
        .query()
        .where(`kind = 'entity' AND accountId = ${sqlString(accountId)} AND id IN (${chunk.map(sqlString).join(", ")})`)
        .select(ENTITY_COLUMNS)
        .toArray();
      for (const r of rows) out.set(String(r.id), toEntity(r));
    }
    return out;
  }

  async findEntityByName(accountId: string, nameKey: string, type: string): Promise<EntityRecord | undefined> {
    const rows = await this.graph
      .query()
      .where(`kind = 'entity' AND accountId = ${sqlString(accountId)} AND nameKey = ${sqlString(nameKey)} AND type = ${sqlString(type)}`)
      .select(ENTITY_COLUMNS)
      .toArray();
    return rows.map(toEntity).sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id))[0];
  }

  /** Newest first, stable across pages. */
  async listEntities(accountId: string, filter: { type?: string }, page: PageWindow): Promise<{ records: EntityRecord[]; total: number }> {
    return newestFirstPage(this.graph, entityWhere(accountId, filter), ENTITY_COLUMNS, page, async (q) => (await q.toArray()).map(toEntity));
  }

  /** Every entity whose folded name contains `foldedQuery` (the caller ranks and pages them). */
  async searchEntities(accountId: string, filter: { type?: string }, foldedQuery: string): Promise<EntityRecord[]> {
    const rows = await this.graph
      .query()
      .where(`${entityWhere(accountId, filter)} AND strpos(nameKey, ${sqlString(foldedQuery)}) > 0`)
      .select(ENTITY_COLUMNS)
      .toArray();
    return rows.map(toEntity);
  }

  async getRelation(accountId: string, id: string): Promise<RelationRecord | undefined> {
    const row = await this.graphRowById("relation", RELATION_COLUMNS, accountId, id);
    return row && toRelation(row);
  }

  async listRelations(filter: RelationFilter, page: PageWindow): Promise<{ records: RelationRecord[]; total: number }> {
    return newestFirstPage(this.graph, relationWhere(filter), RELATION_COLUMNS, page, async (q) => (await q.toArray()).map(toRelation));
  }

  /** Relations touching any of `entityIds` in the given direction (for traversal), optionally of one type. */
  async relationsOf(accountId: string, entityIds: string[], direction: "out" | "in" | "both", type?: string): Promise<RelationRecord[]> {
    const out: RelationRecord[] = [];
    const unique = [...new Set(entityIds)];
    for (let i = 0; i < unique.length; i += 500) {
      const list = unique.slice(i, i + 500).map(sqlString).join(", ");
      const ends = [direction !== "in" ? `sourceId IN (${list})` : "", direction !== "out" ? `targetId IN (${list})` : ""].filter(Boolean).join(" OR ");
      const rows = await this.graph
        .query()
        .where(`${relationWhere({ accountId, type })} AND (${ends})`)
        .select(RELATION_COLUMNS)
        .toArray();
      out.push(...rows.map(toRelation));
    }
    return [...new Map(out.map((r) => [r.id, r])).values()];
  }

  /** The whole graph of an account, for export. */
  async allGraph(accountId: string): Promise<{ entities: EntityRecord[]; relations: RelationRecord[] }> {
    const [entities, relations] = await Promise.all([
      this.graph.query().where(entityWhere(accountId, {})).orderBy(OLDEST_FIRST).select(ENTITY_COLUMNS).toArray(),
      this.graph.query().where(relationWhere({ accountId })).orderBy(OLDEST_FIRST).select(RELATION_COLUMNS).toArray(),
    ]);
    return { entities: entities.map(toEntity), relations: relations.map(toRelation) };
  }

  /** Runs `fn` under the cross-process write lock, then keeps the tables compact. */
  async write<T>(fn: (w: StoreWriter) => Promise<T>): Promise<T> {
    if (this.pinned) throw new MmError("INTERNAL_ERROR", "A snapshot is read-only.");
    return withWriteLock(this.dir, async () => {
      const before = (await this.memories.version()) + (await this.graph.version());
      const result = await fn(new StoreWriter(this, this.memories, this.graph));
      const after = (await this.memories.version()) + (await this.graph.version());
      const [rows, unindexedTextRows] = await Promise.all([this.memories.countRows(), this.unindexedTextRows()]);
      if (maintenanceDue({ before, after, rows, unindexedTextRows })) {
        await this.maintainLocked({ keepVersionsMs: DEFAULT_KEEP_VERSIONS_MS });
      }
      return result;
    });
  }

  private async unindexedTextRows(): Promise<number> {
    return (await this.memories.indexStats(TEXT_INDEX))?.numUnindexedRows ?? 0;
  }

  async stats(): Promise<StoreStats> {
    const index = vectorIndexOf(await this.memories.listIndices());
    const indexStats = index ? await this.memories.indexStats(index.name) : undefined;
    return {
      path: this.dir,
      embedder: this.config.embedder,
      memories: {
        ...(await tableStats(this.memories)),
        unindexedTextRows: await this.unindexedTextRows(),
        vectorIndex:
          index && indexStats
            ? { name: index.name, type: "IVF_FLAT", partitions: index.partitions, indexedRows: indexStats.numIndexedRows, unindexedRows: indexStats.numUnindexedRows }
            : null,
      },
      graph: {
        ...(await tableStats(this.graph)),
        entities: await this.graph.countRows("kind = 'entity'"),
        relations: await this.graph.countRows("kind = 'relation'"),
      },
      diskBytes: await dirSize(this.dir),
    };
  }

  /**
   * Compacts small fragments, folds new rows into the indexes, deletes versions older than
   * `keepVersionsMs` (and orphaned temp files), and builds or retrains the vector index when the
   * table's size calls for it.
   */
  async optimize(options: { keepVersionsMs?: number } = {}): Promise<OptimizeResult> {
    return withWriteLock(this.dir, () => this.maintainLocked({ keepVersionsMs: options.keepVersionsMs ?? DEFAULT_KEEP_VERSIONS_MS }));
  }

  private async maintainLocked(options: { keepVersionsMs: number }): Promise<OptimizeResult> {
    const result = await this.optimizeLocked(options);
    const rows = await this.memories.countRows();
    const current = vectorIndexOf(await this.memories.listIndices());
    const wanted = wantedVectorIndex(rows, current, this.tuning);
    if (wanted) {
      // Dropped first: LanceDB keeps one vector index per column. In between, searches are exact.
      if (current) await this.memories.dropIndex(current.name);
      const { lancedb } = loadLance();
      await this.memories.createIndex("vector", {
        name: `${VECTOR_INDEX_PREFIX}${wanted.partitions}`,
        config: lancedb.Index.ivfFlat({ distanceType: "cosine", numPartitions: wanted.partitions }),
      });
      result.vectorIndexBuilt = { partitions: wanted.partitions, rows };
    }
    this.indexCache.at = 0;
    this.indexCache.counts.clear();
    return result;
  }

  private async optimizeLocked(options: { keepVersionsMs: number }): Promise<OptimizeResult> {
    const total: OptimizeResult = { fragmentsRemoved: 0, fragmentsAdded: 0, oldVersionsRemoved: 0, bytesRemoved: 0, tempFilesRemoved: 0 };
    for (const [name, table] of [
      [MEMORIES, this.memories],
      [GRAPH, this.graph],
    ] as const) {
      const stats = await table.optimize({ cleanupOlderThan: new Date(Date.now() - options.keepVersionsMs) });
      total.fragmentsRemoved += stats.compaction.fragmentsRemoved;
      total.fragmentsAdded += stats.compaction.fragmentsAdded;
      total.oldVersionsRemoved += stats.prune.oldVersionsRemoved;
      total.bytesRemoved += stats.prune.bytesRemoved;
      total.tempFilesRemoved += await removeOrphanTempFiles(join(this.dir, "db", `${name}.lance`));
    }
    return total;
  }

  /** Replaces the store's embedder; only allowed while it holds no memories. */
  async resetEmbedder(embedder: EmbedderConfig): Promise<Store> {
    await withWriteLock(this.dir, async () => {
      const count = await this.memories.countRows();
      if (count > 0) {
        throw new MmError(
          "EMBEDDER_MISMATCH",
          `The store at ${this.dir} holds ${count} memories embedded with ${describeEmbedder(this.config.embedder)}; ` +
            `it cannot switch to ${describeEmbedder(embedder)}. Use a new store (--store) for the other embedder.`,
          { storeEmbedder: describeEmbedder(this.config.embedder), requestedEmbedder: describeEmbedder(embedder) },
        );
      }
      await this.db.createEmptyTable(MEMORIES, memorySchema(embedder.dims), { mode: "overwrite" });
      await writeConfig(this.dir, { ...this.config, embedder });
    });
    return Store.open(this.dir); // recreates the text index on the new table
  }

  close(): void {
    this.memories.close();
    this.graph.close();
    if (!this.pinned) this.db.close();
  }
}

/** Write operations; only reachable inside `Store.write`, so every write holds the lock. */
export class StoreWriter {
  constructor(
    readonly store: Store,
    private readonly memories: Table,
    private readonly graph: Table,
  ) {}

  async insertEntity(e: EntityRecord): Promise<void> {
    await this.graph.add([{ ...emptyGraphRow(), kind: "entity", ...e }]);
  }

  async replaceEntity(e: EntityRecord): Promise<void> {
    await this.graph
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute([{ ...emptyGraphRow(), kind: "entity", ...e }]);
  }

  /**
   * Deletes an entity and every relation touching it in one commit (one `delete` predicate), so the
   * cascade is atomic. Memory links to it are dropped afterwards; until then (or if a crash comes
   * between the two commits) readers filter links to missing entities out.
   */
  async deleteEntityCascade(accountId: string, id: string): Promise<{ deleted: boolean; deletedRelations: number }> {
    const acct = `accountId = ${sqlString(accountId)}`;
    if ((await this.graph.countRows(`kind = 'entity' AND ${acct} AND id = ${sqlString(id)}`)) === 0) return { deleted: false, deletedRelations: 0 };
    const touching = `kind = 'relation' AND ${acct} AND (sourceId = ${sqlString(id)} OR targetId = ${sqlString(id)})`;
    const deletedRelations = await this.graph.countRows(touching);
    await this.graph.delete(`(kind = 'entity' AND ${acct} AND id = ${sqlString(id)}) OR (${touching})`);
    await this.store.hooks?.("entity-delete:after-graph-commit");
    await this.memories.update({
      where: `${acct} AND array_has(entityIds, ${sqlString(id)})`,
      valuesSql: { entityIds: `array_remove(entityIds, ${sqlString(id)})` },
    });
    return { deleted: true, deletedRelations };
  }

  async insertRelation(r: RelationRecord): Promise<void> {
    await this.graph.add([{ ...emptyGraphRow(), kind: "relation", ...r, updatedAt: r.createdAt }]);
  }

  async deleteRelation(accountId: string, id: string): Promise<boolean> {
    const where = `kind = 'relation' AND accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`;
    if ((await this.graph.countRows(where)) === 0) return false;
    await this.graph.delete(where);
    return true;
  }

  /** Inserts in one commit, numbering each user's new memories after their last one. */
  async insertMemories(rows: MemoryRow[]): Promise<void> {
    if (rows.length === 0) return;
    const next = new Map<string, number>();
    for (const row of rows) {
      const key = `${row.accountId}\u0000${row.userId}`;
      if (!next.has(key)) next.set(key, (await this.lastSeq(row.accountId, row.userId)) + 1);
      row.seq = next.get(key)!;
      next.set(key, row.seq + 1);
    }
    await this.memories.add(rows.map(toArrowRow));
  }

  private async lastSeq(accountId: string, userId: string): Promise<number> {
    const rows = await this.memories
      .query()
      .where(`accountId = ${sqlString(accountId)} AND userId = ${sqlString(userId)}`)
      .orderBy({ columnName: "seq", ascending: false })
      .select(["seq"])
      .limit(1)
      .toArray();
    return rows.length ? Number(rows[0].seq) : 0;
  }

  /** Replaces a memory in one commit (merge-insert on id), so a crash can't leave it half-written. */
  async replaceMemory(row: MemoryRow): Promise<void> {
    await this.memories.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute([toArrowRow(row)]);
  }

  /** Deletes one memory; false when it doesn't exist for this account. */
  async deleteMemory(accountId: string, id: string): Promise<boolean> {
    const where = `accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`;
    if ((await this.memories.countRows(where)) === 0) return false;
    await this.memories.delete(where);
    return true;
  }

  async getMemoryRow(accountId: string, id: string): Promise<MemoryRow | undefined> {
    const q = this.memories.query().where(`accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`).select([...RECORD_COLUMNS, "vector"]).limit(1);
    return (await readMemoryRows(q, true))[0] as MemoryRow | undefined;
  }
}

function memoryWhere(filter: MemoryFilter): string {
  const parts = [`accountId = ${sqlString(filter.accountId)}`];
  if (filter.userId !== undefined) parts.push(`userId = ${sqlString(filter.userId)}`);
  if (filter.agentId !== undefined) parts.push(`agentId = ${sqlString(filter.agentId)}`);
  if (filter.tags && filter.tags.length) parts.push(`array_has_all(tags, ${sqlStringList(filter.tags)})`);
  if (filter.entityId !== undefined) parts.push(`array_has(entityIds, ${sqlString(filter.entityId)})`);
  return parts.join(" AND ");
}

const NEWEST_FIRST = [
  { columnName: "createdAt", ascending: false },
  { columnName: "id", ascending: false },
];
const OLDEST_FIRST = [
  { columnName: "createdAt", ascending: true },
  { columnName: "id", ascending: true },
];

type PageWindow = { offset: number; limit: number };
type PagedQuery = ReturnType<Table["query"]>;

/** One page of `table` rows matching `where`, newest first (createdAt, then id), and the total. */
async function newestFirstPage<T>(
  table: Table,
  where: string,
  columns: string[],
  page: PageWindow,
  read: (query: PagedQuery) => Promise<T[]>,
): Promise<{ records: T[]; total: number }> {
  const total = await table.countRows(where);
  if (page.offset >= total) return { records: [], total };
  return { records: await read(table.query().where(where).orderBy(NEWEST_FIRST).offset(page.offset).limit(page.limit).select(columns)), total };
}

function entityWhere(accountId: string, filter: { type?: string }): string {
  const parts = [`kind = 'entity'`, `accountId = ${sqlString(accountId)}`];
  if (filter.type !== undefined) parts.push(`type = ${sqlString(filter.type)}`);
  return parts.join(" AND ");
}

function relationWhere(filter: RelationFilter): string {
  const parts = [`kind = 'relation'`, `accountId = ${sqlString(filter.accountId)}`];
  if (filter.sourceId !== undefined) parts.push(`sourceId = ${sqlString(filter.sourceId)}`);
  if (filter.targetId !== undefined) parts.push(`targetId = ${sqlString(filter.targetId)}`);
  if (filter.type !== undefined) parts.push(`type = ${sqlString(filter.type)}`);
  return parts.join(" AND ");
}

/** Entity and relation rows share these columns; each kind leaves the other's null. */
function graphSchema() {
  const { arrow } = loadLance();
  const text = (name: string, nullable: boolean) => new arrow.Field(name, new arrow.Utf8(), nullable);
  return new arrow.Schema([
    text("kind", false),
    text("id", false),
    text("accountId", false),
    text("type", false),
    text("name", true),
    text("nameKey", true),
    text("description", true),
    text("sourceId", true),
    text("targetId", true),
    text("metadata", true),
    text("createdAt", false),
    text("updatedAt", false),
  ]);
}

function emptyGraphRow(): Record<string, string | null> {
  return { name: null, nameKey: null, description: null, sourceId: null, targetId: null, metadata: null };
}

function toEntity(r: Record<string, unknown>): EntityRecord {
  return {
    id: String(r.id),
    accountId: String(r.accountId),
    name: String(r.name),
    nameKey: String(r.nameKey),
    type: String(r.type),
    description: r.description == null ? null : String(r.description),
    metadata: r.metadata == null ? null : String(r.metadata),
    createdAt: String(r.createdAt),
    updatedAt: String(r.updatedAt),
  };
}

function toRelation(r: Record<string, unknown>): RelationRecord {
  return {
    id: String(r.id),
    accountId: String(r.accountId),
    sourceId: String(r.sourceId),
    targetId: String(r.targetId),
    type: String(r.type),
    metadata: r.metadata == null ? null : String(r.metadata),
    createdAt: String(r.createdAt),
  };
}

interface VectorIndexInfo {
  name: string;
  partitions: number;
}

function vectorIndexOf(indices: { name: string }[]): VectorIndexInfo | null {
  for (const { name } of indices) {
    if (name.startsWith(VECTOR_INDEX_PREFIX)) {
      const partitions = Number(name.slice(VECTOR_INDEX_PREFIX.length));
      if (Number.isInteger(partitions) && partitions > 0) return { name, partitions };
    }
  }
  return null;
}

/** √rows partitions (LanceDB's own default), bounded so a partition never gets tiny or huge. */
export function vectorIndexPartitions(rows: number): number {
  return Math.min(4096, Math.max(16, Math.round(Math.sqrt(rows))));
}

/**
 * The index maintenance should build now, if any: the first once the table reaches
 * `vectorIndexMinRows`, and a retrained one once the table has grown to four times the size the
 * current one was trained for (its partitions twice too coarse). Retraining at ×4 keeps the total
 * training work proportional to the rows written.
 */
export function wantedVectorIndex(rows: number, current: { partitions: number } | null, tuning: StoreTuning): { partitions: number } | null {
  if (rows < tuning.vectorIndexMinRows) return null;
  const partitions = vectorIndexPartitions(rows);
  if (!current) return { partitions };
  return partitions >= 2 * current.partitions ? { partitions } : null;
}

/**
 * Whether a write should be followed by maintenance. Amortised: the version interval grows by a
 * step per 100k rows and the unindexed-row trigger is a fifth of the table, so a table filled in
 * large batches is rewritten a logarithmic number of times, not once per batch.
 */
export function maintenanceDue(s: { before: number; after: number; rows: number; unindexedTextRows: number }): boolean {
  const interval = MAINTENANCE_EVERY_VERSIONS * Math.max(1, Math.ceil(s.rows / MAINTENANCE_ROWS_PER_STEP));
  const crossed = Math.floor(s.after / interval) > Math.floor(s.before / interval);
  return crossed || s.unindexedTextRows > Math.max(MAX_UNINDEXED_TEXT_ROWS, s.rows * MAINTENANCE_GROWTH_FRACTION);
}

async function tableStats(table: Table): Promise<TableStats> {
  const s = await table.stats();
  return {
    rows: s.numRows,
    fragments: s.fragmentStats.numFragments,
    smallFragments: s.fragmentStats.numSmallFragments,
    versions: (await table.listVersions()).length,
    indices: s.numIndices,
    bytes: s.totalBytes,
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function memorySchema(dims: number) {
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
  ]);
}

/**
 * Memory rows from a query, read column by column from the Arrow result rather than through
 * per-row proxies (a neighbour fetch of 150 rows: 22 → ~10 ms).
 */
type ReadRow = MemoryRecord & { vector?: Float32Array; _score?: number; _distance?: number };

async function readMemoryRows(query: { toArrow(): Promise<unknown> }, withVectors: boolean): Promise<ReadRow[]> {
  type Col = { get(i: number): unknown; toArray(): ArrayLike<unknown> } | null;
  const table = (await query.toArrow()) as { numRows: number; getChild(name: string): Col };
  const n = table.numRows;
  const col = (name: string) => table.getChild(name);
  const strings = (name: string) => {
    const c = col(name);
    return c ? (Array.from(c.toArray()) as (string | null)[]) : new Array(n).fill(null);
  };
  const [id, accountId, content, userId, agentId, metadata, createdAt, updatedAt] = ["id", "accountId", "content", "userId", "agentId", "metadata", "createdAt", "updatedAt"].map(strings);
  const seq = col("seq")?.toArray() ?? [];
  const score = col("_score")?.toArray();
  const distance = col("_distance")?.toArray();
  const tags = col("tags");
  const entityIds = col("entityIds");
  const vector = withVectors ? col("vector") : null;
  const out: ReadRow[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      id: String(id[i]),
      accountId: String(accountId[i]),
      content: String(content[i]),
      userId: String(userId[i]),
      agentId: agentId[i] ?? null,
      tags: toStringArray(tags?.get(i)),
      metadata: metadata[i] ?? null,
      entityIds: toStringArray(entityIds?.get(i)),
      createdAt: String(createdAt[i]),
      updatedAt: String(updatedAt[i]),
      seq: Number(seq[i] ?? 0),
      ...(vector ? { vector: toFloat32(vector.get(i)) } : {}),
      ...(score ? { _score: Number(score[i]) } : {}),
      ...(distance ? { _distance: Number(distance[i]) } : {}),
    });
  }
  return out;
}

/**
 * An Arrow vector cell as a Float32Array: one typed-array copy through `toArray()`, not 512
 * element reads through Arrow's row proxy (measured 27 → 8 ms for 150 rows).
 */
function toFloat32(cell: unknown): Float32Array {
  const fast = (cell as { toArray?: () => ArrayLike<number> }).toArray?.();
  return new Float32Array(fast ?? (cell as ArrayLike<number>));
}

function toArrowRow(row: MemoryRow): Record<string, unknown> {
  return { ...row, vector: Array.from(row.vector) };
}

async function connect(dir: string, tuning: Pick<StoreTuning, "metadataCacheBytes"> = DEFAULT_TUNING): Promise<{ db: Connection; session: Session }> {
  const { lancedb } = loadLance();
  const session = lanceSession(tuning.metadataCacheBytes);
  // readConsistencyInterval 0: every read sees the latest commit, including other processes'.
  return { db: await lancedb.connect(join(dir, "db"), { readConsistencyInterval: 0, session }), session };
}

async function readConfig(dir: string): Promise<StoreConfig | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, "config.json"), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new MmError("STORE_ERROR", `Cannot read ${join(dir, "config.json")}: ${(err as Error).message}`, {}, { cause: err });
  }
  try {
    return JSON.parse(text) as StoreConfig;
  } catch (err) {
    throw new MmError("STORE_ERROR", `${join(dir, "config.json")} is not valid JSON.`, {}, { cause: err });
  }
}

/** Write-to-temp, fsync, rename: a crash leaves either the old config or the new one, never half. */
async function writeConfig(dir: string, config: StoreConfig): Promise<void> {
  const target = join(dir, "config.json");
  const tmp = `${target}.${process.pid}.tmp`;
  const fh = await open(tmp, "w", 0o600);
  try {
    await fh.writeFile(JSON.stringify(config, null, 2) + "\n");
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, target);
}

async function ensureDirForNewStore(dir: string): Promise<void> {
  // Parents keep the usual modes; the store itself is private (tightenStore fixes a directory given empty).
  await mkdir(dir, { recursive: true });
  const entries = (await readdir(dir)).filter((e) => !e.startsWith(".write-lock"));
  const foreign = entries.filter((e) => e !== "db" && !e.startsWith("config.json"));
  if (foreign.length) {
    throw new MmError("STORE_ERROR", `${dir} is not empty and is not an mm store; choose an empty or new directory for --store.`);
  }
}

async function removeOrphanTempFiles(tableDir: string): Promise<number> {
  let removed = 0;
  const dataDir = join(tableDir, "data");
  let names: string[];
  try {
    names = await readdir(dataDir);
  } catch {
    return 0;
  }
  for (const name of names.filter((n) => n.startsWith(".tmp"))) {
    const path = join(dataDir, name);
    try {
      const { mtimeMs } = await stat(path);
      if (Date.now() - mtimeMs > ORPHAN_TMP_AGE_MS) {
        await rm(path, { recursive: true, force: true });
        removed++;
      }
    } catch {
      // vanished meanwhile
    }
  }
  return removed;
}

async function dirSize(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    try {
      if (entry.isDirectory()) total += await dirSize(path);
      else total += (await stat(path)).size;
    } catch {
      // vanished meanwhile (concurrent cleanup)
    }
  }
  return total;
}
