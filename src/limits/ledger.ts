import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { MmError, toMmError } from "../errors.js";
import { withLock } from "../storage/lock.js";
import type { Meter } from "../core/context.js";

export type Bucket = "read" | "write" | "search";

/** Fixed-size records: usage is the file size divided by this, so reading it is one stat(). */
const RECORD_BYTES = 32;

export interface Usage {
  accountId: string;
  /** `YYYY-MM`, UTC. */
  period: string;
  used: number;
  /** null: unlimited. */
  limit: number | null;
  /** First instant of the next UTC month. */
  resetAt: string;
}

/**
 * The monthly quota ledger, whatever keeps it: files in the store (QuotaLedger, below: the
 * processes of one machine) or Redis (ledger-redis.ts: replicas). Both charge an operation iff it
 * was committed (or, for one that stores nothing, answered) and stop exactly at the limit.
 */
export interface Ledger {
  usage(accountId: string, limit: number | null): Promise<Usage>;
  /** Counts `count` operations, or throws QUOTA_EXCEEDED (counting nothing) when they don't fit. */
  charge(accountId: string, limit: number | null, bucket: Bucket, count?: number): Promise<Usage>;
  /** Check, commit, charge: `count` operations are counted iff `commit` returned. */
  chargeCommitted<T>(accountId: string, limit: number | null, bucket: Bucket, count: number, commit: () => Promise<T>): Promise<{ result: T; usage: Usage }>;
  /** Check, commit, charge for a batch cut to what is left: `commit` stores the first `admitted`. */
  chargeUpTo<T>(
    accountId: string,
    limit: number | null,
    bucket: Bucket,
    count: number,
    commit: (admitted: number) => Promise<T>,
  ): Promise<{ result: T; admitted: number; usage: Usage; refusal?: MmError }>;
  /** Check, commit, charge for one operation per meter that one commit stores together. */
  chargeGroup<T>(meters: OperationMeter[], commit: (admitted: boolean[]) => Promise<T>): Promise<{ result: T; refused: (MmError | undefined)[] }>;
  /** This month's operations per UTC day, `days[i]` being day i + 1, up to today. */
  daily(accountId: string): Promise<{ period: string; days: number[] }>;
  meter(accountId: string, limit: number | null, bucket: Bucket): OperationMeter;
}

/**
 * The monthly quota ledger: per account, per UTC month, one append-only file of fixed 32-byte
 * records (`<ISO time> <bucket>\n`) under `<store>/ledger/<account>/<YYYY-MM>.log`.
 *
 * - Exact under concurrency: each operation is one O_APPEND write of 32 bytes, which the kernel
 *   never interleaves or loses, so N processes × M operations always count N × M.
 * - Billed iff acknowledged or stored: a write is charged right after the commit that stores it
 *   (`chargeCommitted`, inside the store's write lock), and before it is acknowledged, so killing a
 *   process never bills an operation it didn't store nor loses the count of one it acknowledged
 *   (the page cache survives the process). A kill between a commit and its charge leaves that one
 *   commit unbilled: at most one batch (or one request), since commits hold the store's write lock.
 *   Counts are not fsynced per operation, so a power loss can drop the last moments' counts.
 * - Enforced exactly: for a finite limit, check-and-append holds the ledger's lock, so concurrent
 *   processes can't both take the last unit.
 * - Month rollover is a new file; old months stay as an audit trail.
 * - Fast: the append and the size check are synchronous system calls on a local file, ~10 µs each
 *   against ~300-800 µs for their promise versions (thread-pool round trips), on every request.
 */
export class QuotaLedger implements Ledger {
  constructor(
    private readonly dir: string,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async usage(accountId: string, limit: number | null): Promise<Usage> {
    const now = this.clock();
    return usageAt(accountId, limit, this.count(accountId, now), now);
  }

  /**
   * Counts `count` operations for the account, or throws QUOTA_EXCEEDED (counting nothing) when
   * they don't fit in what is left of `limit` this period.
   */
  async charge(accountId: string, limit: number | null, bucket: Bucket, count = 1): Promise<Usage> {
    return (await this.chargeCommitted(accountId, limit, bucket, count, async () => undefined)).usage;
  }

  /**
   * Check, commit, charge: runs `commit`, which stores `count` operations, and counts them once it
   * has returned. If `commit` throws, nothing is counted. For a finite limit the check, the commit
   * and the count all happen under the ledger's lock, so the limit stays exact although the charge
   * comes after the commit.
   *
   * Why hold the lock across the commit rather than reserve units before it: a reservation needs
   * records of its own, which a crash would leave behind, and a rule for when a dead process's
   * reservation lapses; the lock already handles dead owners. What it costs: the commits of one
   * finite-plan account wait for each other, as every commit already waits for the store's write
   * lock. The order is always store lock, then ledger lock (nothing takes the store lock while
   * holding a ledger lock), so the two can't deadlock. Unlimited plans need no check, hence no lock.
   */
  async chargeCommitted<T>(accountId: string, limit: number | null, bucket: Bucket, count: number, commit: () => Promise<T>): Promise<{ result: T; usage: Usage }> {
    const accountDir = join(this.dir, safe(accountId));
    // Every time, not once per process: the ledger may have been deleted under a running server.
    // A stat of a local directory costs microseconds.
    if (!existsSync(accountDir)) mkdirSync(accountDir, { recursive: true, mode: 0o700 });
    if (limit === null) {
      const result = await commit();
      return { result, usage: this.append(accountId, null, bucket, count) };
    }
    return withLock(join(accountDir, ".lock"), async () => {
      const now = this.clock();
      const used = this.count(accountId, now);
      if (used + count > limit) throw quotaExceeded(usageAt(accountId, limit, used, now));
      const result = await commit();
      return { result, usage: this.append(accountId, limit, bucket, count) };
    });
  }

  /**
   * Check, commit, charge for a batch that may be cut short: under the lock, `commit` is told how
   * many of the `count` operations fit what is left (at least one, else QUOTA_EXCEEDED and no
   * commit) and stores that many, the first ones; they are charged after it. `refusal` is the
   * QUOTA_EXCEEDED for the ones left out. So a batch stores exactly up to the limit.
   */
  async chargeUpTo<T>(
    accountId: string,
    limit: number | null,
    bucket: Bucket,
    count: number,
    commit: (admitted: number) => Promise<T>,
  ): Promise<{ result: T; admitted: number; usage: Usage; refusal?: MmError }> {
    const accountDir = join(this.dir, safe(accountId));
    if (!existsSync(accountDir)) mkdirSync(accountDir, { recursive: true, mode: 0o700 });
    if (limit === null) {
      const result = await commit(count);
      return { result, admitted: count, usage: this.append(accountId, null, bucket, count) };
    }
    return withLock(join(accountDir, ".lock"), async () => {
      const now = this.clock();
      const used = this.count(accountId, now);
      const admitted = Math.min(count, limit - used);
      if (admitted < 1) throw quotaExceeded(usageAt(accountId, limit, used, now));
      const result = await commit(admitted);
      const usage = this.append(accountId, limit, bucket, admitted);
      return { result, admitted, usage, ...(admitted < count ? { refusal: quotaExceeded(usage) } : {}) };
    });
  }

  /**
   * Check, commit, charge for operations that one commit stores together (group commit,
   * core/group-commit.ts): each meter's operation (one each) is checked before `commit` and
   * charged right after it, as `chargeCommitted` does for one. A meter whose account has no room
   * left is refused (`refused[i]` is its QUOTA_EXCEEDED) and `commit` is told to leave it out;
   * the others go ahead. For finite plans the accounts' ledger locks are held across the check,
   * the commit and the charges, taken in sorted order so that two groups can't deadlock.
   */
  async chargeGroup<T>(meters: OperationMeter[], commit: (admitted: boolean[]) => Promise<T>): Promise<{ result: T; refused: (MmError | undefined)[] }> {
    const accounts = [...new Set(meters.filter((m) => m.limit !== null).map((m) => m.accountId))].sort();
    for (const m of meters) {
      const accountDir = join(this.dir, safe(m.accountId));
      if (!existsSync(accountDir)) mkdirSync(accountDir, { recursive: true, mode: 0o700 });
    }
    const run = async (): Promise<{ result: T; refused: (MmError | undefined)[] }> => {
      const now = this.clock();
      const used = new Map(accounts.map((a) => [a, this.count(a, now)]));
      const refused = meters.map((m) => {
        if (m.limit === null) return undefined;
        const u = used.get(m.accountId)!;
        if (u + 1 > m.limit) return quotaExceeded(usageAt(m.accountId, m.limit, u, now));
        used.set(m.accountId, u + 1);
        return undefined;
      });
      const result = await commit(refused.map((r) => r === undefined));
      meters.forEach((m, i) => {
        if (!refused[i]) m.usage = this.append(m.accountId, m.limit, m.bucket, 1);
      });
      return { result, refused };
    };
    const locked = accounts.reduceRight<() => Promise<{ result: T; refused: (MmError | undefined)[] }>>(
      (inner, account) => () => withLock(join(this.dir, safe(account), ".lock"), inner),
      run,
    );
    return locked();
  }

  /** Appends `count` records; the caller has checked the limit. Returns the usage after them. */
  private append(accountId: string, limit: number | null, bucket: Bucket, count: number): Usage {
    const now = this.clock();
    const file = this.file(accountId, now);
    // One write for all `count` records: it lands whole or (if the process dies first) not at all.
    const record = (`${now.toISOString()} ${bucket}`.padEnd(RECORD_BYTES - 1) + "\n").repeat(count);
    appendFileSync(file, record, { mode: 0o600 });
    return usageAt(accountId, limit, this.count(accountId, now), now);
  }

  /** The billing of one operation (an HTTP request, a CLI command, a batch add): see OperationMeter. */
  meter(accountId: string, limit: number | null, bucket: Bucket): OperationMeter {
    return new OperationMeter(this, accountId, limit, bucket);
  }

  /**
   * This month's operations per UTC day, from the records' own timestamps (every record has
   * carried one since the ledger's first version, so any ledger reads): `days[i]` is day i + 1, up
   * to today. Reads the month's file once, in 1 MiB chunks: ~32 MB for a million operations.
   */
  async daily(accountId: string): Promise<{ period: string; days: number[] }> {
    const now = this.clock();
    const days = new Array<number>(now.getUTCDate()).fill(0);
    let fd: number;
    try {
      fd = openSync(this.file(accountId, now), "r");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return { period: period(now), days };
      throw err;
    }
    try {
      const chunk = Buffer.alloc(RECORD_BYTES * 32_768);
      // Whole records only, read from record boundaries: a torn last record (a crash mid-write) is
      // not counted, as count() doesn't count it either.
      for (let pos = 0, whole; (whole = readSync(fd, chunk, 0, chunk.length, pos)) > 0; ) {
        whole -= whole % RECORD_BYTES;
        if (whole === 0) break;
        for (let at = 0; at < whole; at += RECORD_BYTES) {
          const day = (chunk[at + 8] - 48) * 10 + (chunk[at + 9] - 48); // `YYYY-MM-DD…`
          if (day >= 1 && day <= days.length) days[day - 1]++;
        }
        pos += whole;
      }
    } finally {
      closeSync(fd);
    }
    return { period: period(now), days };
  }

  private count(accountId: string, now: Date): number {
    try {
      return Math.floor(statSync(this.file(accountId, now)).size / RECORD_BYTES);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return 0;
      throw err;
    }
  }

  private file(accountId: string, now: Date): string {
    return join(this.dir, safe(accountId), `${period(now)}.log`);
  }
}

/**
 * Bills one operation. Core calls `commit` around the store commit that holds the operation (see
 * core/context.ts `billedCommit`), so a write is charged right after it is stored; the transport
 * calls `settle` for an operation that stored nothing (a read, a 404, a validation error) and
 * `check` to refuse early, before work such as embedding, when the quota is already used up.
 */
export class OperationMeter implements Meter {
  /** The usage after this operation's last charge; undefined until it is charged. */
  usage: Usage | undefined;

  constructor(
    readonly ledger: Ledger,
    readonly accountId: string,
    readonly limit: number | null,
    readonly bucket: Bucket,
  ) {}

  get charged(): boolean {
    return this.usage !== undefined;
  }

  /** Throws QUOTA_EXCEEDED if `count` operations don't fit now. Not binding: `commit` checks again. */
  async check(count: number): Promise<void> {
    if (this.limit === null) return;
    const usage = await this.ledger.usage(this.accountId, this.limit);
    if (usage.used + count > this.limit) throw quotaExceeded(usage);
  }

  async commit<T>(count: number, commit: () => Promise<T>): Promise<T> {
    const { result, usage } = await this.ledger.chargeCommitted(this.accountId, this.limit, this.bucket, count, commit);
    this.usage = usage;
    return result;
  }

  async commitUpTo<T>(count: number, commit: (admitted: number) => Promise<T>): Promise<{ result: T; admitted: number; refusal?: MmError }> {
    const { result, admitted, usage, refusal } = await this.ledger.chargeUpTo(this.accountId, this.limit, this.bucket, count, commit);
    this.usage = usage;
    return { result, admitted, ...(refusal ? { refusal } : {}) };
  }

  /**
   * Runs a whole operation under this meter: refused early when the quota is spent, billed by its
   * commits, else once it has answered, or when it fails the way a 400 or 404 does.
   */
  async run<T>(operation: () => Promise<T>): Promise<T> {
    await this.check(1);
    try {
      const result = await operation();
      await this.settle();
      return result;
    } catch (err) {
      throw await this.settleFailure(err);
    }
  }

  commitGroup<T>(meters: Meter[], commit: (admitted: boolean[]) => Promise<T>): Promise<{ result: T; refused: (MmError | undefined)[] }> {
    if (!meters.every((m): m is OperationMeter => m instanceof OperationMeter && m.ledger === this.ledger)) {
      throw new MmError("INTERNAL_ERROR", "A group commit's meters must share one ledger.");
    }
    return this.ledger.chargeGroup(meters, commit);
  }

  /** Charges the operation once, unless a commit already did. */
  async settle(): Promise<Usage> {
    this.usage ??= await this.ledger.charge(this.accountId, this.limit, this.bucket, 1);
    return this.usage;
  }

  /**
   * Bills an operation that failed before any commit billed it, if the caller caused the failure:
   * a 400 or a 404 counts (decisions.md); the server's own failures (5xx) and quota refusals don't.
   * Returns the error to report: `err`, or QUOTA_EXCEEDED if the last units went meanwhile.
   */
  async settleFailure(err: unknown): Promise<unknown> {
    if (this.charged || isQuotaExceeded(err) || toMmError(err).status >= 500) return err;
    try {
      await this.settle();
      return err;
    } catch (refusal) {
      return refusal;
    }
  }
}

/** An account's usage at `now`: `used` of `limit` in the UTC month `now` is in. */
export function usageAt(accountId: string, limit: number | null, used: number, now: Date): Usage {
  return { accountId, period: period(now), used, limit, resetAt: nextMonth(now).toISOString() };
}

export function isQuotaExceeded(err: unknown): boolean {
  return err instanceof MmError && err.code === "QUOTA_EXCEEDED";
}

export function quotaExceeded(usage: Usage): MmError {
  return new MmError("QUOTA_EXCEEDED", `Monthly quota of ${usage.limit} operations exceeded; it resets at ${usage.resetAt}.`, {
    currentUsage: usage.used,
    limit: usage.limit,
    resetAt: usage.resetAt,
  });
}

export function period(d: Date): string {
  return d.toISOString().slice(0, 7);
}

export function nextMonth(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1));
}

/** Account ids are ours (`acct_…`), but never let one escape the ledger directory. */
function safe(accountId: string): string {
  return accountId.replace(/[^A-Za-z0-9_-]/g, "_");
}
