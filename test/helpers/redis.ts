import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { RedisConnection } from "../../src/storage/shared/redis.js";
import { freePort } from "./doc-examples.js";

export { freePort };

export const REDIS_SERVER = process.env.MM_TEST_REDIS_SERVER ?? "/usr/bin/redis-server";

export interface TestRedis {
  url: string;
  port: number;
  dir: string;
  /** Stops redis-server (SIGTERM: it writes its AOF and exits) and waits for it to exit. */
  stop(): Promise<void>;
  /** kill -9: no shutdown, what the AOF already has is all there is. */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory (so from the same AOF). */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
}

/**
 * A real redis-server on a free port, with its own temp directory and the persistence mm expects
 * (append-only file, fsync every second; no RDB snapshots), answering PING before this returns.
 */
export async function startRedis(extraArgs: string[] = []): Promise<TestRedis> {
  const dir = await mkdtemp(join(tmpdir(), "mm-redis-"));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    const proc = spawn(REDIS_SERVER, ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "yes", "--appendfsync", "everysec", ...extraArgs], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = proc;
    let output = "";
    proc.stdout!.on("data", (d) => (output += d));
    proc.stderr!.on("data", (d) => (output += d));
    try {
      await waitForPing(port, proc, () => output);
    } catch (err) {
      proc.kill("SIGKILL");
      throw err;
    }
  };
  const stopWith = async (signal: NodeJS.Signals) => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((resolve) => proc.once("exit", resolve));
    proc.kill(signal);
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    start,
    stop: () => stopWith("SIGTERM"),
    kill: () => stopWith("SIGKILL"),
    async close() {
      await stopWith("SIGTERM");
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPing(port: number, proc: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`redis-server exited (${proc.exitCode}):\n${output()}`);
    // +PONG, or -NOAUTH from a server that wants its password: either way it answers.
    if (/^(\+PONG|-NOAUTH)/.test(await rawPing(port))) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis-server did not answer PING on port ${port} within 10 s:\n${output()}`);
}

function rawPing(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1", () => socket.write("PING\r\n"));
    socket.setTimeout(1_000, () => socket.destroy());
    socket.once("data", (d) => {
      resolve(d.toString());
      socket.destroy();
    });
    socket.once("error", () => resolve(""));
    socket.once("close", () => resolve(""));
  });
}

/**
 * One redis-server for a test file, started before its tests and stopped after them, and
 * connections to it (closed after the tests) as a replica of `store` would open them.
 */
export function useRedis(): { redis: () => TestRedis; connection: (store: string, url?: string) => Promise<RedisConnection> } {
  let redis: TestRedis | undefined;
  const connections: RedisConnection[] = [];
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await Promise.all(connections.map((c) => c.close()));
    await redis?.close();
  });
  return {
    redis: () => redis!,
    async connection(store, url) {
      const c = await RedisConnection.open({ url: url ?? redis!.url, store });
      connections.push(c);
      return c;
    },
  };
}
