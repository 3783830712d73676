import { resolve } from "node:path";
import { LocalShared } from "./local.js";
import type { Shared } from "./types.js";

export type { Lease, LockOptions, Shared } from "./types.js";
export { LocalShared } from "./local.js";

export interface OpenSharedOptions {
  /** The store as the user named it: a local directory or an object-store URI (`az://…`). */
  store: string;
  /** Where the local driver keeps its locks: the store's directory (a local store) or a coordination directory. */
  coordinationDir: string;
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
  if (!options.redisUrl) return new LocalShared(options.coordinationDir);
  const { RedisConnection, RedisShared } = await import("./redis.js");
  const connection = await RedisConnection.open({ url: options.redisUrl, store: storeName(options.store), source: options.redisSource, log: options.log });
  return new RedisShared(connection);
}

/** A local store's absolute path; a URI as written. */
export function storeName(store: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(store) ? store : resolve(store);
}
