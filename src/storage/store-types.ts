import type { VectorIndexInfo } from "./indexes.js";

/**
 * What the store (store.ts) and its upkeep (maintenance.ts) both speak of: sizes, tuning and the
 * results of a maintenance pass. Kept apart so that maintenance needs nothing of store.ts, and the
 * store imports maintenance, not the other way round.
 */

export interface TableStats {
  rows: number;
  fragments: number;
  smallFragments: number;
  versions: number;
  indices: number;
  bytes: number;
}

/** The segments' vector indexes together: how many segments have one, their partitions and coverage. */
export interface VectorIndexStats {
  type: "IVF_FLAT";
  segments: number;
  partitions: number;
  indexedRows: number;
  unindexedRows: number;
}

export interface SegmentStats extends TableStats {
  name: string;
  sealed: boolean;
  unindexedTextRows: number;
  vectorIndex: (VectorIndexInfo & { indexedRows: number; unindexedRows: number }) | null;
}

/** How a segment answers a vector search: exactly, or through its index probing `nprobes` partitions. */
export type SearchPlan = { exact: true } | { exact: false; nprobes: number };

/**
 * The sizes at which the store changes strategy. The defaults come from measurements on a 2-core
 * machine (docs/performance.md, "Speed, memory and scale"); tests shrink them to exercise the same code paths
 * on small tables.
 */
export interface StoreTuning {
  /** Maintenance builds a segment's vector index once it holds this many rows. */
  vectorIndexMinRows: number;
  /** A search whose filter leaves at most this many rows of a segment stays exact even when it has an index. */
  exactSearchMaxRows: number;
  /** The active segment is sealed, and a new one started, once it holds this many rows. */
  segmentRows: number;
  /** A segment (or the graph table) is compacted once it has this many small fragments (about one per commit). */
  compactFragments: number;
  /**
   * Object storage (0: off): a table is compacted sooner while it is small, once it has one small
   * fragment per this many rows (at least MIN_COMPACT_FRAGMENTS, at most `compactFragments`).
   * There every query reads each small fragment with requests of its own, so a search costs about
   * one request more per fragment; while no vector index exists a compaction rewrites the table, so
   * this bounds what compaction rewrites per commit to about this many rows.
   */
  compactEveryRows: number;
  /**
   * Object storage (0: off): how many read results (a scope's count, its memories with a word) a
   * store remembers by table version (MemoryReads.atVersion), most recently used kept.
   */
  versionCacheEntries: number;
  /** LanceDB's metadata cache for this store (see lanceSession): 64 MiB. */
  metadataCacheBytes: number;
}

export const DEFAULT_TUNING: StoreTuning = {
  vectorIndexMinRows: 50_000,
  exactSearchMaxRows: 20_000,
  segmentRows: 250_000,
  compactFragments: 32,
  compactEveryRows: 0,
  versionCacheEntries: 0,
  metadataCacheBytes: 64 * 1024 * 1024,
};

/** What Store.open changes from DEFAULT_TUNING for a store in object storage. */
export const OBJECT_STORE_TUNING: Partial<StoreTuning> = { compactEveryRows: 500, versionCacheEntries: 512 };

const MIN_COMPACT_FRAGMENTS = 4;

/** How many small fragments make a table of `rows` rows due for compaction (StoreTuning.compactEveryRows). */
export function compactionThreshold(rows: number, tuning: StoreTuning): number {
  if (!tuning.compactEveryRows) return tuning.compactFragments;
  return Math.min(tuning.compactFragments, Math.max(MIN_COMPACT_FRAGMENTS, Math.ceil(rows / tuning.compactEveryRows)));
}

export interface OptimizeResult {
  fragmentsRemoved: number;
  fragmentsAdded: number;
  oldVersionsRemoved: number;
  bytesRemoved: number;
  tempFilesRemoved: number;
  /** Set when this pass built (or retrained) the vector index. */
  vectorIndexBuilt?: { partitions: number; rows: number };
}
