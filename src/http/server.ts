import { createServer, STATUS_CODES, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { getRequestListener, RequestError } from "@hono/node-server";
import { Accounts } from "../core/accounts.js";
import { crashHooks, openContext } from "../core/context.js";
import { startUpkeep } from "../core/upkeep.js";
import type { Embedder, EmbedderConfig, Env } from "../embedder/index.js";
import { maskSecrets } from "../secrets.js";
import { openLedger, openLimiter } from "../limits/index.js";
import { checkLocalCoordination } from "../storage/database.js";
import { DEFAULT_RATE_LIMITS, type RateLimits } from "../limits/rate-limiter.js";
import { objectStorageOptions, placeOf, storageSecrets } from "../storage/location.js";
import { openShared } from "../storage/shared/index.js";
import type { RedisShared } from "../storage/shared/redis.js";
import { errorDetail, MmError, validationError } from "../errors.js";
import { createApp, DEFAULT_BODY_LIMIT } from "./app.js";

/** How long a client may take: to send its headers, its whole request, and between keep-alive requests. */
export interface ServerTimeouts {
  headersMs: number;
  requestMs: number;
  keepAliveMs: number;
}

/**
 * 10 s for headers is ample for any real client and cuts a slow-loris connection loose early; 30 s
 * for a whole request covers a 1 MiB body over a slow link; 5 s is Node's own keep-alive default.
 */
export const DEFAULT_TIMEOUTS: ServerTimeouts = { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000 };

export interface ServerOptions {
  storeDir: string;
  host?: string;
  port?: number;
  env?: Env;
  rateLimits?: Partial<RateLimits>;
  bodyLimitBytes?: number;
  timeouts?: Partial<ServerTimeouts>;
  /** Load the model before listening, so the first search doesn't pay for it (default true). */
  warm?: boolean;
  /**
   * Called with the server's URL as soon as it is bound, before the model loads and before any
   * request is answered (it runs synchronously): `mm serve` records its address there.
   */
  onBound?: (url: string) => void;
  /**
   * `--redis URL` / `$MM_REDIS_URL`: replicas of one store agree through this Redis (locks and
   * leases, change stamps, the quota ledger, the rate limits). Without it, the store's files and
   * this process's memory, as always.
   */
  redisUrl?: string;
  /** Where `redisUrl` came from, for messages: `--redis` (default) or `MM_REDIS_URL`. */
  redisSource?: string;
  /** Tests: an embedder in place of the store's model, and one clock for data, quota and rate windows. */
  embedder?: Embedder;
  clock?: () => Date;
  log?: (entry: Record<string, unknown>) => void;
}

export interface RunningServer {
  url: string;
  port: number;
  timeouts: ServerTimeouts;
  /** The accounts of the store, each with its memories and live keys: what `mm serve` announces. */
  accounts(): Promise<{ id: string; name: string; plan: string; memories: number; keys: number }[]>;
  /** Stops accepting connections, lets in-flight requests finish, then closes the store. */
  close(): Promise<void>;
}

function listenError(err: NodeJS.ErrnoException, host: string, port: number): Error {
  const where = `${host}:${port}`;
  if (err.code === "EADDRINUSE") {
    return new MmError("LISTEN_ERROR", `port ${port} is in use on ${host} (another mm serve?). Choose another with --port, or --port 0 for any free one.`);
  }
  if (err.code === "EACCES") return new MmError("LISTEN_ERROR", `no permission to listen on ${where}; ports below 1024 need privileges. Choose another with --port.`);
  if (err.code === "EADDRNOTAVAIL" || err.code === "ENOTFOUND") return new MmError("LISTEN_ERROR", `${host} is not an address of this machine; check --host.`);
  return new MmError("LISTEN_ERROR", `cannot listen on ${where}: ${err.message}`, {}, { cause: err });
}

/** Starts the /v1 API on the store. Loopback by default: exposing it is an explicit choice. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const clock = options.clock ?? (() => new Date());
  // Redis first: a wrong URL or a Redis that doesn't answer is refused before the store opens.
  let log: ((entry: Record<string, unknown>) => void) | undefined;
  // A local store keeps its locks and documents' stamps in its own files even with Redis (every
  // replica of a local store is on its one machine); Redis then holds the quota and rate counts.
  // An object store's replicas may be anywhere: with Redis, everything they agree on is there.
  const place = placeOf(options.storeDir);
  const shared = await openShared({
    store: options.storeDir,
    env: options.env,
    redisUrl: options.redisUrl,
    redisSource: options.redisSource,
    log: (entry) => log?.(entry),
  });
  const storeShared = place.kind === "object" && shared.driver === "redis" ? shared : undefined;
  const ctx = await openContext({ storeDir: options.storeDir, env: options.env, embedder: options.embedder, clock, hooks: crashHooks(options.env?.MM_TEST_CRASH_AT), shared: storeShared }).catch(async (err) => {
    await shared.close();
    throw err;
  });
  if (place.kind === "local") {
    await checkLocalCoordination(place.dir, options.env ?? process.env, shared).catch(async (err) => {
      await ctx.close();
      await shared.close();
      throw err;
    });
  }
  const configured = ctx.store.config.server ?? {};
  const accounts = new Accounts(ctx.store, clock);
  // Every log line is masked for the embedder's API key, in every form an upstream may echo it in.
  // And for the object store's credentials, which a failing request's URL may carry (a SAS token).
  const secrets = [...embedderSecrets(ctx.store.config.embedder, options.env ?? {}), ...(place.kind === "object" ? storageSecrets(objectStorageOptions(place, options.env ?? process.env)) : [])];
  log = options.log && ((entry: Record<string, unknown>) => options.log!(JSON.parse(maskSecrets(JSON.stringify(entry), secrets))));
  ctx.store.health.log = log;
  const rateLimits = { ...DEFAULT_RATE_LIMITS, ...configured.rateLimits, ...options.rateLimits };
  const redis = shared.driver === "redis";
  if (redis) await (shared as RedisShared).connection.checkPersistence();
  const app = createApp({
    ctx,
    accounts,
    ledger: await openLedger(shared, ctx.store.coordinationDir, clock),
    // With Redis, Redis's clock sets the windows, unless a test brings its own.
    limiter: await openLimiter(shared, rateLimits, redis && !options.clock ? undefined : () => clock().getTime()),
    bodyLimitBytes: options.bodyLimitBytes ?? configured.bodyLimitBytes ?? DEFAULT_BODY_LIMIT,
    log,
  });
  const host = options.host ?? configured.host ?? "127.0.0.1";
  const port = options.port ?? configured.port ?? 8080;
  const timeouts: ServerTimeouts = {
    headersMs: options.timeouts?.headersMs ?? configured.headersTimeoutMs ?? DEFAULT_TIMEOUTS.headersMs,
    requestMs: options.timeouts?.requestMs ?? configured.requestTimeoutMs ?? DEFAULT_TIMEOUTS.requestMs,
    keepAliveMs: options.timeouts?.keepAliveMs ?? configured.keepAliveTimeoutMs ?? DEFAULT_TIMEOUTS.keepAliveMs,
  };
  const listener = getRequestListener(app.fetch, {
    // For HTTP/1.0 requests, which may leave Host out; the name only completes the request's URL.
    hostname: "localhost",
    // The adapter refuses some requests before the app sees them (an `OPTIONS *` target, a bad
    // Host, a backslash in the path) and would answer an empty 400.
    errorHandler: (err) => {
      if (err instanceof RequestError) return envelopeResponse(validationError("request", err.message === "Missing host header" ? "has no Host header" : "has a malformed target or Host header"));
      log?.({ time: new Date().toISOString(), level: "error", error: String((err as Error)?.stack ?? err) });
      return envelopeResponse(new MmError("INTERNAL_ERROR", "An internal error occurred."));
    },
  });
  const server = createServer(
    {
      // Node's own check answers an empty 400; the listener below answers with the envelope.
      requireHostHeader: false,
      headersTimeout: timeouts.headersMs,
      requestTimeout: Math.max(timeouts.requestMs, timeouts.headersMs),
      keepAliveTimeout: timeouts.keepAliveMs,
      // How often Node looks for connections past those timeouts (default 30 s, which let a silent
      // connection live 30 s past a 10 s header timeout).
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersMs / 2),
    },
    (req, res) => {
      if (req.headers.host === undefined && req.httpVersion !== "1.0") {
        res.shouldKeepAlive = false;
        return writeEnvelope(res, validationError("Host", "is required in HTTP/1.1"));
      }
      void listener(req, res);
    },
  );
  // No proxying here: CONNECT would otherwise get no answer at all.
  server.on("connect", (_req, socket: Duplex) => {
    socket.on("error", () => socket.destroy());
    socket.end(rawEnvelope(new MmError("METHOD_NOT_ALLOWED", "CONNECT is not supported: mm serve is not a proxy.")));
  });
  // Requests Node refuses before the app sees them (oversized headers, garbage, timeouts) still get the envelope.
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable) return socket.destroy();
    const answer =
      err.code === "HPE_HEADER_OVERFLOW"
        ? rawEnvelope(new MmError("PAYLOAD_TOO_LARGE", "The request headers (or URL) are too large."), 431)
        : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? rawEnvelope(new MmError("REQUEST_TIMEOUT", `The request was not received in time: headers must arrive within ${timeouts.headersMs / 1000} s and the whole request within ${Math.max(timeouts.requestMs, timeouts.headersMs) / 1000} s.`))
          : rawEnvelope(validationError("request", "could not be parsed"));
    // A malformed request pipelined behind a good one: the good one is answered first, then this.
    // (If the request in flight is the malformed one, its body is what failed to parse: answer now.)
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
    if (!inFlight || inFlight.writableFinished || !inFlight.req?.complete) return socket.end(answer);
    if (inFlight.headersSent && err.code === "ERR_HTTP_REQUEST_TIMEOUT") return socket.destroy();
    inFlight.once("finish", () => socket.writable && socket.end(answer));
    inFlight.once("close", () => socket.writable && socket.end(answer));
  });
  // Bind before loading the model: a port in use is known in milliseconds, not after a second of
  // model load. Requests that arrive while the model loads wait for it.
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    await ctx.close();
    await shared.close();
    throw listenError(err as NodeJS.ErrnoException, host, port);
  }
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${(server.address() as AddressInfo).port}`;
  options.onBound?.(url);
  if (options.warm !== false) {
    const embedder = await ctx.embedder();
    await (embedder.serve ? embedder.serve() : embedder.embed(["warm up"]));
  }
  // Compaction and index upkeep in the background: the write path only commits.
  const upkeep = startUpkeep(ctx, {
    onPass: (pass) => log?.({ time: new Date().toISOString(), event: "maintenance", ms: pass.ms, work: pass.work, conflicts: pass.conflicts }),
    // A pass that failed because of the object store marks it down as a request would (storage/outage.ts).
    onError: (err) => log?.({ time: new Date().toISOString(), event: "maintenance-error", message: errorDetail(ctx.store.storeFailed(err)) }),
  });
  // MM_DEBUG_MEMORY_MS=N: a `memory` log line every N ms (process.memoryUsage and LanceDB's cache), for soaks.
  const memoryEveryMs = Number(options.env?.MM_DEBUG_MEMORY_MS ?? 0);
  const memoryTimer =
    log && memoryEveryMs > 0
      ? setInterval(() => log({ time: new Date().toISOString(), event: "memory", ...memorySample(ctx.store.cacheBytes()), lanceCacheItems: ctx.store.cacheItems() }), memoryEveryMs).unref()
      : undefined;
  const boundPort = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url,
    port: boundPort,
    timeouts,
    async accounts() {
      const [{ items }, keys] = await Promise.all([accounts.list(), accounts.listKeys()]);
      return Promise.all(
        items.map(async (a) => ({
          id: a.id,
          name: a.name,
          plan: a.plan,
          memories: await ctx.store.countMemories({ accountId: a.id }),
          keys: keys.items.filter((k) => k.accountId === a.id && !k.revoked).length,
        })),
      );
    },
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        clearInterval(memoryTimer);
        await upkeep.maintainer.stop();
        await ctx.close();
        await shared.close();
      })();
      return closing;
    },
  };
}

/** What the `memory` debug log line reports, in MB (1 decimal). */
export function memorySample(lanceCacheBytes: number): Record<string, number> {
  const m = process.memoryUsage();
  const mb = (n: number) => Math.round(n / 104_857.6) / 10;
  return { rssMb: mb(m.rss), heapTotalMb: mb(m.heapTotal), heapUsedMb: mb(m.heapUsed), externalMb: mb(m.external), arrayBuffersMb: mb(m.arrayBuffers), lanceCacheMb: mb(lanceCacheBytes) };
}

/** The values of the environment variables an embedder config names for its secrets (openai's apiKeyEnv). */
function embedderSecrets(config: EmbedderConfig, env: Env): string[] {
  const name = config.options?.apiKeyEnv ?? (config.provider === "openai" ? "OPENAI_API_KEY" : undefined);
  const value = typeof name === "string" ? env[name]?.trim() : undefined;
  return value ? [value] : [];
}

function envelopeResponse(err: MmError): Response {
  return new Response(JSON.stringify(err.toBody()), { status: err.status, headers: { "Content-Type": "application/json", Connection: "close" } });
}

function writeEnvelope(res: ServerResponse, err: MmError): void {
  const body = JSON.stringify(err.toBody());
  res.writeHead(err.status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body), Connection: "close" });
  res.end(body);
}

/** A whole HTTP/1.1 answer as text, for sockets Node's HTTP layer has given up on. */
function rawEnvelope(err: MmError, status = err.status): string {
  const body = JSON.stringify(err.toBody());
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
