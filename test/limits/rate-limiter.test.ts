import { describe, expect, it } from "vitest";
import { RateLimiter } from "../../src/limits/rate-limiter.js";

describe("rate limiter", () => {
  const minute = (n: number, plusMs = 0) => n * 60_000 + plusMs;

  it("lets exactly N requests through in a window and refuses the N+1th", () => {
    let now = minute(1000, 5_000);
    const limiter = new RateLimiter({ read: 5, write: 3, search: 2 }, () => now);
    const results = Array.from({ length: 6 }, () => limiter.take("key_a", "read"));
    expect(results.map((r) => r.allowed)).toEqual([true, true, true, true, true, false]);
    expect(results.map((r) => r.remaining)).toEqual([4, 3, 2, 1, 0, 0]);
    expect(results[5]).toMatchObject({ limit: 5, reset: 1001 * 60, retryAfter: 55 });
    now = minute(1000, 59_500);
    expect(limiter.take("key_a", "read").retryAfter).toBe(1);
  });

  it("keeps buckets and keys independent", () => {
    const limiter = new RateLimiter({ read: 1, write: 1, search: 1 }, () => minute(7));
    expect(limiter.take("k1", "read").allowed).toBe(true);
    expect(limiter.take("k1", "read").allowed).toBe(false);
    expect(limiter.take("k1", "write").allowed).toBe(true);
    expect(limiter.take("k1", "search").allowed).toBe(true);
    expect(limiter.take("k2", "read").allowed).toBe(true);
    expect(limiter.take("k1", "write").allowed).toBe(false);
  });

  it("resets at the next minute boundary (fixed windows aligned to the minute)", () => {
    let now = minute(50, 59_999);
    const limiter = new RateLimiter({ read: 2, write: 1, search: 1 }, () => now);
    limiter.take("k", "read");
    limiter.take("k", "read");
    expect(limiter.take("k", "read").allowed).toBe(false);
    now = minute(51);
    const fresh = limiter.take("k", "read");
    expect(fresh).toMatchObject({ allowed: true, remaining: 1, reset: 52 * 60 });
  });
});
