import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { useAzurite } from "../helpers/azurite.js";
import { useRedis } from "../helpers/redis.js";
import { collect, json, runMm, spawnMm, type MmResult } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const azurite = useAzurite();
const { redis } = useRedis();

function ok(r: MmResult): MmResult {
  expect(r.code, r.stderr).toBe(0);
  return r;
}

function refusedForRedis(r: MmResult, url: string): void {
  expect(r.code, r.stdout).toBe(6);
  expect(r.stderr).not.toMatch(/\n\s+at /);
  const { error } = JSON.parse(r.stderr.trim().split("\n").pop()!);
  expect(error.code).toBe("STORE_ERROR");
  expect(error.message).toContain(`coordinated by Redis (${url}`);
  expect(error.message).toContain("Set MM_REDIS_URL");
  expect(error.message).toContain("--redis");
}

describe("an object store served with Redis refuses processes without it (spawned mm, real Azurite and redis-server)", () => {
  it("mm serve --redis records its Redis in the store; commands without MM_REDIS_URL are refused until `mm store detach-redis`", async () => {
    const state = await tempDir();
    const store = `az://${await azurite().container()}/coordinated`;
    const env = { ...azurite().env, XDG_STATE_HOME: state };
    const mm = (args: string[], extra: Record<string, string> = {}) => runMm([...args, "--json"], { store, env: { ...env, ...extra } });
    const url = `redis://127.0.0.1:${redis().port}`;
    ok(await mm(["init"]));
    const before = json(ok(await mm(["memories", "add", "The harbour opens at six", "--user", "ana"])));

    // A replica with Redis marks the store as it opens it.
    const server = spawnMm(["serve", "--port", "0", "--no-warm", "--redis", url], { store, env });
    const done = collect(server);
    try {
      await new Promise<void>((resolve, reject) => {
        createInterface({ input: server.stderr! }).on("line", (line) => line.includes('"listening"') && resolve());
        server.once("exit", () => reject(new Error("mm serve exited before listening")));
      });
      // Every kind of command on this machine without Redis: writes, reads, keys, the ledger, another server.
      for (const args of [["memories", "add", "The ferry leaves at noon", "--user", "ana"], ["memories", "list"], ["keys", "list", "--account", "default"], ["usage"]]) {
        refusedForRedis(await mm(args), url);
      }
      refusedForRedis(await runMm(["serve", "--port", "0", "--no-warm"], { store, env }), url);
      // With the replicas' Redis, the same commands work.
      const withRedis = { MM_REDIS_URL: url };
      json(ok(await mm(["memories", "add", "The ferry leaves at noon", "--user", "ana"], withRedis)));
      expect(json(ok(await mm(["memories", "list"], withRedis))).pagination.total).toBe(2);
    } finally {
      server.kill("SIGTERM");
      await done;
    }
    // The record stays after the replicas stop: a replica may be down for a restart.
    refusedForRedis(await mm(["memories", "get", before.id]), url);

    const detached = json(ok(await mm(["store", "detach-redis"])));
    expect(detached).toEqual({ store, detached: true, redis: url });
    expect(json(ok(await mm(["memories", "list"]))).pagination.total).toBe(2);
    expect(json(ok(await mm(["store", "detach-redis"])))).toEqual({ store, detached: false, redis: null });
  });

  it("a password in the Redis URL is never recorded in the store nor shown in the refusal", async () => {
    const state = await tempDir();
    const store = `az://${await azurite().container()}/secret`;
    const env = { ...azurite().env, XDG_STATE_HOME: state };
    ok(await runMm(["init", "--json"], { store, env }));
    // This Redis has no password, so its default user takes any (Redis's "nopass"): the URL's is never checked, only carried.
    const url = `redis://default:hunter2-secret@127.0.0.1:${redis().port}/0`;
    const r = await runMm(["memories", "add", "A note", "--user", "bo", "--json"], { store, env: { ...env, MM_REDIS_URL: url } });
    const refused = await runMm(["memories", "list", "--json"], { store, env });
    const all = r.stdout + r.stderr + refused.stdout + refused.stderr;
    expect(all).not.toContain("hunter2");
    ok(r);
    refusedForRedis(refused, `redis://127.0.0.1:${redis().port}/0`);
  });

  it("a local store served with Redis: commands that count the quota need it too, until detach-redis", async () => {
    const store = await tempDir();
    const mm = (args: string[], extra: Record<string, string> = {}) => runMm([...args, "--json"], { store, env: extra });
    const url = `redis://127.0.0.1:${redis().port}`;
    ok(await mm(["init"]));
    const before = json(ok(await mm(["memories", "add", "The harbour opens at six", "--user", "ana"])));
    const server = spawnMm(["serve", "--port", "0", "--no-warm", "--redis", url], { store });
    const done = collect(server);
    try {
      await new Promise<void>((resolve, reject) => {
        createInterface({ input: server.stderr! }).on("line", (line) => line.includes('"listening"') && resolve());
        server.once("exit", () => reject(new Error("mm serve exited before listening")));
      });
      // Each would charge the store's own ledger, beside the replicas' in Redis.
      for (const args of [["memories", "add", "The ferry leaves at noon", "--user", "ana"], ["memories", "get", before.id], ["usage"]]) refusedForRedis(await mm(args), url);
      refusedForRedis(await runMm(["serve", "--port", "0", "--no-warm"], { store }), url);
      const withRedis = { MM_REDIS_URL: url };
      ok(await mm(["memories", "add", "The ferry leaves at noon", "--user", "ana"], withRedis));
      expect(json(ok(await mm(["memories", "list"], withRedis))).pagination.total).toBe(2);
      // The refused commands charged nothing: the list and the add are the month's only operations in Redis.
      expect(json(ok(await mm(["usage"], withRedis))).used).toBe(2);
    } finally {
      server.kill("SIGTERM");
      await done;
    }
    refusedForRedis(await mm(["memories", "list"]), url);
    expect(json(ok(await mm(["store", "detach-redis"])))).toEqual({ store, detached: true, redis: url });
    expect(json(ok(await mm(["memories", "list"]))).pagination.total).toBe(2);
  });

  it("detach-redis on a prefix without a store says so; on a local store it has nothing to do", async () => {
    const state = await tempDir();
    const env = { ...azurite().env, XDG_STATE_HOME: state };
    const empty = await runMm(["store", "detach-redis", "--json"], { store: `az://${await azurite().container()}/none`, env });
    expect(empty.code).toBe(6);
    expect(JSON.parse(empty.stderr.trim().split("\n").pop()!).error.message).toMatch(/There is no mm store/);
    const local = await tempDir();
    ok(await runMm(["init", "--json"], { store: local }));
    expect(json(ok(await runMm(["store", "detach-redis", "--json"], { store: local })))).toEqual({ store: local, detached: false, redis: null });
  });
});
