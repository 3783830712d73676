import { mkdir, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { MmError, validationError } from "../errors.js";
import type { EmbedderConfig } from "../embedder/types.js";
import { describeEmbedder } from "../embedder/index.js";
import { checkCoordination } from "./coordination.js";
import { CurrentRows, userKey } from "./current-rows.js";
import { RecentWrites, type RecentView } from "./recent-writes.js";
import { connectDatabase, connectTables, documentsOf, sharedFor } from "./database.js";
import { Document, FileDocuments, TableDocuments, type DocumentDriver } from "./documents.js";
import type { Freshness } from "./freshness.js";
import { GraphReads, GraphWrites, GRAPH, graphSchema, type EntityRecord, type RelationFilter, type RelationRecord } from "./graph.js";
import { ensureIndexes, TEXT_INDEX, USER_INDEX, vectorIndexOf } from "./indexes.js";
import { sqlString, type Connection, type Session, type Table } from "./lance.js";
import { coordinationDir, placeOf, type StorePlace } from "./location.js";
import { WRITE_LOCK_TIMEOUT_MS } from "./lock.js";
import { MAINTAINED_STAMP, maintain, segmentStats, tableStats, withMaintenanceLock } from "./maintenance.js";
import { StoreHealth, storeDeadlineMs, withDeadline } from "./outage.js";
import { addLaterColumns, hasLaterColumns, lastSeqsOf, MemoryReads, MemoryWrites, memorySchema, type LastSeqs, type MemoryRow, type RoutingCache } from "./memories.js";
import type { PageWindow } from "./pages.js";
import { restrictUmask, tightenStore } from "./private-files.js";
import { FIRST_SEGMENT, SegmentSet, segmentList, segmentName, type Segment } from "./segments.js";
import type { Shared } from "./shared/types.js";
import { DEFAULT_TUNING, OBJECT_STORE_TUNING, type OptimizeResult, type SegmentStats, type StoreTuning, type TableStats, type VectorIndexStats } from "./store-types.js";

export * from "./store-types.js";
export type { EntityRecord, RelationFilter, RelationRecord } from "./graph.js";
export type { MemoryFilter, MemoryPosition, MemoryRecord, MemoryRow, Seq, VectorHit } from "./memories.js";

type Env = Record<string, string | undefined>;

/**
 * 1: one memories table. 2: memories in segments (storage/segments.ts); a store moves to 2 when it
 * seals its first segment, so an older mm, which would read only the first, refuses it.
 */
export const STORE_FORMAT_VERSION = 2;

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


export interface StoreStats {
  path: string;
  embedder: EmbedderConfig;
  /** Totals over the segments, and each segment (oldest first). */
  memories: TableStats & { unindexedTextRows: number; vectorIndex: VectorIndexStats | null; segments: SegmentStats[] };
  graph: TableStats & { entities: number; relations: number };
  diskBytes: number;
}

/** How long a read waits for the versions of its consistency token (Store.readAfter). */
export const READ_AFTER_WAIT_MS = 5_000;

/** `memories:53,graph:12` → [["memories", 53], ["graph", 12]]; anything else is VALIDATION_ERROR naming the header. */
export function parseConsistencyToken(token: string): [string, number][] {
  const pairs = token.trim().split(",").map((pair) => /^(memories(?:_\d{1,6})?|graph):(\d{1,15})$/.exec(pair.trim()));
  if (token.length > 4_096 || !pairs.length || pairs.some((m) => !m)) {
    throw validationError("X-MM-Consistency", "must be a consistency token as a write's X-MM-Consistency header gave it (table:version, comma-separated)");
  }
  return pairs.map((m) => [m![1], Number(m![2])]);
}

/** Old versions younger than this are kept by `mm store optimize`, so a concurrent reader's snapshot stays readable. */
const DEFAULT_KEEP_VERSIONS_MS = 10 * 60_000;


/**
 * The store: its configuration and small documents (storage/documents.ts), the memories over
 * segments (storage/memories.ts) and the knowledge graph (storage/graph.ts), in one LanceDB
 * database: a local directory (`<dir>/db`, with `config.json` beside it) or a prefix in object
 * storage (`az://…`, `s3://…`, `gs://…`). Reads need no lock; every write goes through `write()`,
 * which holds the store's `write` lock (storage/shared: across processes, or across replicas with
 * Redis), so two writers never lose each other's writes, and read-modify-write operations (PATCH,
 * delete-if-exists) are atomic.
 *
 * Compaction and index upkeep are not part of a write: they run in the background
 * (storage/maintenance.ts), or all at once with `optimize()`.
 */
export class Store extends MemoryReads {
  /**
   * Fault injection for crash tests: called at named points inside multi-step writes. The CLI
   * sets it only when MM_TEST_CRASH_AT is set, to kill itself exactly there.
   */
  hooks?: (point: string) => void | Promise<void>;
  /** How many writes this handle has committed (the CLI checks for due maintenance after any). */
  writes = 0;
  /** Users' last sequence numbers as this process last wrote them (StoreWriter.insertMemories). */
  readonly lastSeqs: LastSeqs = { segment: "", version: -1, byUser: new Map(), othersWrote: true };
  /** Users' every current memory as this process last read or wrote them (detection's scan; storage/current-rows.ts). */
  readonly currentRows = new CurrentRows();
  /** The rows this process wrote since the active segment's last other commit, for detection's reads (storage/recent-writes.ts). */
  readonly recentWrites = new RecentWrites(async (name, version) => {
    const table = await this.db.openTable(name);
    await table.checkout(version);
    return table;
  });
  private graphReads: GraphReads;
  /**
   * Whether the object store answers (storage/outage.ts): a read or write that fails because of it
   * marks it down, later ones fail at once with STORE_UNAVAILABLE, and the store is reopened
   * (heal) until it answers again. A local store's failures stay what they are.
   */
  readonly health: StoreHealth;

  private constructor(
    /** Where the store is, as given: a local directory, or an object-store URI. */
    readonly dir: string,
    readonly place: StorePlace,
    readonly config: StoreConfig,
    /** The data tables' connection (storage/database.ts, connectTables). */
    private db: Connection,
    /** An object store's other connection, with LanceDB's read-consistency interval: the `meta` table's. */
    private metaDb: Connection | undefined,
    /** An object store's read-consistency interval over `db`'s tables; undefined for a local store and a snapshot. */
    private freshness: Freshness | undefined,
    private segmentSet: SegmentSet,
    /** Set on a snapshot: the segments pinned at their versions. */
    private readonly view: Segment[] | undefined,
    private graph: Table,
    readonly tuning: StoreTuning,
    protected readonly routing: RoutingCache,
    private session: Session,
    /** What the store's processes agree on: locks, leases, change stamps (storage/shared). */
    readonly shared: Shared,
    /** The store's small documents: accounts and keys, console sessions, the segment list. */
    public documents: DocumentDriver,
    private readonly env: Env,
    /** A snapshot's: its store's. */
    health?: StoreHealth,
  ) {
    super();
    this.graphReads = new GraphReads(graph);
    this.deadlineMs = place.kind === "object" ? storeDeadlineMs(env) : 0;
    this.health = health ?? new StoreHealth(place.label, () => this.heal(), this.deadlineMs || undefined);
  }

  /** How long one read, or one write under the lock, may take on an object store (storage/outage.ts); 0 for a local store. */
  private readonly deadlineMs: number;

  /**
   * Where this machine's processes coordinate for the store (locks, the quota ledger, the running
   * server's address): the store's own directory, or for an object store a local state directory
   * (storage/location.ts, coordinationDir).
   */
  /** Closes the Redis connection Store.open opened for this store (not a caller's, not a snapshot's). */
  private releaseShared: (() => Promise<void>) | undefined;
  /** The stamps this handle's last write saw (`maintained`) and left (`write`): object stores, withWriteLock. */
  private stamps: { write?: string; maintained?: string } = {};
  /** toLatest's checkout while it runs. */
  private movingToLatest: Promise<boolean> | undefined;

  get coordinationDir(): string {
    return coordinationDir(this.place, this.env);
  }

  /** The LanceDB database's local directory; undefined for an object store. */
  get localDbDir(): string | undefined {
    return this.place.kind === "local" ? join(this.place.dir, "db") : undefined;
  }

  /**
   * Starts afresh with LanceDB: a new connection, session (its caches) and table handles. The old
   * ones stay open for `graceMs`, for what may still use them (a read in flight, a snapshot), then
   * close. For long-running processes (the Maintainer in storage/maintenance.ts renews between its
   * passes, every RENEW_EVERY_WRITES writes or RENEW_EVERY_MS): a LanceDB handle's native memory
   * grows with every table version it has seen, beyond what its caches count, and only closing it
   * gives that back (docs/safety.md, "Memory under load").
   */
  async renew(graceMs = 60_000): Promise<void> {
    if (this.view) return;
    const connected = await connectDatabase(this.place, this.env, this.tuning.metadataCacheBytes);
    const { tables: db, freshness } = await connectTables(this.place, this.env, connected);
    const [first, graph] = await Promise.all([db.openTable(FIRST_SEGMENT), db.openTable(GRAPH)]);
    freshness?.seen([first, graph]);
    const old = { db: this.db, metaDb: this.metaDb, segmentSet: this.segmentSet, graph: this.graph, documents: this.documents };
    if (this.place.kind === "object") this.documents = await TableDocuments.open(connected.db, this.shared, this.place.uri);
    this.db = db;
    this.metaDb = db === connected.db ? undefined : connected.db;
    this.freshness = freshness;
    this.session = connected.session;
    this.segmentSet = new SegmentSet(db, segmentList(() => Promise.resolve(this.documents)), first);
    this.graph = graph;
    this.graphReads = new GraphReads(graph);
    setTimeout(() => {
      old.graph.close();
      old.segmentSet.close();
      if (old.documents !== this.documents) (old.documents as TableDocuments).close();
      old.db.close();
      old.metaDb?.close();
    }, graceMs).unref();
  }

  /**
   * After an outage of the object store: everything this process holds that names a table version
   * or a file is dropped, since the store may have come back without them (an emulator restarted
   * from its last save; a cleanup that ran meanwhile). A new connection and session (LanceDB's
   * caches), every table handle and the documents reopened at their latest versions (renew), and
   * mm's own caches by version forgotten: index routing and counts, reads by table version, users'
   * last sequence numbers, detection's current rows and recent writes, the write stamps (so the next
   * write catches up). Throws while the store still doesn't answer: renew's connection lists the
   * tables and opens two of them first, and changes nothing unless they all succeed.
   */
  async heal(): Promise<void> {
    if (this.view || this.place.kind !== "object") return;
    await this.renew(60_000);
    this.routing.indexes.clear();
    this.routing.counts.clear();
    this.routing.atVersion?.clear();
    Object.assign(this.lastSeqs, { segment: "", version: -1, othersWrote: true });
    this.lastSeqs.byUser.clear();
    this.currentRows.forget();
    this.recentWrites.forget();
    this.stamps = {};
  }

  /**
   * `err` as a read or write reports it: STORE_UNAVAILABLE when the object store caused it, which
   * marks the store down (storage/outage.ts); anything else, and any failure of a local store, as it is.
   */
  storeFailed(err: unknown): unknown {
    return this.place.kind === "object" ? this.health.failed(err) : err;
  }

  /** Bytes in LanceDB's caches for this store (metadata and index), for tests and memory measurements. */
  cacheBytes(): number {
    return Number(this.session.sizeBytes());
  }

  /** Approximate number of entries in LanceDB's caches for this store (memory measurements). */
  cacheItems(): number {
    return this.session.approxNumItems();
  }

  /**
   * Opens the store at `location` (a directory or an object-store URI), creating it with `create`
   * as its embedder when it doesn't exist. Refuses a non-empty directory (or an object-store
   * prefix holding other tables) that isn't a store, so a mistyped `--store ~` litters nothing.
   * `shared` is what its processes agree through (default: lock files in the store's directory,
   * or in this machine's coordination directory for an object store).
   */
  static async open(
    location: string,
    options: { create?: EmbedderConfig; now?: () => Date; tuning?: Partial<StoreTuning>; shared?: Shared; env?: Env } = {},
  ): Promise<Store> {
    const env = options.env ?? process.env;
    const place = placeOf(location);
    const tuning = { ...DEFAULT_TUNING, ...(place.kind === "object" ? OBJECT_STORE_TUNING : {}), ...options.tuning };
    restrictUmask();
    const chosen = options.shared ? { shared: options.shared, owned: false } : await sharedFor(place, env);
    try {
      const store = await Store.openWith(location, place, env, tuning, chosen.shared, options);
      if (chosen.owned) store.releaseShared = () => chosen.shared.close();
      return store;
    } catch (err) {
      if (chosen.owned) await chosen.shared.close().catch(() => undefined);
      throw err;
    }
  }

  private static async openWith(
    location: string,
    place: StorePlace,
    env: Env,
    tuning: StoreTuning,
    shared: Shared,
    options: { create?: EmbedderConfig; now?: () => Date },
  ): Promise<Store> {
    let connected: { db: Connection; session: Session } | undefined;
    let documents: DocumentDriver;
    if (place.kind === "local") documents = new FileDocuments(place.dir, shared);
    else {
      connected = await connectDatabase(place, env, tuning.metadataCacheBytes);
      documents = await TableDocuments.open(connected.db, shared, place.uri);
    }
    const configDoc = configDocument(documents);
    let config = await configDoc.read();
    // These commits (new tables, columns, indexes) change the tables under other processes' handles too.
    const writeLock = <T>(fn: () => Promise<T>) => shared.withLock("write", async () => ((await shared.touch("write")), fn()), { timeoutMs: WRITE_LOCK_TIMEOUT_MS });
    if (!config) {
      if (!options.create) {
        throw new MmError("STORE_ERROR", `No mm store at ${location}. Run \`mm init\` to create one.`);
      }
      const init = options.create;
      if (place.kind === "local") await ensureDirForNewStore(place.dir);
      else await ensurePrefixForNewStore(connected!.db, place.uri);
      config = await writeLock(async () => {
        await documents.refresh?.();
        const again = await configDoc.read();
        if (again) return again;
        const fresh: StoreConfig = {
          formatVersion: 1,
          createdAt: (options.now?.() ?? new Date()).toISOString(),
          embedder: init,
        };
        const { db } = connected ?? (await connectDatabase(place, env, tuning.metadataCacheBytes));
        await db.createEmptyTable(FIRST_SEGMENT, memorySchema(init.dims), { mode: "create", existOk: true });
        await db.createEmptyTable(GRAPH, graphSchema(), { mode: "create", existOk: true });
        await configDoc.write(fresh);
        return fresh;
      });
    }
    if (place.kind === "local") await tightenStore(place.dir);
    else await checkCoordination(documents, shared, place.uri, { record: true });
    if (config.formatVersion > STORE_FORMAT_VERSION) {
      throw new MmError("STORE_ERROR", `The store at ${location} was written by a newer mm (format ${config.formatVersion}); upgrade mm.`);
    }
    // The metadata reads below don't depend on each other; each is a round trip to LanceDB's
    // threads, so they run together (a cold `mm` command opens the store every time).
    connected ??= await connectDatabase(place, env, tuning.metadataCacheBytes);
    const { session } = connected;
    const { tables: db, freshness } = await connectTables(place, env, connected);
    const [first, tables] = await Promise.all([db.openTable(FIRST_SEGMENT), db.tableNames()]);
    const [schema, indices, graph] = await Promise.all([
      first.schema(),
      first.listIndices(),
      tables.includes(GRAPH) ? db.openTable(GRAPH) : undefined,
    ]);
    const list = segmentList(() => Promise.resolve(documents));
    if (!schema.fields.some((f) => f.name === "seq")) {
      // Stores made before sequence numbers: old memories get 0 (no neighbours), new ones count from 1.
      await writeLock(() => first.addColumns([{ name: "seq", valueSql: "CAST(0 AS INT)" }]));
    }
    if (!hasLaterColumns(schema)) await addLaterColumns(writeLock, await new SegmentSet(db, list, first).current());
    if (!graph) {
      // Stores made before the knowledge graph existed gain its table on first open.
      await writeLock(() => db.createEmptyTable(GRAPH, graphSchema(), { mode: "create", existOk: true }));
    }
    const routing: RoutingCache = {
      indexes: new Map([[FIRST_SEGMENT, { at: Date.now(), value: vectorIndexOf(indices) }]]),
      counts: new Map(),
      ...(tuning.versionCacheEntries > 0 ? { atVersion: new Map() } : {}),
    };
    const graphTable = graph ?? (await db.openTable(GRAPH));
    freshness?.seen([first, graphTable]);
    const metaDb = db === connected.db ? undefined : connected.db;
    const store = new Store(location, place, config, db, metaDb, freshness, new SegmentSet(db, list, first), undefined, graphTable, tuning, routing, session, shared, documents, env);
    if (![TEXT_INDEX, USER_INDEX].every((n) => indices.some((i) => i.name === n))) {
      await writeLock(() => ensureIndexes(first));
    }
    return store;
  }

  /**
   * A read-only view with every table pinned at its current version, so the several queries of
   * one read (a count and a page, a relation and its endpoints) all see the same moment even
   * while other processes write. About 1 ms per table to take. Close it after use.
   */
  async snapshot(): Promise<Store> {
    this.health.check();
    const [segments, graph] = await Promise.all([this.segmentSet.pinned(), this.db.openTable(GRAPH)]).catch((err) => {
      throw this.storeFailed(err);
    });
    await graph.checkout(await graph.version());
    return new Store(this.dir, this.place, this.config, this.db, undefined, undefined, this.segmentSet, segments, graph, this.tuning, this.routing, this.session, this.shared, this.documents, this.env, this.health);
  }

  /** The memory segments, oldest first; the last is the active one. */
  async segments(): Promise<Segment[]> {
    this.health.check();
    if (this.view) return this.view;
    const segments = await this.segmentSet.current();
    await this.freshness?.ensure(segments.map((s) => s.table));
    return segments;
  }

  /**
   * At most how many memories each of these users of one account has: their last sequence numbers
   * (numbers go 1, 2, 3… and are never given twice). Those this process keeps for numbering its
   * inserts (LastSeqs) cost nothing; the others are asked, one query each, side by side, and kept:
   * the insert that follows under the same lock needn't ask them again. Under the write lock only,
   * where no other process can add a memory.
   */
  async memoriesAtMost(accountId: string, userIds: string[]): Promise<Map<string, number>> {
    // As of now: under the lock, caught up, the handles are at the latest rows.
    const last = await lastSeqsOf(this.lastSeqs, await this.segments(), userIds.map((userId) => ({ accountId, userId })));
    return new Map(userIds.map((u, i) => [u, last[i]]));
  }

  /**
   * Asks the last sequence numbers of these users that this process doesn't keep (LastSeqs), so that
   * the insert after detection numbers its rows without asking: on an object store, a round of
   * requests beside detection's reads instead of one after them, for a user's first create in a
   * process (every `mm memories add`; docs/measurements/object-storage-rounds.md, "A create's last round"). Under the
   * write lock only.
   */
  async learnLastSeqs(users: { accountId: string; userId: string }[]): Promise<void> {
    if (users.length) await lastSeqsOf(this.lastSeqs, await this.segments(), users);
  }

  /**
   * Every current memory of these users, whole, oldest first, for those whose rows this process
   * keeps (CurrentRows): nothing is read. Under the write lock only, where no other process can
   * change a memory row.
   */
  async keptCurrentRows(users: { accountId: string; userId: string }[]): Promise<Map<string, MemoryRow[]>> {
    const kept = new Map<string, MemoryRow[]>();
    if (this.view || !users.length || !(await this.currentRows.holds(await this.segments(), !this.lastSeqs.othersWrote))) return kept;
    for (const u of users) {
      const rows = this.currentRows.get(u.accountId, u.userId);
      if (rows) kept.set(userKey(u), [...rows]);
    }
    return kept;
  }

  /**
   * Reads `read`, every current memory of some users (`accountId\0userId` → their rows, oldest
   * first), and keeps what it read for keptCurrentRows when no commit came between. Under the write lock only.
   */
  async keepingCurrentRows(read: () => Promise<Map<string, MemoryRow[]>>): Promise<Map<string, MemoryRow[]>> {
    if (this.view) return read();
    const segments = await this.segments();
    const before = await this.currentRows.versions(segments);
    const rows = await read();
    await this.currentRows.remember(segments, before, rows);
    return rows;
  }

  /** The graph table, once its handle is within the read-consistency interval (storage/freshness.ts). */
  private async freshGraph(): Promise<Table> {
    this.health.check();
    await this.freshness?.ensure([this.graph]);
    return this.graph;
  }

  /** A read of the graph, again on its latest version if its own was removed meanwhile (MemoryReads.afresh). */
  private graphRead<T>(read: (graph: GraphReads) => Promise<T>): Promise<T> {
    return this.afresh(async () => {
      await this.freshGraph();
      return read(this.graphReads);
    });
  }

  /**
   * Every handle at its table's latest version, after a read found the version it was using
   * removed (MemoryReads.afresh): one checkout for the reads that fail together. A snapshot keeps
   * its versions: false, its read fails.
   */
  protected toLatest(): Promise<boolean> {
    if (this.view) return Promise.resolve(false);
    this.movingToLatest ??= (async () => {
      const tables = [this.graph, ...(await this.segmentSet.current()).map((s) => s.table)];
      await Promise.all(tables.map((t) => t.checkoutLatest()));
      this.freshness?.seen(tables);
      return true;
    })().finally(() => (this.movingToLatest = undefined));
    return this.movingToLatest;
  }

  /**
   * A consistency token (`X-MM-Consistency`, docs/scale-out.md): every data table's version as this
   * process's handles see it, `memories:53,memories_2:7,graph:12`. Taken after a write, it names at
   * least the versions that write committed, since a commit moves the committing handle. Reads no
   * object: a handle knows its version, and the segment list is this process's.
   */
  async consistencyToken(): Promise<string> {
    const tables: [string, Table][] = [...(await this.segmentSet.current()).map((s): [string, Table] => [s.name, s.table]), [GRAPH, this.graph]];
    const versions = await Promise.all(tables.map(([, t]) => t.version()));
    return tables.map(([name], i) => `${name}:${versions[i]}`).join(",");
  }

  /**
   * Read-your-writes across processes: returns once every table `token` names (consistencyToken,
   * from another replica's write) is at least at the version it names here, moving the handles
   * that are behind to their latest version at once rather than after the read-consistency
   * interval. A version the store doesn't list yet is looked for again, backing off, for up to
   * `waitMs`; then STORE_UNAVAILABLE (never an answer older than the client asked for). A token
   * that isn't one is VALIDATION_ERROR.
   */
  async readAfter(token: string, waitMs = READ_AFTER_WAIT_MS): Promise<void> {
    const wanted = parseConsistencyToken(token);
    const deadline = Date.now() + waitMs;
    for (let attempt = 0; ; attempt++) {
      this.health.check();
      const segments = await this.segmentSet.current();
      const byName = new Map<string, Table>([...segments.map((s): [string, Table] => [s.name, s.table]), [GRAPH, this.graph]]);
      const behind: Table[] = [];
      let unknown = false;
      for (const [name, version] of wanted) {
        const table = byName.get(name);
        if (!table) unknown = true;
        else if ((await table.version()) < version) behind.push(table);
      }
      if (!behind.length && !unknown) return;
      if (Date.now() >= deadline) {
        throw new MmError("STORE_UNAVAILABLE", `The store at ${this.place.label} has not reached the versions of consistency token ${token} within ${waitMs} ms.`, { retryAfter: 1 });
      }
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.min(50 * 2 ** attempt, 500, Math.max(0, deadline - Date.now()))));
      try {
        // A segment the token names and this process doesn't know yet: another process sealed it.
        if (unknown) await this.documents.refresh?.();
        await Promise.all(behind.map((t) => t.checkoutLatest()));
      } catch (err) {
        throw this.storeFailed(err);
      }
      this.freshness?.seen(behind);
    }
  }

  /** Every read of memories or the graph: a failure the object store caused is STORE_UNAVAILABLE, and marks it down. */
  protected override async afresh<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await withDeadline(super.afresh(read), this.deadlineMs);
    } catch (err) {
      throw this.storeFailed(err);
    }
  }

  /** The graph table, for maintenance. */
  graphTable(): Table {
    return this.graph;
  }

  /** True when `location` holds a store, without creating or opening anything. */
  static async exists(location: string, env?: Env): Promise<boolean> {
    return (await Store.configAt(location, env)) !== undefined;
  }

  /** The store's configuration (its embedder, among others), without opening the store; undefined if none. */
  static configAt(location: string, env?: Env): Promise<StoreConfig | undefined> {
    return configDocument(documentsOf(location, env, { probe: true })).read();
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

  /**
   * The account that holds a memory, entity or relation with this id, whichever account it is: for
   * the CLI's hint when an id is "not found" in the account a command acts as. Never used to read
   * data across accounts.
   */
  async ownerOf(id: string): Promise<string | undefined> {
    const where = `id = ${sqlString(id)}`;
    return this.afresh(async () => {
      const tables = id.startsWith("mem_") ? (await this.segments()).map((s) => s.table) : id.startsWith("ent_") || id.startsWith("rel_") ? [await this.freshGraph()] : [];
      const rows = (await Promise.all(tables.map((t) => t.query().where(where).select(["accountId"]).limit(1).toArray()))).flat();
      return rows[0] ? String(rows[0].accountId) : undefined;
    });
  }

  async getEntity(accountId: string, id: string): Promise<EntityRecord | undefined> {
    return this.graphRead((g) => g.getEntity(accountId, id));
  }

  async getEntities(accountId: string, ids: string[]): Promise<Map<string, EntityRecord>> {
    return this.graphRead((g) => g.getEntities(accountId, ids));
  }

  async findEntityByName(accountId: string, nameKey: string, type: string): Promise<EntityRecord | undefined> {
    return this.graphRead((g) => g.findEntityByName(accountId, nameKey, type));
  }

  async findEntitiesByName(accountId: string, nameKey: string): Promise<EntityRecord[]> {
    return this.graphRead((g) => g.findEntitiesByName(accountId, nameKey));
  }

  async listEntities(accountId: string, filter: { type?: string }, page: PageWindow): Promise<{ records: EntityRecord[]; total: number }> {
    return this.graphRead((g) => g.listEntities(accountId, filter, page));
  }

  async searchEntities(accountId: string, filter: { type?: string }, foldedQuery: string): Promise<EntityRecord[]> {
    return this.graphRead((g) => g.searchEntities(accountId, filter, foldedQuery));
  }

  async getRelation(accountId: string, id: string): Promise<RelationRecord | undefined> {
    return this.graphRead((g) => g.getRelation(accountId, id));
  }

  async listRelations(filter: RelationFilter, page: PageWindow): Promise<{ records: RelationRecord[]; total: number }> {
    return this.graphRead((g) => g.listRelations(filter, page));
  }

  async relationsOf(accountId: string, entityIds: string[], direction: "out" | "in" | "both", type?: string): Promise<RelationRecord[]> {
    return this.graphRead((g) => g.relationsOf(accountId, entityIds, direction, type));
  }

  async allGraph(accountId: string): Promise<{ entities: EntityRecord[]; relations: RelationRecord[] }> {
    return this.graphRead((g) => g.allGraph(accountId));
  }

  /** Which of `ids` exist, in any account, with the account each belongs to (imports keep ids unique store-wide). */
  async existingIds(kind: "memory" | "entity" | "relation", ids: string[]): Promise<Map<string, string>> {
    return this.afresh(async () => {
      const out = new Map<string, string>();
      const unique = [...new Set(ids)];
      const tables = kind === "memory" ? (await this.segments()).map((s) => s.table) : [await this.freshGraph()];
      for (let i = 0; i < unique.length; i += 500) {
        const list = unique.slice(i, i + 500).map(sqlString).join(", ");
        const where = kind === "memory" ? `id IN (${list})` : `kind = '${kind}' AND id IN (${list})`;
        for (const rows of await Promise.all(tables.map((t) => t.query().where(where).select(["id", "accountId"]).toArray()))) {
          for (const r of rows) out.set(String(r.id), String(r.accountId));
        }
      }
      return out;
    });
  }

  /**
   * This process's maintenance (storage/maintenance.ts) committed through this store's own handles
   * while the `maintained` stamp went from `before` to `after`, under the maintenance lease (no
   * other process maintained meanwhile). If this handle's last write had seen `before`, it has now
   * seen `after` too, and its next write needn't catch up: after each compaction by `mm serve`'s
   * own maintainer a create listed the versions of the tables it had just compacted, and read their
   * manifests and index files again (8 requests at 300 memories, Azurite).
   */
  maintainedHere(before: string | undefined, after: string | undefined): void {
    if (!this.view && before !== undefined && this.stamps.maintained === before) this.stamps.maintained = after;
  }

  /**
   * Runs `fn` holding the store's write lock (across processes; across replicas with Redis). In
   * object storage this process's handles may lag others' commits by up to the read-consistency
   * interval, so under the lock they first move to the latest versions (catchUp: a LIST request
   * per table, and the new manifests), unless nothing but this handle has committed since its last
   * write. Two stamps say so: every writer under the lock changes the store's `write` stamp (a
   * Redis INCR, or a stamp file on one machine) before it commits, and every maintenance commit
   * changes `maintained` once done (storage/maintenance.ts). A writer that dies between its stamp
   * and its commit still sends the next one to catch up. (A compaction the handle missed changes
   * no row; its next read after the read-consistency interval moves it on.)
   *
   * The `write` stamp alone also says whether another process may have changed a user's last
   * sequence number (LastSeqs.othersWrote): a maintenance commit can't.
   *
   * While `fn` runs, the data tables' handles are current (storage/freshness.ts, whileCurrent):
   * no other process can commit a row until the lock is released.
   */
  private withWriteLock<T>(fn: () => Promise<T>, onLocked?: () => void): Promise<T> {
    return this.shared.withLock(
      "write",
      async () => {
        onLocked?.();
        if (this.place.kind !== "object") return fn();
        const [write, maintained] = await Promise.all([this.shared.stamp("write"), this.shared.stamp(MAINTAINED_STAMP)]);
        const othersWrote = write === undefined || write !== this.stamps.write;
        if (othersWrote || maintained !== this.stamps.maintained) await this.catchUp();
        this.lastSeqs.othersWrote = othersWrote;
        this.stamps = { write: await this.shared.touch("write"), maintained };
        return this.freshness ? this.freshness.whileCurrent(fn) : fn();
      },
      { timeoutMs: WRITE_LOCK_TIMEOUT_MS },
    );
  }

  /** Runs `fn` holding the write lock, committing nothing itself: maintenance's compaction of a table whose last one lost to a write (storage/maintenance.ts). */
  holdingWrites<T>(fn: () => Promise<T>): Promise<T> {
    return this.withWriteLock(fn);
  }

  /** Detection's reads under the write lock: the active segment as this process recently wrote it, on an object store. */
  protected override recentView(active: Segment): Promise<RecentView | undefined> {
    return this.view || !this.tuning.recentWrites ? Promise.resolve(undefined) : this.recentWrites.view(active, this.tuning.recentWrites);
  }

  protected override forgetRecent(): void {
    this.recentWrites.forget();
  }

  /**
   * Runs `fn` under the store's write lock. When the active segment has reached its size,
   * seals it before releasing the lock: an empty new segment (with its text and user indexes)
   * becomes the active one, which takes a fraction of a second. Nothing else happens on the
   * write path; compaction and index upkeep are the maintainer's (storage/maintenance.ts).
   *
   * In object storage this process's handles may lag others' commits by up to the read-consistency
   * interval, so under the lock they first move to the latest versions: what a write reads
   * (PATCH's current row, a user's last sequence number) is what the last writer left.
   */
  async write<T>(fn: (w: StoreWriter) => Promise<T>): Promise<T> {
    if (this.view) throw new MmError("INTERNAL_ERROR", "A snapshot is read-only.");
    // Checked before and after waiting for the lock: writes queued behind one that found the store
    // down fail at once instead of each waiting out the object store's retries.
    this.health.check();
    try {
      // The deadline counts from the lock (waiting for another writer, or maintenance, is not the
      // store hanging), and bounds the answer only: a write past it keeps the lock until LanceDB
      // gives up or commits, so no other writer starts from a view it may still change.
      let held!: () => void;
      const locked = new Promise<void>((resolve) => (held = resolve));
      const work = this.withWriteLock(
        async () => {
          const segments = await this.segments();
          const result = await fn(new StoreWriter(this, segments, this.graph));
          this.writes++;
          const active = segments[segments.length - 1];
          if ((await active.table.countRows()) >= this.tuning.segmentRows) await this.seal(segments.length);
          return result;
        },
        () => {
          held();
          // A writer that waited while another's commit met the outage gives the lock back at once.
          this.health.check();
        },
      );
      work.catch(() => undefined); // answered below, or past its deadline with no one to hear it
      // Waiting for the lock is not bounded (maintenance may hold it for minutes), unless the store goes down meanwhile.
      const waiting = this.health.whenDown();
      try {
        await Promise.race([locked, work, waiting.down]);
      } finally {
        waiting.cancel();
      }
      return await withDeadline(work, this.deadlineMs);
    } catch (err) {
      throw this.storeFailed(err);
    }
  }

  /** Every handle of this store at its table's latest version (object stores, under the write lock). */
  private async catchUp(): Promise<void> {
    await this.documents.refresh?.();
    const segments = await this.segmentSet.current();
    await Promise.all([this.graph, ...segments.map((s) => s.table)].map((t) => t.checkoutLatest()));
  }

  /** Starts segment number `count` (the write lock is held): create, index, then list it. */
  private async seal(count: number): Promise<void> {
    const name = segmentName(count);
    // "overwrite": a table left by a crash before it was listed holds nothing acknowledged.
    const table = await this.db.createEmptyTable(name, memorySchema(this.config.embedder.dims), { mode: "overwrite" });
    await ensureIndexes(table);
    await this.hooks?.("seal:before-list");
    if (this.config.formatVersion < STORE_FORMAT_VERSION) {
      // An mm from before segments would read only the first segment: it must refuse the store.
      await configDocument(this.documents).write({ ...this.config, formatVersion: STORE_FORMAT_VERSION });
    }
    await this.segmentSet.append(name);
  }

  async stats(): Promise<StoreStats> {
    // Listing a table's versions reads each one's manifest, and counting the graph's entities reads
    // its data files: a cleanup running meanwhile (the background maintainer's, or another
    // process's optimize) can remove either, so every read is in the one retried on the latest.
    const [segments, graph] = await this.afresh(() =>
      Promise.all([
        this.segments().then((all) => Promise.all(all.map((s) => segmentStats(s, { versions: true })))),
        this.freshGraph().then(async (g) => ({ ...(await tableStats(g)), entities: await g.countRows("kind = 'entity'"), relations: await g.countRows("kind = 'relation'") })),
      ]),
    );
    const indexed = segments.filter((s) => s.vectorIndex);
    return {
      path: this.dir,
      embedder: this.config.embedder,
      memories: {
        rows: sum(segments.map((s) => s.rows)),
        fragments: sum(segments.map((s) => s.fragments)),
        smallFragments: sum(segments.map((s) => s.smallFragments)),
        versions: sum(segments.map((s) => s.versions)),
        indices: sum(segments.map((s) => s.indices)),
        bytes: sum(segments.map((s) => s.bytes)),
        unindexedTextRows: sum(segments.map((s) => s.unindexedTextRows)),
        vectorIndex: indexed.length
          ? {
              type: "IVF_FLAT",
              segments: indexed.length,
              partitions: sum(indexed.map((s) => s.vectorIndex!.partitions)),
              indexedRows: sum(indexed.map((s) => s.vectorIndex!.indexedRows)),
              unindexedRows: sum(indexed.map((s) => s.vectorIndex!.unindexedRows)),
            }
          : null,
        segments,
      },
      graph,
      // An object store's own bytes are the tables' (what LanceDB reports): no directory to walk.
      diskBytes: this.place.kind === "local" ? await dirSize(this.place.dir) : sum(segments.map((s) => s.bytes)) + graph.bytes,
    };
  }

  /**
   * Everything maintenance does, at once, holding the write lock: every segment compacted and its
   * indexes brought up to date (the vector index built or retrained where its size calls for it),
   * the graph compacted, versions older than `keepVersionsMs` and orphaned temp files removed.
   */
  async optimize(options: { keepVersionsMs?: number } = {}): Promise<OptimizeResult> {
    const keepVersionsMs = options.keepVersionsMs ?? DEFAULT_KEEP_VERSIONS_MS;
    const pass = await withMaintenanceLock(this.shared, () =>
      this.withWriteLock(async () => {
        return maintain(this, { force: true, keepVersionsMs });
      }),
    );
    return pass!; // waiting for the lock never gives up on it
  }

  /** Replaces the store's embedder; only allowed while it holds no memories. */
  async resetEmbedder(embedder: EmbedderConfig): Promise<Store> {
    await this.withWriteLock(async () => {
      const count = await this.countMemories();
      if (count > 0) {
        throw new MmError(
          "EMBEDDER_MISMATCH",
          `The store at ${this.dir} holds ${count} memories embedded with ${describeEmbedder(this.config.embedder)}; ` +
            `it cannot switch to ${describeEmbedder(embedder)}. Use a new store (--store) for the other embedder.`,
          { storeEmbedder: describeEmbedder(this.config.embedder), requestedEmbedder: describeEmbedder(embedder) },
        );
      }
      for (const name of await this.segmentSet.reset()) await this.db.dropTable(name);
      await this.db.createEmptyTable(FIRST_SEGMENT, memorySchema(embedder.dims), { mode: "overwrite" });
      await configDocument(this.documents).write({ ...this.config, embedder });
    });
    return Store.open(this.dir, { shared: this.shared, env: this.env }); // recreates the text index on the new table
  }

  close(): void {
    if (!this.view) this.health.stop();
    void this.releaseShared?.();
    this.releaseShared = undefined;
    this.graph.close();
    if (this.view) {
      for (const s of this.view) s.table.close();
    } else {
      this.segmentSet.close();
      if (this.documents instanceof TableDocuments) this.documents.close();
      this.db.close();
      this.metaDb?.close();
    }
  }
}

/** Write operations; only reachable inside `Store.write`, so every write holds the lock. */
export class StoreWriter extends MemoryWrites {
  private readonly graph: GraphWrites;

  constructor(
    readonly store: Store,
    /** The segments as the lock was taken (only a writer changes the list, and it holds the lock). */
    segments: Segment[],
    graph: Table,
  ) {
    super(segments, store.lastSeqs, store.currentRows, store.recentWrites);
    this.graph = new GraphWrites(graph, segments, (point) => store.hooks?.(point));
  }

  insertGraph(entities: EntityRecord[], relations: RelationRecord[]): Promise<void> {
    return this.graph.insertGraph(entities, relations);
  }

  insertEntity(e: EntityRecord): Promise<void> {
    return this.graph.insertEntity(e);
  }

  replaceEntity(e: EntityRecord): Promise<void> {
    return this.graph.replaceEntity(e);
  }

  // Both rewrite memories' links: what the process keeps of memory rows is forgotten (storage/current-rows.ts).
  deleteEntityCascade(accountId: string, id: string): Promise<{ deleted: boolean; deletedRelations: number }> {
    this.store.currentRows.forget();
    this.store.recentWrites.forget();
    return this.graph.deleteEntityCascade(accountId, id);
  }

  mergeEntities(keep: EntityRecord, other: EntityRecord): Promise<{ movedRelations: number; droppedRelations: number; movedLinks: number }> {
    this.store.currentRows.forget();
    this.store.recentWrites.forget();
    return this.graph.mergeEntities(keep, other);
  }

  insertRelation(r: RelationRecord): Promise<void> {
    return this.graph.insertRelation(r);
  }

  replaceRelation(r: RelationRecord): Promise<void> {
    return this.graph.replaceRelation(r);
  }

  deleteRelation(accountId: string, id: string): Promise<boolean> {
    return this.graph.deleteRelation(accountId, id);
  }
}

/** The store's configuration document (`config.json` in a local store). */
function configDocument(driver: DocumentDriver | (() => Promise<DocumentDriver>)): Document<StoreConfig | undefined> {
  return new Document<StoreConfig | undefined>(typeof driver === "function" ? driver : () => Promise.resolve(driver), "config", { parse: (data) => data as StoreConfig | undefined });
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

async function ensureDirForNewStore(dir: string): Promise<void> {
  // Parents keep the usual modes; the store itself is private (tightenStore fixes a directory given empty).
  await mkdir(dir, { recursive: true });
  const entries = (await readdir(dir)).filter((e) => !/^\.[\w-]+-lock/.test(e));
  const foreign = entries.filter((e) => e !== "db" && !e.startsWith("config.json"));
  if (foreign.length) {
    throw new MmError("STORE_ERROR", `${dir} is not empty and is not an mm store; choose an empty or new directory for --store.`);
  }
}

/**
 * An object-store prefix can hold a new store when LanceDB sees no tables in it, or only the
 * tables an interrupted `mm init` left: anything else belongs to someone else.
 */
async function ensurePrefixForNewStore(db: Connection, uri: string): Promise<void> {
  const foreign = (await db.tableNames()).filter((t) => t !== FIRST_SEGMENT && t !== GRAPH && t !== "meta");
  if (foreign.length) {
    throw new MmError("STORE_ERROR", `${uri} holds LanceDB tables that are not an mm store (${foreign.slice(0, 3).join(", ")}); choose an empty prefix for --store.`);
  }
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