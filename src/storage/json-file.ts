import { statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { MmError } from "../errors.js";
import { withLock } from "./lock.js";
import { writeFileAtomic } from "./atomic-file.js";

/**
 * A small JSON file in the store, read on every request and rarely written (auth.json,
 * console.json): reads are cached and re-read only when the file's mtime, size or inode changes,
 * so a change made by another process (`mm keys revoke`, `mm console revoke`) is seen by a running
 * server on its very next request. Writes hold the file's own lock, and replace the file
 * atomically with mode 600: it holds secrets' hashes.
 */
export class JsonFile<T> {
  private cache: { stamp: string; data: T } | undefined;

  constructor(
    private readonly storeDir: string,
    private readonly name: string,
    /** The data of a missing file, and the place to add defaults to a read one. */
    private readonly normalize: (data: T | undefined) => T,
  ) {}

  get path(): string {
    return join(this.storeDir, this.name);
  }

  async read(): Promise<T> {
    let stamp: string;
    try {
      // Synchronous on purpose: a stat of a local file takes ~7 µs, the promise version ~300 µs
      // (a thread-pool round trip), and this runs on every request.
      const s = statSync(this.path);
      stamp = `${s.mtimeMs}:${s.size}:${s.ino}`;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return this.normalize(undefined);
      throw err;
    }
    if (this.cache?.stamp === stamp) return this.cache.data;
    let data: T;
    try {
      data = this.normalize(JSON.parse(await readFile(this.path, "utf8")) as T);
    } catch (err) {
      throw new MmError("STORE_ERROR", `${this.path} is not valid JSON.`, {}, { cause: err });
    }
    this.cache = { stamp, data };
    return data;
  }

  /** Read-modify-write under the file's lock; `fn` mutates a fresh copy and returns a result. */
  async update<R>(fn: (data: T) => R): Promise<R> {
    return withLock(join(this.storeDir, `.${this.name.replace(/\.json$/, "")}-lock`), async () => {
      this.cache = undefined;
      const data = structuredClone(await this.read());
      const result = fn(data);
      await writeFileAtomic(this.path, JSON.stringify(data, null, 2) + "\n");
      this.cache = undefined;
      return result;
    });
  }
}
