import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { coordinationDir, placeOf, type StorePlace } from "../location.js";
import { LocalShared } from "./local.js";
import type { Shared } from "./types.js";

type Env = Record<string, string | undefined>;

export type { Lease, LockOptions, Shared } from "./types.js";
export { LocalShared } from "./local.js";

export interface OpenSharedOptions {
  /** The store as the user named it: a local directory or an object-store URI (`az://…`). */
  store: string;
  /** Where the store's coordination directory is (`$XDG_STATE_HOME`, `$HOME`): location.ts. */
  env?: Env;
  /** `--redis` / `$MM_REDIS_URL`; without it, the local-files driver. */
  redisUrl?: string;
  /** Where the URL came from, for messages (`--redis` or `MM_REDIS_URL`). */
  redisSource?: string;
  log?: (entry: Record<string, unknown>) => void;
}

/**
 * The driver for what this process must agree on with the store's other processes: Redis when a
 * URL is given (replicas on several machines), else the local files of one machine, as always.
 * Every replica of one store must name the store the same way (the same URI; for a local
 * directory, the same absolute path): Redis's keys are prefixed by it, so several stores can share
 * one Redis. The Redis driver (and ioredis) load only when a URL is given.
 */
export async function openShared(options: OpenSharedOptions): Promise<Shared> {
  if (!options.redisUrl) return localShared(placeOf(options.store), options.env ?? process.env);
  const { RedisConnection, RedisShared } = await import("./redis.js");
  const connection = await RedisConnection.open({ url: options.redisUrl, store: storeName(options.store), source: options.redisSource, log: options.log });
  return new RedisShared(connection);
}

/**
 * Local files in the store's coordination directory: what one machine's processes of a store agree
 * through (the store's own directory; for an object store, a directory of this machine, with stamp
 * files, since its documents aren't files whose changes can be seen).
 */
export function localShared(place: StorePlace, env: Env): LocalShared {
  const dir = coordinationDir(place, env);
  if (place.kind === "object") mkdirSync(dir, { recursive: true, mode: 0o700 });
  return new LocalShared(dir, { stamps: place.kind === "object" });
}

/** A local store's absolute path; a URI as written. */
export function storeName(store: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(store) ? store : resolve(store);
}
