import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { Accounts } from "../core/accounts.js";
import { crashHooks, openContext } from "../core/context.js";
import type { Embedder, Env } from "../embedder/index.js";
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
  /** Stops accepting connections, lets in-flight requests finish, then closes the store. */
  close(): Promise<void>;
}

/** Starts the /v1 API on the store. Loopback by default: exposing it is an explicit choice. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const clock = options.clock ?? (() => new Date());
  const ctx = await openContext({ storeDir: options.storeDir, env: options.env, embedder: options.embedder, clock, hooks: crashHooks(options.env?.MM_TEST_CRASH_AT) });
  const configured = ctx.store.config.server ?? {};
  if (options.warm !== false) await (await ctx.embedder()).embed(["warm up"]);
  const app = createApp({
    ctx,
    accounts: new Accounts(options.storeDir, clock),
    ledger: new QuotaLedger(join(options.storeDir, "ledger"), clock),
    limiter: new RateLimiter({ ...DEFAULT_RATE_LIMITS, ...configured.rateLimits, ...options.rateLimits }, () => clock().getTime()),
    bodyLimitBytes: options.bodyLimitBytes ?? configured.bodyLimitBytes ?? DEFAULT_BODY_LIMIT,
    log: options.log,
  });
  const host = options.host ?? configured.host ?? "127.0.0.1";
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port: options.port ?? configured.port ?? 8080 }, () => resolve(s as Server)) as Server;
    s.once("error", reject);
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
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    close() {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        await ctx.close();
      })();
      return closing;
    },
  };
}
