import { MmError } from "../errors.js";
import { Document, type DocumentDriver } from "./documents.js";
import { placeOf } from "./location.js";
import type { Shared } from "./shared/types.js";

/**
 * How the processes of a store in object storage agree, recorded in the store itself: the
 * `coordination` document. Once a process has opened the store with Redis (`mm serve --redis`,
 * or any command run with `$MM_REDIS_URL`), the store's write lock, maintenance lease, quota
 * ledger and rate counts live in that Redis. A process opening it without Redis would take this
 * machine's lock files and charge a ledger of its own, which the replicas never see: it would
 * silently break their guarantees (the quota exact, one writer at a time). So it is refused, with
 * a STORE_ERROR that says to set `$MM_REDIS_URL`.
 *
 * The record names Redis as `redis://host:port` (RedisConnection.where), never with a password.
 * It stays until `mm store detach-redis` clears it (`redis: null`), for a store that no replica
 * serves any more. A local store's processes are on one machine and share its lock files; only
 * its quota ledger and rate counts move to Redis with `--redis`, so there the rule guards the
 * ledger (storage/database.ts, checkLocalCoordination), in its `coordination.json`.
 */
export interface Coordination {
  /** The Redis the store's processes agree through; null once detached. */
  redis: string | null;
  /** When it was recorded (or detached). */
  at: string;
}

const NAME = "coordination";

function coordinationDocument(documents: DocumentDriver): Document<Coordination | undefined> {
  return new Document<Coordination | undefined>(() => Promise.resolve(documents), NAME, {
    parse: (data, where) => {
      if (data === undefined) return undefined;
      const record = data as Partial<Coordination>;
      if (typeof record !== "object" || record === null || !(record.redis === null || typeof record.redis === "string")) {
        throw new MmError("STORE_ERROR", `${where} does not say how the store's processes coordinate; the document is damaged.`);
      }
      return { redis: record.redis, at: String(record.at ?? "") };
    },
  });
}

/** What the store records about its coordination; undefined when it never had Redis. */
export function readCoordination(documents: DocumentDriver): Promise<Coordination | undefined> {
  return coordinationDocument(documents).read();
}

/**
 * For an object store this process opens: without Redis, refuses a store that records Redis;
 * with it and `record`, records it when the store doesn't yet (one commit, once). Only an
 * existing store is recorded (Store.open), never a prefix merely looked at.
 */
export async function checkCoordination(documents: DocumentDriver, shared: Shared, label: string, options: { record?: boolean; now?: Date } = {}): Promise<void> {
  const recorded = await readCoordination(documents);
  if (shared.driver !== "redis") {
    if (recorded?.redis) throw redisRequired(label, recorded);
  } else if (options.record && !recorded?.redis) {
    await coordinationDocument(documents).write({ redis: shared.where ?? "redis", at: (options.now ?? new Date()).toISOString() });
  }
}

function redisRequired(label: string, recorded: Coordination): MmError {
  const local = placeOf(label).kind === "local";
  return new MmError(
    "STORE_ERROR",
    `The store at ${label} is coordinated by Redis (${recorded.redis}, since ${recorded.at}): its replicas ${local ? "count the quota there" : "take their locks and count the quota there"}. ` +
      `Without Redis this process would use ${local ? "" : "this machine's locks and "}a quota ledger of its own, which they don't see. ` +
      "Set MM_REDIS_URL to that Redis (for mm serve: --redis URL). If no replica serves the store any more, `mm store detach-redis` lifts this.",
  );
}

/** Clears the record (`mm store detach-redis`); returns what it said before. */
export async function detachCoordination(documents: DocumentDriver, now: Date = new Date()): Promise<Coordination | undefined> {
  const doc = coordinationDocument(documents);
  const before = await doc.read();
  if (before?.redis) await doc.write({ redis: null, at: now.toISOString() });
  return before;
}
