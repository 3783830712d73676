import { Hono, type Context as HonoContext, type MiddlewareHandler } from "hono";
import type { Context } from "../core/context.js";
import type { Accounts, Principal } from "../core/accounts.js";
import { errorDetail, forClient, MmError, toMmError, validationError } from "../errors.js";
import { isQuotaExceeded, type Ledger, type Usage } from "../limits/ledger.js";
import type { Limiter, RateDecision } from "../limits/rate-limiter.js";
import { mountConsole } from "../console/app.js";
import { HOOK_ROUTE } from "./hooks.js";
import { mountMcp } from "./mcp.js";
import { buildOpenApi } from "./openapi.js";
import { ROUTES, type Route } from "./routes.js";

export const DEFAULT_BODY_LIMIT = 1024 * 1024;
/**
 * How much of a refused body is read (and thrown away) before the 413 is sent. A body declared
 * larger than this is refused at once: a client sending that much is on its own.
 */
const DRAIN_MAX_BYTES = 64 * 1024 * 1024;

export interface AppDeps {
  /** The store, embedder and clock; each request acts as its key's account on a copy. */
  ctx: Context;
  accounts: Accounts;
  /** The quota ledger and the rate limiter: in the store's files and memory, or in Redis (`--redis`). */
  ledger: Ledger;
  limiter: Limiter;
  bodyLimitBytes?: number;
  /** Structured request log sink (one object per request, and one per error a client only sees generically); never receives the key. */
  log?: (entry: Record<string, unknown>) => void;
}

type Env = { Variables: { principal?: Principal; body?: string } };

/**
 * The /v1 API: a thin adapter from HTTP to the core services. Each request is authenticated,
 * rate-limited per key and bucket, counted against its account's monthly quota, then handed raw
 * to the same service the CLI calls, so both validate and answer identically.
 */
export function createApp(deps: AppDeps): Hono<Env> {
  const app = new Hono<Env>();
  const maxBody = deps.bodyLimitBytes ?? DEFAULT_BODY_LIMIT;

  app.use("*", async (c, next) => {
    const started = performance.now();
    await next();
    const principal = c.get("principal");
    deps.log?.({
      time: new Date().toISOString(),
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      ms: Math.round((performance.now() - started) * 10) / 10,
      ...(principal ? { account: principal.account.id, keyId: principal.keyId } : {}),
    });
  });

  app.use("*", drainUnreadBody());

  const openapi = buildOpenApi(ROUTES);
  app.get("/v1/openapi.json", (c) => c.json(openapi));

  const limitBody = readBody(maxBody);
  // Paths are registered static ones first, each followed by its 405 catch-all, so that
  // `GET /v1/memories/search` is a wrong method on a known path, not the memory id "search".
  // The URL hook (http/hooks.ts) is served like a route, though it isn't /v1 and isn't in the
  // OpenAPI document: authenticated, limited and billed the same way.
  const served = [...ROUTES, HOOK_ROUTE];
  const methodsByPath = new Map<string, string[]>([["/v1/openapi.json", ["GET"]]]);
  for (const r of served) methodsByPath.set(r.path, [...(methodsByPath.get(r.path) ?? []), r.method]);
  const paths = [...methodsByPath.keys()].sort((a, b) => Number(a.includes(":")) - Number(b.includes(":")));
  for (const path of paths) {
    for (const route of served.filter((r) => r.path === path)) {
      const handler = (c: HonoContext<Env>) => handle(c, route, deps);
      if (route.method === "POST" || route.method === "PATCH") app.on(route.method, route.path, limitBody, handler);
      else app.on(route.method, route.path, handler);
    }
    const methods = methodsByPath.get(path)!;
    app.all(path, (c) => {
      c.header("Allow", methods.join(", "));
      throw new MmError("METHOD_NOT_ALLOWED", `${c.req.method} is not allowed on ${c.req.path}; use ${methods.join(", ")}.`, { allowed: methods });
    });
  }

  mountMcp(app, deps, limitBody);
  mountConsole(app, deps);

  app.notFound((c) => c.json(new MmError("NOT_FOUND", `No route for ${c.req.method} ${c.req.path}.`).toBody(), 404));

  app.onError((err, c) => {
    // An object store's failure that no read or write of the store reported is reported here (storage/outage.ts).
    const failure = deps.ctx.store.storeFailed(err);
    const mm = toMmError(failure);
    const answer = forClient(mm);
    if (answer !== mm || mm.status >= 500) {
      // The details stay here; the log sink masks secrets (see startServer).
      deps.log?.({ time: new Date().toISOString(), level: "error", method: c.req.method, path: c.req.path, code: mm.code, error: errorDetail(failure) });
    }
    // A rate limit, an object store or Redis out of reach: when to try again.
    if (typeof mm.extra.retryAfter === "number") c.header("Retry-After", String(mm.extra.retryAfter));
    return c.json(answer.toBody(), answer.status as 400);
  });

  return app;
}

/**
 * One request: authenticate, refuse early if the quota is used up (that takes no rate-limit
 * allowance: a refusal that does no work shouldn't spend the minute's requests, and retrying after
 * Retry-After wouldn't help), take from the rate limit, run the route, and bill it. A write is
 * billed right after the commit that stores it (core's billedCommit, through the meter); anything
 * else that reaches the endpoint is billed once it has run, before it is answered, so a request is
 * billed iff it is acknowledged or stored. Answers the client caused (400, 404) count, as
 * decisions.md says; the server's own failures (5xx) don't. A request that loses the race for the
 * last units is answered QUOTA_EXCEEDED and gets its rate-limit allowance back.
 */
async function handle(c: HonoContext<Env>, route: Route, deps: AppDeps): Promise<Response> {
  const principal = await deps.accounts.authenticate(c.req.header("Authorization"));
  c.set("principal", principal);
  const { account, keyId } = principal;
  const meter = deps.ledger.meter(account.id, account.quota, route.bucket);
  const usage = () => deps.ledger.usage(account.id, account.quota);

  try {
    await meter.check(1);
  } catch (err) {
    setRateHeaders(c, await deps.limiter.peek(keyId, route.bucket));
    setQuotaHeaders(c, await usage());
    throw err;
  }
  const rate = await deps.limiter.take(keyId, route.bucket);
  setRateHeaders(c, rate);
  if (!rate.allowed) {
    setQuotaHeaders(c, await usage());
    throw new MmError("RATE_LIMIT_EXCEEDED", `Too many ${route.bucket} requests; retry in ${rate.retryAfter} s.`, { retryAfter: rate.retryAfter });
  }

  let result: unknown;
  try {
    const input = { params: c.req.param() as Record<string, string>, query: queryObject(c), body: route.body ? await readJson(c) : undefined };
    // Read-your-writes across replicas (docs/scale-out.md): a read waits until this replica has the
    // versions a write's token names; a write hands its token back.
    const token = c.req.header("X-MM-Consistency");
    if (token !== undefined && route.bucket !== "write") await deps.ctx.store.readAfter(token);
    result = await route.run({ ...deps.ctx, accountId: account.id, meter }, input);
    if (route.bucket === "write") {
      const written = await deps.ctx.store.consistencyToken().catch(() => undefined);
      if (written) c.header("X-MM-Consistency", written);
    }
    setQuotaHeaders(c, await meter.settle());
  } catch (failure) {
    const err = await meter.settleFailure(failure);
    if (isQuotaExceeded(err)) await deps.limiter.refund(keyId, route.bucket);
    setQuotaHeaders(c, meter.usage ?? (await usage()));
    throw err;
  }
  if (result && typeof result === "object" && "status" in result && "body" in result) {
    const r = result as { status: number; body: unknown };
    return c.json(r.body as object, r.status as 200);
  }
  return c.json(result as object, route.status);
}

function setRateHeaders(c: HonoContext<Env>, rate: RateDecision): void {
  c.header("X-RateLimit-Limit", String(rate.limit));
  c.header("X-RateLimit-Remaining", String(rate.remaining));
  c.header("X-RateLimit-Reset", String(rate.reset));
}

function setQuotaHeaders(c: HonoContext<Env>, usage: Usage): void {
  c.header("X-Quota-Limit", usage.limit === null ? "unlimited" : String(usage.limit));
  c.header("X-Quota-Used", String(usage.used));
  c.header("X-Quota-Reset", usage.resetAt);
}

/**
 * Query parameters as an object; a repeated key becomes an array (so `tags=a&tags=b` works too).
 * Built with Object.fromEntries, which defines own properties: an assignment `out[k] = v` with k
 * "__proto__" would set the object's prototype, and the parameter would slip past the check for
 * unknown ones.
 */
function queryObject(c: HonoContext<Env>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(c.req.queries()).map(([k, values]) => [k, values.length === 1 ? values[0] : values]));
}

/**
 * Reads a POST or PATCH body whole, before authentication, up to `max` bytes. A larger one is
 * refused with 413 PAYLOAD_TOO_LARGE, but only once the rest of it has been read and thrown away
 * (up to DRAIN_MAX_BYTES): a server that answers and closes while the client is still sending
 * makes Node's fetch (undici) report a socket error (UND_ERR_SOCKET, EPIPE) instead of the 413, and
 * can break the next request on the same connection. The 413 says `Connection: close`, so the
 * client opens a fresh connection for whatever it sends next.
 */
function readBody(max: number): MiddlewareHandler<Env> {
  return async (c, next) => {
    const declared = Number(c.req.header("Content-Length") ?? NaN);
    const { text, size } = declared > DRAIN_MAX_BYTES ? { text: undefined, size: declared } : await consumeBody(c.req.raw.body, max);
    if (size > max) {
      c.header("Connection", "close");
      throw tooLarge(max);
    }
    c.set("body", text);
    await next();
  };
}

/**
 * Once a request is answered, reads and throws away any body nothing read (an unknown route, a
 * 405, a DELETE with a body), up to DRAIN_MAX_BYTES, before the answer goes out: for the same
 * reason readBody drains, since the adapter's own clean-up gives a body only 500 ms.
 */
function drainUnreadBody(): MiddlewareHandler<Env> {
  return async (c, next) => {
    await next();
    if (c.req.header("Content-Length") === undefined && c.req.header("Transfer-Encoding") === undefined) return;
    const declared = Number(c.req.header("Content-Length") ?? NaN);
    const stream = c.req.raw.body;
    if (!stream || stream.locked || c.req.raw.bodyUsed) return;
    if (declared > DRAIN_MAX_BYTES || (await consumeBody(stream, 0).catch(() => ({ size: Infinity }))).size > DRAIN_MAX_BYTES) {
      c.res.headers.set("Connection", "close");
    }
  };
}

/**
 * Reads a body to its end (or DRAIN_MAX_BYTES), keeping its text only if it is at most `keep`
 * bytes. `size` is what was read, or more than DRAIN_MAX_BYTES if reading stopped there.
 */
async function consumeBody(stream: ReadableStream<Uint8Array> | null, keep: number): Promise<{ text: string | undefined; size: number }> {
  if (!stream) return { text: undefined, size: 0 };
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    // A body cut off (the client went away, or sent broken chunks) answers nobody; not an internal error.
    const { done, value } = await reader.read().catch(() => {
      throw validationError("body", "could not be read to its end");
    });
    if (done) break;
    size += value.byteLength;
    if (size > DRAIN_MAX_BYTES) {
      await reader.cancel();
      break;
    }
    if (size <= keep) chunks.push(value);
  }
  return { text: size <= keep ? Buffer.concat(chunks).toString("utf8") : undefined, size };
}

async function readJson(c: HonoContext<Env>): Promise<unknown> {
  const type = c.req.header("Content-Type") ?? "";
  if (!/^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type)) {
    throw new MmError("VALIDATION_ERROR", "Content-Type must be application/json.", {
      details: [{ field: "Content-Type", message: `expected application/json, got ${type || "none"}` }],
    });
  }
  const text = c.get("body") ?? "";
  try {
    return JSON.parse(text);
  } catch {
    throw new MmError("VALIDATION_ERROR", "The request body is not valid JSON.", { details: [{ field: "body", message: "not valid JSON" }] });
  }
}

function tooLarge(limit: number): MmError {
  return new MmError("PAYLOAD_TOO_LARGE", `The request body is larger than the server's limit of ${limit} bytes.`, { limit });
}
