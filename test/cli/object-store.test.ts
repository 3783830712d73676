import { existsSync } from "node:fs";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { useAzurite } from "../helpers/azurite.js";
import { collect, json, runMm, spawnMm, type MmResult } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const azurite = useAzurite();

/** `mm` on an az:// store, as a user on this machine would run it (the coordination dir in a temp state dir). */
function mmOn(store: string, state: string) {
  return (args: string[], env: Record<string, string> = {}): Promise<MmResult> => runMm([...args, "--json"], { store, env: { ...azurite().env, XDG_STATE_HOME: state, ...env } });
}

function ok(r: MmResult): MmResult {
  expect(r.code, r.stderr).toBe(0);
  return r;
}

describe("mm on a store in Azure Blob Storage (spawned, real Azurite)", () => {
  it("init, add, search, get, list, accounts and keys, export and import, optimize: every command works on az://, and a second process sees the first's writes", async () => {
    const state = await tempDir();
    const store = `az://${await azurite().container()}/mm/store`;
    const mm = mmOn(store, state);
    expect(json(ok(await mm(["init"]))).store).toBe(store);
    const lisbon = json(ok(await mm(["memories", "add", "I moved to Lisbon in March", "--user", "ana"])));
    const dentist = json(ok(await mm(["memories", "add", "My dentist is Dr. Costa", "--user", "ana"])));
    // Each command is its own process: every read below is another process's view of the writes.
    expect(json(ok(await mm(["memories", "search", "which city do I live in", "--user", "ana", "--threshold", "0"]))).results[0].id).toBe(lisbon.id);
    expect(json(ok(await mm(["memories", "get", dentist.id]))).content).toBe("My dentist is Dr. Costa");
    expect(json(ok(await mm(["memories", "list"]))).pagination.total).toBe(2);
    const acct = json(ok(await mm(["accounts", "create", "acme", "--plan", "hobby"])));
    const key = json(ok(await mm(["keys", "create", "--account", "acme", "--name", "ci"])));
    expect(key.key).toMatch(/^mm_/);
    expect(json(ok(await mm(["keys", "list", "--account", "acme"]))).items.map((k: { id: string }) => k.id)).toEqual([key.id]);
    expect(json(ok(await mm(["accounts", "list"]))).items.map((a: { id: string }) => a.id)).toContain(acct.id);

    const dir = await tempDir();
    const file = join(dir, "export.jsonl");
    const exported = await runMm(["export", "--store", store], { env: { ...azurite().env, XDG_STATE_HOME: state } });
    ok(exported);
    await writeFile(file, exported.stdout);
    const copy = `az://${await azurite().container()}/copy`;
    ok(await mmOn(copy, state)(["import", file]));
    const copied = json(ok(await mmOn(copy, state)(["memories", "list"])));
    expect(copied.items.map((m: { id: string }) => m.id).sort()).toEqual([lisbon.id, dentist.id].sort());

    const pass = json(ok(await mm(["store", "optimize"])));
    expect(pass.fragmentsRemoved).toBeGreaterThan(0);
    const stats = json(ok(await mm(["store", "stats"])));
    expect(stats.memories.rows).toBe(2);
    expect(stats.memories.fragments).toBe(1);
    // Nothing of the two stores on this machine but their coordination directories.
    expect(existsSync(join(process.cwd(), "az:"))).toBe(false);
    expect(await readdir(join(state, "mm", "stores"))).toHaveLength(2);
  });

  it("mm serve on az:// serves /v1, and a key created and revoked by another process is honoured on the next request", async () => {
    const state = await tempDir();
    const store = `az://${await azurite().container()}/served`;
    const mm = mmOn(store, state);
    ok(await mm(["init"]));
    const server = spawnMm(["serve", "--port", "0"], { store, env: { ...azurite().env, XDG_STATE_HOME: state } });
    const done = collect(server);
    try {
      const listening = await new Promise<{ url: string; coordination?: string }>((resolve, reject) => {
        createInterface({ input: server.stderr! }).on("line", (line) => {
          if (line.includes('"listening"')) resolve(JSON.parse(line));
        });
        server.once("exit", () => reject(new Error("mm serve exited before listening")));
      });
      const url = listening.url;
      // It says where this machine keeps the store's locks and counts (one machine without Redis).
      expect(listening.coordination).toMatch(new RegExp(`^${state}/mm/stores/[0-9a-f]{16}$`));
      const key = json(ok(await mm(["keys", "create", "--account", "default", "--name", "live"])));
      const call = (method: string, path: string, body?: unknown) =>
        fetch(`${url}/v1${path}`, {
          method,
          headers: { Authorization: `Bearer ${key.key}`, "Content-Type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      const created = await call("POST", "/memories", { content: "The boat is moored in Cascais", userId: "bo" });
      expect(created.status).toBe(201);
      const { id } = (await created.json()) as { id: string };
      expect(((await (await call("GET", `/memories/${id}`)).json()) as { content: string }).content).toBe("The boat is moored in Cascais");
      // The CLI, another process, reads what the server wrote.
      expect(json(ok(await mm(["memories", "get", id]))).userId).toBe("bo");
      ok(await mm(["keys", "revoke", key.id]));
      expect((await call("GET", "/memories")).status).toBe(401);
    } finally {
      server.kill("SIGTERM");
      await done;
    }
  });

  it("two processes adding at once on one Azurite store: every acknowledged write is stored once", async () => {
    const state = await tempDir();
    const store = `az://${await azurite().container()}/busy`;
    const mm = mmOn(store, state);
    ok(await mm(["init"]));
    const dir = await tempDir();
    const files = await Promise.all(
      ["a", "b"].map(async (who) => {
        const file = join(dir, `${who}.jsonl`);
        await writeFile(file, Array.from({ length: 15 }, (_, i) => JSON.stringify({ content: `${who} writes line ${i} about the orchard`, userId: `u-${who}` })).join("\n") + "\n");
        return file;
      }),
    );
    const runs = await Promise.all(files.map((file) => mm(["memories", "add", "--batch", file, "--batch-size", "3"])));
    const acked = runs.flatMap((r) => ok(r).stdout.trim().split("\n").map((l) => JSON.parse(l).memory?.id as string).filter(Boolean));
    expect(acked).toHaveLength(30);
    const listed = json(ok(await mm(["memories", "list", "--limit", "100"])));
    expect(listed.pagination.total).toBe(30);
    expect(listed.items.map((m: { id: string }) => m.id).sort()).toEqual([...new Set(acked)].sort());
  });

  it("a URI mm can't use is refused with what is wrong, and nothing is created locally", async () => {
    const state = await tempDir();
    const cases: [string, Record<string, string>, RegExp][] = [
      ["gopher://x/y", {}, /scheme gopher:\/\/ is not supported/],
      ["az://", {}, /names no container/],
      ["az://no-such-container-here/x", {}, /does not exist.*mm does not create containers/],
      [`az://${await azurite().container()}/x`, { AZURE_STORAGE_ACCOUNT_KEY: "" }, /AZURE_STORAGE_ACCOUNT_KEY is not set/],
      [`az://${await azurite().container()}/x`, { AZURE_STORAGE_ACCOUNT_KEY: Buffer.alloc(64, 1).toString("base64") }, /refused the credentials/],
    ];
    for (const [store, env, message] of cases) {
      const r = await mmOn(store, state)(["init"], env);
      expect(r.code, `${store}: ${r.stderr}`).not.toBe(0);
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
      const body = JSON.parse(r.stderr.trim().split("\n").pop()!);
      expect(body.error.code).toBe("STORE_ERROR");
      expect(body.error.message).toMatch(message);
      expect(body.error.message).not.toContain(azurite().env.AZURE_STORAGE_ACCOUNT_KEY.slice(0, 10));
    }
    expect(existsSync(join(process.cwd(), "az:"))).toBe(false);
    expect(existsSync(join(process.cwd(), "gopher:"))).toBe(false);
  });
});
