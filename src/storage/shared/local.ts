import { randomUUID } from "node:crypto";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { withLock } from "../lock.js";
import type { Lease, LockOptions, Shared } from "./types.js";

/**
 * The local-files driver: what mm always did on one machine. A lock is a directory in the store
 * (`<store>/.<name>-lock`, storage/lock.ts: mkdir is atomic, a dead holder's lock is taken over at
 * once); a lease is the same lock, taken without waiting and held until released.
 *
 * Change stamps: a local store's documents are files whose own stat says when they changed, so by
 * default `stamp` has nothing to add. An object store's documents are table rows, which this
 * process would otherwise see change only after LanceDB's read-consistency interval: with
 * `stamps: true` (the coordination directory of an object store), `touch` writes a token to
 * `<dir>/.<name>-stamp` and `stamp` reads it, so every process on the machine notices a change
 * (a revoked key) on its next request.
 */
const leasedHere = new Set<string>();

export class LocalShared implements Shared {
  readonly driver = "local" as const;

  constructor(
    readonly storeDir: string,
    private readonly options: { stamps?: boolean } = {},
  ) {}

  withLock<T>(name: string, fn: () => Promise<T>, options?: LockOptions): Promise<T> {
    return withLock(this.lockDir(name), fn, options);
  }

  async tryLease(name: string): Promise<Lease | undefined> {
    const dir = this.lockDir(name);
    // withLock queues this process's waiters behind each other; a lease never waits.
    if (leasedHere.has(dir)) return undefined;
    leasedHere.add(dir);
    let entered!: () => void;
    let release!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const done = new Promise<void>((r) => (release = r));
    const lease = { held: true, release: async () => { release(); await holding.catch(() => undefined); } };
    const holding = withLock(dir, async () => { entered(); await done; }, { timeoutMs: 0 }).finally(() => {
      lease.held = false;
      leasedHere.delete(dir);
    });
    const outcome = await Promise.race([inside.then(() => "held" as const), holding.then(() => "held" as const, () => "busy" as const)]);
    return outcome === "held" ? lease : undefined;
  }

  async stamp(name: string): Promise<string | undefined> {
    if (!this.options.stamps) return undefined;
    try {
      // Synchronous: a read of a tiny local file takes microseconds, and every request asks.
      return readFileSync(this.stampFile(name), "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return "none";
      throw err;
    }
  }

  async touch(name: string): Promise<string | undefined> {
    if (!this.options.stamps) return undefined;
    const file = this.stampFile(name);
    const tmp = `${file}.${process.pid}.tmp`;
    const token = randomUUID();
    writeFileSync(tmp, token, { mode: 0o600 });
    renameSync(tmp, file);
    return token;
  }

  private stampFile(name: string): string {
    return join(this.storeDir, `.${name.replace(/[^\w-]/g, "-")}-stamp`);
  }

  async close(): Promise<void> {}

  /** `write` → `.write-lock`, `ledger:acct_x` → `.ledger-acct_x-lock` (names are mm's own, never a user's). */
  private lockDir(name: string): string {
    return join(this.storeDir, `.${name.replace(/[^\w-]/g, "-")}-lock`);
  }
}
