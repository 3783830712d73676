import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MmError } from "../../src/errors.js";
import { QuotaLedger, type Ledger } from "../../src/limits/ledger.js";
import { RedisLedger } from "../../src/limits/ledger-redis.js";
import { createTestClock, type TestClock } from "../helpers/http-server.js";
import { startRedis, useRedis } from "../helpers/redis.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const { connection } = useRedis();

/** What an outcome looks like whichever ledger gave it: the value, or the error's code and extra fields. */
async function outcome(p: Promise<unknown>): Promise<unknown> {
  try {
    return { ok: await p };
  } catch (err) {
    if (err instanceof MmError) return { code: err.code, ...err.extra };
    return { thrown: String(err) };
  }
}

/** The same billing story, told to a ledger: every semantic of ledger.ts that callers rely on. */
async function story(ledger: Ledger, clock: TestClock): Promise<unknown[]> {
  const out: unknown[] = [];
  const fail = async () => {
    throw new Error("commit failed");
  };
  out.push(await outcome(ledger.charge("acct_a", 10, "write")));
  out.push(await outcome(ledger.charge("acct_a", 10, "read", 3)));
  // A commit that throws is not charged.
  out.push(await outcome(ledger.chargeCommitted("acct_a", 10, "write", 2, fail)));
  out.push(await outcome(ledger.usage("acct_a", 10)));
  out.push(await outcome(ledger.chargeCommitted("acct_a", 10, "write", 2, async () => "stored")));
  // A batch of 6 with 4 left: the first 4 are stored and charged, the rest refused.
  out.push(await outcome(ledger.chargeUpTo("acct_a", 10, "write", 6, async (admitted) => `stored ${admitted}`)));
  out.push(await outcome(ledger.charge("acct_a", 10, "read")));
  out.push(await outcome(ledger.chargeUpTo("acct_a", 10, "write", 2, async (n) => n)));
  // A group: acct_b has room for one of its two, acct_c is unlimited.
  await ledger.charge("acct_b", 3, "write", 2);
  const meters = [ledger.meter("acct_b", 3, "write"), ledger.meter("acct_c", null, "write"), ledger.meter("acct_b", 3, "write"), ledger.meter("acct_c", null, "write")];
  const group = await ledger.chargeGroup(meters, async (admitted) => admitted);
  out.push({ result: group.result, refused: group.refused.map((r) => r?.code), usage: meters.map((m) => m.usage) });
  // A group of four of one account with room for three: each admitted one reports its own count.
  await ledger.charge("acct_f", 5, "write", 2);
  const four = Array.from({ length: 4 }, () => ledger.meter("acct_f", 5, "write"));
  const cut = await ledger.chargeGroup(four, async (admitted) => admitted);
  out.push({ result: cut.result, refused: cut.refused.map((r) => r && { code: r.code, ...r.extra }), usage: four.map((m) => m.usage?.used) });
  // A group whose commit fails charges nobody.
  const failed = [ledger.meter("acct_d", 5, "write"), ledger.meter("acct_c", null, "write")];
  out.push(await outcome(ledger.chargeGroup(failed, fail)));
  out.push(failed.map((m) => m.usage));
  out.push(await outcome(ledger.usage("acct_d", 5)));
  out.push(await outcome(ledger.usage("acct_c", null)));
  // Unlimited plans are counted, never refused.
  out.push(await outcome(ledger.charge("acct_c", null, "search", 1000)));
  // Meters: check, settle once, settleFailure for a 404.
  const meter = ledger.meter("acct_e", 2, "read");
  out.push(await outcome(meter.check(2)), await outcome(meter.check(3)), await outcome(meter.settle()), await outcome(meter.settle()));
  out.push(await outcome(ledger.meter("acct_e", 2, "read").run(async () => "ran")));
  out.push(await outcome(ledger.meter("acct_e", 2, "read").run(async () => "over")));
  // Days, then the next month starts from zero.
  clock.set("2026-03-16T00:00:01.000Z");
  out.push(await outcome(ledger.charge("acct_a", 20, "read", 2)));
  out.push(await outcome(ledger.daily("acct_a")));
  clock.set("2026-04-01T00:00:00.000Z");
  out.push(await outcome(ledger.usage("acct_a", 10)));
  out.push(await outcome(ledger.daily("acct_a")));
  return out;
}

describe("the quota ledger on Redis", () => {
  it("bills exactly as the file ledger: charges, failed commits, batches cut at the limit, groups, meters, days, months", async () => {
    const fileClock = createTestClock("2026-03-15T12:00:00.000Z");
    const redisClock = createTestClock("2026-03-15T12:00:00.000Z");
    fileClock.freeze();
    redisClock.freeze();
    const expected = await story(new QuotaLedger(await tempDir(), fileClock), fileClock);
    const got = await story(new RedisLedger(await connection("/stores/parity"), redisClock), redisClock);
    expect(got).toEqual(expected);
    // And the story did reach the limit (so the comparison covers refusals).
    expect(JSON.stringify(expected)).toContain("QUOTA_EXCEEDED");
  });

  it("stops exactly at the limit under 50 concurrent charges from two replicas", async () => {
    const a = new RedisLedger(await connection("/stores/race"));
    const b = new RedisLedger(await connection("/stores/race"));
    let stored = 0;
    const attempts = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        outcome(
          (i % 2 ? a : b).chargeCommitted("acct_r", 23, "write", 1, async () => {
            await new Promise((r) => setTimeout(r, Math.random() * 5));
            stored++;
          }),
        ),
      ),
    );
    const ok = attempts.filter((o) => (o as { ok?: unknown }).ok);
    expect(ok).toHaveLength(23);
    expect(stored).toBe(23);
    expect(attempts.filter((o) => (o as { code?: string }).code === "QUOTA_EXCEEDED")).toHaveLength(27);
    expect((await a.usage("acct_r", 23)).used).toBe(23);
    expect((await b.daily("acct_r")).days.reduce((x, y) => x + y, 0)).toBe(23);
  });

  it("keeps the counts across a Redis restart and a kill -9 of redis-server (append-only file)", async () => {
    const own = await startRedis();
    try {
      const first = await connection("/stores/durable", own.url);
      const ledger = new RedisLedger(first);
      for (let i = 0; i < 40; i++) await ledger.charge("acct_p", null, "write");
      await first.close();
      await own.stop();
      await own.start();
      const second = await connection("/stores/durable", own.url);
      expect((await new RedisLedger(second).usage("acct_p", null)).used).toBe(40);
      // kill -9 right after the last acknowledged charge: Redis writes the AOF before it answers.
      for (let i = 0; i < 25; i++) await new RedisLedger(second).charge("acct_p", null, "write");
      await own.kill();
      await second.close();
      await own.start();
      const third = await connection("/stores/durable", own.url);
      expect((await new RedisLedger(third).usage("acct_p", null)).used).toBe(65);
      await third.close();
    } finally {
      await own.close();
    }
  });

  it("fails with SERVICE_UNAVAILABLE while Redis is down, storing nothing it couldn't count", async () => {
    const own = await startRedis();
    try {
      const ledger = new RedisLedger(await connection("/stores/down", own.url));
      await own.stop();
      let committed = false;
      const o = (await outcome(ledger.chargeCommitted("acct_x", 10, "write", 1, async () => void (committed = true)))) as { code?: string };
      expect(o.code).toBe("SERVICE_UNAVAILABLE");
      expect(committed).toBe(false);
    } finally {
      await own.close();
    }
  });
});
