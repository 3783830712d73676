import { randomUUID } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { basename, dirname, join } from "node:path";
import { MmError } from "../errors.js";

interface Owner {
  pid: number;
  host: string;
  token: string;
  at: number;
}

export interface LockOptions {
  /** How long to wait for another writer before giving up. */
  timeoutMs?: number;
  /** A lock whose owner stopped refreshing it for this long is taken over (owner hung, or on another host). */
  staleMs?: number;
}

const HEARTBEAT_MS = 2_000;
const DEFAULT_STALE_MS = 30_000;
const DEFAULT_TIMEOUT_MS = 60_000;
/**
 * Writers wait longer: a maintenance pass holds the store's lock while it rewrites the table, which
 * at 1M memories took up to 108 s (measured; README, "Speed, memory and scale").
 */
export const WRITE_LOCK_TIMEOUT_MS = 5 * 60_000;

/** Same-process waiters queue here, so they don't poll the file lock against themselves. */
const localQueues = new Map<string, Promise<unknown>>();

/**
 * Runs `fn` while holding the store's write lock, shared by every `mm` process on the machine.
 *
 * The lock is a directory (`mkdir` is atomic on every local filesystem) holding the owner's
 * pid. A lock whose owner process is dead (kill -9, power loss) is taken over at once rather than
 * after a timeout, so a crashed writer doesn't stall the next command. Known gap: two waiters
 * breaking the same dead lock at the same instant could both proceed; the window is a few
 * microseconds after a crash and LanceDB's own commit protocol still keeps data consistent.
 */
export async function withWriteLock<T>(storeDir: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  return withLock(join(storeDir, ".write-lock"), fn, { timeoutMs: WRITE_LOCK_TIMEOUT_MS, ...options });
}

/** The same lock at any path (its parent must exist): the quota ledger and key files use their own. */
export async function withLock<T>(lockDir: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const previous = localQueues.get(lockDir) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((r) => (release = r));
  const tail = previous.then(() => mine);
  localQueues.set(lockDir, tail);
  await previous;
  try {
    const handle = await acquire(lockDir, options);
    try {
      return await fn();
    } finally {
      await handle.release();
    }
  } finally {
    release();
    if (localQueues.get(lockDir) === tail) localQueues.delete(lockDir);
  }
}

async function acquire(lockDir: string, options: LockOptions): Promise<{ release(): Promise<void> }> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const staleMs = options.staleMs ?? DEFAULT_STALE_MS;
  const owner: Owner = { pid: process.pid, host: hostname(), token: randomUUID(), at: Date.now() };
  const ownerFile = join(lockDir, "owner.json");
  const deadline = Date.now() + timeoutMs;
  let wait = 5;
  for (;;) {
    try {
      if (await placeLock(lockDir, owner, staleMs)) break;
    } catch (err) {
      throw new MmError("STORE_ERROR", `Cannot take the store's write lock at ${lockDir}: ${(err as Error).message}`, {}, { cause: err });
    }
    if (await isStale(lockDir, staleMs)) {
      await breakLock(lockDir);
      continue;
    }
    if (Date.now() > deadline) {
      const holder = await readOwner(lockDir);
      throw new MmError(
        "STORE_ERROR",
        `The store is busy: another mm process${holder ? ` (pid ${holder.pid})` : ""} has held its write lock for over ${Math.round(timeoutMs / 1000)} s.`,
      );
    }
    await sleep(wait);
    wait = Math.min(wait * 2, 100);
  }
  const heartbeat = setInterval(() => {
    const now = new Date();
    utimes(ownerFile, now, now).catch(() => undefined);
  }, HEARTBEAT_MS);
  heartbeat.unref();
  return {
    async release() {
      clearInterval(heartbeat);
      const current = await readOwner(lockDir);
      // Renamed aside first, then removed: removed in place, the lock would be an empty folder for a
      // moment, and a waiter's staged lock could be renamed over it and then removed with it.
      if (current?.token === owner.token) await breakLock(lockDir);
    },
  };
}

/**
 * Puts the lock in place with its owner already in it, or answers false when it is held: the
 * owner file is written in a folder of its own beside the lock, which is then renamed to the
 * lock's name. A lock made by `mkdir` and then filled had no owner for a moment, and a process
 * killed in that moment left a lock nobody could check, taken over only after DEFAULT_STALE_MS.
 * A folder left by a process killed before its rename is removed by the next process to take the
 * lock (the first time it does).
 */
async function placeLock(lockDir: string, owner: Owner, staleMs: number): Promise<boolean> {
  const staged = `${lockDir}${STAGED}${owner.token}`;
  await mkdir(staged, { mode: 0o700 });
  try {
    await writeFile(join(staged, "owner.json"), JSON.stringify(owner), { mode: 0o600 });
    // A folder is renamed over an empty one; the held lock always has its owner file, so it is never empty.
    await rename(staged, lockDir);
  } catch (err) {
    await rm(staged, { recursive: true, force: true });
    if (HELD.includes((err as NodeJS.ErrnoException).code ?? "")) return false;
    throw err;
  }
  if (!swept.has(lockDir)) {
    swept.add(lockDir);
    await removeLeftovers(lockDir, staleMs);
  }
  return true;
}

/** The locks this process has looked beside for leftovers: once each, not on every write or billed request. */
const swept = new Set<string>();

/** The name a lock is staged under before it is renamed into place: `<lock>.staged-<token>`. */
const STAGED = ".staged-";
/** What renaming a folder over a held lock fails with (Windows refuses any folder in the way). */
const HELD = process.platform === "win32" ? ["EEXIST", "ENOTEMPTY", "EPERM"] : ["EEXIST", "ENOTEMPTY"];

/** Staged folders of processes killed before their rename: older than a stale lock, so none is still being made. */
async function removeLeftovers(lockDir: string, staleMs: number): Promise<void> {
  const parent = dirname(lockDir);
  const prefix = `${basename(lockDir)}${STAGED}`;
  try {
    for (const name of await readdir(parent)) {
      if (!name.startsWith(prefix)) continue;
      const path = join(parent, name);
      const { mtimeMs } = await stat(path);
      if (Date.now() - mtimeMs > staleMs) await rm(path, { recursive: true, force: true });
    }
  } catch {
    // Leftovers are a few bytes each; the lock is held all the same.
  }
}

async function readOwner(lockDir: string): Promise<Owner | undefined> {
  try {
    return JSON.parse(await readFile(join(lockDir, "owner.json"), "utf8")) as Owner;
  } catch {
    return undefined;
  }
}

async function isStale(lockDir: string, staleMs: number): Promise<boolean> {
  const owner = await readOwner(lockDir);
  if (owner && owner.host === hostname() && !isAlive(owner.pid)) return true;
  // Without an owner file (a lock of an mm before placeLock, between its mkdir and writeFile), judge by age only.
  const path = owner ? join(lockDir, "owner.json") : lockDir;
  try {
    const { mtimeMs } = await stat(path);
    return Date.now() - mtimeMs > staleMs;
  } catch {
    return false;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function breakLock(lockDir: string): Promise<void> {
  const aside = `${lockDir}.stale-${randomUUID()}`;
  try {
    await rename(lockDir, aside);
  } catch {
    return; // someone else broke it first
  }
  await rm(aside, { recursive: true, force: true });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
