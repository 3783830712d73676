import { MmError } from "../errors.js";
import { Document, type DocumentDriver } from "./documents.js";
import type { Connection, Table } from "./lance.js";

/**
 * The memories live in segments: LanceDB tables named in the `segments` document (storage/documents.ts;
 * `db/segments.json` in a local store), oldest first. The
 * newest is the active segment and takes every insert; once it holds `segmentRows` rows it is
 * sealed (a new, empty active segment is created) and is never appended to again.
 *
 * Why: LanceDB 0.37's `optimize()` rewrites every fragment below its 1M-row target that shares
 * an index coverage with its neighbours, so in one table each maintenance pass rewrote the whole
 * table (22 GB on disk after 8 minutes of a 1M fill). With segments a pass rewrites at most the
 * active segment, a sealed one is compacted and indexed once, and the cost of maintenance stays
 * proportional to what changed, not to the store (docs/architecture.md, "Segments").
 *
 * A store without `segments.json` (every store before segments existed, and every store that
 * has not yet sealed a segment) has one segment: the table `memories`.
 */
export interface Segment {
  name: string;
  table: Table;
  /** Every segment but the newest: it only gets deletes and in-place updates. */
  sealed: boolean;
}

export const FIRST_SEGMENT = "memories";

interface Manifest {
  segments: string[];
}

/** The segment list as a document: a store without one has the first segment only. */
export function segmentList(driver: () => Promise<DocumentDriver>): Document<Manifest> {
  return new Document<Manifest>(driver, "segments", { parse: parseManifest, pretty: false });
}

/**
 * This process's view of the segment list. `current()` costs one stamp check (a `stat`, or a cached
 * table version) when nothing changed; when another process sealed a segment, it re-reads the
 * list and opens the new table.
 */
export class SegmentSet {
  private readonly tables = new Map<string, Table>();

  constructor(
    private readonly db: Connection,
    private readonly list: Document<Manifest>,
    first?: Table,
  ) {
    if (first) this.tables.set(FIRST_SEGMENT, first);
  }

  async current(): Promise<Segment[]> {
    const names = (await this.list.read()).segments;
    return Promise.all(names.map(async (name, i) => ({ name, table: await this.table(name), sealed: i < names.length - 1 })));
  }

  /** Fresh handles at each segment's current version: a view that later commits don't change. */
  async pinned(): Promise<Segment[]> {
    const segments = await this.current();
    return Promise.all(
      segments.map(async (s) => {
        const table = await this.db.openTable(s.name);
        await table.checkout(await table.version());
        return { ...s, table };
      }),
    );
  }

  private async table(name: string): Promise<Table> {
    let table = this.tables.get(name);
    if (!table) {
      table = await this.db.openTable(name);
      this.tables.set(name, table);
    }
    return table;
  }

  /**
   * Adds `name` as the new active segment (the caller holds the write lock and has created the
   * table). The list is replaced atomically: a crash leaves the old list or the new one, and a
   * table created but never listed holds no acknowledged write.
   */
  async append(name: string): Promise<void> {
    const segments = [...(await this.current()).map((s) => s.name), name];
    await this.list.write({ segments });
  }

  /** Back to the single first segment (an emptied store); the caller drops the other tables. */
  async reset(): Promise<string[]> {
    const others = (await this.current()).map((s) => s.name).filter((n) => n !== FIRST_SEGMENT);
    await this.list.write({ segments: [FIRST_SEGMENT] });
    for (const name of others) {
      this.tables.get(name)?.close();
      this.tables.delete(name);
    }
    return others;
  }

  close(): void {
    for (const table of this.tables.values()) table.close();
    this.tables.clear();
  }
}

/** The name of the segment after `count` segments: memories, memories_2, memories_3… */
export function segmentName(index: number): string {
  return index === 0 ? FIRST_SEGMENT : `${FIRST_SEGMENT}_${index + 1}`;
}

function parseManifest(data: unknown, where: string): Manifest {
  if (data === undefined) return { segments: [FIRST_SEGMENT] };
  const segments = (data as Partial<Manifest>)?.segments;
  if (!Array.isArray(segments) || !segments.length || segments[0] !== FIRST_SEGMENT || !segments.every((s) => typeof s === "string" && /^memories(_\d+)?$/.test(s))) {
    throw new MmError("STORE_ERROR", `${where} does not list the store's segments; the store's segment list is damaged.`);
  }
  return { segments };
}
