import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { Accounts } from "../core/accounts.js";
import { openContext } from "../core/context.js";
import { startUpkeep } from "../core/upkeep.js";
import type { Embedder, Env } from "../embedder/index.js";
import { MmError } from "../errors.js";
import { QuotaLedger } from "../limits/ledger.js";
import { DEFAULT_RATE_LIMITS, RateLimiter, type RateLimits } from "../limits/rate-limiter.js";
import { createApp, DEFAULT_BODY_LIMIT } from "./app.js";

export interface ServerOptions {
  storeDir: string;
  host?: string;
  port?: number;
  env?: Env;
  rateLimits?: Partial<RateLimits>;
  bodyLimitBytes?: number;
  /** Load the model before listening, so the first search doesn't pay for it (default true). */
  warm?: boolean;
  /** Tests: an embedder in place of the store's model, and one clock for data, quota and rate windows. */
  embedder?: Embedder;
  clock?: () => Date;
  log?: (entry: Record<string, unknown>) => void;
}

export interface RunningServer {
  url: string;
  port: number;
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
  const ctx = await openContext({ storeDir: options.storeDir, env: options.env, embedder: options.embedder, clock });
  const configured = ctx.store.config.server ?? {};
  const accounts = new Accounts(options.storeDir, clock);
  const app = createApp({
    ctx,
    accounts,
    ledger: new QuotaLedger(join(options.storeDir, "ledger"), clock),
    limiter: new RateLimiter({ ...DEFAULT_RATE_LIMITS, ...configured.rateLimits, ...options.rateLimits }, () => clock().getTime()),
    bodyLimitBytes: options.bodyLimitBytes ?? configured.bodyLimitBytes ?? DEFAULT_BODY_LIMIT,
    log: options.log,
  });
  const host = options.host ?? configured.host ?? "127.0.0.1";
  const port = options.port ?? configured.port ?? 8080;
  // Bind before loading the model: a port in use is known in milliseconds, not after a second of
  // model load. Requests that arrive while the model loads wait for it.
  let server: Server;
  try {
    server = await new Promise<Server>((resolve, reject) => {
      const s = serve({ fetch: app.fetch, hostname: host, port }, () => resolve(s as Server)) as Server;
      s.once("error", reject);
    });
  } catch (err) {
    await ctx.close();
    throw listenError(err as NodeJS.ErrnoException, host, port);
  }
  if (options.warm !== false) await (await ctx.embedder()).embed(["warm up"]);
  // Compaction and index upkeep in the background: the write path only commits.
  const upkeep = startUpkeep(ctx, {
    onPass: (pass) => options.log?.({ time: new Date().toISOString(), event: "maintenance", ms: pass.ms, work: pass.work, conflicts: pass.conflicts }),
    onError: (err) => options.log?.({ time: new Date().toISOString(), event: "maintenance-error", message: err instanceof Error ? err.message : String(err) }),
  });
  // Requests Node refuses before the app sees them (oversized headers, garbage) still get the envelope.
  server.removeAllListeners("clientError");
  server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const tooBig = err.code === "HPE_HEADER_OVERFLOW";
    const body = JSON.stringify({
      error: tooBig
        ? { code: "PAYLOAD_TOO_LARGE", message: "The request headers (or URL) are too large." }
        : { code: "VALIDATION_ERROR", message: "Malformed HTTP request.", details: [{ field: "request", message: "could not be parsed" }] },
    });
    socket.end(`HTTP/1.1 ${tooBig ? "431 Request Header Fields Too Large" : "400 Bad Request"}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  const boundPort = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${boundPort}`,
    port: boundPort,
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
        await upkeep.maintainer.stop();
        await ctx.close();
      })();
      return closing;
    },
  };
}
