import { createHash, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { MmError } from "../../errors.js";
import { maskSecrets } from "../../secrets.js";
import type { Lease, LockOptions, Shared } from "./types.js";

/** Seconds a client is told to wait (`Retry-After`) when Redis can't be reached: a restarted Redis is back within a few. */
const REDIS_RETRY_AFTER_S = 2;

export interface RedisConnectionOptions {
  /** `redis://[user:password@]host[:port][/db]` or `rediss://…` (TLS). */
  url: string;
  /** The store as every replica names it (its URI, or a local directory's absolute path): the keys' prefix is derived from it. */
  store: string;
  /** Where the URL came from, for messages: `--redis` or `MM_REDIS_URL`. */
  source?: string;
  /** Server log sink: Redis lost, back, and the persistence check at start. */
  log?: (entry: Record<string, unknown>) => void;
  /** How long one command may take before the request fails (default 2 s): a hung Redis never hangs a request. */
  commandTimeoutMs?: number;
  /** How long the first connection may take (default 3 s). */
  connectTimeoutMs?: number;
}

/** What `CONFIG GET` said about the server's persistence; undefined fields: not allowed to ask. */
export interface RedisPersistence {
  appendonly?: string;
  appendfsync?: string;
  save?: string;
  /** Whether counts survive a Redis restart: AOF on, or RDB snapshots configured. */
  durable?: boolean;
}

/**
 * One connection to Redis per process, shared by the lock driver (RedisShared), the quota ledger
 * and the rate limiter (limits/): every key lives under `mm:<store id>:`, so stores can share one
 * Redis.
 *
 * Failure handling, chosen so that a request never hangs and never silently skips a check:
 * - no offline queue: while Redis is unreachable a command fails at once, and the request answers
 *   503 SERVICE_UNAVAILABLE (not a 500, not a wait);
 * - a command that gets no answer fails after `commandTimeoutMs`;
 * - ioredis reconnects in the background (100 ms, then up to every second), and the log says
 *   `redis-lost` and `redis-back`: the server recovers by itself.
 * The URL's password never appears in a message or a log line: `where` is the URL without it.
 */
export class RedisConnection {
  readonly client: Redis;
  readonly prefix: string;
  /** The URL without credentials, for messages. */
  readonly where: string;
  private readonly password: string | undefined;
  private downSince: number | undefined;
  private closed = false;

  private constructor(
    url: URL,
    private readonly options: RedisConnectionOptions,
  ) {
    this.where = `${url.protocol}//${url.hostname}${url.port ? `:${url.port}` : ""}${url.pathname.length > 1 ? url.pathname : ""}`;
    this.password = url.password ? decodeURIComponent(url.password) : undefined;
    this.prefix = `mm:${createHash("sha256").update(options.store).digest("hex").slice(0, 16)}:`;
    this.client = new Redis(url.toString(), {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? 2_000,
      connectTimeout: options.connectTimeoutMs ?? 3_000,
      retryStrategy: (times) => (this.closed ? null : Math.min(100 * times, 1_000)),
    });
    this.client.on("error", (err: Error) => this.lost(err));
    this.client.on("close", () => this.lost());
    this.client.on("ready", () => this.back());
  }

  /**
   * Connects, or throws a clear VALIDATION_ERROR (a URL that isn't redis://) or
   * SERVICE_UNAVAILABLE (nothing answers, wrong password) naming the URL without its password.
   */
  static async open(options: RedisConnectionOptions): Promise<RedisConnection> {
    const source = options.source ?? "--redis";
    let url: URL;
    try {
      url = new URL(options.url);
    } catch {
      throw new MmError("VALIDATION_ERROR", `${source} must be a URL such as redis://127.0.0.1:6379.`, { details: [{ field: source, message: "is not a URL" }] });
    }
    if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
      throw new MmError("VALIDATION_ERROR", `${source} must start with redis:// or rediss://, not ${url.protocol}//.`, {
        details: [{ field: source, message: "must be a redis:// or rediss:// URL" }],
      });
    }
    for (const [part, value] of [["user name", url.username], ["password", url.password]]) {
      try {
        decodeURIComponent(value);
      } catch {
        // Never the value itself: it is a secret.
        throw new MmError("VALIDATION_ERROR", `${source}: the ${part} in the URL has a % that doesn't start an escape such as %40 (for @); write a % itself as %25.`, {
          details: [{ field: source, message: `the ${part} has a malformed %-escape` }],
        });
      }
    }
    if (url.pathname.length > 1 && !/^\/\d+$/.test(url.pathname)) {
      throw new MmError("VALIDATION_ERROR", `${source}: the path names a database by number (redis://host:6379/0), not ${url.pathname}.`, {
        details: [{ field: source, message: "the path must be a database number" }],
      });
    }
    const connection = new RedisConnection(url, options);
    try {
      await connection.client.connect();
      await connection.client.ping();
    } catch (err) {
      connection.closed = true;
      connection.client.disconnect();
      throw connection.unavailable(err, `cannot connect to Redis at ${connection.where} (${source})`);
    }
    connection.downSince = undefined;
    return connection;
  }

  /** Runs Redis commands; a failure of Redis itself becomes SERVICE_UNAVAILABLE (503), its message without the password. */
  async run<T>(what: string, fn: (client: Redis) => Promise<T>): Promise<T> {
    try {
      return await fn(this.client);
    } catch (err) {
      throw this.unavailable(err, `Redis at ${this.where} failed to ${what}`);
    }
  }

  /**
   * Runs a Lua script by its SHA1 (EVALSHA: the script's text crosses the wire once per Redis
   * start, not on every request), sending it whole when Redis doesn't know it yet.
   */
  async script(what: string, source: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    const sha = scriptSha(source);
    return this.run(what, async (r) => {
      try {
        return await r.evalsha(sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
        return r.eval(source, keys.length, ...keys, ...args);
      }
    });
  }

  /**
   * Asks the server how it persists (CONFIG GET; managed services may refuse it) and logs a
   * warning when it keeps nothing on disk: then a Redis restart loses this month's quota counts.
   */
  async checkPersistence(): Promise<RedisPersistence> {
    const get = async (name: string): Promise<string | undefined> => {
      try {
        const pair = (await this.client.config("GET", name)) as string[];
        return pair[1];
      } catch {
        return undefined;
      }
    };
    const [appendonly, appendfsync, save] = [await get("appendonly"), await get("appendfsync"), await get("save")];
    const known = appendonly !== undefined;
    const durable = known ? appendonly === "yes" || (save !== undefined && save.trim() !== "") : undefined;
    const persistence = { appendonly, appendfsync, save, durable };
    const log = this.options.log;
    if (durable === false) {
      log?.({
        time: new Date().toISOString(),
        level: "warn",
        event: "redis-persistence",
        redis: this.where,
        message: "Redis keeps the quota ledger in memory only (appendonly no, no save points): a Redis restart loses this month's counts. Run it with appendonly yes (docs/redis.md).",
      });
    } else if (!known) {
      log?.({ time: new Date().toISOString(), level: "warn", event: "redis-persistence", redis: this.where, message: "Could not ask Redis how it persists (CONFIG GET refused); make sure it runs with appendonly yes." });
    } else {
      log?.({ time: new Date().toISOString(), event: "redis-persistence", redis: this.where, appendonly, appendfsync, save });
    }
    return persistence;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }

  private unavailable(err: unknown, context: string): MmError {
    if (err instanceof MmError) return err;
    const reason = maskSecrets(err instanceof Error ? err.message : String(err), [this.password]);
    return new MmError("SERVICE_UNAVAILABLE", `${context}: ${reason}.`, { retryAfter: REDIS_RETRY_AFTER_S }, { cause: err });
  }

  private lost(err?: Error): void {
    if (this.closed || this.downSince !== undefined) return;
    this.downSince = Date.now();
    this.options.log?.({
      time: new Date().toISOString(),
      level: "error",
      event: "redis-lost",
      redis: this.where,
      message: `Redis is unreachable${err ? `: ${maskSecrets(err.message, [this.password])}` : ""}; requests answer 503 until it is back.`,
    });
  }

  private back(): void {
    if (this.downSince === undefined) return;
    const downMs = Date.now() - this.downSince;
    this.downSince = undefined;
    this.options.log?.({ time: new Date().toISOString(), event: "redis-back", redis: this.where, downMs });
  }
}

/** Deletes the key if it still holds the caller's token: a holder never frees a lock someone else took after it expired. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;
/** Extends the key's life if it still holds the caller's token; 0 means it was lost. */
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;

/** A lock's life without renewal: a holder that dies (kill -9) frees it within this. */
const DEFAULT_LOCK_TTL_MS = 10_000;
const DEFAULT_LOCK_TIMEOUT_MS = 60_000;

/**
 * The Redis driver of `Shared`, for replicas on several machines. A lock or a lease is a key set
 * with `SET NX PX` to a random token, renewed every third of its TTL while held, and released by a
 * compare-and-delete script; its holder dying frees it within the TTL. Waiters poll (5 ms, backing
 * off to 50 ms), one per process and lock name: a process's own waiters queue in memory. A stamp
 * is an INCR counter, read with one GET: what each request pays to see a key revoked elsewhere.
 */
export class RedisShared implements Shared {
  readonly driver = "redis" as const;
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(readonly connection: RedisConnection) {}

  get where(): string {
    return this.connection.where;
  }

  withLock<T>(name: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
    // Same-process waiters queue here, so a process doesn't poll Redis against itself.
    const previous = this.queues.get(name) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.locked(name, fn, options));
    const tail = run.catch(() => undefined);
    this.queues.set(name, tail);
    void tail.then(() => {
      if (this.queues.get(name) === tail) this.queues.delete(name);
    });
    return run;
  }

  async tryLease(name: string, ttlMs: number): Promise<Lease | undefined> {
    const key = `${this.connection.prefix}lease:${name}`;
    const token = randomUUID();
    const ok = await this.connection.run("take a lease", (r) => r.set(key, token, "PX", ttlMs, "NX"));
    return ok === "OK" ? this.hold(key, token, ttlMs) : undefined;
  }

  async stamp(name: string): Promise<string | undefined> {
    return (await this.connection.run("read a change stamp", (r) => r.get(`${this.connection.prefix}stamp:${name}`))) ?? "0";
  }

  async touch(name: string): Promise<string> {
    return String(await this.connection.run("record a change", (r) => r.incr(`${this.connection.prefix}stamp:${name}`)));
  }

  close(): Promise<void> {
    return this.connection.close();
  }

  private async locked<T>(name: string, fn: () => Promise<T>, options: LockOptions): Promise<T> {
    const key = `${this.connection.prefix}lock:${name}`;
    const token = randomUUID();
    const ttlMs = options.staleMs ?? DEFAULT_LOCK_TTL_MS;
    const timeoutMs = options.timeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    for (let wait = 5; ; wait = Math.min(wait * 2, 50)) {
      const ok = await this.connection.run("take a lock", (r) => r.set(key, token, "PX", ttlMs, "NX"));
      if (ok === "OK") break;
      if (Date.now() + wait > deadline) {
        throw new MmError("STORE_ERROR", `The store is busy: another replica has held its "${name}" lock for over ${Math.round(timeoutMs / 1000)} s.`);
      }
      await sleep(wait * (0.5 + Math.random()));
    }
    const lease = this.hold(key, token, ttlMs);
    try {
      return await fn();
    } finally {
      await lease.release();
    }
  }

  /** Keeps a taken key alive until released; `held` turns false once it may have expired. */
  private hold(key: string, token: string, ttlMs: number): Lease {
    const connection = this.connection;
    let lastRenewed = Date.now();
    let held = true;
    const every = Math.max(50, Math.floor(ttlMs / 3));
    const timer = setInterval(async () => {
      try {
        const renewed = await connection.client.eval(RENEW, 1, key, token, String(ttlMs));
        if (renewed === 1) lastRenewed = Date.now();
        else held = false;
      } catch {
        // Redis unreachable: the key may expire there before it comes back.
        if (Date.now() + every >= lastRenewed + ttlMs) held = false;
      }
      if (!held) clearInterval(timer);
    }, every);
    timer.unref();
    return {
      get held() {
        return held;
      },
      async release() {
        if (!held) return;
        held = false;
        clearInterval(timer);
        // If Redis is unreachable, the key expires by itself within its TTL.
        await connection.client.eval(RELEASE, 1, key, token).catch(() => undefined);
      },
    };
  }
}

const shas = new Map<string, string>();
function scriptSha(source: string): string {
  let sha = shas.get(source);
  if (!sha) shas.set(source, (sha = createHash("sha1").update(source).digest("hex")));
  return sha;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
