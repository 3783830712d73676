import type { RedisConnection } from "../storage/shared/redis.js";
import type { Bucket } from "./ledger.js";
import { DEFAULT_RATE_LIMITS, rateDecision, type Limiter, type RateDecision, type RateLimits } from "./rate-limiter.js";

/**
 * One script for take, peek and refund, so each is one round trip and atomic across replicas.
 * The window is the minute of Redis's own clock (TIME), so replicas whose clocks drift still count
 * in the same window; a test may pass its own instant (ARGV[4]). The window's counter lives two
 * minutes, then expires by itself.
 * KEYS[1]: the key and bucket's prefix; ARGV: limit, count, mode (take | peek | refund), now in ms or "".
 * Returns {allowed (1/0), used after, now in ms}.
 */
const WINDOW_SCRIPT = `
local now
if ARGV[4] ~= '' then
  now = tonumber(ARGV[4])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local key = KEYS[1] .. math.floor(now / 60000)
local used = tonumber(redis.call('GET', key) or '0')
local mode = ARGV[3]
if mode == 'refund' then
  if used > 0 then used = redis.call('DECR', key) end
  return {1, used, now}
end
local limit = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
if used + math.max(n, 1) > limit then return {0, used, now} end
if mode == 'take' then
  used = redis.call('INCRBY', key, n)
  redis.call('PEXPIRE', key, 120000)
end
return {1, used, now}
`;

/**
 * The per-minute rate limits counted in Redis, for replicas: a key's N+1th request in a minute is
 * refused whichever replica gets it, exactly as one server refuses it (same windows, same headers,
 * same refund). Costs one round trip per request (~0.1 ms on the same host).
 */
export class RedisRateLimiter implements Limiter {
  constructor(
    private readonly connection: RedisConnection,
    readonly limits: RateLimits = DEFAULT_RATE_LIMITS,
    /** Tests only: an injected clock instead of Redis's. */
    private readonly clock?: () => number,
  ) {}

  take(keyId: string, bucket: Bucket, count = 1): Promise<RateDecision> {
    return this.run(keyId, bucket, "take", count);
  }

  peek(keyId: string, bucket: Bucket): Promise<RateDecision> {
    return this.run(keyId, bucket, "peek", 0);
  }

  async refund(keyId: string, bucket: Bucket): Promise<void> {
    await this.run(keyId, bucket, "refund", 1);
  }

  private async run(keyId: string, bucket: Bucket, mode: "take" | "peek" | "refund", count: number): Promise<RateDecision> {
    const limit = this.limits[bucket];
    const key = `${this.connection.prefix}rate:${keyId}:${bucket}:`;
    const now = this.clock ? String(this.clock()) : "";
    const [allowed, used, at] = (await this.connection.script("count a rate limit", WINDOW_SCRIPT, [key], [limit, count, mode, now])) as number[];
    return rateDecision(allowed === 1, limit, used, at);
  }
}
