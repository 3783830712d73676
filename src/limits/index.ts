import { join } from "node:path";
import { checkLocalCoordination } from "../storage/database.js";
import { coordinationDir, placeOf } from "../storage/location.js";
import { openShared, type Shared } from "../storage/shared/index.js";
import type { RedisShared } from "../storage/shared/redis.js";
import { QuotaLedger, type Ledger } from "./ledger.js";
import { DEFAULT_RATE_LIMITS, RateLimiter, type Limiter, type RateLimits } from "./rate-limiter.js";

/**
 * The quota ledger that goes with a store's `Shared`: in Redis beside the Redis driver, else the
 * store's files. The Redis drivers load only then: a local command never loads ioredis.
 */
export async function openLedger(shared: Shared, dir: string, clock: () => Date = () => new Date()): Promise<Ledger> {
  if (shared.driver !== "redis") return new QuotaLedger(join(dir, "ledger"), clock);
  const { RedisLedger } = await import("./ledger-redis.js");
  return new RedisLedger((shared as RedisShared).connection, clock);
}

/**
 * The rate limiter that goes with a store's `Shared`: counted in Redis (on Redis's clock, unless a
 * test passes `clock`) beside the Redis driver, else in this process's memory.
 */
export async function openLimiter(shared: Shared, limits: RateLimits = DEFAULT_RATE_LIMITS, clock?: () => number): Promise<Limiter> {
  if (shared.driver !== "redis") return new RateLimiter(limits, clock);
  const { RedisRateLimiter } = await import("./rate-limiter-redis.js");
  return new RedisRateLimiter((shared as RedisShared).connection, limits, clock);
}

/**
 * A command's ledger: with `$MM_REDIS_URL`, the replicas' ledger in Redis (a CLI command on any
 * machine counts where the servers count), else the store's files; a local store that Redis
 * coordinates refuses the files (storage/coordination.ts). `close` ends the connection.
 */
export async function openCommandLedger(storeDir: string, env: Record<string, string | undefined>, clock?: () => Date): Promise<{ ledger: Ledger; close(): Promise<void> }> {
  const shared = await openShared({ store: storeDir, env, redisUrl: env.MM_REDIS_URL?.trim() || undefined, redisSource: "MM_REDIS_URL" });
  const place = placeOf(storeDir);
  if (place.kind === "local") {
    try {
      await checkLocalCoordination(place.dir, env, shared);
    } catch (err) {
      await shared.close();
      throw err;
    }
  }
  return { ledger: await openLedger(shared, coordinationDir(place, env), clock), close: () => shared.close() };
}
