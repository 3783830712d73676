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
 * Fixed one-minute windows aligned to the minute, per key and bucket (decisions.md). In memory:
 * limits are per server process, which is what a self-hosted single server needs. The clock is
 * injected so tests step through windows without sleeping.
 */
export class RateLimiter {
  private readonly windows = new Map<string, { window: number; count: number }>();

  constructor(
    /** Per bucket, per minute: also what the console's usage page shows as the plan's limits. */
    readonly limits: RateLimits = DEFAULT_RATE_LIMITS,
    private readonly clock: () => number = () => Date.now(),
  ) {}

  /** Takes one request from the key's bucket, if the window has any left. */
  take(keyId: string, bucket: Bucket): RateDecision {
    return this.decide(keyId, bucket, true);
  }

  /** What `take` would decide, taking nothing (for the headers of a request refused for another reason). */
  peek(keyId: string, bucket: Bucket): RateDecision {
    return this.decide(keyId, bucket, false);
  }

  /** Gives back a request taken in the current window (one refused afterwards with QUOTA_EXCEEDED). */
  refund(keyId: string, bucket: Bucket): void {
    const state = this.windows.get(`${keyId}:${bucket}`);
    if (state && state.window === Math.floor(this.clock() / 60_000) && state.count > 0) state.count--;
  }

  private decide(keyId: string, bucket: Bucket, take: boolean): RateDecision {
    const now = this.clock();
    const window = Math.floor(now / 60_000);
    const reset = (window + 1) * 60;
    const limit = this.limits[bucket];
    const slot = `${keyId}:${bucket}`;
    let state = this.windows.get(slot);
    if (!state || state.window !== window) {
      state = { window, count: 0 };
      this.windows.set(slot, state);
      if (this.windows.size > 10_000) this.evict(window);
    }
    const retryAfter = Math.max(1, Math.ceil(reset - now / 1000));
    if (state.count >= limit) return { allowed: false, limit, remaining: 0, reset, retryAfter };
    if (take) state.count++;
    return { allowed: true, limit, remaining: limit - state.count, reset, retryAfter };
  }

  private evict(current: number): void {
    for (const [slot, state] of this.windows) if (state.window !== current) this.windows.delete(slot);
  }
}
