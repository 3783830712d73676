/**
 * What every process serving one store must agree on at once: locks and leases, change stamps of
 * the small documents every request reads (keys, console sessions), and, in limits/, the quota
 * ledger and the per-minute rate counters.
 *
 * Two drivers, as unstorage separates drivers from its core:
 * - local files (shared/local.ts): one machine, the store's own directory; what mm always did;
 * - Redis (shared/redis.ts): replicas on several machines, with `--redis URL` / `$MM_REDIS_URL`.
 *
 * The data itself (memories, the graph, the documents) never lives here: it lives in the store
 * (a local directory or object storage), read through LanceDB.
 */
export interface Shared {
  readonly driver: "local" | "redis";
  /** Where the replicas agree, for messages and the store's record of it: `redis://host:port`, never a password; undefined for local files. */
  readonly where?: string;

  /**
   * Runs `fn` holding the named lock, across every process using the store. Names are short
   * words: "write" (the store's writers), "maintenance", "auth", "console", "ledger:<account>".
   */
  withLock<T>(name: string, fn: () => Promise<T>, options?: LockOptions): Promise<T>;

  /**
   * Takes the named lease if nobody holds it, renewing it until released. A holder that dies
   * (kill -9) loses it within `ttlMs`. Undefined when another process holds it.
   */
  tryLease(name: string, ttlMs: number): Promise<Lease | undefined>;

  /**
   * A token that changes whenever `touch(name)` is called by any process: a cached document is
   * re-read only when its stamp changed. The local driver returns undefined (callers keep using
   * the file's own mtime and size, which every process on the machine sees).
   */
  stamp(name: string): Promise<string | undefined>;
  /** Changes the stamp; returns the new one (what `stamp` now reads), undefined for the local driver of a local store. */
  touch(name: string): Promise<string | undefined>;

  close(): Promise<void>;
}

export interface LockOptions {
  /** How long to wait for another holder before giving up (STORE_ERROR, "the store is busy"). */
  timeoutMs?: number;
  /** A lock whose holder stopped renewing it for this long is taken over (holder hung or dead). */
  staleMs?: number;
}

export interface Lease {
  /** False once the lease was lost (renewal failed or expired): the holder must stop its work. */
  readonly held: boolean;
  release(): Promise<void>;
}
