import { statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { MmError } from "../errors.js";
import { writeFileAtomic } from "./atomic-file.js";
import { isCommitConflict, loadLance, sqlString, type Connection, type Table } from "./lance.js";
import type { Shared } from "./shared/types.js";

/**
 * The store's small documents, beside its tables: what every process must see the same of, read
 * on every request and rarely written.
 *
 * | name       | holds                                                   | local store             |
 * |------------|---------------------------------------------------------|-------------------------|
 * | `config`   | the embedder that made the vectors, the format, serve defaults | `config.json`     |
 * | `auth`     | accounts and API keys (SHA-256 hashes, never the keys)  | `auth.json`             |
 * | `key-use`  | when each key was last used (object stores; locally `key-use/<keyId>` mtimes, storage/key-use.ts) | — |
 * | `console`  | console sign-in links and sessions (hashes)             | `console.json`          |
 * | `segments` | the memory segments, oldest first (storage/segments.ts) | `db/segments.json`      |
 * | `coordination` | the Redis that coordinates the store's processes (storage/coordination.ts) | `coordination.json` |
 *
 * Two drivers, the same contract: a local store keeps its files exactly as mm always did
 * (FileDocuments); a store in object storage keeps them as rows of a LanceDB table `meta` (name,
 * body, rev) in the same database (TableDocuments), where a change is one conditional commit.
 * Either way a document is changed only under `shared.withLock(name)`, and every change calls
 * `shared.touch(name)`, so a driver with change stamps (Redis) tells every replica at once.
 */
export interface DocumentDriver {
  readonly kind: "files" | "table";
  readonly shared: Shared;
  /** Where the document is, for messages: a path, or `az://…` and the document's name. */
  describe(name: string): string;
  /** Changes whenever the document may have changed ("none" while it doesn't exist); cheap, as every read asks. */
  stamp(name: string): Promise<string>;
  load(name: string): Promise<{ text: string; rev: number } | undefined>;
  /** Makes the next load see the latest commit (called under the document's lock, before a read-modify-write). */
  refresh?(): Promise<void>;
  /** Replaces the document; the caller holds `shared.withLock(name)` and passes the rev it loaded (0: none). */
  save(name: string, text: string, rev: number): Promise<void>;
}

export interface DocumentFormat<T> {
  /** The data of a missing document, and the place to check or add defaults to a read one. */
  parse(data: unknown, where: string): T;
  /** How the document is written (local files keep their historical layout). */
  pretty?: boolean;
}

/**
 * One document, cached: re-read only when its stamp changes, so a change made by another process
 * (`mm keys revoke`, `mm console revoke`) is seen by a running server on its next request.
 */
export class Document<T> {
  private cache: { stamp: string; data: T } | undefined;

  constructor(
    private readonly driver: () => Promise<DocumentDriver>,
    readonly name: string,
    private readonly format: DocumentFormat<T>,
  ) {}

  async read(): Promise<T> {
    const driver = await this.driver();
    const stamp = await driver.stamp(this.name);
    if (this.cache?.stamp === stamp) return this.cache.data;
    // Changed: a handle that may lag (object storage) catches up first, or it would cache the old data under the new stamp.
    if (this.cache) await driver.refresh?.();
    const data = (await this.load(driver)).data;
    this.cache = { stamp, data };
    return data;
  }

  /** Read-modify-write under the document's lock; `fn` mutates a fresh copy and returns a result. */
  async update<R>(fn: (data: T) => R): Promise<R> {
    return this.change((data) => ({ data, result: fn(data) }));
  }

  /** Replaces the document with `data`, under its lock. */
  async write(data: T): Promise<void> {
    await this.change(() => ({ data, result: undefined }));
  }

  private async change<R>(fn: (data: T) => { data: T; result: R }): Promise<R> {
    const driver = await this.driver();
    return driver.shared.withLock(this.name, async () => {
      this.cache = undefined;
      await driver.refresh?.();
      const loaded = await this.load(driver);
      const { data, result } = fn(loaded.data);
      await driver.save(this.name, serialize(data, this.format), loaded.rev);
      await driver.shared.touch(this.name);
      return result;
    });
  }

  private async load(driver: DocumentDriver): Promise<{ data: T; rev: number }> {
    const found = await driver.load(this.name);
    if (!found) return { data: this.format.parse(undefined, driver.describe(this.name)), rev: 0 };
    let parsed: unknown;
    try {
      parsed = JSON.parse(found.text);
    } catch (err) {
      throw new MmError("STORE_ERROR", `${driver.describe(this.name)} is not valid JSON.`, {}, { cause: err });
    }
    return { data: this.format.parse(parsed, driver.describe(this.name)), rev: found.rev };
  }
}

function serialize<T>(data: T, format: DocumentFormat<T>): string {
  return format.pretty === false ? JSON.stringify(data) + "\n" : JSON.stringify(data, null, 2) + "\n";
}

const FILES: Record<string, string> = { config: "config.json", auth: "auth.json", console: "console.json", segments: join("db", "segments.json"), coordination: "coordination.json" };

/** A local store's documents: its JSON files, replaced atomically (temp file, fsync, rename), mode 600. */
export class FileDocuments implements DocumentDriver {
  readonly kind = "files" as const;

  constructor(
    readonly dir: string,
    readonly shared: Shared,
  ) {}

  describe(name: string): string {
    return this.path(name);
  }

  async stamp(name: string): Promise<string> {
    try {
      // Synchronous on purpose: a stat of a local file takes ~7 µs, the promise version ~300 µs
      // (a thread-pool round trip), and this runs on every request.
      const s = statSync(this.path(name), { bigint: true });
      return `${s.ino}:${s.mtimeNs}:${s.size}`;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return "none";
      throw new MmError("STORE_ERROR", `Cannot read ${this.path(name)}: ${(err as Error).message}`, {}, { cause: err });
    }
  }

  async load(name: string): Promise<{ text: string; rev: number } | undefined> {
    try {
      return { text: await readFile(this.path(name), "utf8"), rev: 0 };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw new MmError("STORE_ERROR", `Cannot read ${this.path(name)}: ${(err as Error).message}`, {}, { cause: err });
    }
  }

  async save(name: string, text: string): Promise<void> {
    await writeFileAtomic(this.path(name), text);
  }

  private path(name: string): string {
    const file = FILES[name];
    if (!file) throw new MmError("INTERNAL_ERROR", `No document named ${name}.`);
    return join(this.dir, file);
  }
}

export const META_TABLE = "meta";
/** Commits of one document that lost to a concurrent commit of another (same table) are retried this often. */
const SAVE_ATTEMPTS = 8;

/**
 * An object store's documents: rows of the LanceDB table `meta` (name, body, rev), in the store's
 * own database, so every replica reads the same bytes and a change is one LanceDB commit (a
 * conditional write on the object store). A save is a merge on `name` that updates the row only
 * while its rev is the one loaded: a writer that lost its lock (it hung past the lock's expiry)
 * can't overwrite a newer document, it fails instead.
 *
 * Stamps: the Shared driver's, when it has them (Redis: a replica learns of a change at once);
 * otherwise the table's version, which this process re-reads at most every read-consistency
 * interval (storage/store.ts, OBJECT_READ_CONSISTENCY_S).
 */
export class TableDocuments implements DocumentDriver {
  readonly kind = "table" as const;

  private table: Table | undefined;

  constructor(
    private readonly db: Connection,
    readonly shared: Shared,
    private readonly label: string,
  ) {}

  /** The documents of a database; the `meta` table is made by the first save. */
  static async open(db: Connection, shared: Shared, label: string): Promise<TableDocuments> {
    const docs = new TableDocuments(db, shared, label);
    await docs.opened();
    return docs;
  }

  describe(name: string): string {
    return `${this.label} (document ${name})`;
  }

  async stamp(name: string): Promise<string> {
    const shared = await this.shared.stamp(name);
    if (shared !== undefined) return shared;
    const table = await this.opened();
    return table ? `v${await table.version()}` : "none";
  }

  async load(name: string): Promise<{ text: string; rev: number } | undefined> {
    const table = await this.opened();
    if (!table) return undefined;
    const rows = await table.query().where(`name = ${sqlString(name)}`).select(["body", "rev"]).limit(1).toArray();
    return rows[0] ? { text: String(rows[0].body), rev: Number(rows[0].rev) } : undefined;
  }

  /** Refreshes the handle to the table's latest version (before a read-modify-write under a lock). */
  async refresh(): Promise<void> {
    await (await this.opened())?.checkoutLatest();
  }

  private async opened(): Promise<Table | undefined> {
    if (!this.table && (await this.db.tableNames()).includes(META_TABLE)) this.table = await this.db.openTable(META_TABLE);
    return this.table;
  }

  async save(name: string, text: string, rev: number): Promise<void> {
    const row = { name, body: text, rev: rev + 1 };
    this.table ??= await this.db.createEmptyTable(META_TABLE, metaSchema(), { mode: "create", existOk: true });
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.table
          .mergeInsert("name")
          .whenMatchedUpdateAll({ where: `target.rev = ${rev}` })
          .whenNotMatchedInsertAll()
          .execute([row]);
        if (result.numInsertedRows + result.numUpdatedRows !== 1) {
          throw new MmError("STORE_ERROR", `${this.describe(name)} was changed by another process while this one held its lock; nothing was written. Try again.`);
        }
        return;
      } catch (err) {
        if (!isCommitConflict(err) || attempt >= SAVE_ATTEMPTS) throw err;
        await this.table.checkoutLatest();
      }
    }
  }

  close(): void {
    this.table?.close();
  }
}

function metaSchema() {
  const { arrow } = loadLance();
  return new arrow.Schema([
    new arrow.Field("name", new arrow.Utf8(), false),
    new arrow.Field("body", new arrow.Utf8(), false),
    new arrow.Field("rev", new arrow.Int32(), false),
  ]);
}
