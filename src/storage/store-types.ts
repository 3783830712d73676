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

/**
 * How a segment answers a vector search: exactly, or through its index probing `nprobes` partitions.
 * An exact plan with `nprobes` goes through the index too, probing every partition
 * (StoreTuning.vectorsFromIndex): IVF_FLAT keeps whole vectors, so that is exact as well.
 */
export type SearchPlan = { exact: true; nprobes?: number } | { exact: false; nprobes: number };

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
  /**
   * Object storage (false: off): searches read memories' vectors from the object store only where
   * they must. A vector search that bypasses the index reads the segment's whole vector column,
   * whatever the filter leaves (a user's rows lie spread through the file, and LanceDB merges the
   * nearby ranges: 4 MB per query at 2,000 memories of 512 dims), while LanceDB keeps an index's
   * partitions in memory (its index cache). So an exact search goes through the index probing
   * every partition, which IVF_FLAT makes exact too (it keeps whole vectors: the same rows and
   * distances); a search's hits never carry their vectors. Only where a segment has an index (`vectorIndexMinRows`, as locally:
   * building it sooner, at 1,000 rows, kept each search off the vector column but made every
   * compaction rewrite the index too, and creates fell to half; docs/measurements/object-storage-rounds.md).
   */
  vectorsFromIndex: boolean;
  /**
   * From this many commits of this process since the active segment's last other commit (0:
   * never), detection's reads under the write lock go to the segment as it was then, plus the
   * rows this process wrote since, kept in memory (storage/recent-writes.ts): on an object store
   * every small fragment costs each query requests of its own, and compaction waits for 32 of
   * them. Object stores only; locally a small fragment is a file read from the page cache.
   */
  recentWrites: number;
}

export const DEFAULT_TUNING: StoreTuning = {
  vectorIndexMinRows: 50_000,
  exactSearchMaxRows: 20_000,
  segmentRows: 250_000,
  compactFragments: 32,
  compactEveryRows: 0,
  versionCacheEntries: 0,
  metadataCacheBytes: 64 * 1024 * 1024,
  vectorsFromIndex: false,
  recentWrites: 0,
};

/** What Store.open changes from DEFAULT_TUNING for a store in object storage. */
export const OBJECT_STORE_TUNING: Partial<StoreTuning> = { compactEveryRows: 500, versionCacheEntries: 512, vectorsFromIndex: true, recentWrites: 4 };

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
