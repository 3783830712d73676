import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MmError } from "../../src/errors.js";
import { openShared } from "../../src/storage/shared/index.js";
import { RedisConnection, RedisShared } from "../../src/storage/shared/redis.js";
import { startRedis, freePort, type TestRedis } from "../helpers/redis.js";
import { rejection } from "../helpers/errors.js";

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});

async function shared(store = "/stores/one"): Promise<RedisShared> {
  return new RedisShared(await RedisConnection.open({ url: redis.url, store }));
}

describe("the Redis shared driver", () => {
  it("runs one holder of a lock at a time across two connections", async () => {
    const [a, b] = [await shared(), await shared()];
    let inside = 0;
    let most = 0;
    let runs = 0;
    const holder = (s: RedisShared) =>
      s.withLock("write", async () => {
        most = Math.max(most, ++inside);
        await new Promise((r) => setTimeout(r, 3));
        inside--;
        runs++;
      });
    await Promise.all(Array.from({ length: 20 }, (_, i) => holder(i % 2 ? a : b)));
    expect(runs).toBe(20);
    expect(most).toBe(1);
    await Promise.all([a.close(), b.close()]);
  });

  it("keeps the stores sharing one Redis apart", async () => {
    const [a, b] = [await shared("/stores/a"), await shared("/stores/b")];
    const lease = await a.tryLease("maintenance", 5_000);
    expect(lease?.held).toBe(true);
    // The other store's lease of the same name is another key.
    const other = await b.tryLease("maintenance", 5_000);
    expect(other?.held).toBe(true);
    await a.touch("auth");
    expect(await a.stamp("auth")).toBe("1");
    expect(await b.stamp("auth")).toBe("0");
    await Promise.all([lease!.release(), other!.release()]);
    await Promise.all([a.close(), b.close()]);
  });

  it("gives a lease to one holder at a time, renews it past its TTL, and frees it on release", async () => {
    const [a, b] = [await shared(), await shared()];
    const first = await a.tryLease("maintenance", 300);
    expect(first?.held).toBe(true);
    await new Promise((r) => setTimeout(r, 800));
    // Renewed: still held, still refused to the other.
    expect(first!.held).toBe(true);
    expect(await b.tryLease("maintenance", 300)).toBeUndefined();
    await first!.release();
    expect(first!.held).toBe(false);
    const second = await b.tryLease("maintenance", 300);
    expect(second?.held).toBe(true);
    await second!.release();
    await Promise.all([a.close(), b.close()]);
  });

  /** A holder in another process, taking `kind` named `name`; resolves once it holds it. */
  async function holder(kind: "lease" | "lock", name: string, ttl: number) {
    const worker = spawn(process.execPath, [join(__dirname, "..", "helpers", "lease-worker.mjs"), redis.url, "/stores/one", kind, name, String(ttl)], { stdio: ["ignore", "pipe", "inherit"] });
    const [line] = (await once(worker.stdout!, "data")) as [Buffer];
    expect(line.toString().trim()).toBe("held");
    return {
      async kill9(): Promise<number> {
        worker.kill("SIGKILL");
        await once(worker, "exit");
        return Date.now();
      },
    };
  }

  it("frees the lease of a holder killed with kill -9 within its TTL", async () => {
    const ttl = 1_000;
    const other = await holder("lease", "upkeep", ttl);
    const s = await shared();
    expect(await s.tryLease("upkeep", ttl)).toBeUndefined();
    const killedAt = await other.kill9();
    let lease;
    while (!(lease = await s.tryLease("upkeep", ttl))) await new Promise((r) => setTimeout(r, 25));
    expect(lease.held).toBe(true);
    expect(Date.now() - killedAt).toBeLessThanOrEqual(ttl + 100);
    await lease.release();
    await s.close();
  });

  it("frees the lock of a holder killed with kill -9 within its TTL, while a waiter waits", async () => {
    const ttl = 1_000;
    const other = await holder("lock", "write", ttl);
    const s = await shared();
    // Held, and renewed past its TTL while the holder lives.
    await new Promise((r) => setTimeout(r, ttl * 1.5));
    await expect(s.withLock("write", async () => "too soon", { staleMs: ttl, timeoutMs: 100 })).rejects.toMatchObject({ code: "STORE_ERROR" });
    const killedAt = await other.kill9();
    expect(await s.withLock("write", async () => "taken", { staleMs: ttl, timeoutMs: 5_000 })).toBe("taken");
    expect(Date.now() - killedAt).toBeLessThanOrEqual(ttl + 200);
    await s.close();
  });

  it("waits for a lock held elsewhere, and gives up with STORE_ERROR after its timeout", async () => {
    const [a, b] = [await shared(), await shared()];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const holding = a.withLock("ledger:acct_x", async () => {
      entered();
      await held;
    });
    await inside;
    const err = await rejection(b.withLock("ledger:acct_x", async () => "never", { timeoutMs: 200 }), MmError);
    expect(err.code).toBe("STORE_ERROR");
    release();
    await holding;
    expect(await b.withLock("ledger:acct_x", async () => "after")).toBe("after");
    await Promise.all([a.close(), b.close()]);
  });

  it("changes a stamp on every touch, for every connection", async () => {
    const [a, b] = [await shared("/stores/stamps"), await shared("/stores/stamps")];
    const before = await b.stamp("auth");
    await a.touch("auth");
    const after = await b.stamp("auth");
    expect(after).not.toBe(before);
    await a.touch("auth");
    expect(await b.stamp("auth")).not.toBe(after);
    await Promise.all([a.close(), b.close()]);
  });
});

describe("connecting to Redis", () => {
  it("refuses a URL that isn't redis://, naming the flag", async () => {
    for (const url of ["not a url", "http://127.0.0.1:6379", "redis://127.0.0.1:6379/zero"]) {
      const err = await rejection(openShared({ store: "/s", redisUrl: url, redisSource: "--redis" }), MmError);
      expect(err.code).toBe("VALIDATION_ERROR");
      expect(err.message).toContain("--redis");
    }
  });

  it("says Redis can't be reached, without the password, when nothing answers", async () => {
    const port = await freePort();
    const started = Date.now();
    const err = await rejection(openShared({ store: "/s", redisUrl: `redis://:s3cret-pass-word@127.0.0.1:${port}`, redisSource: "MM_REDIS_URL" }), MmError);
    expect(err.code).toBe("SERVICE_UNAVAILABLE");
    expect(err.status).toBe(503);
    expect(err.message).toContain(`redis://127.0.0.1:${port}`);
    expect(err.message).toContain("MM_REDIS_URL");
    expect(err.message).not.toContain("s3cret");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("says so when the password is wrong, without it", async () => {
    const locked = await startRedis(["--requirepass", "right-password-123"]);
    try {
      const err = await rejection(openShared({ store: "/s", redisUrl: `redis://:wrong-password-456@127.0.0.1:${locked.port}` }), MmError);
      expect(err.code).toBe("SERVICE_UNAVAILABLE");
      expect(JSON.stringify({ m: err.message, c: String(err.cause) })).not.toContain("wrong-password-456");
      const log: Record<string, unknown>[] = [];
      const ok = await openShared({ store: "/s", redisUrl: `redis://:right-password-123@127.0.0.1:${locked.port}`, log: (e) => log.push(e) });
      expect(await ok.stamp("auth")).toBe("0");
      // Nor in the log when the connection is lost, nor in the error a request gets.
      await locked.stop();
      const lostErr = await rejection(ok.stamp("auth"), MmError);
      // The client's close event can come after the failed command's answer (seen under a full suite's load).
      for (let waited = 0; waited < 5_000 && !log.some((e) => e.event === "redis-lost"); waited += 50) await new Promise((r) => setTimeout(r, 50));
      expect(log.map((e) => e.event)).toContain("redis-lost");
      expect(JSON.stringify(log) + lostErr.message).not.toContain("right-password-123");
      expect(JSON.stringify(log)).toContain(`redis://127.0.0.1:${locked.port}`);
      await ok.close();
    } finally {
      await locked.close();
    }
  });

  it("fails a command at once while Redis is down (503), and works again once it is back, logging both", async () => {
    const log: Record<string, unknown>[] = [];
    const own = await startRedis();
    const connection = await RedisConnection.open({ url: own.url, store: "/s", log: (e) => log.push(e) });
    const s = new RedisShared(connection);
    try {
      await s.touch("auth");
      await own.stop();
      const started = Date.now();
      const err = await rejection(s.stamp("auth"), MmError);
      expect(err.code).toBe("SERVICE_UNAVAILABLE");
      expect(Date.now() - started).toBeLessThan(2_500);
      // As above: the close event can come after the failed command's answer (seen again with two
      // busy processes beside the suite).
      for (let waited = 0; waited < 5_000 && !log.some((e) => e.event === "redis-lost"); waited += 50) await new Promise((r) => setTimeout(r, 50));
      expect(log.some((e) => e.event === "redis-lost")).toBe(true);
      await own.start();
      const deadline = Date.now() + 10_000;
      let stamp: string | undefined;
      while (Date.now() < deadline) {
        stamp = await s.stamp("auth").catch(() => undefined);
        if (stamp !== undefined) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      // The AOF kept the stamp across the restart.
      expect(stamp).toBe("1");
      expect(log.some((e) => e.event === "redis-back")).toBe(true);
    } finally {
      await s.close();
      await own.close();
    }
  });
});
