import type { Table } from "./lance.js";

/**
 * The read-consistency interval of an object store's data tables (the memory segments and the
 * graph), kept by mm instead of LanceDB. Those tables are opened on a connection without an
 * interval (storage/database.ts, connectTables), where a handle moves to a newer version only
 * when asked (`checkoutLatest`) or by its own commits. Why: with an interval, LanceDB 0.37.1
 * makes every commit on the write path wait for three more requests, one after the other (a LIST
 * before it when the handle is older than the interval, and a LIST and a manifest GET after it,
 * because a commit empties the handle's cache of the latest version): seven instead of four.
 *
 * The rule for reads is LanceDB's own (`ConsistencyMode::Eventual`): a handle checked less than
 * three quarters of the interval ago is used as it is; up to the whole interval, it is used as it
 * is while a check runs in the background; older, the read waits for the check. An interval of 0
 * checks before every read. So another process's commit is seen within the interval, as before.
 *
 * Under the write lock none of that is needed: no other process can commit a row while this one
 * holds it, and Store.withWriteLock has already moved the handles on if another process committed
 * since this one's last write. `whileCurrent` marks that span, and its reads check nothing. This
 * process's own commits move its handles at once, so a create is readable by id on the next read.
 */
export class Freshness {
  private readonly checks = new WeakMap<Table, Check>();
  /** Inside whileCurrent: every handle is at its latest rows. */
  private current = 0;
  /** When whileCurrent last ended: every handle was at its latest rows then. */
  private currentAt = 0;

  constructor(private readonly intervalMs: number) {}

  /** Handles just opened or moved to their latest version (openTable reads the latest). */
  seen(tables: Table[], at = Date.now()): void {
    for (const table of tables) this.checks.set(table, { at });
  }

  /**
   * `fn` while this process holds the write lock with every handle of the store at its latest rows
   * (see the class). The interval starts again when it ends, for every handle.
   */
  async whileCurrent<T>(fn: () => Promise<T>): Promise<T> {
    this.current++;
    try {
      return await fn();
    } finally {
      this.current--;
      this.currentAt = Date.now();
    }
  }

  /** Before a read: checks the handles that are due, waiting only for those older than the interval. */
  async ensure(tables: Table[]): Promise<void> {
    if (this.current) return;
    const waits = tables.map((t) => this.due(t)).filter((p): p is Promise<void> => p !== undefined);
    if (waits.length) await Promise.all(waits);
  }

  private due(table: Table): Promise<void> | undefined {
    const now = Date.now();
    const check = this.checks.get(table);
    if (!check) {
      // A handle first met here was opened just now (SegmentSet opens a segment on first use).
      this.checks.set(table, { at: now });
      return undefined;
    }
    const age = now - Math.max(check.at, this.currentAt);
    if (this.intervalMs > 0 && age < (this.intervalMs * 3) / 4) return undefined;
    check.pending ??= table
      .checkoutLatest()
      .then(() => {
        check.at = Math.max(check.at, now);
      })
      .finally(() => {
        check.pending = undefined;
      });
    if (this.intervalMs > 0 && age < this.intervalMs) {
      check.pending.catch(() => undefined); // in the background: a failure is met again by the next read that waits
      return undefined;
    }
    return check.pending;
  }
}

interface Check {
  /** When the handle was last known at its table's latest version. */
  at: number;
  pending?: Promise<void>;
}
