import { readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { buildVectorIndex, TEXT_INDEX, vectorIndexOf, vectorIndexPartitions, wantedVectorIndex } from "./indexes.js";
import { isCommitConflict, type Table } from "./lance.js";
import type { Segment } from "./segments.js";
import type { Shared } from "./shared/types.js";
import { compactionThreshold, type OptimizeResult, type SegmentStats, type StoreTuning, type TableStats } from "./store-types.js";

/**
 * Compaction and index upkeep, off the write path.
 *
 * A maintenance pass looks at each memory segment and at the graph table and does only what is
 * due (segmentWork). It doesn't take the write lock: LanceDB commits a compaction or an index
 * next to concurrent appends, and when a concurrent delete or update touches the same rows the
 * compaction's commit fails as a "retryable conflict" (the writer wins; nothing is lost) and the
 * next pass tries again. A table whose compaction lost is compacted by a background maintainer's
 * next pass holding the write lock (`contended`): writes that mark replaced memories, a row
 * update each, would otherwise make it lose pass after pass while its small fragments pile up
 * (measured on Azurite: 25 of 29 passes lost, up to 70 fragments left). Only one pass runs at a
 * time per store (the maintenance lock), in any process.
 *
 * Who runs passes: `mm serve` and long CLI batches (`mm memories add --file`, `mm import`) run a
 * Maintainer in the background; a short CLI write runs one pass after its work when something
 * is due; `mm store optimize` runs a forced pass holding the write lock.
 */

/**
 * Background passes keep versions this young. mm's readers pin a version for one request
 * (milliseconds); what the retention costs is disk: every pass on a segment with a vector index
 * writes its IVF_FLAT index anew, twice (LanceDB merges the new rows into it, then remaps it after
 * compaction), up to 500 MB each at 250k rows, and each copy stays until it is this old. At 60 s,
 * a bulk import's passes (one every 15–20 s) kept three or four such copies per segment.
 */
export const BACKGROUND_KEEP_VERSIONS_MS = 10_000;
/** At most this many cleanups follow a table's work, one every keepVersionsMs, while they still drop versions. */
const CLEANUP_ROUNDS = 3;
/** Text or vector rows outside their index that make a pass due: max(this, a quarter of the segment). */
const MAX_UNINDEXED_ROWS = 2_000;
/** LanceDB leaves `data/.tmp*` behind after a kill -9; only ones this old are surely orphaned. */
const ORPHAN_TMP_AGE_MS = 60 * 60_000;

/** The change stamp every maintenance commit touches (Store.withWriteLock reads it). */
export const MAINTAINED_STAMP = "maintained";

/** What maintenance needs of a store (storage/store.ts's Store is one): its tables, tuning and coordination. */
export interface Maintained {
  readonly tuning: StoreTuning;
  readonly shared: Shared;
  /** The LanceDB database's local directory (orphaned temp files are removed there); undefined in object storage. */
  readonly localDbDir: string | undefined;
  /** How many writes the store's handle has committed. */
  readonly writes: number;
  hooks?: (point: string) => void | Promise<void>;
  segments(): Promise<Segment[]>;
  graphTable(): Table;
  forgetRouting(): void;
  renew(): Promise<void>;
  /** This process's maintenance committed through the store's own handles between these two readings of the `maintained` stamp (Store.maintainedHere). */
  maintainedHere?(before: string | undefined, after: string | undefined): void;
  /** Runs `fn` holding the store's write lock: no write commits meanwhile (Store.holdingWrites). */
  holdingWrites?<T>(fn: () => Promise<T>): Promise<T>;
}

export interface SegmentWork {
  /** Train (or retrain) the vector index with this many partitions first. */
  vectorIndex?: { partitions: number };
  /** Then compact the segment and bring its indexes up to date (LanceDB's optimize). */
  compact: boolean;
  reason: string;
}

/**
 * What a segment needs now, or null.
 *
 * - Compaction when small fragments pile up (`compactFragments`, each commit adds one) or when
 *   many rows sit outside the text or vector index. Compaction rewrites only fragments that
 *   share an index coverage: in a segment with a vector index, only the fragments added since the
 *   last pass; but LanceDB then writes that index anew (new rows merged in, then remapped), so a
 *   pass also costs a copy of the segment's index, bounded by `segmentRows`. In a segment without
 *   one, the whole segment: bounded by `vectorIndexMinRows`.
 * - The vector index is trained once the segment holds `vectorIndexMinRows`, retrained at ×4
 *   growth (wantedVectorIndex) unless the segment is past half its capacity (its seal retrains it;
 *   at 250k rows this saves a 500 MB index build per segment), and retrained when passes have
 *   left `2 × compactFragments` fragments behind (one each): after a retrain every fragment
 *   shares one coverage, so the compaction that follows merges them.
 * - A sealed segment is settled once: retrained over all its rows if it has more than one
 *   fragment, and compacted to one fragment, fully indexed. After that it needs work only when
 *   deletes or updates reach it.
 */
export function segmentWork(s: SegmentStats, tuning: StoreTuning, force = false): SegmentWork | null {
  const vectorUnindexed = s.vectorIndex?.unindexedRows ?? 0;
  const tooManyUnindexed = Math.max(MAX_UNINDEXED_ROWS, s.rows / 4);
  const settling = s.sealed && (s.fragments > 1 || s.unindexedTextRows > 0 || vectorUnindexed > 0);
  // Past half its capacity a segment skips the ×4 retrain: sealing retrains it soon anyway, and
  // each retrain of a 250k segment writes a ~500 MB index (and keeps the old one until cleanup).
  const sealingSoon = s.vectorIndex !== null && s.rows > tuning.segmentRows / 2;
  let vectorIndex = (sealingSoon ? null : wantedVectorIndex(s.rows, s.vectorIndex, tuning.vectorIndexMinRows)) ?? undefined;
  let reason = vectorIndex ? (s.vectorIndex ? "vector index retrained (grown ×4)" : "vector index built") : "";
  if (!vectorIndex && s.vectorIndex && s.fragments > 1 && (s.sealed || s.fragments >= 2 * tuning.compactFragments)) {
    vectorIndex = { partitions: vectorIndexPartitions(s.rows) };
    reason = s.sealed ? "sealed segment settled" : "fragments left by delta indexes merged";
  }
  const threshold = compactionThreshold(s.rows, tuning);
  const due =
    settling ||
    s.smallFragments >= threshold ||
    s.unindexedTextRows > tooManyUnindexed ||
    vectorUnindexed > tooManyUnindexed;
  if (!vectorIndex && !due && !force) return null;
  if (!reason) {
    reason = force
      ? "optimize"
      : settling
        ? "sealed segment settled"
        : s.smallFragments >= threshold
          ? `${s.smallFragments} small fragments`
          : "rows outside the indexes";
  }
  return { ...(vectorIndex ? { vectorIndex } : {}), compact: true, reason };
}

export interface MaintenancePass extends OptimizeResult {
  startedAt: string;
  ms: number;
  /** What was done, segment by segment (and "graph"). */
  work: { table: string; reason: string; ms: number; conflict?: boolean }[];
  /** Compactions that lost to a concurrent delete or update (retried by a later pass). */
  conflicts: number;
}

/**
 * One pass over the store. `force` does everything whether due or not (`mm store optimize`, which
 * holds the write lock around it). `lastWork` (a long-running maintainer's memory) skips tables
 * that have not changed since this maintainer last worked on them.
 */
export async function maintain(
  store: Maintained,
  options: {
    force: boolean;
    keepVersionsMs: number;
    lastWork?: Map<string, number>;
    /**
     * When each table worked on has old versions to drop: a pass keeps the versions its own work
     * just replaced (readers may still use them), so a later pass must come back for them, or a
     * sealed segment, never touched again, would keep its pre-settle copy on disk. `round` counts
     * the cleanups made since the work (see CLEANUP_ROUNDS).
     */
    cleanupDue?: Map<string, { at: number; round: number }>;
    /**
     * Tables whose last compaction lost to a concurrent write (a background maintainer's memory):
     * their next one commits holding the write lock, and so can't lose again. Never given with the
     * write lock already held (`mm store optimize`).
     */
    contended?: Set<string>;
  },
): Promise<MaintenancePass> {
  const started = Date.now();
  const pass: MaintenancePass = {
    startedAt: new Date(started).toISOString(),
    ms: 0,
    work: [],
    conflicts: 0,
    fragmentsRemoved: 0,
    fragmentsAdded: 0,
    oldVersionsRemoved: 0,
    bytesRemoved: 0,
    tempFilesRemoved: 0,
  };
  const cleanupOlderThan = () => new Date(Date.now() - options.keepVersionsMs);
  const unchanged = async (name: string, table: Table) => !options.force && options.lastWork?.get(name) === (await table.version());

  const cleanedLater = (name: string, round = 0) => options.cleanupDue?.set(name, { at: Date.now() + options.keepVersionsMs, round });
  /** A table's optimize (compaction and cleanup), holding the write lock if its last one lost to a write. */
  const optimize = (name: string, table: Table) => {
    const run = () => table.optimize({ cleanupOlderThan: cleanupOlderThan() });
    return options.contended?.has(name) && store.holdingWrites ? store.holdingWrites(run) : run();
  };
  /** Runs one table's work, timed and recorded; false when it lost to a concurrent write. */
  const record = async (table: string, reason: string, fn: () => Promise<void>): Promise<boolean> => {
    const t0 = Date.now();
    const before = await store.shared.stamp(MAINTAINED_STAMP);
    const done = await tolerateConflict(pass, fn);
    if (done) options.contended?.delete(table);
    else options.contended?.add(table);
    // Writers skip catching up while the stamps are the ones they last saw (Store.withWriteLock):
    // this commit moved their tables too. Not the `write` stamp: a compaction changes no sequence number.
    // This process's own writers share the handles that made the commit: they needn't.
    store.maintainedHere?.(before, await store.shared.touch(MAINTAINED_STAMP));
    pass.work.push({ table, reason, ms: Date.now() - t0, ...(done ? {} : { conflict: true }) });
    return done;
  };
  const segments = await store.segments();
  /** Drops the versions earlier work replaced, in segments nothing has changed since; between segments too, since one can take minutes. */
  const cleanDue = async () => {
    for (const segment of segments) {
      const due = options.cleanupDue?.get(segment.name);
      if (due === undefined || due.at > Date.now() || !(await unchanged(segment.name, segment.table))) continue;
      let removed = 0;
      const done = await record(segment.name, "versions replaced by its last pass dropped", async () => {
        const stats = await optimize(segment.name, segment.table);
        removed = stats.prune.oldVersionsRemoved;
        addOptimizeStats(pass, stats);
      });
      // Another round later while a round still finds versions to drop: a cleanup is an optimize
      // too, which commits versions of its own (measured: the first round after settling a segment
      // left its old rows on disk; a second one, 10 s later, dropped them).
      if (done && removed > 0 && due.round + 1 < CLEANUP_ROUNDS) cleanedLater(segment.name, due.round + 1);
      else if (done) options.cleanupDue!.delete(segment.name);
      options.lastWork?.set(segment.name, await segment.table.version());
    }
  };
  await cleanDue();
  for (const segment of segments) {
    if (await unchanged(segment.name, segment.table)) continue;
    const stats = await segmentStats(segment, { versions: false });
    const work = segmentWork(stats, store.tuning, options.force);
    if (work) {
      await record(segment.name, work.reason, async () => {
        if (work.vectorIndex) {
          await buildVectorIndex(segment.table, stats.vectorIndex, work.vectorIndex.partitions);
          pass.vectorIndexBuilt = { partitions: work.vectorIndex.partitions, rows: stats.rows };
        }
        await store.hooks?.("maintenance:before-compact");
        addOptimizeStats(pass, await optimize(segment.name, segment.table));
      });
      cleanedLater(segment.name);
    }
    options.lastWork?.set(segment.name, await segment.table.version());
    pass.tempFilesRemoved += await removeOrphanTempFiles(store.localDbDir, `${segment.name}.lance`);
    if (work) await cleanDue(); // settling a segment can take minutes: the others' replaced versions wait no longer
  }

  const graph = store.graphTable();
  if (!(await unchanged("graph", graph))) {
    const stats = await graph.stats();
    if (options.force || stats.fragmentStats.numSmallFragments >= compactionThreshold(stats.numRows, store.tuning)) {
      const reason = options.force ? "optimize" : `${stats.fragmentStats.numSmallFragments} small fragments`;
      await record("graph", reason, async () => addOptimizeStats(pass, await optimize("graph", graph)));
    }
    options.lastWork?.set("graph", await graph.version());
    pass.tempFilesRemoved += await removeOrphanTempFiles(store.localDbDir, "graph.lance");
  }
  if (pass.work.length) store.forgetRouting();
  pass.ms = Date.now() - started;
  return pass;
}

/**
 * Runs `fn` holding the store's maintenance lock (one pass at a time, across processes, or across
 * replicas with a shared Redis). With `wait: false`, returns undefined at once when another pass
 * holds it: a lease, which a holder that dies loses within MAINTENANCE_LEASE_MS.
 */
export async function withMaintenanceLock<T>(shared: Shared, fn: () => Promise<T>, options: { wait?: boolean } = {}): Promise<T | undefined> {
  if (options.wait !== false) return shared.withLock("maintenance", fn, { timeoutMs: 60 * 60_000 });
  const lease = await shared.tryLease("maintenance", MAINTENANCE_LEASE_MS);
  if (!lease) return undefined;
  try {
    return await fn();
  } finally {
    await lease.release();
  }
}

/** A maintenance lease whose holder stopped renewing it (killed) is free again after this long. */
const MAINTENANCE_LEASE_MS = 30_000;

/** One pass if anything is due, unless another process is already maintaining the store. */
export async function maintainIfDue(store: Maintained): Promise<MaintenancePass | undefined> {
  return withMaintenanceLock(store.shared, () => maintain(store, { force: false, keepVersionsMs: BACKGROUND_KEEP_VERSIONS_MS }), { wait: false });
}

/** A maintainer renews its store's LanceDB handles (Store.renew) after this many writes of its process… */
export const RENEW_EVERY_WRITES = 2_000;
/** …or this long after the last renewal. */
export const RENEW_EVERY_MS = 30 * 60_000;

/**
 * Runs maintenance passes in the background, one every `intervalMs` (a pass that finds nothing to
 * do costs a few milliseconds of metadata reads). `stop()` waits for a running pass to finish.
 * Between passes it also renews the store's LanceDB handles now and then (RENEW_EVERY_WRITES,
 * RENEW_EVERY_MS): their native memory grows with every table version they see, and only new
 * handles give it back (docs/safety.md, "Memory under load"). Between passes, so that no pass of
 * this maintainer still holds the old handles when they close.
 */
export class Maintainer {
  readonly passes: MaintenancePass[] = [];
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = true;
  private readonly lastWork = new Map<string, number>();
  private readonly cleanupDue = new Map<string, { at: number; round: number }>();
  private readonly contended = new Set<string>();
  private renewed = { writes: 0, at: Date.now() };
  /** How many times the store's handles were renewed (tests, memory measurements). */
  renewals = 0;

  constructor(
    private readonly store: Maintained,
    private readonly options: {
      intervalMs?: number;
      keepVersionsMs?: number;
      onPass?: (pass: MaintenancePass) => void;
      onError?: (err: unknown) => void;
      /** Asked before each scheduled pass; false skips it. */
      shouldRun?: () => boolean;
      /** Renew the store's handles after this many of its writes (default RENEW_EVERY_WRITES)… */
      renewEveryWrites?: number;
      /** …or this long after the last renewal (default RENEW_EVERY_MS). */
      renewEveryMs?: number;
    } = {},
  ) {
    this.renewed.writes = store.writes;
  }

  start(): this {
    this.stopped = false;
    this.schedule();
    return this;
  }

  /** One pass now (waits for a running one first); undefined when another process holds the lock. */
  async runOnce(): Promise<MaintenancePass | undefined> {
    await this.running;
    const pass = await withMaintenanceLock(
      this.store.shared,
      () =>
        maintain(this.store, {
          force: false,
          keepVersionsMs: this.options.keepVersionsMs ?? BACKGROUND_KEEP_VERSIONS_MS,
          lastWork: this.lastWork,
          cleanupDue: this.cleanupDue,
          contended: this.contended,
        }),
      { wait: false },
    );
    if (pass?.work.length) {
      this.passes.push(pass);
      if (this.passes.length > 1000) this.passes.shift();
      this.options.onPass?.(pass);
    }
    await this.renewIfDue();
    return pass;
  }

  private async renewIfDue(): Promise<void> {
    const writes = this.store.writes - this.renewed.writes;
    const due = writes >= (this.options.renewEveryWrites ?? RENEW_EVERY_WRITES) || Date.now() - this.renewed.at >= (this.options.renewEveryMs ?? RENEW_EVERY_MS);
    if (!due) return;
    await this.store.renew();
    this.renewed = { writes: this.store.writes, at: Date.now() };
    this.renewals++;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      if (this.options.shouldRun && !this.options.shouldRun()) return this.schedule();
      this.running = this.runOnce()
        .then(() => undefined)
        .catch((err) => this.options.onError?.(err))
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.options.intervalMs ?? 2_000);
    this.timer.unref();
  }
}

/** A segment's size, layout and index coverage. `versions` lists every version (slower). */
export async function segmentStats(segment: Segment, options: { versions: boolean }): Promise<SegmentStats> {
  const [table, indices, text] = await Promise.all([tableStats(segment.table, options), segment.table.listIndices(), segment.table.indexStats(TEXT_INDEX)]);
  const index = vectorIndexOf(indices);
  const vector = index ? await segment.table.indexStats(index.name) : undefined;
  return {
    name: segment.name,
    sealed: segment.sealed,
    ...table,
    unindexedTextRows: text?.numUnindexedRows ?? 0,
    vectorIndex: index && vector ? { ...index, indexedRows: vector.numIndexedRows, unindexedRows: vector.numUnindexedRows } : null,
  };
}

export async function tableStats(table: Table, options: { versions: boolean } = { versions: true }): Promise<TableStats> {
  const s = await table.stats();
  return {
    rows: s.numRows,
    fragments: s.fragmentStats.numFragments,
    smallFragments: s.fragmentStats.numSmallFragments,
    versions: options.versions ? (await table.listVersions()).length : 0,
    indices: s.numIndices,
    bytes: s.totalBytes,
  };
}

/** Runs a commit that may lose to a concurrent writer; false (and counted) when it did. */
async function tolerateConflict(pass: MaintenancePass, fn: () => Promise<void>): Promise<boolean> {
  try {
    await fn();
    return true;
  } catch (err) {
    if (!isCommitConflict(err)) throw err;
    pass.conflicts++;
    return false;
  }
}


function addOptimizeStats(pass: MaintenancePass, stats: { compaction: { fragmentsRemoved: number; fragmentsAdded: number }; prune: { oldVersionsRemoved: number; bytesRemoved: number } }): void {
  pass.fragmentsRemoved += stats.compaction.fragmentsRemoved;
  pass.fragmentsAdded += stats.compaction.fragmentsAdded;
  pass.oldVersionsRemoved += stats.prune.oldVersionsRemoved;
  pass.bytesRemoved += stats.prune.bytesRemoved;
}

/** LanceDB's `data/.tmp*` files older than ORPHAN_TMP_AGE_MS in a local table (object stores leave none: their writes are single PUTs). */
async function removeOrphanTempFiles(dbDir: string | undefined, table: string): Promise<number> {
  if (!dbDir) return 0;
  let removed = 0;
  const dataDir = join(dbDir, table, "data");
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
