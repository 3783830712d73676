import type { MmError } from "../errors.js";
import type { RedisConnection } from "../storage/shared/redis.js";
import { OperationMeter, period, quotaExceeded, usageAt, type Bucket, type Ledger, type Usage } from "./ledger.js";

/**
 * Check and count in one step, per account and month: one hash holds `used`, a field per UTC day
 * (`d01`…, for the console's chart) and one per bucket. With a limit (ARGV[2] ≥ 0) it counts only
 * what fits: all `count` operations, or with ARGV[5] = 1 as many as are left. A negative count
 * gives operations back (a commit that failed after its units were counted).
 * KEYS[1]: the month's hash; ARGV: count, limit (-1: none), day field, bucket field, up to (0/1).
 * Returns {counted, used after}.
 */
const CHARGE_SCRIPT = `
local used = tonumber(redis.call('HGET', KEYS[1], 'used') or '0')
local n = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
if limit >= 0 and n > 0 then
  if ARGV[5] == '1' and limit - used < n then n = limit - used end
  if n < 1 or used + n > limit then return {0, used} end
end
used = redis.call('HINCRBY', KEYS[1], 'used', n)
redis.call('HINCRBY', KEYS[1], ARGV[3], n)
redis.call('HINCRBY', KEYS[1], ARGV[4], n)
return {n, used}
`;

/**
 * The quota ledger in Redis, for replicas: each account's month is one hash, and every check and
 * count is one atomic script, so concurrent replicas can't both take the last unit and never lose
 * or double an increment.
 *
 * Same billing as the file ledger (ledger.ts): an operation is counted iff it was committed (or,
 * storing nothing, answered), and a batch stores exactly up to the limit. One difference, chosen
 * for replicas: the file ledger holds a lock across check, commit and count; here a finite plan's
 * units are counted (reserved) before the commit and given back if it fails, so the commits of one
 * account on several replicas don't wait for each other across the network. What it costs: a
 * replica killed between a reservation and its commit leaves those operations counted but not
 * stored (at most its requests in flight for that account); the file ledger errs the other way (a
 * kill between commit and charge leaves one commit unbilled). Unlimited plans have nothing to
 * check and are counted after their commit, as in the file ledger.
 *
 * Durability is Redis's: with `appendonly yes` and `appendfsync everysec` (what docs/redis.md
 * asks for), a Redis process crash loses nothing and a machine crash at most about the last second
 * of counts; with `appendfsync always`, nothing acknowledged.
 */
export class RedisLedger implements Ledger {
  constructor(
    private readonly connection: RedisConnection,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async usage(accountId: string, limit: number | null): Promise<Usage> {
    const now = this.clock();
    const used = await this.connection.run("read the quota ledger", (r) => r.hget(this.key(accountId, now), "used"));
    return usageAt(accountId, limit, Number(used ?? 0), now);
  }

  async charge(accountId: string, limit: number | null, bucket: Bucket, count = 1): Promise<Usage> {
    return (await this.chargeCommitted(accountId, limit, bucket, count, async () => undefined)).usage;
  }

  async chargeCommitted<T>(accountId: string, limit: number | null, bucket: Bucket, count: number, commit: () => Promise<T>): Promise<{ result: T; usage: Usage }> {
    const { result, usage } = await this.reserveAround(accountId, limit, bucket, count, false, async () => commit());
    return { result, usage };
  }

  async chargeUpTo<T>(
    accountId: string,
    limit: number | null,
    bucket: Bucket,
    count: number,
    commit: (admitted: number) => Promise<T>,
  ): Promise<{ result: T; admitted: number; usage: Usage; refusal?: MmError }> {
    const { result, usage, admitted } = await this.reserveAround(accountId, limit, bucket, count, true, commit);
    return { result, admitted, usage, ...(admitted < count ? { refusal: quotaExceeded(usage) } : {}) };
  }

  async chargeGroup<T>(meters: OperationMeter[], commit: (admitted: boolean[]) => Promise<T>): Promise<{ result: T; refused: (MmError | undefined)[] }> {
    const now = this.clock();
    const refused: (MmError | undefined)[] = meters.map(() => undefined);
    const reserved: Reservation[] = [];
    try {
      // Per finite account: its meters, in order, as many as fit.
      const byAccount = new Map<string, number[]>();
      meters.forEach((m, i) => m.limit !== null && byAccount.set(m.accountId, [...(byAccount.get(m.accountId) ?? []), i]));
      for (const indexes of byAccount.values()) {
        const first = meters[indexes[0]];
        const [counted, used] = await this.count(first.accountId, first.limit, first.bucket, indexes.length, true, now);
        if (counted > 0) reserved.push({ accountId: first.accountId, bucket: first.bucket, count: counted });
        // Each admitted meter reports the count after its own unit, as if charged one by one.
        indexes.forEach((i, k) => {
          if (k < counted) meters[i].usage = usageAt(first.accountId, first.limit, used - counted + k + 1, now);
          else refused[i] = quotaExceeded(usageAt(first.accountId, first.limit, used, now));
        });
      }
    } catch (err) {
      await this.giveBack(reserved, now);
      throw err;
    }
    let result: T;
    try {
      result = await commit(refused.map((r) => r === undefined));
    } catch (err) {
      meters.forEach((m) => m.limit !== null && (m.usage = undefined));
      await this.giveBack(reserved, now);
      throw err;
    }
    // Unlimited plans, counted after the commit: one call per account and bucket, not per meter.
    const unlimited = new Map<string, OperationMeter[]>();
    for (const m of meters) if (m.limit === null) unlimited.set(`${m.accountId} ${m.bucket}`, [...(unlimited.get(`${m.accountId} ${m.bucket}`) ?? []), m]);
    for (const group of unlimited.values()) {
      const at = this.clock();
      const [, used] = await this.count(group[0].accountId, null, group[0].bucket, group.length, false, at);
      group.forEach((m, k) => (m.usage = usageAt(m.accountId, null, used - group.length + k + 1, at)));
    }
    return { result, refused };
  }

  async daily(accountId: string): Promise<{ period: string; days: number[] }> {
    const now = this.clock();
    const fields = await this.connection.run("read the quota ledger", (r) => r.hgetall(this.key(accountId, now)));
    const days = Array.from({ length: now.getUTCDate() }, (_, i) => Number(fields[dayField(i + 1)] ?? 0));
    return { period: period(now), days };
  }

  meter(accountId: string, limit: number | null, bucket: Bucket): OperationMeter {
    return new OperationMeter(this, accountId, limit, bucket);
  }

  /**
   * Counts before the commit for a finite plan (refusing what doesn't fit) and gives the units back
   * if the commit throws; counts after the commit for an unlimited one.
   */
  private async reserveAround<T>(
    accountId: string,
    limit: number | null,
    bucket: Bucket,
    count: number,
    upTo: boolean,
    commit: (admitted: number) => Promise<T>,
  ): Promise<{ result: T; usage: Usage; admitted: number }> {
    if (limit === null) {
      const result = await commit(count);
      const now = this.clock();
      const [, used] = await this.count(accountId, null, bucket, count, false, now);
      return { result, usage: usageAt(accountId, null, used, now), admitted: count };
    }
    const now = this.clock();
    const [admitted, used] = await this.count(accountId, limit, bucket, count, upTo, now);
    const usage = usageAt(accountId, limit, used, now);
    if (admitted < 1) throw quotaExceeded(usage);
    let result: T;
    try {
      result = await commit(admitted);
    } catch (err) {
      await this.giveBack([{ accountId, bucket, count: admitted }], now);
      throw err;
    }
    return { result, usage, admitted };
  }

  private async count(accountId: string, limit: number | null, bucket: Bucket, count: number, upTo: boolean, now: Date): Promise<[number, number]> {
    const out = (await this.connection.script("count against the quota", CHARGE_SCRIPT, [this.key(accountId, now)], [count, limit ?? -1, dayField(now.getUTCDate()), `b:${bucket}`, upTo ? 1 : 0])) as number[];
    return [out[0], out[1]];
  }

  /**
   * Gives reserved units back after a failed commit. If Redis is unreachable by then, they stay
   * counted (the error is what the caller reports); the log of the failed request says so.
   */
  private async giveBack(reserved: Reservation[], at: Date): Promise<void> {
    for (const { accountId, bucket, count } of reserved) {
      await this.count(accountId, null, bucket, -count, false, at).catch(() => undefined);
    }
  }

  private key(accountId: string, now: Date): string {
    return `${this.connection.prefix}ledger:${accountId}:${period(now)}`;
  }
}

interface Reservation {
  accountId: string;
  bucket: Bucket;
  count: number;
}

function dayField(day: number): string {
  return `d${String(day).padStart(2, "0")}`;
}
