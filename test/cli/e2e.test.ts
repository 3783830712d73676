import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { openContext } from "../../src/core/context.js";
import { collect, json, runMm, spawnMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

/**
 * These spawn bin/mm.js exactly as a user would, with the real bundled model (use-lite), and
 * parse stdout as a script piping into jq would.
 */
describe("mm as a spawned process", () => {
  it("adds, searches, lists, gets, updates and deletes, printing the API's JSON bodies", async () => {
    const store = join(await tempDir(), "store");
    const added = await runMm(["memories", "add", "I adore hiking in the Swiss mountains", "--user", "alice", "--tag", "hobby", "--metadata", '{"src":"chat"}'], { store });
    expect(added.code, added.stderr).toBe(0);
    const mem = json(added);
    expect(Object.keys(mem)).toEqual(["id", "content", "userId", "tags", "metadata", "createdAt", "updatedAt"]);
    expect(mem).toMatchObject({ content: "I adore hiking in the Swiss mountains", userId: "alice", tags: ["hobby"], metadata: { src: "chat" } });

    const piped = await runMm(["memories", "add", "-", "--user", "alice"], { store, input: "Quarterly tax paperwork is due soon\n" });
    expect(json(piped).content).toBe("Quarterly tax paperwork is due soon");

    const search = json(await runMm(["memories", "search", "trekking through alpine peaks", "--user", "alice", "--threshold", "0"], { store }));
    expect(search.results.map((h: { id: string }) => h.id)[0]).toBe(mem.id);
    expect(Object.keys(search.results[0])).toEqual(["id", "content", "score", "userId", "tags", "createdAt"]);

    const list = json(await runMm(["memories", "list", "--user", "alice", "--limit", "1"], { store }));
    expect(list.pagination).toEqual({ page: 1, limit: 1, total: 2, totalPages: 2 });
    expect(list.items[0].content).toBe("Quarterly tax paperwork is due soon");
    expect(list.items[0]).not.toHaveProperty("metadata");

    const ndjson = await runMm(["memories", "list", "--format", "ndjson"], { store });
    expect(ndjson.stdout.trim().split("\n").map((l) => JSON.parse(l).id)).toEqual([json(piped).id, mem.id]);

    expect(json(await runMm(["memories", "get", mem.id], { store }))).toEqual(mem);

    const updated = json(await runMm(["memories", "update", mem.id, "--clear-tags", "--metadata", '{"src":"edited"}'], { store }));
    expect(updated).toMatchObject({ id: mem.id, content: mem.content, metadata: { src: "edited" }, createdAt: mem.createdAt });
    expect(updated).not.toHaveProperty("tags");

    expect(json(await runMm(["memories", "delete", mem.id, "--yes"], { store }))).toEqual({ success: true, id: mem.id });
    const gone = await runMm(["memories", "get", mem.id], { store });
    expect(gone.code).toBe(3);
    expect(JSON.parse(gone.stderr)).toEqual({ error: { code: "MEMORY_NOT_FOUND", message: `Memory ${mem.id} does not exist.` } });
  });

  it("exits with a code per error class and prints one envelope on stderr", async () => {
    const store = join(await tempDir(), "store");
    const noUser = await runMm(["memories", "add", "hello"], { store, env: { MM_USER: "" } });
    expect(noUser.code).toBe(2);
    expect(JSON.parse(noUser.stderr).error.code).toBe("INVALID_USER_ID");
    expect(noUser.stdout).toBe("");

    const tooLong = await runMm(["memories", "add", "-", "--user", "u"], { store, input: "x".repeat(10_001) });
    expect(tooLong.code).toBe(2);
    expect(JSON.parse(tooLong.stderr).error).toMatchObject({ code: "CONTENT_TOO_LONG", maxLength: 10_000, length: 10_001 });

    const badLimit = await runMm(["memories", "list", "--limit", "abc"], { store });
    expect(badLimit.code).toBe(2);
    expect(JSON.parse(badLimit.stderr).error.details).toEqual([{ field: "limit", message: "must be an integer of at least 1" }]);

    const unknownCommand = await runMm(["memories", "frobnicate"], { store });
    expect(unknownCommand.code).toBe(2);
    expect(JSON.parse(unknownCommand.stderr).error.code).toBe("VALIDATION_ERROR");

    const missing = await runMm(["memories", "delete", "mem_00000000000000000000000000", "--yes"], { store });
    expect(missing.code).toBe(3);
  });

  it("keeps every acknowledged memory when killed with SIGKILL in the middle of a batch add", async () => {
    const dir = await tempDir();
    const store = join(dir, "store");
    const file = join(dir, "lines.jsonl");
    const lines = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ content: `Note ${i}: the meeting about project ${i % 17} moved to room ${i}`, userId: "crash" }));
    await writeFile(file, lines.join("\n") + "\n");

    const child = spawnMm(["memories", "add", "--batch", file, "--batch-size", "16", "--json"], { store });
    const acknowledged: string[] = [];
    const done = collect(child);
    const killed = new Promise<void>((resolve) => {
      createInterface({ input: child.stdout! }).on("line", (line) => {
        const r = JSON.parse(line);
        if (r.memory) acknowledged.push(r.memory.id);
        if (acknowledged.length >= 48 && !child.killed) {
          child.kill("SIGKILL");
          resolve();
        }
      });
    });
    await killed;
    const result = await done;
    expect(result.signal).toBe("SIGKILL");
    expect(acknowledged.length).toBeGreaterThanOrEqual(48);
    expect(acknowledged.length).toBeLessThan(2000);

    // The store reopens, holds every acknowledged memory, and takes new writes (the dead writer's lock is taken over).
    const ctx = await openContext({ storeDir: store, create: false });
    try {
      const { records, total } = await ctx.store.listMemories({ accountId: ctx.accountId }, { offset: 0, limit: 2000 });
      const stored = new Set(records.map((r) => r.id));
      for (const id of acknowledged) expect(stored.has(id), id).toBe(true);
      expect(total).toBeLessThan(2000);
    } finally {
      await ctx.close();
    }
    const after = await runMm(["memories", "add", "written after the crash", "--user", "crash"], { store });
    expect(after.code, after.stderr).toBe(0);
  });

  it("on Ctrl-C (SIGINT) commits the batch in hand, reports it, and exits 130", async () => {
    const dir = await tempDir();
    const store = join(dir, "store");
    const file = join(dir, "lines.jsonl");
    await writeFile(file, Array.from({ length: 3000 }, (_, i) => JSON.stringify({ content: `Reminder ${i} about groceries`, userId: "u" })).join("\n"));
    const child = spawnMm(["memories", "add", "--batch", file, "--batch-size", "32", "--json"], { store });
    const acknowledged: string[] = [];
    const done = collect(child);
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const r = JSON.parse(line);
      if (r.memory) acknowledged.push(r.memory.id);
      if (acknowledged.length === 32) child.kill("SIGINT");
    });
    const result = await done;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain("INTERRUPTED");
    const listed = json(await runMm(["memories", "list", "--limit", "100", "--page", "1"], { store }));
    expect(listed.pagination.total).toBe(acknowledged.length);
    expect(acknowledged.length).toBeLessThan(3000);
  });

  it("two processes writing at once lose none of each other's writes", async () => {
    const dir = await tempDir();
    const store = join(dir, "store");
    // Create the store first so both writers race on writes, not on creation.
    expect((await runMm(["init"], { store })).code).toBe(0);
    const files = await Promise.all(
      ["a", "b"].map(async (who) => {
        const file = join(dir, `${who}.jsonl`);
        await writeFile(file, Array.from({ length: 120 }, (_, i) => JSON.stringify({ content: `${who} wrote line ${i}`, userId: who })).join("\n"));
        return file;
      }),
    );
    const results = await Promise.all(files.map((f) => runMm(["memories", "add", "--batch", f, "--batch-size", "8", "--json"], { store })));
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    const ids = results.flatMap((r) => r.stdout.trim().split("\n").map((l) => JSON.parse(l).memory.id as string));
    expect(new Set(ids).size).toBe(240);
    for (const who of ["a", "b"]) {
      const page = json(await runMm(["memories", "list", "--user", who, "--limit", "5"], { store }));
      expect(page.pagination.total).toBe(120);
    }
  });
});
