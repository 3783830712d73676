import { mkdir, open, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { MmError } from "../errors.js";
import type { EmbedderConfig } from "../embedder/types.js";
import { describeEmbedder } from "../embedder/index.js";
import { withWriteLock } from "./lock.js";
import { loadLance, sqlString, sqlStringList, toStringArray, type Connection, type Table } from "./lance.js";

export const STORE_FORMAT_VERSION = 1;

export interface StoreConfig {
  formatVersion: number;
  createdAt: string;
  embedder: EmbedderConfig;
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
}

export interface MemoryRow extends MemoryRecord {
  vector: Float32Array;
}

export interface MemoryFilter {
  accountId: string;
  userId?: string;
  agentId?: string;
  /** Every tag must be present (AND). */
  tags?: string[];
}

export interface StoreStats {
  path: string;
  embedder: EmbedderConfig;
  memories: {
    rows: number;
    fragments: number;
    smallFragments: number;
    versions: number;
    indices: number;
    bytes: number;
  };
  diskBytes: number;
}

export interface OptimizeResult {
  fragmentsRemoved: number;
  fragmentsAdded: number;
  oldVersionsRemoved: number;
  bytesRemoved: number;
  tempFilesRemoved: number;
}

const MEMORIES = "memories";
const RECORD_COLUMNS = ["id", "accountId", "content", "userId", "agentId", "tags", "metadata", "entityIds", "createdAt", "updatedAt"];
/** Auto-maintenance runs when the table's version crosses a multiple of this. */
const MAINTENANCE_EVERY_VERSIONS = 32;
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
  private constructor(
    readonly dir: string,
    readonly config: StoreConfig,
    private readonly db: Connection,
    private memories: Table,
  ) {}

  /**
   * Opens the store at `dir`, creating it with `create` as its embedder when it doesn't exist.
   * Refuses a non-empty directory that isn't a store, so a mistyped `--store ~` litters nothing.
   */
  static async open(dir: string, options: { create?: EmbedderConfig; now?: () => Date } = {}): Promise<Store> {
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
        const db = await connect(dir);
        await db.createEmptyTable(MEMORIES, memorySchema(init.dims), { mode: "create", existOk: true });
        await writeConfig(dir, fresh);
        return fresh;
      });
    }
    if (config.formatVersion > STORE_FORMAT_VERSION) {
      throw new MmError("STORE_ERROR", `The store at ${dir} was written by a newer mm (format ${config.formatVersion}); upgrade mm.`);
    }
    const db = await connect(dir);
    const memories = await db.openTable(MEMORIES);
    return new Store(dir, config, db, memories);
  }

  /** True when `dir` holds a store, without creating or opening anything. */
  static async exists(dir: string): Promise<boolean> {
    return (await readConfig(dir)) !== undefined;
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
    const rows = await this.memories
      .query()
      .where(`accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`)
      .select(RECORD_COLUMNS)
      .limit(1)
      .toArray();
    return rows.length ? toRecord(rows[0]) : undefined;
  }

  /** Newest first (createdAt, then id, descending): stable across pages whatever the physical order. */
  async listMemories(filter: MemoryFilter, page: { offset: number; limit: number }): Promise<{ records: MemoryRecord[]; total: number }> {
    const where = memoryWhere(filter);
    const total = await this.memories.countRows(where);
    if (page.offset >= total) return { records: [], total };
    const rows = await this.memories
      .query()
      .where(where)
      .orderBy([
        { columnName: "createdAt", ascending: false },
        { columnName: "id", ascending: false },
      ])
      .offset(page.offset)
      .limit(page.limit)
      .select(RECORD_COLUMNS)
      .toArray();
    return { records: rows.map(toRecord), total };
  }

  /**
   * Nearest memories by cosine distance. The filter is applied inside the vector query
   * (LanceDB prefilters `where` by default), so other users' closer memories cannot crowd
   * the requested user's out of the top k.
   */
  async searchMemories(vector: Float32Array, filter: MemoryFilter, limit: number): Promise<{ record: MemoryRecord; distance: number }[]> {
    if (vector.length !== this.config.embedder.dims) {
      throw new MmError("EMBEDDER_MISMATCH", `Query vector has ${vector.length} dims; the store's vectors have ${this.config.embedder.dims}.`);
    }
    const rows = await this.memories
      .query()
      .nearestTo(Array.from(vector))
      .distanceType("cosine")
      .where(memoryWhere(filter))
      .select(RECORD_COLUMNS)
      .limit(limit)
      .toArray();
    return rows.map((r) => ({ record: toRecord(r), distance: Number(r._distance) }));
  }

  /** Runs `fn` under the cross-process write lock, then keeps the tables compact. */
  async write<T>(fn: (w: StoreWriter) => Promise<T>): Promise<T> {
    return withWriteLock(this.dir, async () => {
      const before = await this.memories.version();
      const result = await fn(new StoreWriter(this, this.memories));
      const after = await this.memories.version();
      if (Math.floor(after / MAINTENANCE_EVERY_VERSIONS) > Math.floor(before / MAINTENANCE_EVERY_VERSIONS)) {
        await this.optimizeLocked({ keepVersionsMs: DEFAULT_KEEP_VERSIONS_MS });
      }
      return result;
    });
  }

  async stats(): Promise<StoreStats> {
    const s = await this.memories.stats();
    const versions = await this.memories.listVersions();
    return {
      path: this.dir,
      embedder: this.config.embedder,
      memories: {
        rows: s.numRows,
        fragments: s.fragmentStats.numFragments,
        smallFragments: s.fragmentStats.numSmallFragments,
        versions: versions.length,
        indices: s.numIndices,
        bytes: s.totalBytes,
      },
      diskBytes: await dirSize(this.dir),
    };
  }

  /** Compacts small fragments and deletes versions older than `keepVersionsMs` (and orphaned temp files). */
  async optimize(options: { keepVersionsMs?: number } = {}): Promise<OptimizeResult> {
    return withWriteLock(this.dir, () => this.optimizeLocked({ keepVersionsMs: options.keepVersionsMs ?? DEFAULT_KEEP_VERSIONS_MS }));
  }

  private async optimizeLocked(options: { keepVersionsMs: number }): Promise<OptimizeResult> {
    const stats = await this.memories.optimize({ cleanupOlderThan: new Date(Date.now() - options.keepVersionsMs) });
    const tempFilesRemoved = await removeOrphanTempFiles(join(this.dir, "db", `${MEMORIES}.lance`));
    return {
      fragmentsRemoved: stats.compaction.fragmentsRemoved,
      fragmentsAdded: stats.compaction.fragmentsAdded,
      oldVersionsRemoved: stats.prune.oldVersionsRemoved,
      bytesRemoved: stats.prune.bytesRemoved,
      tempFilesRemoved,
    };
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
    return Store.open(this.dir);
  }

  close(): void {
    this.memories.close();
    this.db.close();
  }
}

/** Write operations; only reachable inside `Store.write`, so every write holds the lock. */
export class StoreWriter {
  constructor(
    readonly store: Store,
    private readonly memories: Table,
  ) {}

  async insertMemories(rows: MemoryRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.memories.add(rows.map(toArrowRow));
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

  getMemory(accountId: string, id: string): Promise<MemoryRecord | undefined> {
    return this.store.getMemory(accountId, id);
  }

  async getMemoryRow(accountId: string, id: string): Promise<MemoryRow | undefined> {
    const rows = await this.memories
      .query()
      .where(`accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`)
      .limit(1)
      .toArray();
    if (!rows.length) return undefined;
    return { ...toRecord(rows[0]), vector: Float32Array.from(rows[0].vector as ArrayLike<number>) };
  }
}

function memoryWhere(filter: MemoryFilter): string {
  const parts = [`accountId = ${sqlString(filter.accountId)}`];
  if (filter.userId !== undefined) parts.push(`userId = ${sqlString(filter.userId)}`);
  if (filter.agentId !== undefined) parts.push(`agentId = ${sqlString(filter.agentId)}`);
  if (filter.tags && filter.tags.length) parts.push(`array_has_all(tags, ${sqlStringList(filter.tags)})`);
  return parts.join(" AND ");
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
  ]);
}

function toArrowRow(row: MemoryRow): Record<string, unknown> {
  return { ...row, vector: Array.from(row.vector) };
}

function toRecord(r: Record<string, unknown>): MemoryRecord {
  return {
    id: String(r.id),
    accountId: String(r.accountId),
    content: String(r.content),
    userId: String(r.userId),
    agentId: r.agentId == null ? null : String(r.agentId),
    tags: toStringArray(r.tags),
    metadata: r.metadata == null ? null : String(r.metadata),
    entityIds: toStringArray(r.entityIds),
    createdAt: String(r.createdAt),
    updatedAt: String(r.updatedAt),
  };
}

async function connect(dir: string): Promise<Connection> {
  const { lancedb } = loadLance();
  // readConsistencyInterval 0: every read sees the latest commit, including other processes'.
  return lancedb.connect(join(dir, "db"), { readConsistencyInterval: 0 });
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
