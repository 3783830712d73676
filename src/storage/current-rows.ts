import type { MemoryRow } from "./memories.js";
import { cmp } from "./pages.js";
import type { Segment } from "./segments.js";

/** Rows kept in all (about 2.5 KB each with a 512-dimension vector: some 25 MB at most). */
export const CURRENT_ROWS_KEPT = 10_000;

/**
 * Users' every current memory, whole (vectors included), as this process last read or wrote them.
 *
 * Detection (core/validity.ts) reads every current memory of the users of a create that says
 * something changed, when they have few (NEAR_SCAN): under the write lock, one query per group
 * commit. On an object store that query was a third of a group commit's time under the lock (43 of
 * 115 ms for 8 creates on Azurite), and most of what it read was what the process had just read or
 * written. Here it is kept, and a plan that finds its users here reads nothing.
 *
 * Nothing here can be stale. The rows are exact at the table version of every segment recorded
 * with them, and this process's own commits of memory rows (StoreWriter.insertMemories,
 * replaceMemories) move the record forward with what they wrote; its other writes of memory rows
 * (a delete, an entity's links rewritten) forget everything. A segment at another version than
 * recorded means some other commit came between:
 * - on a local store, anything (another `mm` process writes without telling): everything is
 *   forgotten;
 * - on an object store, when no other process has written since this one last held the write lock
 *   (its `write` stamp, Store.withWriteLock: `quiet`), only compactions and index updates, which
 *   move no row's content: the rows still hold, at the new versions. There a background
 *   maintainer's compaction every few seconds would otherwise make every user be read again.
 * A seal (a new segment) forgets everything.
 */
export class CurrentRows {
  /** Segment name → the table version the rows are exact at; empty when nothing is kept. */
  private at = new Map<string, number>();
  /** `accountId\0userId` → the user's current rows, oldest first (createdAt, then id); least recently used first. */
  private users = new Map<string, MemoryRow[]>();
  private size = 0;

  constructor(private readonly maxRows = CURRENT_ROWS_KEPT) {}

  /**
   * Whether the kept rows are exact for `segments` as they are now, under the write lock; forgets
   * them all when not. `quiet`: no other process has written since this one last held the lock.
   */
  async holds(segments: Segment[], quiet: boolean): Promise<boolean> {
    if (!this.users.size) return false;
    const versions = await versionsOf(segments);
    const sameSegments = versions.size === this.at.size && [...versions.keys()].every((name) => this.at.has(name));
    if (sameSegments && (quiet || sameVersions(versions, this.at))) {
      this.at = versions;
      return true;
    }
    this.forget();
    return false;
  }

  /** A user's kept rows (call holds() first, under the same write lock). */
  get(accountId: string, userId: string): MemoryRow[] | undefined {
    const key = userKey({ accountId, userId });
    const rows = this.users.get(key);
    if (rows) {
      // Most recently used last: trim() drops from the front.
      this.users.delete(key);
      this.users.set(key, rows);
    }
    return rows;
  }

  /** The versions of `segments` before a read, for remember(). */
  versions(segments: Segment[]): Promise<Map<string, number>> {
    return versionsOf(segments);
  }

  /**
   * Keeps users' every current row, read whole at `before` (versions()) when every segment is
   * still at that version after the read (a compaction may have committed meanwhile).
   */
  async remember(segments: Segment[], before: Map<string, number>, byUser: Map<string, MemoryRow[]>): Promise<void> {
    const after = await versionsOf(segments);
    if (!sameVersions(after, before)) return;
    if (this.users.size && !sameVersions(after, this.at)) this.forget();
    this.at = after;
    for (const [key, rows] of byUser) {
      this.drop(key);
      this.users.set(key, [...rows]);
      this.size += rows.length;
    }
    this.trim();
  }

  /**
   * After this process's commit on `segment`, from version `before` to `after`: `inserted` rows
   * added, `rewritten` rows changed whole. Kept users follow them; when the commit was not the only
   * one since the rows were recorded (and not `quiet`, as in holds()), everything is forgotten instead.
   */
  committed(segment: string, before: number, after: number, inserted: MemoryRow[], rewritten: MemoryRow[], quiet: boolean): void {
    if (!this.users.size) return;
    if (!this.at.has(segment) || (!quiet && (this.at.get(segment) !== before || after !== before + 1))) return this.forget();
    this.at.set(segment, after);
    for (const row of [...rewritten, ...inserted]) {
      const rows = this.users.get(userKey(row));
      if (!rows) continue;
      // A rewritten row that was current goes; one current now (restored, or new) comes in its place in the order.
      const was = rows.findIndex((r) => r.id === row.id);
      if (was >= 0) {
        rows.splice(was, 1);
        this.size--;
      }
      if (row.supersededBy) continue;
      const at = rows.findIndex((r) => (cmp(r.createdAt, row.createdAt) || cmp(r.id, row.id)) > 0);
      rows.splice(at < 0 ? rows.length : at, 0, stored(row));
      this.size++;
    }
    this.trim();
  }

  forget(): void {
    this.at.clear();
    this.users.clear();
    this.size = 0;
  }

  private drop(key: string): void {
    this.size -= this.users.get(key)?.length ?? 0;
    this.users.delete(key);
  }

  private trim(): void {
    for (const key of this.users.keys()) {
      if (this.size <= this.maxRows) break;
      this.drop(key);
    }
  }
}

/** How a user is keyed here, in what keptCurrentRows returns, in core/validity.ts's plan and in storage/memories.ts's LastSeqs. */
export function userKey(user: { accountId: string; userId: string }): string {
  return `${user.accountId}\u0000${user.userId}`;
}

/** Whether two version records name the same segments at the same versions. */
function sameVersions(a: Map<string, number>, b: Map<string, number>): boolean {
  return a.size === b.size && [...a].every(([name, v]) => b.get(name) === v);
}

async function versionsOf(segments: Segment[]): Promise<Map<string, number>> {
  const versions = await Promise.all(segments.map((s) => s.table.version()));
  return new Map(segments.map((s, i) => [s.name, versions[i]]));
}

/** A row as a read of it returns it (storage/memories.ts readMemoryRows): exactly its fields, a copy. */
export function stored(row: MemoryRow): MemoryRow {
  return {
    id: row.id,
    accountId: row.accountId,
    content: row.content,
    userId: row.userId,
    agentId: row.agentId ?? null,
    tags: [...row.tags],
    metadata: row.metadata ?? null,
    entityIds: [...row.entityIds],
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    seq: row.seq,
    supersededBy: row.supersededBy ?? null,
    supersededAt: row.supersededAt ?? null,
    matchKeys: [...row.matchKeys],
    project: row.project ?? null,
    history: row.history ?? null,
    vector: row.vector,
  };
}
