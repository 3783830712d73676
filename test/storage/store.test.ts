import { mkdir, readdir, writeFile, utimes } from "node:fs/promises";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openContext } from "../../src/core/context.js";
import { createEntity, getEntity } from "../../src/core/entities.js";
import { createMemory, listMemories } from "../../src/core/memories.js";
import { loadLance } from "../../src/storage/lance.js";
import { withWriteLock } from "../../src/storage/lock.js";
import { resolveStorePath } from "../../src/storage/paths.js";
import { Store } from "../../src/storage/store.js";
import { maintainIfDue } from "../../src/storage/maintenance.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

describe("store location", () => {
  it("prefers --store, then MM_STORE, then the XDG data dir", () => {
    expect(resolveStorePath("/a/b", { MM_STORE: "/c" })).toBe("/a/b");
    expect(resolveStorePath(undefined, { MM_STORE: "/c" })).toBe("/c");
    expect(resolveStorePath(undefined, { XDG_DATA_HOME: "/x" })).toBe("/x/mm");
    expect(resolveStorePath(undefined, { HOME: "/home/u" })).toBe("/home/u/.local/share/mm");
    expect(resolveStorePath("  ", { MM_STORE: "" , HOME: "/h"})).toBe("/h/.local/share/mm");
  });
});

describe("store", () => {
  it("is created on first use and records its embedder", async () => {
    const dir = join(await tempDir(), "nested", "store");
    const ctx = await openContext({ storeDir: dir, embedder: createTestEmbedder(32, "m1") });
    expect(ctx.store.config.embedder).toEqual({ provider: "test", model: "m1", dims: 32 });
    await ctx.close();
    expect(await Store.exists(dir)).toBe(true);
  });

  it("refuses an embedder other than the one that made its vectors, naming both", async () => {
    const dir = await tempDir();
    const first = await openContext({ storeDir: dir, embedder: createTestEmbedder(32, "m1") });
    await createMemory(first, { content: "hello", userId: "u" });
    await first.close();
    for (const other of [createTestEmbedder(32, "m2"), createTestEmbedder(64, "m1")]) {
      const err = await openContext({ storeDir: dir, embedder: other }).catch((e) => e);
      expect(err.code).toBe("EMBEDDER_MISMATCH");
      expect(err.message).toContain("test:m1 (32 dims)");
      expect(err.message).toContain(`test:${other.model} (${other.dims} dims)`);
    }
    const again = await openContext({ storeDir: dir, embedder: createTestEmbedder(32, "m1") });
    expect((await listMemories(again, {})).pagination.total).toBe(1);
    await again.close();
  });

  it("switches embedder only while empty", async () => {
    const dir = await tempDir();
    const store = await Store.open(dir, { create: { provider: "test", model: "a", dims: 8 } });
    const switched = await store.resetEmbedder({ provider: "test", model: "b", dims: 16 });
    expect(switched.config.embedder).toEqual({ provider: "test", model: "b", dims: 16 });
    store.close();
    switched.close();
    const ctx = await openContext({ storeDir: dir, embedder: createTestEmbedder(16, "b") });
    await createMemory(ctx, { content: "x", userId: "u" });
    const err = await ctx.store.resetEmbedder({ provider: "test", model: "c", dims: 16 }).catch((e) => e);
    expect(err.code).toBe("EMBEDDER_MISMATCH");
    expect(err.message).toContain("holds 1 memories");
    await ctx.close();
  });

  it("refuses to create a store in a non-empty directory that is not one", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "thesis.txt"), "precious");
    const err = await openContext({ storeDir: dir, embedder: createTestEmbedder() }).catch((e) => e);
    expect(err.code).toBe("STORE_ERROR");
    expect(await readdir(dir)).toEqual(["thesis.txt"]);
  });

  it("refuses to open a missing store when creation is off", async () => {
    const err = await openContext({ storeDir: join(await tempDir(), "none"), create: false }).catch((e) => e);
    expect(err.code).toBe("STORE_ERROR");
    expect(err.message).toContain("mm init");
  });

  it("compacts: many single writes do not pile up fragments and versions", async () => {
    const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder() });
    for (let i = 0; i < 70; i++) await createMemory(ctx, { content: `memory ${i}`, userId: "u" });
    // A write only commits: 70 writes, 70 fragments.
    expect((await ctx.store.stats()).memories.fragments).toBe(70);
    // A pass compacts once 32 small fragments pile up (the CLI runs one after a command that wrote).
    const pass = await maintainIfDue(ctx.store);
    expect(pass?.work.map((w) => w.table)).toEqual(["memories"]);
    const stats = await ctx.store.stats();
    expect(stats.memories.rows).toBe(70);
    expect(stats.memories.fragments).toBeLessThanOrEqual(2);
    expect(await maintainIfDue(ctx.store).then((p) => p?.work)).toEqual([]);
    await ctx.store.optimize({ keepVersionsMs: 0 });
    const after = await ctx.store.stats();
    // Compaction keeps rows covered by the text index apart from unindexed ones: at most 2 remain.
    expect(after.memories.fragments).toBeLessThanOrEqual(2);
    expect(after.memories.versions).toBeLessThanOrEqual(2);
    expect((await listMemories(ctx, { limit: 100 })).items).toHaveLength(70);
    await ctx.close();
  });

  it("removes orphaned temp files a killed writer left, but only old ones", async () => {
    const dir = await tempDir();
    const ctx = await openContext({ storeDir: dir, embedder: createTestEmbedder() });
    await createMemory(ctx, { content: "x", userId: "u" });
    const data = join(dir, "db", "memories.lance", "data");
    await mkdir(data, { recursive: true });
    await writeFile(join(data, ".tmp_old"), "partial");
    await writeFile(join(data, ".tmp_new"), "partial");
    const old = new Date(Date.now() - 2 * 3600_000);
    await utimes(join(data, ".tmp_old"), old, old);
    const r = await ctx.store.optimize();
    expect(r.tempFilesRemoved).toBe(1);
    const left = await readdir(data);
    expect(left).toContain(".tmp_new");
    expect(left).not.toContain(".tmp_old");
    await ctx.close();
  });
});

describe("opening", () => {
  it("upgrades a store made before sequence numbers and the knowledge graph, keeping its memories", async () => {
    const dir = await tempDir();
    const ctx = await openContext({ storeDir: dir, embedder: createTestEmbedder() });
    const kept = await createMemory(ctx, { content: "written by an old mm", userId: "u" });
    await ctx.close();
    // Make it an old store: no seq column, no graph table.
    const { lancedb } = loadLance();
    const db = await lancedb.connect(join(dir, "db"));
    await (await db.openTable("memories")).dropColumns(["seq"]);
    await db.dropTable("graph");
    expect(await db.tableNames()).toEqual(["memories"]);

    const upgraded = await openContext({ storeDir: dir, embedder: createTestEmbedder() });
    const [old] = (await listMemories(upgraded, {})).items;
    expect(old).toMatchObject({ id: kept.id, content: "written by an old mm" });
    expect((await upgraded.store.getMemory(upgraded.accountId, kept.id))?.seq).toBe(0);
    const fresh = await createMemory(upgraded, { content: "written by this one", userId: "u" });
    expect((await upgraded.store.getMemory(upgraded.accountId, fresh.id))?.seq).toBe(1);
    const { entity } = await createEntity(upgraded, { name: "Alice", type: "PERSON" });
    expect((await getEntity(upgraded, entity.id)).name).toBe("Alice");
    await upgraded.close();
    expect((await db.tableNames()).sort()).toEqual(["graph", "memories"]);
  });
});

describe("vector search", () => {
  it("routes while the query vector is still on its way, and checks it once it arrives", async () => {
    const embedder = createTestEmbedder();
    const ctx = await openContext({ storeDir: await tempDir(), embedder });
    for (const content of ["tea with milk", "coffee at noon", "green tea leaves"]) await createMemory(ctx, { content, userId: "u" });
    const filter = { accountId: ctx.accountId, userId: "u" };
    const [vector] = await embedder.embed(["tea"]);
    const now = await ctx.store.searchMemories(vector!, filter, 3);
    const later = await ctx.store.searchMemories(new Promise<Float32Array>((r) => setTimeout(() => r(vector!), 20)), filter, 3);
    expect(later.map((h) => h.record.content)).toEqual(now.map((h) => h.record.content));
    expect(now).toHaveLength(3);

    const failed = await ctx.store.searchMemories(Promise.reject(new Error("model gone")), filter, 3).catch((e) => e);
    expect(failed.message).toBe("model gone");
    const short = await ctx.store.searchMemories(Promise.resolve(new Float32Array(8)), filter, 3).catch((e) => e);
    expect(short.code).toBe("EMBEDDER_MISMATCH");
    await ctx.close();
  });
});

describe("write lock", () => {
  it("serialises writers in one process", async () => {
    const dir = await tempDir();
    let inside = 0;
    let maxInside = 0;
    await Promise.all(
      Array.from({ length: 8 }, () =>
        withWriteLock(dir, async () => {
          inside++;
          maxInside = Math.max(maxInside, inside);
          await new Promise((r) => setTimeout(r, 5));
          inside--;
        }),
      ),
    );
    expect(maxInside).toBe(1);
  });

  it("takes over at once from a writer that died holding it", async () => {
    const dir = await tempDir();
    const dead = spawn(process.execPath, ["-e", "0"]);
    const pid: number = await new Promise((r) => dead.on("exit", () => r(dead.pid!)));
    await mkdir(join(dir, ".write-lock"));
    await writeFile(join(dir, ".write-lock", "owner.json"), JSON.stringify({ pid, host: (await import("node:os")).hostname(), token: "t", at: Date.now() }));
    const started = Date.now();
    expect(await withWriteLock(dir, async () => "got it", { timeoutMs: 5_000 })).toBe("got it");
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("never leaves a lock without its owner: one killed while taking it stalls nobody, and its leftover goes", async () => {
    const dir = await tempDir();
    // What a writer killed between staging its lock and renaming it into place leaves: a staged folder, no lock.
    const staged = join(dir, ".write-lock.staged-killed");
    await mkdir(staged);
    await writeFile(join(staged, "owner.json"), JSON.stringify({ pid: 1, host: "gone", token: "killed", at: 0 }));
    const started = Date.now();
    expect(await withWriteLock(dir, async () => (await readdir(dir)).filter((n) => n.startsWith(".write-lock")).sort(), { timeoutMs: 5_000 })).toEqual([".write-lock", ".write-lock.staged-killed"]);
    expect(Date.now() - started).toBeLessThan(2_000);
    // Once it is older than a stale lock, the next process to write removes it (this process looks once per lock:
    // another store here); the lock itself is gone after each write.
    const later = await tempDir();
    const old = join(later, ".write-lock.staged-killed");
    await mkdir(old);
    await utimes(old, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    await withWriteLock(later, async () => undefined);
    expect((await readdir(later)).filter((n) => n.startsWith(".write-lock"))).toEqual([]);
    expect((await readdir(dir)).filter((n) => n.startsWith(".write-lock"))).toEqual([".write-lock.staged-killed"]);
  });

  it("waits for a live holder and times out with a clear error", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, ".write-lock"));
    await writeFile(join(dir, ".write-lock", "owner.json"), JSON.stringify({ pid: process.pid, host: (await import("node:os")).hostname(), token: "other", at: Date.now() }));
    const err = await withWriteLock(dir, async () => "no", { timeoutMs: 300 }).catch((e) => e);
    expect(err.code).toBe("STORE_ERROR");
    expect(err.message).toContain(`pid ${process.pid}`);
  });

  it("two contexts on one store writing concurrently keep every row", async () => {
    const dir = await tempDir();
    const a = await openContext({ storeDir: dir, embedder: createTestEmbedder() });
    const b = await openContext({ storeDir: dir, embedder: createTestEmbedder() });
    await Promise.all([
      ...Array.from({ length: 25 }, (_, i) => createMemory(a, { content: `a ${i}`, userId: "a" })),
      ...Array.from({ length: 25 }, (_, i) => createMemory(b, { content: `b ${i}`, userId: "b" })),
    ]);
    expect((await listMemories(a, { limit: 100 })).pagination.total).toBe(50);
    expect((await listMemories(b, { userId: "a" })).pagination.total).toBe(25);
    await a.close();
    await b.close();
  });
});

describe("sequence numbers", () => {
  it("count on per user across two writers, a delete and a seal, though each writer remembers the numbers it gave", async () => {
    const dir = await tempDir();
    await (await openContext({ storeDir: dir, embedder: createTestEmbedder() })).close();
    const a = await Store.open(dir, { tuning: { segmentRows: 6 } });
    const b = await Store.open(dir, { tuning: { segmentRows: 6 } });
    const embedder = createTestEmbedder();
    let n = 0;
    const insert = async (store: Store, ...users: string[]) => {
      const at = new Date().toISOString();
      const rows = await Promise.all(users.map(async (userId) => {
        const id = `mem_${String(n++).padStart(24, "0")}`;
        const [vector] = await embedder.embed([id]);
        return { id, accountId: "acct_default", content: id, userId, agentId: null, tags: [], metadata: null, entityIds: [], createdAt: at, updatedAt: at, seq: 0, vector: vector! };
      }));
      await store.write((w) => w.insertMemories(rows));
      return rows.map((r) => r.seq);
    };
    try {
      expect(await insert(a, "u", "v", "u")).toEqual([1, 1, 2]);
      expect(await insert(a, "u")).toEqual([3]); // from what a remembers
      expect(await insert(b, "u", "v")).toEqual([4, 2]); // b sees a's writes
      expect(await insert(a, "u")).toEqual([5]); // a sees b's: the segment moved past a's version
      // A delete of a user's last memory: the next one takes its number, as with nothing remembered.
      const last = (await a.memoriesAfter({ accountId: "acct_default", userId: "u" }, undefined, 100, false)).at(-1)!;
      expect(last.seq).toBe(5);
      expect(await a.write((w) => w.deleteMemory("acct_default", last.id))).toBe(true);
      expect(await insert(a, "u")).toEqual([5]);
      // 6 rows reached: the next insert goes to a new segment, and numbers go on from the old one.
      expect((await a.segments()).length).toBe(2);
      expect(await insert(b, "v")).toEqual([3]);
      expect(await insert(a, "v", "u")).toEqual([4, 6]);
    } finally {
      a.close();
      b.close();
    }
  });
});

describe("LanceDB's caches", () => {
  it("the metadata cache stays within its cap however many versions writes make (it held every version before)", async () => {
    const dir = await tempDir();
    const cap = 256 * 1024;
    await (await openContext({ storeDir: dir, embedder: createTestEmbedder() })).close();
    const bounded = await Store.open(dir, { tuning: { metadataCacheBytes: cap } });
    const unbounded = await Store.open(dir, { tuning: { metadataCacheBytes: 1024 * 1024 * 1024 } });
    try {
      const embedder = createTestEmbedder();
      // Each write makes a version, each read caches that version's metadata (~45 KB here).
      for (let i = 0; i < 50; i++) {
        const [vector] = await embedder.embed([`note ${i}`]);
        const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
        await bounded.write((w) => w.insertMemories([{ id: `mem_${String(i).padStart(24, "0")}`, accountId: "acct_default", content: `note ${i}`, userId: "u", agentId: null, tags: [], metadata: null, entityIds: [], createdAt: at, updatedAt: at, seq: 0, vector }]));
        await bounded.listMemories({ accountId: "acct_default" }, { offset: 0, limit: 5 });
        await unbounded.listMemories({ accountId: "acct_default" }, { offset: 0, limit: 5 });
      }
      // cacheBytes counts the index cache too (the text index: ~140 KB here), hence 2 × cap.
      expect(unbounded.cacheBytes()).toBeGreaterThan(6 * cap);
      expect(bounded.cacheBytes()).toBeLessThan(2 * cap);
    } finally {
      bounded.close();
      unbounded.close();
    }
  });
});
