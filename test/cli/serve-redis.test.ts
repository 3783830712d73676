import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisLedger } from "../../src/limits/ledger-redis.js";
import { RedisConnection } from "../../src/storage/shared/redis.js";
import { json, runMm } from "../helpers/spawn-mm.js";
import { exited, replica, type Replica } from "../helpers/serve-replica.js";
import { startAzurite } from "../helpers/azurite.js";
import { freePort, startRedis, type TestRedis } from "../helpers/redis.js";
import { useTempDirs } from "../helpers/temp.js";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";

const tempDir = useTempDirs();

const api = (url: string, key: string, path: string, init: RequestInit = {}) =>
  fetch(url + path, { ...init, headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...(init.headers as object) } });

const create = (url: string, key: string, content: string) => api(url, key, "/v1/memories", { method: "POST", body: JSON.stringify({ content, userId: "u1" }) });

/** The search limit is low so the shared-rate test reaches it; the other tests don't search. */
const SERVE_ARGS = ["--rate-read", "1000", "--rate-write", "1000", "--rate-search", "7"];

/**
 * A GET of the id, retried for up to READ_BOUND_MS: a write acknowledged by one replica is
 * readable on another once that one's store handle has caught up (docs/scale-out.md).
 */
const READ_BOUND_MS = 5_000;
async function readable(url: string, key: string, id: string): Promise<Response> {
  const deadline = Date.now() + READ_BOUND_MS;
  for (;;) {
    const res = await api(url, key, `/v1/memories/${id}`);
    await res.arrayBuffer();
    if (res.status !== 404 || Date.now() > deadline) return res;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until the current minute has at least `seconds` left, so a rate window doesn't turn mid-test. */
async function roomInMinute(seconds: number): Promise<void> {
  const left = 60 - (Date.now() % 60_000) / 1000;
  if (left < seconds) await new Promise((r) => setTimeout(r, left * 1000 + 50));
}

interface StoreKind {
  name: string;
  /** The store for this run, the environment every command gets, and each replica's own. */
  setup(root: string): Promise<{ store: string; env: Record<string, string>; replicaEnv(i: number): Record<string, string>; stop(): Promise<void> }>;
}

const KINDS: StoreKind[] = [
  {
    name: "one local store",
    async setup(root) {
      return { store: join(root, "store"), env: {}, replicaEnv: () => ({}), stop: async () => undefined };
    },
  },
  {
    // Each replica and the CLI have a state directory of their own, as on machines of their own:
    // whatever they agree on, they agree on through Redis and the object store alone.
    name: "one Azurite store, each replica with its own state directory",
    async setup(root) {
      const azurite = await startAzurite();
      const container = await azurite.container("replicas");
      return {
        store: `az://${container}/store`,
        env: { ...azurite.env, XDG_STATE_HOME: join(root, "state-cli") },
        replicaEnv: (i) => ({ ...azurite.env, XDG_STATE_HOME: join(root, `state-${i}`) }),
        stop: () => azurite.stop(),
      };
    },
  },
];

describe.each(KINDS)("mm serve replicas on $name and one Redis (spawned, real model)", (kind) => {
  let redis: TestRedis;
  let root: string;
  let store: string;
  let env: Record<string, string>;
  let replicaEnv: (i: number) => Record<string, string>;
  let stopStore: () => Promise<void>;
  let replicas: Replica[];
  /** A third replica, started with the others (a start under load can take a while), for the kill -9 test. */
  let victim: Replica | undefined;
  let keys: Record<string, string>;
  const mm = (args: string[], extra: Record<string, string> = {}) => runMm(args, { store, env: { ...env, ...extra } });

  beforeAll(async () => {
    redis = await startRedis();
    root = await mkdtemp(join(tmpdir(), "mm-replicas-"));
    ({ store, env, replicaEnv, stop: stopStore } = await kind.setup(root));
    // Every command names the replicas' Redis, as docs/redis.md says: it counts the quota there,
    // and a store served with Redis refuses a command without it (on an object store, a key made
    // or revoked is announced there too; a local store's replicas see its files change instead).
    env.MM_REDIS_URL = redis.url;
    expect((await mm(["init"])).code).toBe(0);
    keys = {};
    for (const [name, plan] of [["quota", "free"], ["rate", "enterprise"], ["revoke", "enterprise"], ["outage", "enterprise"], ["writers", "enterprise"]]) {
      expect((await mm(["accounts", "create", name, "--plan", plan])).code).toBe(0);
      keys[name] = json(await mm(["keys", "create", "--account", name, "--name", "k"])).key;
    }
    [victim, ...replicas] = await Promise.all([2, 0, 1].map((i) => replica(store, redis.url, SERVE_ARGS, replicaEnv(i))));
  }, 120_000);

  afterAll(async () => {
    for (const r of [...(replicas ?? []), ...(victim ? [victim] : [])]) {
      const gone = exited(r.child);
      r.child.kill("SIGTERM");
      await gone;
    }
    await redis?.close();
    await stopStore?.();
    await rm(root, { recursive: true, force: true });
  });

  it("checks Redis's persistence at start and says so", () => {
    for (const r of replicas) {
      const entry = r.logs.map((l) => JSON.parse(l)).find((e) => e.event === "redis-persistence");
      expect(entry).toMatchObject({ appendonly: "yes", appendfsync: "everysec", redis: redis.url });
    }
  });

  it("shares a rate limit: the N+1th request of a minute across both replicas gets 429", async () => {
    await roomInMinute(15);
    const statuses: number[] = [];
    const remaining: string[] = [];
    for (let i = 0; i < 9; i++) {
      const res = await api(replicas[i % 2].url, keys.rate, "/v1/memories/search", { method: "POST", body: JSON.stringify({ query: "anything", userId: "u1" }) });
      statuses.push(res.status);
      remaining.push(res.headers.get("X-RateLimit-Remaining")!);
      if (res.status === 429) expect(Number(res.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
      await res.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 429, 429]);
    expect(remaining).toEqual(["6", "5", "4", "3", "2", "1", "0", "0", "0"]);
  });

  it("stops the quota exactly at its limit across replicas: used equals the 201s", async () => {
    const accountId = json(await mm(["accounts", "list"])).items.find((a: { name: string }) => a.name === "quota").id;
    // The account has used 990 of its 1,000 this month (counted where the replicas count).
    const connection = await RedisConnection.open({ url: redis.url, store });
    await new RedisLedger(connection).charge(accountId, null, "write", 990);
    await connection.close();
    const clients = Array.from({ length: 12 }, (_, c) => c);
    const statuses = (
      await Promise.all(
        clients.map(async (c) => {
          const out: number[] = [];
          for (let i = 0; i < 3; i++) {
            const res = await create(replicas[(c + i) % 2].url, keys.quota, `client ${c} note ${i} about the quota edge`);
            out.push(res.status);
            await res.arrayBuffer();
          }
          return out;
        }),
      )
    ).flat();
    const created = statuses.filter((s) => s === 201).length;
    expect(created).toBe(10);
    expect(statuses.filter((s) => s === 403)).toHaveLength(36 - 10);
    // The CLI with $MM_REDIS_URL reads the replicas' ledger; the memories stored match it.
    const usage = json(await mm(["usage", "--account", "quota"], { MM_REDIS_URL: redis.url }));
    expect(usage).toMatchObject({ used: 1000, limit: 1000 });
    const list = await api(replicas[0].url, keys.quota, "/v1/memories?userId=u1");
    expect(list.status).toBe(403);
    // An export isn't an operation the quota counts (a list now is: 403), and it reads what is stored.
    const exported = await mm(["export", "--account", "quota"]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout.split("\n").filter((l) => l.includes('"kind":"memory"'))).toHaveLength(10);
  });

  it("stores every acknowledged create once, with 12 clients spread across the replicas, and each is readable by id on every replica", async () => {
    const acked = (
      await Promise.all(
        Array.from({ length: 12 }, async (_, c) => {
          const ids: string[] = [];
          for (let i = 0; i < 4; i++) {
            const res = await create(replicas[(c + i) % replicas.length].url, keys.writers, `client ${c} wrote note ${i} about the shared store`);
            expect(res.status).toBe(201);
            ids.push(((await res.json()) as { id: string }).id);
          }
          return ids;
        }),
      )
    ).flat();
    expect(new Set(acked).size).toBe(48);
    for (const r of replicas) {
      for (const id of acked) expect((await readable(r.url, keys.writers, id)).status).toBe(200);
    }
    const listed = json(await mm(["memories", "list", "--account", "writers", "--limit", "100", "--json"], { MM_REDIS_URL: redis.url }));
    expect(listed.pagination.total).toBe(48);
    expect(new Set(listed.items.map((m: { id: string }) => m.id))).toEqual(new Set(acked));
  });

  it("loses nothing a replica acknowledged when it is killed with -9 mid-write, and the others keep serving", async () => {
    const dying = victim!;
    const acked: string[] = [];
    const other: string[] = [];
    let stop = false;
    const writers = Array.from({ length: 4 }, async (_, c) => {
      for (let i = 0; !stop; i++) {
        const res = await create(dying.url, keys.writers, `client ${c} wrote crash note ${i}`).catch(() => undefined);
        if (!res) return;
        if (res.status === 201) acked.push(((await res.json()) as { id: string }).id);
        else other.push(`${res.status} ${await res.text()}`);
      }
    });
    const deadline = Date.now() + 60_000;
    while (acked.length < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(other).toEqual([]);
    expect(acked.length).toBeGreaterThanOrEqual(6);
    // Listened for before the kill: once the writers are done it may have exited long ago.
    const gone = exited(dying.child);
    dying.child.kill("SIGKILL");
    stop = true;
    await Promise.all(writers);
    await gone;
    victim = undefined;
    for (const [i, r] of replicas.entries()) {
      for (const id of acked) expect((await readable(r.url, keys.writers, id)).status).toBe(200);
      const res = await create(r.url, keys.writers, `written through replica ${i} after another died`);
      expect(res.status).toBe(201);
      await res.arrayBuffer();
    }
  }, 120_000);

  it("refuses a key revoked with mm keys revoke on every replica, at its next request", async () => {
    const second = json(await mm(["keys", "create", "--account", "revoke", "--name", "second"]));
    for (const r of replicas) expect((await api(r.url, second.key, "/v1/memories")).status).toBe(200);
    expect(json(await mm(["keys", "revoke", second.id], { MM_REDIS_URL: redis.url })).revoked).toBe(true);
    for (const r of replicas) {
      const res = await api(r.url, second.key, "/v1/memories");
      expect(res.status).toBe(401);
    }
    // The account's other key still works.
    expect((await api(replicas[1].url, keys.revoke, "/v1/memories")).status).toBe(200);
  });

  it("answers 503 while Redis is down (killed with -9) (at once, no hang), recovers by itself when it is back, and logs both", async () => {
    const before = await create(replicas[0].url, keys.outage, "written before the outage");
    expect(before.status).toBe(201);
    // A crash, not a shutdown: what the append-only file holds is all there is.
    await redis.kill();
    for (const [i, r] of replicas.entries()) {
      const started = Date.now();
      const res = await create(r.url, keys.outage, `written through replica ${i} during the outage`);
      const body = await res.json();
      expect(res.status).toBe(503);
      expect(body.error.code).toBe("SERVICE_UNAVAILABLE");
      expect([res.headers.get("retry-after"), body.error.retryAfter]).toEqual(["2", 2]);
      expect(JSON.stringify(body)).not.toMatch(/redis|127\.0\.0\.1|ECONNREFUSED/i);
      expect(Date.now() - started).toBeLessThan(3_000);
    }
    await redis.start();
    for (const [i, r] of replicas.entries()) {
      const deadline = Date.now() + 15_000;
      let status = 0;
      while (Date.now() < deadline) {
        const res = await create(r.url, keys.outage, `written through replica ${i} after the outage`);
        status = res.status;
        await res.arrayBuffer();
        if (status === 201) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status).toBe(201);
      const events = r.logs.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l).event);
      expect(events).toContain("redis-lost");
      expect(events).toContain("redis-back");
    }
    // The counts made before Redis went away survived its restart, and the 503s were not billed.
    expect(json(await mm(["usage", "--account", "outage"], { MM_REDIS_URL: redis.url })).used).toBe(3);
    // Nothing was stored while the quota couldn't be counted.
    const list = json(await mm(["memories", "list", "--account", "outage", "--json"]));
    expect(list.items.map((m: { content: string }) => m.content).sort()).toEqual([
      "written before the outage",
      "written through replica 0 after the outage",
      "written through replica 1 after the outage",
    ]);
  });
});

describe("mm serve --redis, refused at start", () => {
  it("a URL that isn't redis://, and a Redis that doesn't answer: a clear message, no stack, no password, exit non-zero", async () => {
    const store = join(await tempDir(), "store");
    expect((await runMm(["init"], { store })).code).toBe(0);
    const bad = await runMm(["serve", "--port", "0", "--no-warm", "--redis", "http://127.0.0.1:6379"], { store });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--redis");
    expect(bad.stderr).not.toMatch(/\n\s+at /);
    const port = await freePort();
    const down = await runMm(["serve", "--port", "0", "--no-warm", "--redis", `redis://:hunter2-secret@127.0.0.1:${port}`], { store });
    expect(down.code).toBe(6);
    expect(down.stderr).toContain(`redis://127.0.0.1:${port}`);
    expect(down.stderr).not.toContain("hunter2");
    expect(down.stderr).not.toMatch(/\n\s+at /);
    const fromEnv = await runMm(["serve", "--port", "0", "--no-warm"], { store, env: { MM_REDIS_URL: "ftp://nowhere" } });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain("MM_REDIS_URL");
    // Other commands count where the replicas count: with that Redis down they say so, and store nothing.
    for (const args of [["usage"], ["memories", "add", "not stored", "--user", "u1"]]) {
      const r = await runMm(args, { store, env: { MM_REDIS_URL: `redis://:hunter2-secret@127.0.0.1:${port}` } });
      expect(r.code, args.join(" ")).toBe(6);
      expect(r.stderr).toContain("MM_REDIS_URL");
      expect(r.stderr).not.toContain("hunter2");
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    expect(json(await runMm(["memories", "list", "--json"], { store })).pagination.total).toBe(0);
  });
});
