import type { Bucket } from "./ledger.js";

export type RateLimits = Record<Bucket, number>;

/** The spec's per-minute limits (§8.1). */
export const DEFAULT_RATE_LIMITS: RateLimits = { read: 100, write: 50, search: 30 };

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when the window ends. */
  reset: number;
  /** Seconds until the window ends (at least 1), for Retry-After when refused. */
  retryAfter: number;
}

/**
 * Per-minute rate limits per key and bucket: fixed one-minute windows aligned to the minute
 * (decisions.md). Two drivers: in memory (RateLimiter, below: one server) and on Redis
 * (rate-limiter-redis.ts: every replica counts in one window). The Redis driver answers with a
 * promise, so callers await every call.
 */
export interface Limiter {
  /** Per bucket, per minute: also what the console's usage page shows as the plan's limits. */
  readonly limits: RateLimits;
  /** Takes `count` requests from the key's bucket, all or none, if the window has that many left. */
  take(keyId: string, bucket: Bucket, count?: number): RateDecision | Promise<RateDecision>;
  /** What `take` would decide, taking nothing (for the headers of a request refused for another reason). */
  peek(keyId: string, bucket: Bucket): RateDecision | Promise<RateDecision>;
  /** Gives back a request taken in the current window (one refused afterwards with QUOTA_EXCEEDED). */
  refund(keyId: string, bucket: Bucket): void | Promise<void>;
}

/** The decision for a window: `used` requests of `limit` taken, at `nowMs`. */
export function rateDecision(allowed: boolean, limit: number, used: number, nowMs: number): RateDecision {
  const reset = (Math.floor(nowMs / 60_000) + 1) * 60;
  const retryAfter = Math.max(1, Math.ceil(reset - nowMs / 1000));
  return { allowed, limit, remaining: allowed ? limit - used : 0, reset, retryAfter };
}

/**
 * Fixed one-minute windows aligned to the minute, per key and bucket (decisions.md). In memory:
 * limits are per server process, which is what a self-hosted single server needs. The clock is
 * injected so tests step through windows without sleeping.
 */
export class RateLimiter implements Limiter {
  private readonly windows = new Map<string, { window: number; count: number }>();

  constructor(
    /** Per bucket, per minute: also what the console's usage page shows as the plan's limits. */
    readonly limits: RateLimits = DEFAULT_RATE_LIMITS,
    private readonly clock: () => number = () => Date.now(),
  ) {}

  /** Takes `count` requests (one by default) from the key's bucket, all or none, if the window has that many left. */
  take(keyId: string, bucket: Bucket, count = 1): RateDecision {
    return this.decide(keyId, bucket, count);
  }

  /** What `take` would decide, taking nothing (for the headers of a request refused for another reason). */
  peek(keyId: string, bucket: Bucket): RateDecision {
    return this.decide(keyId, bucket, 0);
  }

  /** Gives back a request taken in the current window (one refused afterwards with QUOTA_EXCEEDED). */
  refund(keyId: string, bucket: Bucket): void {
    const state = this.windows.get(`${keyId}:${bucket}`);
    if (state && state.window === Math.floor(this.clock() / 60_000) && state.count > 0) state.count--;
  }

  private decide(keyId: string, bucket: Bucket, take: number): RateDecision {
    const now = this.clock();
    const window = Math.floor(now / 60_000);
    const limit = this.limits[bucket];
    const slot = `${keyId}:${bucket}`;
    let state = this.windows.get(slot);
    if (!state || state.window !== window) {
      state = { window, count: 0 };
      this.windows.set(slot, state);
      if (this.windows.size > 10_000) this.evict(window);
    }
    if (state.count + Math.max(take, 1) > limit) return rateDecision(false, limit, state.count, now);
    state.count += take;
    return rateDecision(true, limit, state.count, now);
  }

  private evict(current: number): void {
    for (const [slot, state] of this.windows) if (state.window !== current) this.windows.delete(slot);
  }
}
