import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { Accounts, type Plan } from "../../src/core/accounts.js";
import { startServer, type RunningServer, type ServerTimeouts } from "../../src/http/server.js";
import { nextMonth, type Ledger } from "../../src/limits/ledger.js";
import { openLedger } from "../../src/limits/index.js";
import { openShared } from "../../src/storage/shared/index.js";
import type { RateLimits } from "../../src/limits/rate-limiter.js";
import type { Embedder } from "../../src/embedder/types.js";
import { createTestEmbedder } from "./test-embedder.js";

/**
 * A controllable clock shared by the server (data, quota, rate windows) and in-process CLI runs.
 * Each read advances it by one millisecond, so timestamps and ids stay distinct and ordered,
 * while a test stays far from a minute boundary unless it moves the clock itself.
 */
export interface TestClock {
  (): Date;
  set(iso: string | Date): void;
  advance(ms: number): void;
  peek(): Date;
  /** Stops the per-read tick (every read returns the same instant) or, with false, restarts it. */
  freeze(frozen?: boolean): void;
}

export function createTestClock(start = "2026-03-15T12:00:05.000Z"): TestClock {
  let now = new Date(start).getTime();
  let step = 1;
  const clock = (() => {
    const at = new Date(now);
    now += step;
    return at;
  }) as TestClock;
  clock.set = (t) => void (now = new Date(t).getTime());
  clock.advance = (ms) => void (now += ms);
  clock.peek = () => new Date(now);
  clock.freeze = (frozen = true) => void (step = frozen ? 0 : 1);
  return clock;
}

export interface TestAccount {
  id: string;
  name: string;
  plan: Plan;
  key: string;
  keyId: string;
}

export interface TestServer {
  url: string;
  storeDir: string;
  clock: TestClock;
  accounts: Accounts;
  /** The server's quota ledger: the store's files, or Redis with `redisUrl`. */
  ledger: Ledger;
  /** The header, request and keep-alive timeouts the server runs with. */
  timeouts: ServerTimeouts;
  /** Creates an account with one key (enterprise unless told otherwise). */
  account(name: string, plan?: Plan): Promise<TestAccount>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  /** Default: limits too high to matter. Pass `{}` for the server's defaults (100/50/30). */
  rateLimits?: Partial<RateLimits>;
  bodyLimitBytes?: number;
  timeouts?: Partial<ServerTimeouts>;
  clock?: TestClock;
  log?: (entry: Record<string, unknown>) => void;
  /** Embed with the store's own model (use-lite) instead of the bag-of-words test embedder. */
  realModel?: boolean;
  /** Another embedder in place of the test embedder (a slow or failing one). */
  embedder?: Embedder;
  /**
   * Serve with `--redis` (ledger and rate limits in Redis, windows on the test clock). Default:
   * `$MM_TEST_REDIS_URL`, so a whole HTTP suite can run again on the Redis drivers.
   */
  redisUrl?: string;
}

/** A real server on a real port over a real LanceDB store in a fresh temp directory. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const storeDir = await mkdtemp(join(tmpdir(), "mm-http-"));
  const clock = options.clock ?? createTestClock();
  const redisUrl = options.redisUrl ?? (process.env.MM_TEST_REDIS_URL || undefined);
  let server: RunningServer;
  try {
    server = await startServer({
      storeDir,
      redisUrl,
      port: 0,
      embedder: options.realModel ? undefined : (options.embedder ?? createTestEmbedder()),
      clock,
      rateLimits: options.rateLimits ?? { read: 100_000, write: 100_000, search: 100_000 },
      bodyLimitBytes: options.bodyLimitBytes,
      timeouts: options.timeouts,
      warm: false,
      log: options.log ?? (() => undefined),
    });
  } catch (err) {
    await rm(storeDir, { recursive: true, force: true });
    throw err;
  }
  const accounts = new Accounts(storeDir, clock);
  const shared = await openShared({ store: storeDir, redisUrl });
  return {
    url: server.url,
    storeDir,
    clock,
    timeouts: server.timeouts,
    accounts,
    ledger: await openLedger(shared, storeDir, clock),
    async account(name, plan = "enterprise") {
      const account = await accounts.create({ name, plan });
      const key = await accounts.createKey({ account: account.id, name: `${name}-key` });
      return { id: account.id, name, plan, key: key.key, keyId: key.id };
    },
    async close() {
      await server.close();
      await shared.close();
      await rm(storeDir, { recursive: true, force: true });
    },
  };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  /** Parsed JSON body (every answer of the API is JSON). */
  body: T;
  text: string;
}

export interface RequestOptions {
  /** An API key; sent as `Authorization: Bearer <key>`. */
  key?: string;
  /** JSON-encoded unless `raw` is given. */
  body?: unknown;
  /** Sent as is (no Content-Type unless `headers` sets one). */
  raw?: NonNullable<RequestInit["body"]>;
  headers?: Record<string, string>;
  /** Query parameters; arrays repeat the key. */
  query?: Record<string, string | number | (string | number)[] | undefined>;
}

/**
 * One request over real HTTP. Asserts what holds for every answer of the API: a JSON
 * Content-Type and a body that parses as JSON (never HTML, never empty).
 */
export async function request<T = any>(base: string, method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
  const url = new URL(path, base);
  for (const [k, v] of Object.entries(opts.query ?? {})) {
    if (v === undefined) continue;
    for (const item of Array.isArray(v) ? v : [v]) url.searchParams.append(k, String(item));
  }
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers.Authorization = `Bearer ${opts.key}`;
  let body: RequestInit["body"];
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["Content-Type"] ??= "application/json";
  }
  const res = await fetch(url, { method, headers, body, ...(body instanceof ReadableStream ? { duplex: "half" } : {}) } as RequestInit);
  const text = await res.text();
  const where = `${method} ${path} → ${res.status}: ${text.slice(0, 300)}`;
  expect(String(res.headers.get("content-type")), where).toMatch(/^application\/json\b/);
  expect(text, where).not.toMatch(/^\s*</);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`Not JSON: ${where}`);
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/** A client bound to one server and, optionally, one key. */
export function client(base: string, key?: string) {
  const call = (method: string) => (path: string, opts: RequestOptions = {}) => request(base, method, path, { key, ...opts });
  return { get: call("GET"), post: call("POST"), patch: call("PATCH"), delete: call("DELETE"), put: call("PUT"), request: call };
}
export type Client = ReturnType<typeof client>;

/** Asserts the error envelope: exactly `{error: {code, message, ...extra}}` with the given status and code. */
export function expectError(res: ApiResponse, status: number, code: string, extra: Record<string, unknown> = {}): Record<string, any> {
  const where = `${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, where).toBe(status);
  expect(Object.keys(res.body), where).toEqual(["error"]);
  const error = res.body.error as Record<string, unknown>;
  expect(error.code, where).toBe(code);
  expect(typeof error.message, where).toBe("string");
  expect((error.message as string).length, where).toBeGreaterThan(0);
  // No stack traces or internals in any message.
  expect(error.message as string, where).not.toMatch(/\bat .*\.(ts|js):\d+|node_modules|Error:/);
  expect(error, where).toMatchObject(extra);
  return error as Record<string, any>;
}

/** The first instant of the next UTC month after `d`, as the API formats it. */
export function monthReset(d: Date): string {
  return nextMonth(d).toISOString();
}

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
