import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll } from "vitest";
import { startAzurite, type Azurite } from "./azurite.js";
import { startRedis, type TestRedis } from "./redis.js";
import { json, runMm, spawnMm } from "./spawn-mm.js";

export interface Replica {
  child: ChildProcess;
  url: string;
  /** Every line it wrote to stderr (JSON log lines, piped). */
  logs: string[];
}

/** `mm serve --redis` on the store, spawned as a user would; resolves once it listens. */
export async function replica(store: string, redisUrl: string, args: string[] = [], env: Record<string, string> = {}): Promise<Replica> {
  const child = spawnMm(["serve", "--port", "0", "--redis", redisUrl, ...args], { store, env });
  const logs: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`mm serve exited ${code}: ${logs.join("\n")}`)));
    createInterface({ input: child.stderr! }).on("line", (line) => {
      logs.push(line);
      if (line.includes('"event":"listening"')) resolve(JSON.parse(line).url);
    });
  });
  child.stdout!.resume();
  return { child, url, logs };
}

/** Resolves when the process has exited, also if it already had ('exit' is emitted once). */
export function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())));
}

export interface AzuriteCluster {
  azurite: Azurite;
  redis: TestRedis;
  /** The store's URI, and an API key of the default account. */
  store: string;
  key: string;
  replicas: Replica[];
}

/**
 * For a test file: Azurite, Redis, a store on them and `count` replicas of `mm serve --redis`, each
 * with a state directory of its own (as on machines of their own) and rate limits out of the way;
 * `replicaEnv` is added to each replica's environment. Stopped after the file's tests.
 */
export function useAzuriteCluster(options: { count?: number; replicaEnv?: Record<string, string> } = {}): () => AzuriteCluster {
  let cluster: AzuriteCluster | undefined;
  let root: string | undefined;
  beforeAll(async () => {
    const [azurite, redis] = await Promise.all([startAzurite(), startRedis()]);
    root = await mkdtemp(join(tmpdir(), "mm-cluster-"));
    const store = `az://${await azurite.container("cluster")}/store`;
    const env = { ...azurite.env, XDG_STATE_HOME: join(root, "state-cli"), MM_REDIS_URL: redis.url };
    const init = await runMm(["init"], { store, env });
    if (init.code !== 0) throw new Error(`mm init failed: ${init.stderr}`);
    const key = json(await runMm(["keys", "create", "--account", "default", "--name", "cluster"], { store, env })).key;
    const rates = ["--rate-read", "100000", "--rate-write", "100000", "--rate-search", "100000"];
    const replicas = await Promise.all(
      Array.from({ length: options.count ?? 2 }, (_, i) => replica(store, redis.url, rates, { ...azurite.env, XDG_STATE_HOME: join(root!, `state-${i}`), ...options.replicaEnv })),
    );
    cluster = { azurite, redis, store, key, replicas };
  }, 120_000);
  afterAll(async () => {
    for (const r of cluster?.replicas ?? []) {
      const gone = exited(r.child);
      r.child.kill("SIGTERM");
      await gone;
    }
    await cluster?.redis.close();
    await cluster?.azurite.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });
  return () => cluster!;
}
