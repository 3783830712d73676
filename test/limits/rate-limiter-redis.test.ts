import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RateLimiter, type RateDecision } from "../../src/limits/rate-limiter.js";
import { RedisRateLimiter } from "../../src/limits/rate-limiter-redis.js";
import { useRedis } from "../helpers/redis.js";

const { connection } = useRedis();

const minute = (n: number, plusMs = 0) => n * 60_000 + plusMs;
const LIMITS = { read: 5, write: 3, search: 2 };

describe("the rate limiter on Redis", () => {
  it("decides exactly as the in-memory limiter: take, peek, refund, windows, headers", async () => {
    let now = minute(1000, 5_000);
    const local = new RateLimiter(LIMITS, () => now);
    const replicas = [new RedisRateLimiter(await connection("/stores/parity"), LIMITS, () => now), new RedisRateLimiter(await connection("/stores/parity"), LIMITS, () => now)];
    const steps: [string, (l: { take: Function; peek: Function; refund: Function }) => unknown][] = [];
    for (let i = 0; i < 7; i++) steps.push(["take read", (l) => l.take("key_a", "read")]);
    steps.push(["peek read", (l) => l.peek("key_a", "read")]);
    steps.push(["refund read", (l) => l.refund("key_a", "read")]);
    steps.push(["take read after refund", (l) => l.take("key_a", "read")]);
    steps.push(["take 2 writes", (l) => l.take("key_a", "write", 2)]);
    steps.push(["take 2 more writes: all or none", (l) => l.take("key_a", "write", 2)]);
    steps.push(["take 1 write", (l) => l.take("key_a", "write")]);
    steps.push(["another key", (l) => l.take("key_b", "read")]);
    steps.push(["search", (l) => l.take("key_a", "search")]);
    for (const [i, [what, step]] of steps.entries()) {
      // Alternate replicas: the count is Redis's, not either process's.
      const expected = step(local) as RateDecision | undefined;
      const got = (await step(replicas[i % 2])) as RateDecision | undefined;
      expect(got, what).toEqual(expected);
    }
    // The last second of the window, then the next window.
    now = minute(1000, 59_500);
    expect(await replicas[0].take("key_a", "read")).toEqual(local.take("key_a", "read"));
    now = minute(1001);
    const fresh = await replicas[1].take("key_a", "read");
    expect(fresh).toEqual(local.take("key_a", "read"));
    expect(fresh).toMatchObject({ allowed: true, remaining: 4, reset: 1002 * 60 });
    // A refund in a later window gives nothing back to the earlier one.
    now = minute(1002);
    await replicas[0].refund("key_a", "search");
    expect(await replicas[1].peek("key_a", "search")).toEqual(local.peek("key_a", "search"));
  });

  it("lets exactly N of many concurrent requests from two replicas through", async () => {
    const now = minute(2000, 1_000);
    const limits = { read: 37, write: 1, search: 1 };
    const a = new RedisRateLimiter(await connection("/stores/race"), limits, () => now);
    const b = new RedisRateLimiter(await connection("/stores/race"), limits, () => now);
    const decisions = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).take("key_r", "read")));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(37);
    expect(decisions.filter((d) => d.allowed).map((d) => d.remaining).sort((x, y) => x - y)).toEqual(Array.from({ length: 37 }, (_, i) => i));
  });

  it("counts windows on Redis's clock when no clock is given", async () => {
    const limiter = new RedisRateLimiter(await connection("/stores/time"), LIMITS);
    const before = Date.now();
    const d = await limiter.take("key_t", "read");
    const after = Date.now();
    expect(d.allowed).toBe(true);
    // Redis runs on this machine: its minute is ours, give or take the call.
    const resets = [before, after].map((t) => (Math.floor(t / 60_000) + 1) * 60);
    expect(resets).toContain(d.reset);
    expect(d.retryAfter).toBeGreaterThanOrEqual(1);
    expect(d.retryAfter).toBeLessThanOrEqual(60);
  });

  it("keeps stores sharing one Redis apart", async () => {
    const now = minute(3000);
    const limits = { read: 1, write: 1, search: 1 };
    const a = new RedisRateLimiter(await connection("/stores/x"), limits, () => now);
    const b = new RedisRateLimiter(await connection("/stores/y"), limits, () => now);
    expect((await a.take("key_same", "read")).allowed).toBe(true);
    expect((await b.take("key_same", "read")).allowed).toBe(true);
    expect((await a.take("key_same", "read")).allowed).toBe(false);
  });
});
