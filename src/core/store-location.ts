import { stat } from "node:fs/promises";
import { dirname } from "node:path";
import { MmError } from "../errors.js";
import { DEFAULT_EMBEDDER, type EmbedderConfig, type Env } from "../embedder/index.js";
import { detachRedis } from "../storage/database.js";
import { coordinationDir, placeOf } from "../storage/location.js";
import { resolveStorePath } from "../storage/paths.js";
import { Store } from "../storage/store.js";

/** Where a command's store is, and who said so (for messages that tell the person what to change). */
export interface StoreLocation {
  dir: string;
  source: "--store" | "MM_STORE" | "default";
}

/** `--store`, then MM_STORE, then the XDG data directory (storage/paths.ts). */
export function locateStore(flag: string | undefined, env: Env): StoreLocation {
  const source = flag?.trim() ? "--store" : env.MM_STORE?.trim() ? "MM_STORE" : "default";
  const dir = resolveStorePath(flag, env);
  placeOf(dir); // an object-store URI mm can't use is refused here, before anything is made
  return { dir, source };
}

/**
 * Where this machine's processes coordinate for the store at `dir` (locks, the quota ledger, the
 * running server's address): a local store's own directory; for an object store, a local state
 * directory (storage/location.ts).
 */
export function coordinationDirOf(dir: string, env: Env): string {
  return coordinationDir(placeOf(dir), env);
}

/**
 * `mm store detach-redis`: lets processes without Redis open a store that replicas once served
 * with Redis (storage/coordination.ts). `redis` is the Redis it recorded, if any.
 */
export async function detachStoreRedis(loc: StoreLocation, env: Env): Promise<{ store: string; detached: boolean; redis: string | null }> {
  const before = await detachRedis(loc.dir, env);
  if (before === null) throw missingStore(loc);
  return { store: loc.dir, detached: !!before?.redis, redis: before?.redis ?? null };
}

/** True when the store is in object storage (az://, s3://, gs://). */
export function isObjectStore(dir: string): boolean {
  return placeOf(dir).kind === "object";
}

function named(loc: StoreLocation): string {
  return loc.source === "default" ? `the default store, ${loc.dir}` : `${loc.dir} (from ${loc.source})`;
}

/**
 * Whether a store is there, without creating anything. A path that can never hold a store (a
 * file, or a path through a file) is a STORE_ERROR that names it, not a file-system error.
 */
export async function storeStatus(loc: StoreLocation): Promise<"ready" | "missing"> {
  if (isObjectStore(loc.dir)) return (await Store.exists(loc.dir)) ? "ready" : "missing";
  const kind = await kindOf(loc.dir);
  if (kind === "file") throw new MmError("STORE_ERROR", `${named(loc)} is a file, not a store directory. Point ${loc.source === "default" ? "--store" : loc.source} at a directory.`);
  if (kind === "missing") {
    for (let up = dirname(loc.dir); up !== dirname(up); up = dirname(up)) {
      const above = await kindOf(up);
      if (above === "file") throw new MmError("STORE_ERROR", `${named(loc)} can't be a store: ${up} is a file, not a directory.`);
      if (above === "directory") break;
    }
    return "missing";
  }
  return (await Store.exists(loc.dir)) ? "ready" : "missing";
}

async function kindOf(path: string): Promise<"file" | "directory" | "missing"> {
  try {
    return (await stat(path)).isDirectory() ? "directory" : "file";
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // ENOTDIR: something above it is a file; the walk up in storeStatus says which.
    if (code === "ENOENT" || code === "ENOTDIR") return "missing";
    throw new MmError("STORE_ERROR", `Cannot use ${path}: ${(err as Error).message}`, {}, { cause: err });
  }
}

/** Reading commands never create a store: they say there is none, and how to make one. */
export function missingStore(loc: StoreLocation): MmError {
  const flag = loc.source === "--store" ? ` --store ${shellQuote(loc.dir)}` : "";
  return new MmError(
    "STORE_ERROR",
    `There is no mm store at ${named(loc)}. Create it with \`mm init${flag}\`, or by adding something to it (\`mm memories add "…" --user you${flag}\`).`,
  );
}

/** Shell-safe quoting for a path shown in a command the person may paste (or an agent runs). */
export function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export interface StoreSetup {
  store: string;
  embedder: EmbedderConfig;
  created: boolean;
  changed: boolean;
}

/**
 * `mm init`: creates the store with `embedder`, or switches an empty store to it. A store that
 * holds memories can't switch (EMBEDDER_MISMATCH): vectors of two models can't be compared.
 */
export async function initStore(loc: StoreLocation, embedder: EmbedderConfig): Promise<StoreSetup> {
  if ((await storeStatus(loc)) === "missing") {
    (await Store.open(loc.dir, { create: embedder })).close();
    return { store: loc.dir, embedder, created: true, changed: false };
  }
  const store = await Store.open(loc.dir);
  try {
    const cur = store.config.embedder;
    if (cur.provider === embedder.provider && cur.model === embedder.model && cur.dims === embedder.dims && JSON.stringify(cur.options ?? {}) === JSON.stringify(embedder.options ?? {})) {
      return { store: loc.dir, embedder: cur, created: false, changed: false };
    }
    (await store.resetEmbedder(embedder)).close();
    return { store: loc.dir, embedder, created: false, changed: true };
  } finally {
    store.close();
  }
}

/** What an existing store is set up with, and how much it holds. */
export async function describeStore(loc: StoreLocation): Promise<StoreSetup & { memories: number }> {
  const store = await Store.open(loc.dir);
  try {
    return { store: loc.dir, embedder: store.config.embedder, created: false, changed: false, memories: await store.countMemories() };
  } finally {
    store.close();
  }
}

/** Creates a missing store with the default model (account and key commands on a fresh machine). */
export async function ensureStore(loc: StoreLocation): Promise<boolean> {
  if ((await storeStatus(loc)) !== "missing") return false;
  (await Store.open(loc.dir, { create: DEFAULT_EMBEDDER })).close();
  return true;
}

/** What the first command that creates a store says on stderr, as `git init` does: a mistyped path shows at once. */
export function createdStoreNote(loc: StoreLocation): string {
  return `mm: created a new store at ${loc.dir}${loc.source === "default" ? "" : ` (from ${loc.source})`}`;
}
