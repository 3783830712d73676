import { describe, expect, it, vi } from "vitest";
import type { Context } from "../../src/core/context.js";
import { createMemory } from "../../src/core/memories.js";
import { CurrentRows } from "../../src/storage/current-rows.js";
import type { MemoryRow } from "../../src/storage/store.js";
import { useAzurite } from "../helpers/azurite.js";
import { useTempDirs } from "../helpers/temp.js";
import { everyKindOfWrite, firstNotes, storeKinds } from "../helpers/write-kinds.js";

const tempDir = useTempDirs();
const USERS = ["ana", "bo"];

/**
 * Under the write lock, what the process keeps of each user's current memories (storage/current-rows.ts)
 * against a fresh read of them: equal, row for row. Returns how many users were kept.
 */
async function expectKeptExact(ctx: Context): Promise<number> {
  return ctx.store.write(async () => {
    const kept = await ctx.store.keptCurrentRows(USERS.map((userId) => ({ accountId: ctx.accountId, userId })));
    for (const [key, rows] of kept) {
      const userId = key.split("\u0000")[1];
      expect(rows).toEqual(await ctx.store.currentMemoriesOf(ctx.accountId, [userId], 10_000));
    }
    return kept.size;
  });
}

const azurite = useAzurite();

const STORES = storeKinds(tempDir, azurite);

describe.each(STORES)("the current rows a process keeps for detection, on %s", (kind, newStore) => {
  it("stay exactly what a read returns through creates that replace, edits, deletes, replacements by hand and entity merges", async () => {
    const ctx = await (await newStore())();
    const { paris, dentist, berlin } = await firstNotes(ctx);
    // Notes that say something changed ("I moved to Berlin") had their user read whole, and kept.
    expect(await expectKeptExact(ctx)).toBe(2);

    // The next create of a kept user reads nothing of its user, and what it writes is kept.
    const users = vi.spyOn(ctx.store, "currentMemoriesOf");
    const lisbon = await createMemory(ctx, { content: "I moved to Lisbon", userId: "ana" });
    expect(lisbon.supersedes).toEqual([berlin]);
    expect(users).not.toHaveBeenCalled();
    users.mockRestore();
    expect(await expectKeptExact(ctx)).toBe(2);

    const steps = await everyKindOfWrite(ctx, { paris, berlin, lisbon: lisbon.id, dentist });
    const kept: string[] = [];
    for (const [step, run] of steps) {
      await run();
      if (await expectKeptExact(ctx)) kept.push(step);
    }
    // A compaction moves no row: on an object store, where this process knows nobody else wrote,
    // the rows stay kept through it; on a local store it can't know, and reads them again.
    expect(kept).toEqual(
      kind === "a local store"
        ? ["an edit", "a replacement by hand", "a restore", "a create", "a create after all of them"]
        : ["an edit", "a replacement by hand", "a restore", "a compaction", "a create", "a create after all of them"],
    );
    await ctx.close();
  });

  it("are forgotten when another process writes, and when a seal makes a new segment", async () => {
    const open = await newStore();
    const a = await open({ segmentRows: 6 });
    await createMemory(a, { content: "I live in Paris", userId: "ana" });
    await createMemory(a, { content: "I moved to Berlin", userId: "ana" });
    expect(await expectKeptExact(a)).toBe(1);

    const b = await open({ segmentRows: 6 });
    await createMemory(b, { content: "My phone number changed to 0151 555 0199", userId: "ana" });
    expect(await expectKeptExact(a)).toBe(0);
    await createMemory(a, { content: "I moved to Lisbon", userId: "ana" });
    expect(await expectKeptExact(a)).toBe(1);

    // Sealing: the active segment fills (6 rows) and a new one takes the next insert.
    for (const city of ["Porto", "Madrid"]) await createMemory(a, { content: `I moved to ${city}`, userId: "ana" });
    expect((await a.store.segments()).length).toBe(2);
    expect(await expectKeptExact(a)).toBe(0);
    await createMemory(a, { content: "I moved to Oslo", userId: "ana" });
    expect(await expectKeptExact(a)).toBe(1);
    await Promise.all([a.close(), b.close()]);
  });
});

describe("CurrentRows", () => {
  const row = (id: string, createdAt: string, supersededBy: string | null = null): MemoryRow => ({
    id, accountId: "acc", userId: "u", agentId: null, content: id, tags: [], metadata: null, entityIds: [], createdAt, updatedAt: createdAt,
    seq: 0, supersededBy, supersededAt: supersededBy && createdAt, matchKeys: [], history: null, vector: new Float32Array([1, 0]),
  });
  const segment = (name: string, version: number) => ({ name, table: { version: async () => version } }) as never;

  it("follows this process's commit only when it is the one commit since: another in between forgets everything", async () => {
    const kept = new CurrentRows();
    await kept.remember([segment("s0", 3)], await kept.versions([segment("s0", 3)]), new Map([["acc\u0000u", [row("a", "2026-01-01")]]]));
    kept.committed("s0", 3, 4, [row("c", "2026-01-03"), row("b", "2026-01-02")], [], false);
    expect(await kept.holds([segment("s0", 4)], false)).toBe(true);
    expect(kept.get("acc", "u")!.map((r) => r.id)).toEqual(["a", "b", "c"]);
    kept.committed("s0", 4, 5, [], [row("a", "2026-01-01", "c")], false);
    expect(kept.get("acc", "u")!.map((r) => r.id)).toEqual(["b", "c"]);

    kept.committed("s0", 5, 7, [row("d", "2026-01-04")], [], false);
    expect(await kept.holds([segment("s0", 7)], false)).toBe(false);
  });

  it("keeps at most its size in rows, forgetting the least recently used users first", async () => {
    const kept = new CurrentRows(3);
    const at = [segment("s0", 1)];
    await kept.remember(at, await kept.versions(at), new Map([["acc\u0000u", [row("a", "1"), row("b", "2")]]]));
    await kept.remember(at, await kept.versions(at), new Map([["acc\u0000v", [row("c", "3"), row("d", "4")]]]));
    expect(kept.get("acc", "u")).toBeUndefined();
    expect(kept.get("acc", "v")!.length).toBe(2);
  });
});
