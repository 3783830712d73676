import { stored } from "./current-rows.js";
import type { MemoryRow } from "./memories.js";
import type { Table } from "./lance.js";
import type { Segment } from "./segments.js";

/** Rows kept at most (about 2.5 KB each with a 512-dimension vector: some 10 MB); past it, the table is read as it is. */
export const RECENT_ROWS_KEPT = 4_000;

/** What a read of the active segment through RecentWrites sees: the table at its base version, and this process's rows since. */
export interface RecentView {
  /** The active segment at the base version: a handle checked out there. */
  table: Table;
  /** Rows this process inserted or rewrote since the base version, by id, as they are now. */
  rows: Map<string, MemoryRow>;
  /**
   * How many of them the base version holds too (rewritten, not inserted since) within `scope` (a
   * user's, an account's): what a read of the base within it hides. A row's account and user never
   * change, so its row now tells.
   */
  rewrittenIn(scope: (row: MemoryRow) => boolean): number;
}

/**
 * The active segment as a compacted table plus what this process wrote since, for detection's
 * reads under the write lock on an object store (StoreTuning.recentWrites).
 *
 * Every commit adds a small fragment to the active segment, and until maintenance compacts them (a
 * pass rewrites the segment's vector index, 200 MB at 100,000 memories, so it waits for 32 of
 * them), every query reads every small fragment with requests of its own: on Azurite, at 100,000
 * memories, a group commit's candidates query took 240 ms and each nearest-notes search 250 ms
 * with up to 32 small fragments, against about 45 ms for the candidates on the compacted table.
 * This process wrote those fragments itself and knows their rows. So a read here goes to the
 * segment as it was at the *base* version (after the last commit this process didn't make: usually
 * maintenance's compaction), with a filter that hides the rows this process has written since,
 * and the rows themselves are matched in memory: the same answer, from one compacted fragment.
 *
 * Nothing here can be stale. The rows are exact at the active segment's version `at`: the base
 * version plus this process's own commits of memory rows (StoreWriter.insertMemories,
 * replaceMemories), each of which moves `at` by one and records what it wrote; its other writes
 * of memory rows (a delete, an entity's links rewritten) forget everything. Any other commit in
 * between (maintenance, another process, a seal) leaves the segment at another version than `at`,
 * and then the next read starts again from the segment as it is, with nothing kept: always exact,
 * at worst no faster. A base version that cleanup removed meanwhile fails the read; the caller
 * then forgets and reads the table as it is. Measured
 * (docs/measurements/object-storage-rounds.md, "Recent writes from memory (27 November, ninth pass)").
 */
export class RecentWrites {
  private base: { segment: string; version: number; table?: Promise<Table> } | undefined;
  /** The active segment's version the kept rows are exact at. */
  private at = -1;
  private readonly rows = new Map<string, MemoryRow>();
  /** The ids of `rows` the base version holds too. */
  private readonly inBase = new Set<string>();

  constructor(
    /** Opens a new handle on a segment's table checked out at a version. */
    private readonly open: (segment: string, version: number) => Promise<Table>,
    private readonly maxRows = RECENT_ROWS_KEPT,
  ) {}

  /**
   * Under the write lock: the view to read `active` through, or undefined to read it as it is
   * (fewer than `after` commits of this process since the base, or another commit came between:
   * then the base moves to now). Opening the base costs a handle's requests (a list of versions,
   * a manifest), so a view pays only once a few small fragments would be read instead.
   */
  async view(active: Segment, after = 1): Promise<RecentView | undefined> {
    const version = await active.table.version();
    if (this.base?.segment === active.name && version === this.at) {
      if (!this.rows.size || version - this.base.version < after) return undefined;
      this.base.table ??= this.open(active.name, this.base.version);
      try {
        const { rows, inBase } = this;
        const rewrittenIn = (scope: (row: MemoryRow) => boolean) => [...inBase].filter((id) => scope(rows.get(id)!)).length;
        return { table: await this.base.table, rows, rewrittenIn };
      } catch {
        this.forget();
        return undefined;
      }
    }
    this.forget();
    this.base = { segment: active.name, version };
    this.at = version;
    return undefined;
  }

  /** After this process's commit on `segment` from version `before` to `after`: the rows it inserted and the rows it rewrote, whole. */
  committed(segment: string, before: number, after: number, inserted: MemoryRow[], rewritten: MemoryRow[]): void {
    if (this.base?.segment !== segment) return; // a sealed segment, read as it is
    if (before !== this.at || after !== before + 1 || this.rows.size + inserted.length + rewritten.length > this.maxRows) return this.forget();
    this.at = after;
    for (const row of rewritten) if (!this.rows.has(row.id)) this.inBase.add(row.id);
    for (const row of [...rewritten, ...inserted]) this.rows.set(row.id, stored(row));
  }

  /** Forgets the base and the rows: the next read starts again from the table as it is. */
  forget(): void {
    // The base handle isn't closed here: a read may still be using it. It goes with its last reference.
    this.base = undefined;
    this.at = -1;
    this.rows.clear();
    this.inBase.clear();
  }
}
