import { describe, expect, it, vi } from "vitest";
import { embedChecked, type Context } from "../../src/core/context.js";
import { createMemory } from "../../src/core/memories.js";
import { RecentWrites } from "../../src/storage/recent-writes.js";
import type { MemoryRow } from "../../src/storage/store.js";
import { useAzurite } from "../helpers/azurite.js";
import { useTempDirs } from "../helpers/temp.js";
import { everyKindOfWrite, firstNotes, storeKinds } from "../helpers/write-kinds.js";

const tempDir = useTempDirs();
const azurite = useAzurite();
const USERS = ["ana", "bo"];

/** Reads given a view of recent writes (RecentWrites.view resolved to one), so far. */
let views = 0;
const view = RecentWrites.prototype.view;
vi.spyOn(RecentWrites.prototype, "view").mockImplementation(async function (this: RecentWrites, ...args) {
  const given = await view.apply(this, args);
  if (given) views++;
  return given;
});

/**
 * Under `ctx`'s write lock, detection's three reads through the view of recent writes against the
 * same reads by `fresh`, another process on the store that keeps nothing: the candidates, each
 * user's nearest, and whole rows by id. Equal, row for row (distances to 1e-6: the view's own rows
 * are compared in JavaScript). Returns whether a view was given.
 */
async function expectRecentExact(ctx: Context, fresh: Context): Promise<boolean> {
  const [vector] = await embedChecked(ctx, ["where does she live and work now"]);
  const before = views;
  const byId = <T extends { id: string }>(rows: T[]) => [...rows].sort((a, b) => a.id.localeCompare(b.id));
  await ctx.store.write(async () => {
    const all = await fresh.store.listMemories({ accountId: ctx.accountId }, { limit: 1000, offset: 0 }).then((p) => p.records);
    const keys = new Map(USERS.map((u) => [u, [...new Set(all.filter((r) => r.userId === u).flatMap((r) => r.matchKeys))]]));
    for (const perUser of [2, 200]) {
      const mine = await ctx.store.currentMemoriesMatching(ctx.accountId, keys, { perUser, exact: new Set() });
      const theirs = await fresh.store.currentMemoriesMatching(ctx.accountId, keys, { perUser, exact: new Set() });
      for (const u of USERS) expect(byId(mine.get(u)!)).toEqual(byId(theirs.get(u)!));
    }
    for (const userId of USERS) {
      const filter = { accountId: ctx.accountId, userId, current: true as const };
      const mine = await ctx.store.searchMemories(vector, filter, 3, { recent: true });
      const theirs = await fresh.store.searchMemories(vector, filter, 3);
      expect(mine.map((h) => h.record)).toEqual(theirs.map((h) => h.record));
      mine.forEach((h, i) => expect(h.distance).toBeCloseTo(theirs[i].distance, 6));
    }
    const ids = all.map((r) => r.id);
    expect(byId(await ctx.store.getMemoryRows(ctx.accountId, ids, { recent: true }))).toEqual(byId(await fresh.store.getMemoryRows(ctx.accountId, ids)));
  });
  return views > before;
}

/** A fresh store of each kind, reading through a view from one commit on (object stores: from 4, by default). */
const STORES = storeKinds(tempDir, azurite, { recentWrites: 1 });

describe.each(STORES)("detection's reads through this process's recent writes, on %s", (_kind, newStore) => {
  it("answer exactly what a read of the table answers, through creates that replace, edits, deletes, replacements by hand and entity merges", async () => {
    const open = await newStore();
    const ctx = await open();
    const fresh = await open({ recentWrites: 0 });
    const { paris, dentist, berlin } = await firstNotes(ctx);
    // Detection's first read took the table as it was as its base; the creates since are recent.
    expect(await expectRecentExact(ctx, fresh)).toBe(true);

    const lisbon = await createMemory(ctx, { content: "I moved to Lisbon", userId: "ana" });
    expect(lisbon.supersedes).toEqual([berlin]);
    const steps = await everyKindOfWrite(ctx, { paris, berlin, lisbon: lisbon.id, dentist });
    expect(await expectRecentExact(ctx, fresh)).toBe(true);

    const viewed: string[] = [];
    for (const [step, run] of steps) {
      await run();
      if (await expectRecentExact(ctx, fresh)) viewed.push(step);
    }
    // A compaction is a commit this process's writes didn't make, and a delete or a merge writes
    // memory rows it doesn't keep: each time the next read starts again from the table as it is.
    expect(viewed).toEqual(["an edit", "a replacement by hand", "a restore", "a create", "a create after all of them"]);
    await Promise.all([ctx.close(), fresh.close()]);
  });

  it("start again when another process writes, and when a seal makes a new segment", async () => {
    const open = await newStore();
    const a = await open({ segmentRows: 8 });
    const fresh = await open({ recentWrites: 0 });
    await createMemory(a, { content: "I live in Paris", userId: "ana" });
    await createMemory(a, { content: "I moved to Berlin", userId: "ana" });
    expect(await expectRecentExact(a, fresh)).toBe(true);

    const b = await open({ segmentRows: 8 });
    await createMemory(b, { content: "My phone number changed to 0151 555 0199", userId: "ana" });
    expect(await expectRecentExact(a, fresh)).toBe(false);
    await createMemory(a, { content: "I moved to Lisbon", userId: "bo" });
    expect(await expectRecentExact(a, fresh)).toBe(true);

    // Sealing: the active segment fills (8 rows) and a new one takes the next insert.
    for (const city of ["Porto", "Madrid", "Rome", "Oslo"]) await createMemory(a, { content: `I moved to ${city}`, userId: "ana" });
    expect((await a.store.segments()).length).toBe(2);
    expect(await expectRecentExact(a, fresh)).toBe(false);
    await createMemory(a, { content: "I moved to Bergen", userId: "ana" });
    expect(await expectRecentExact(a, fresh)).toBe(true);
    await Promise.all([a.close(), b.close(), fresh.close()]);
  });
});

describe("RecentWrites", () => {
  const row = (id: string): MemoryRow => ({
    id, accountId: "acc", userId: "u", agentId: null, content: id, tags: [], metadata: null, entityIds: [], createdAt: "2026-01-01", updatedAt: "2026-01-01",
    seq: 0, supersededBy: null, supersededAt: null, matchKeys: [], history: null, vector: new Float32Array([1, 0]),
  });
  const segment = (name: string, version: number) => ({ name, table: { version: async () => version } }) as never;
  const base = { base: true } as never;

  it("follows this process's commits one at a time; a commit in between, or one too many rows, starts it again", async () => {
    const opened: number[] = [];
    const recent = new RecentWrites(async (_name, version) => (opened.push(version), base), 3);
    expect(await recent.view(segment("s0", 3))).toBeUndefined(); // the base: version 3
    recent.committed("s0", 3, 4, [row("a")], []);
    recent.committed("s0", 4, 5, [], [row("z")]);
    const view = (await recent.view(segment("s0", 5)))!;
    expect(view.table).toBe(base);
    expect([...view.rows.keys()]).toEqual(["a", "z"]);
    expect(view.rewrittenIn(() => true)).toBe(1); // z was in the base, a was not
    // A read of one user's rows hides only that user's rewritten rows.
    expect(view.rewrittenIn((r) => r.userId === "u")).toBe(1);
    expect(view.rewrittenIn((r) => r.userId === "someone else")).toBe(0);
    expect(opened).toEqual([3]);

    // Another commit came between: the base moves to now, with nothing recent.
    expect(await recent.view(segment("s0", 7))).toBeUndefined();
    recent.committed("s0", 7, 8, [row("b"), row("c")], []);
    expect((await recent.view(segment("s0", 8)))!.rows.size).toBe(2);
    recent.committed("s0", 8, 9, [row("d"), row("e")], []); // past 3 rows: forgotten
    expect(await recent.view(segment("s0", 9))).toBeUndefined();
    recent.committed("s0", 9, 11, [row("f")], []); // not one commit: forgotten
    expect(await recent.view(segment("s0", 11))).toBeUndefined();
  });

  it("gives a view only from `after` commits since the base: before that, the few small fragments cost less than opening the base", async () => {
    const opened: number[] = [];
    const recent = new RecentWrites(async (_name, version) => (opened.push(version), base));
    await recent.view(segment("s0", 10), 3);
    recent.committed("s0", 10, 11, [row("a")], []);
    recent.committed("s0", 11, 12, [row("b")], []);
    expect(await recent.view(segment("s0", 12), 3)).toBeUndefined();
    recent.committed("s0", 12, 13, [row("c")], []);
    expect((await recent.view(segment("s0", 13), 3))!.rows.size).toBe(3);
    expect(opened).toEqual([10]);
  });

  it("reads the table as it is when its base version can't be opened any more", async () => {
    const recent = new RecentWrites(async () => {
      throw new Error("Not found: memories.lance/_versions/3.manifest");
    });
    await recent.view(segment("s0", 3));
    recent.committed("s0", 3, 4, [row("a")], []);
    expect(await recent.view(segment("s0", 4))).toBeUndefined();
    expect(await recent.view(segment("s0", 4))).toBeUndefined(); // and starts again from there
  });
});
