import type { Command } from "commander";
import { stopCodeCache } from "../../code-cache.js";
import { MmError } from "../../errors.js";
import { coordinationDirOf, isObjectStore, locateStore, missingStore, storeStatus } from "../../core/store-location.js";
import type { CliApp } from "../main.js";
import { count } from "../output.js";
import { warnSecretFlag } from "../secret-flags.js";

interface ServeFlags {
  host?: string;
  port?: string;
  rateRead?: string;
  rateWrite?: string;
  rateSearch?: string;
  bodyLimit?: string;
  redis?: string;
  warm: boolean;
}

export function registerServe(program: Command, app: CliApp): void {
  program
    .command("serve")
    .description("serve the /v1 HTTP API on this store (API keys: mm keys create)")
    .option("--host <host>", "interface to bind (default 127.0.0.1: loopback unless you choose otherwise)")
    .option("--port <port>", "port; 0 picks a free one (default 8080)")
    .option("--rate-read <n>", "GET requests per key per minute (default 100)")
    .option("--rate-write <n>", "create, update and delete requests per key per minute (default 50)")
    .option("--rate-search <n>", "searches per key per minute (default 30)")
    .option("--body-limit <bytes>", "largest request body accepted (default 1 MiB)")
    .option("--no-warm", "don't load the embedding model before listening")
    .option("--redis <url>", "replicas of this store agree through this Redis: rate limits, quota, locks, revoked keys (default $MM_REDIS_URL; see docs/redis.md)")
    .addHelpText("after", "\nDefaults can also live in <store>/config.json under \"server\": {host, port, rateLimits: {read, write, search}, bodyLimitBytes, headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs}.\n\nExample:\n  mm serve --port 8080 --rate-search 120\n  curl -H \"Authorization: Bearer $KEY\" http://127.0.0.1:8080/v1/memories")
    .action(async (flags: ServeFlags, cmd: Command) => {
      // A server pays its start-up once; with the model and the store compiled through the code
      // cache's hook, it searched about 4 ms slower (see stopCodeCache).
      stopCodeCache();
      const { io, output } = app;
      const location = locateStore((cmd.optsWithGlobals() as { store?: string }).store, io.env);
      if ((await storeStatus(location)) === "missing") throw missingStore(location);
      const storeDir = location.dir;
      const int = (name: string, v: string | undefined, min: number) => {
        if (v === undefined) return undefined;
        const n = Number(v);
        if (!Number.isInteger(n) || n < min) {
          throw new MmError("VALIDATION_ERROR", `--${name} must be an integer of at least ${min}.`, { details: [{ field: name, message: `must be an integer of at least ${min}` }] });
        }
        return n;
      };
      const port = int("port", flags.port, 0);
      if (port !== undefined && port > 65535) throw new MmError("VALIDATION_ERROR", "--port must be at most 65535.", { details: [{ field: "port", message: "must be at most 65535" }] });
      const rateLimits = Object.fromEntries(
        (
          [
            ["read", int("rate-read", flags.rateRead, 1)],
            ["write", int("rate-write", flags.rateWrite, 1)],
            ["search", int("rate-search", flags.rateSearch, 1)],
          ] as const
        ).filter(([, v]) => v !== undefined),
      );
      // On a terminal, a person reads the log: one readable line an event. Piped, JSON lines.
      const human = output.isTable && Boolean(io.stderr.isTTY);
      const log = (entry: Record<string, unknown>) => {
        const line = human ? readableLog(entry) : JSON.stringify(entry);
        if (line !== undefined) io.stderr.write(line + "\n");
      };
      const { startServer } = await import("../../http/server.js");
      const { recordRunningServer } = await import("../../core/console-access.js");
      // `mm console` finds this server's address (its port) in the store while it runs.
      let forget: (() => Promise<void>) | undefined;
      const server = await startServer({
        onBound: (url) => void (forget = recordRunningServer(storeDir, url, process.pid, io.env)),
        storeDir,
        host: flags.host,
        port,
        env: io.env,
        rateLimits,
        bodyLimitBytes: int("body-limit", flags.bodyLimit, 1),
        ...redisOption(flags.redis, app),
        warm: flags.warm,
        log,
      });
      // The shutdown handler goes in before "listening" is announced: a client that signals as
      // soon as it sees the announcement must get a graceful stop, not Node's default kill.
      const stopped = new Promise<void>((resolve) => {
        const release = io.onShutdown?.(async (signal) => {
          log({ time: new Date().toISOString(), event: "shutdown", signal });
          await forget?.();
          await server.close();
          release?.();
          resolve();
        });
        if (!io.onShutdown) resolve();
      });
      const accounts = await server.accounts();
      // An object store without Redis is coordinated through this machine's files: say so, as the one limit of this setup.
      const coordination = isObjectStore(storeDir) ? coordinationDirOf(storeDir, io.env) : undefined;
      log({ time: new Date().toISOString(), event: "listening", url: server.url, store: storeDir, ...(coordination ? { coordination } : {}), accounts });
      if (output.isTable) {
        const { bold, dim } = output.styles;
        output.note(`mm serve: listening on ${bold(server.url)} for the store ${storeDir}`);
        if (coordination) output.note(dim(`Locks, quotas and rate limits are kept in ${coordination}: replicas on this machine only (more machines need Redis).`));
        output.note("Each API key sees only its own account's data:");
        for (const a of accounts) {
          const keys = a.keys ? `${a.keys} key${a.keys === 1 ? "" : "s"}` : "no key yet: mm keys create --account " + a.name + " --name …";
          output.note(`  ${a.name.padEnd(12)} ${dim(`${count(a.memories)} memor${a.memories === 1 ? "y" : "ies"}, ${keys}`)}`);
        }
        output.note(dim("Ctrl-C stops."));
      }
      await stopped;
    });
}

/** `--redis`, else `$MM_REDIS_URL`, and which one it was (messages name it). An empty value means none. */
function redisOption(flag: string | undefined, app: CliApp): { redisUrl?: string; redisSource?: string } {
  if (flag !== undefined) {
    if (!flag.trim()) throw new MmError("VALIDATION_ERROR", "--redis needs a URL such as redis://127.0.0.1:6379.", { details: [{ field: "redis", message: "is empty" }] });
    if (/^rediss?:\/\/[^/@]*:[^/@]*@/i.test(flag.trim())) warnSecretFlag(app, "--redis with a password", "set MM_REDIS_URL instead");
    return { redisUrl: flag.trim(), redisSource: "--redis" };
  }
  const fromEnv = app.io.env.MM_REDIS_URL?.trim();
  return fromEnv ? { redisUrl: fromEnv, redisSource: "MM_REDIS_URL" } : {};
}

/** A log entry as a line for a person: `19:20:01  GET /v1/memories  200  3.1 ms  acct_…`. */
function readableLog(entry: Record<string, unknown>): string | undefined {
  const { time, event, level, method, path, status, ms, account, keyId: _keyId, ...rest } = entry;
  if (event === "listening") return undefined; // the banner says it
  const at = typeof time === "string" ? time.slice(11, 19) : new Date().toISOString().slice(11, 19);
  if (method) return `${at}  ${String(method)} ${String(path)}  ${String(status)}  ${String(ms)} ms${account ? `  ${String(account)}` : ""}`;
  const what = [event ?? level ?? "log", path].filter(Boolean).join(" ");
  const details = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v.split("\n")[0] : JSON.stringify(v)}`)
    .join(" ");
  return `${at}  ${String(what)}${details ? `  ${details}` : ""}`;
}
