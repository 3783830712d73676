// Replaced facts, duplicates and history through the core services, on a real store with the
// deterministic test embedder (detection uses no model: core/supersede.ts).
import { afterEach, describe, expect, it, vi } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import {
  addMemoriesFromLines,
  createMemory,
  getMemory,
  listMemories,
  memoryHistory,
  restoreMemory,
  searchMemories,
  supersedeMemory,
  updateMemory,
  type BatchLineResult,
} from "../../src/core/memories.js";
import { DETECT_CANDIDATES, KEEP_SCAN } from "../../src/core/validity.js";
import { factsOf, lookupKeysOf, TEXT_KEY } from "../../src/core/supersede.js";
import { loadLance } from "../../src/storage/lance.js";
import { ASKED_BEYOND } from "../../src/storage/memories.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";
import { join } from "node:path";

const tempDir = useTempDirs();
const opened: Context[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

/** A context whose clock moves one second per call, so createdAt orders memories. */
async function open(dir?: string, start = "2026-01-01T00:00:00.000Z"): Promise<Context> {
  let t = Date.parse(start);
  const ctx = await openContext({ storeDir: dir ?? (await tempDir()), embedder: createTestEmbedder(), clock: () => new Date((t += 1000)) });
  opened.push(ctx);
  return ctx;
}

const codeOf = (p: Promise<unknown>) => p.then(() => "resolved", (e: { code?: string }) => e.code);

describe("replaced facts", () => {
  it("detects a moved home: the old memory stays readable, marked, and leaves default search", async () => {
    const ctx = await open();
    const paris = await createMemory(ctx, { content: "I live in a small flat in Paris near the canal", userId: "u" });
    await createMemory(ctx, { content: "I have a dog named Rex", userId: "u" });
    const berlin = await createMemory(ctx, { content: "I moved to Berlin last month", userId: "u" });
    expect(berlin.supersedes).toEqual([paris.id]);
    const old = await getMemory(ctx, paris.id);
    expect(old.supersededBy).toBe(berlin.id);
    expect(old.supersededAt).toBe(berlin.createdAt);
    expect((await getMemory(ctx, berlin.id)).supersedes).toEqual([paris.id]);

    const query = { query: "where do I live in Paris or Berlin flat", userId: "u", threshold: 0, mode: "semantic" };
    const ids = (await searchMemories(ctx, query)).results.map((h) => h.id);
    expect(ids).toContain(berlin.id);
    expect(ids).not.toContain(paris.id);
    const all = (await searchMemories(ctx, { ...query, includeSuperseded: true })).results;
    const marked = all.find((h) => h.id === paris.id);
    expect(marked).toMatchObject({ supersededBy: berlin.id, supersededAt: berlin.createdAt });
    expect(all.findIndex((h) => h.id === berlin.id)).toBeLessThan(all.findIndex((h) => h.id === paris.id));

    // asOf: before the move, Paris was current and Berlin did not exist yet.
    const before = (await searchMemories(ctx, { ...query, asOf: paris.createdAt })).results.map((h) => h.id);
    expect(before).toEqual([paris.id]);
    const after = (await searchMemories(ctx, { ...query, asOf: berlin.createdAt })).results.map((h) => h.id);
    expect(after).toContain(berlin.id);
    expect(after).not.toContain(paris.id);
  });

  it("leaves facts that are only related side by side", async () => {
    const ctx = await open();
    const pairs = [
      ["I have a dog named Rex", "We also have a cat called Mia"],
      ["My sister lives in Lyon", "My brother lives in Rome"],
      ["I'm allergic to peanuts", "I'm also allergic to shellfish"],
      ["The dentist appointment is on Monday at 9", "The team meeting is on Monday at 11"],
    ];
    for (const [a, b] of pairs) {
      const first = await createMemory(ctx, { content: a, userId: "u" });
      const second = await createMemory(ctx, { content: b, userId: "u" });
      expect(second.supersedes).toBeUndefined();
      expect((await getMemory(ctx, first.id)).supersededBy).toBeUndefined();
    }
  });

  it("replaces only within the same user and agent", async () => {
    const ctx = await open();
    const a = await createMemory(ctx, { content: "I work at Acme Robotics", userId: "ann" });
    const b = await createMemory(ctx, { content: "I work at Globex now", userId: "bob" });
    const c = await createMemory(ctx, { content: "I work at Initech now", userId: "ann", agentId: "other" });
    expect(b.supersedes).toBeUndefined();
    expect(c.supersedes).toBeUndefined();
    expect((await getMemory(ctx, a.id)).supersededBy).toBeUndefined();
    expect((await createMemory(ctx, { content: "I work at Initech now", userId: "ann", autoSupersede: false })).supersedes).toBeUndefined();
  });

  it("chains replacements in one batch and across batches, and history shows the chain both ways", async () => {
    const ctx = await open();
    const results: BatchLineResult[] = [];
    const lines = ["I live in Paris", "I moved to Lyon", "I have a cat", "Now I live in Berlin"].map((c) => JSON.stringify({ content: c, userId: "u" }));
    await addMemoriesFromLines(ctx, lines, { batchSize: 64, onResult: (r) => results.push(r) });
    const [paris, lyon, cat, berlin] = results.map((r) => r.memory!);
    expect(lyon.supersedes).toEqual([paris.id]);
    expect(berlin.supersedes).toEqual([lyon.id]);
    expect(cat.supersedes).toBeUndefined();
    expect((await getMemory(ctx, paris.id)).supersededBy).toBe(lyon.id);
    const h = await memoryHistory(ctx, lyon.id);
    expect(h.replaced.map((l) => l.id)).toEqual([paris.id]);
    expect(h.replacedBy.map((l) => l.id)).toEqual([berlin.id]);
    expect((await memoryHistory(ctx, berlin.id)).replaced.map((l) => l.id)).toEqual([lyon.id, paris.id]);
    expect((await memoryHistory(ctx, paris.id)).replacedBy.map((l) => l.id)).toEqual([lyon.id, berlin.id]);
  });

  it("takes a user's latest stored candidates, by sequence number, not by createdAt", async () => {
    // A clock that runs backwards: each memory is stored later but dated earlier.
    let t = Date.parse("2026-06-01T00:00:00.000Z");
    const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder(), clock: () => new Date((t -= 60_000)) });
    const made: string[] = [];
    for (let i = 0; i < 6; i++) made.push((await createMemory(ctx, { content: `My locker code is ${100 + i}`, userId: "u", autoSupersede: false })).id);
    const keys = lookupKeysOf("My locker code is 9", factsOf("My locker code is 9"));
    const picked = await ctx.store.write(async () => (await ctx.store.currentMemoriesMatching(ctx.accountId, new Map([["u", keys]]), { perUser: 2, exact: new Set() })).get("u")!);
    // The last two stored (the earliest dated), oldest first by createdAt.
    expect(picked.map((r) => r.id)).toEqual([made[5], made[4]]);
    await ctx.close();
  });

  it("looks for the twins of notes that state no fact with one query, not a second one for the same rows", async () => {
    const ctx = await open();
    const said = "We watched the sunset from the pier last night";
    const twin = await createMemory(ctx, { content: said, userId: "u" });
    await createMemory(ctx, { content: "Sounds like a lovely evening with the kids", userId: "w" });
    const keys = new Map([
      ["u", lookupKeysOf(said)],
      ["w", lookupKeysOf("Grandma baked her famous apple pie again")],
    ]);
    const all = [...keys.values()].flat();
    expect(all.every((k) => k.startsWith(TEXT_KEY))).toBe(true);
    const [segment] = await ctx.store.segments();
    const queries = vi.spyOn(segment.table, "query");
    const found = await ctx.store.write(() => ctx.store.currentMemoriesMatching(ctx.accountId, keys, { perUser: DETECT_CANDIDATES, exact: new Set(all) }));
    expect(queries).toHaveBeenCalledTimes(1);
    expect(found.get("u")!.map((r) => r.id)).toEqual([twin.id]);
    expect(found.get("w")).toEqual([]);
  });

  it("compares a new fact with the user's newest older memories that share its key, not with all of them", async () => {
    const ctx = await open();
    const results: BatchLineResult[] = [];
    // Stored with detection off, so that all stay current: more than detection compares.
    // More than a group of two users' first query asks for (twice what detection compares, and
    // ASKED_BEYOND more), so that one user's matches fill it (the store then asks per user). v's
    // note is older than all of them.
    const v = await createMemory(ctx, { content: "My locker code is 5", userId: "v" });
    const lines = Array.from({ length: Math.ceil(2 * DETECT_CANDIDATES * ASKED_BEYOND) + 30 }, (_, i) => JSON.stringify({ content: `My locker code is ${1000 + i}`, userId: "u", autoSupersede: false }));
    await addMemoriesFromLines(ctx, lines, { batchSize: 64, onResult: (r) => results.push(r) });
    const ids = results.map((r) => r.memory!.id);
    // One group commit: u's twin of its oldest note, v's new code, u's new code.
    const [twin, v2, latest] = await Promise.all([
      createMemory(ctx, { content: "My locker code is 1000", userId: "u" }),
      createMemory(ctx, { content: "My locker code is 6", userId: "v" }),
      createMemory(ctx, { content: "My locker code is 9999", userId: "u" }),
    ]);
    expect(twin).toMatchObject({ id: ids[0], deduplicated: true }); // found however old
    expect(v2.supersedes).toEqual([v.id]); // not crowded out by u's hundreds
    expect(new Set(latest.supersedes)).toEqual(new Set(ids.slice(-DETECT_CANDIDATES)));
    expect((await getMemory(ctx, ids[0])).supersededBy).toBeUndefined();
    expect((await getMemory(ctx, ids.at(-1)!)).supersededBy).toBe(latest.id);

    // A batch with two of u's notes that say something changed reads u's every current memory for
    // their nearest, and picks the candidates from those rows instead of asking again: the same
    // twin however old, the same newest older facts replaced.
    const matching = vi.spyOn(ctx.store, "currentMemoriesMatching");
    const batch: BatchLineResult[] = [];
    const more = ["My locker code is 1001", "I moved my bike to the basement", "My locker code is now 4242"];
    await addMemoriesFromLines(ctx, more.map((content) => JSON.stringify({ content, userId: "u" })), { onResult: (r) => batch.push(r) });
    expect(matching).not.toHaveBeenCalled();
    matching.mockRestore();
    expect(batch[0].memory).toMatchObject({ id: ids[1], deduplicated: true }); // beyond the newest
    // u's current locker codes: all but the newest DETECT_CANDIDATES of ids, and latest's.
    const stillCurrent = ids.slice(0, -DETECT_CANDIDATES);
    expect(new Set(batch[2].memory!.supersedes)).toEqual(new Set([...stillCurrent.slice(-(DETECT_CANDIDATES - 1)), latest.id]));
  });
});

describe("explicit control", () => {
  it("supersedes on create and update, supersede and restore, and refuses cycles, self and strangers", async () => {
    const ctx = await open();
    const a = await createMemory(ctx, { content: "Standup notes for Monday", userId: "u" });
    const b = await createMemory(ctx, { content: "Corrected standup notes for Monday", userId: "u", supersedes: [a.id] });
    expect(b.supersedes).toEqual([a.id]);
    expect((await getMemory(ctx, a.id)).supersededBy).toBe(b.id);

    const restored = await restoreMemory(ctx, a.id);
    expect(restored.supersededBy).toBeUndefined();
    const h = await memoryHistory(ctx, a.id);
    expect(h.events.map((e) => [e.type, e.memoryId, e.reason])).toEqual([
      ["superseded", b.id, "explicit"],
      ["restored", b.id, undefined],
    ]);

    const c = await createMemory(ctx, { content: "Tuesday's plan", userId: "u" });
    await updateMemory(ctx, c.id, { supersedes: [a.id] });
    expect((await getMemory(ctx, a.id)).supersededBy).toBe(c.id);
    expect(await codeOf(supersedeMemory(ctx, c.id, { by: a.id }))).toBe("VALIDATION_ERROR"); // a cycle
    expect(await codeOf(supersedeMemory(ctx, c.id, { by: c.id }))).toBe("VALIDATION_ERROR");
    expect(await codeOf(createMemory(ctx, { content: "x y z w", userId: "u", supersedes: ["mem_00000000000000000000000000"] }))).toBe("MEMORY_NOT_FOUND");
    const other = await createMemory(ctx, { content: "Someone else's note", userId: "v" });
    expect(await codeOf(supersedeMemory(ctx, other.id, { by: c.id }))).toBe("VALIDATION_ERROR");
    const stranger = { ...ctx, accountId: "acct_other" };
    expect(await codeOf(supersedeMemory(stranger, a.id, { by: c.id }))).toBe("MEMORY_NOT_FOUND");
    expect(await codeOf(restoreMemory(stranger, a.id))).toBe("MEMORY_NOT_FOUND");
    expect(await codeOf(memoryHistory(stranger, a.id))).toBe("MEMORY_NOT_FOUND");
    const moved = await supersedeMemory(ctx, b.id, { by: c.id });
    expect(moved.supersededBy).toBe(c.id);
  });
});

describe("history", () => {
  it("keeps every version of content, tags and metadata with its time", async () => {
    const ctx = await open();
    const m = await createMemory(ctx, { content: "first words", userId: "u", tags: ["a"] });
    const v2 = await updateMemory(ctx, m.id, { content: "second words" });
    const v3 = await updateMemory(ctx, m.id, { tags: ["b"], metadata: { k: 1 } });
    const h = await memoryHistory(ctx, m.id);
    expect(h.versions).toEqual([
      { version: 1, content: "first words", tags: ["a"], validFrom: m.updatedAt, validTo: v2.updatedAt },
      { version: 2, content: "second words", tags: ["a"], validFrom: v2.updatedAt, validTo: v3.updatedAt },
      { version: 3, content: "second words", tags: ["b"], metadata: { k: 1 }, validFrom: v3.updatedAt },
    ]);
  });

  it("ends a replaced memory's last version when it was replaced, not now", async () => {
    const ctx = await open();
    const paris = await createMemory(ctx, { content: "I live in Paris", userId: "u" });
    const berlin = await createMemory(ctx, { content: "I moved to Berlin", userId: "u" });
    const h = await memoryHistory(ctx, paris.id);
    expect(h.versions).toEqual([{ version: 1, content: "I live in Paris", validFrom: paris.updatedAt, validTo: berlin.createdAt }]);
    expect(h.events).toEqual([expect.objectContaining({ type: "superseded", at: berlin.createdAt, memoryId: berlin.id })]);
    await restoreMemory(ctx, paris.id);
    expect((await memoryHistory(ctx, paris.id)).versions.at(-1)!.validTo).toBeUndefined();
  });
});

describe("duplicates", () => {
  it("stores no second copy of what a current memory already says, unless asked", async () => {
    const ctx = await open();
    const first = await createMemory(ctx, { content: "My passport number ends in 4471.", userId: "u" });
    const again = await createMemory(ctx, { content: "my passport number ends in 4471", userId: "u" });
    expect(again).toMatchObject({ id: first.id, deduplicated: true });
    const forced = await createMemory(ctx, { content: "my passport number ends in 4471", userId: "u", dedupe: false });
    expect(forced.id).not.toBe(first.id);
    // Chat turns are not facts to merge.
    const thanks = await createMemory(ctx, { content: "Thanks!", userId: "u" });
    expect((await createMemory(ctx, { content: "Thanks!", userId: "u" })).id).not.toBe(thanks.id);
    expect((await createMemory(ctx, { content: "ok", userId: "u" })).deduplicated).toBeUndefined();
    expect((await createMemory(ctx, { content: "My passport number ends in 4471.", userId: "w" })).deduplicated).toBeUndefined();
    // The same words with other tags or metadata record another event.
    expect((await createMemory(ctx, { content: "My passport number ends in 4471.", userId: "u", tags: ["travel"] })).deduplicated).toBeUndefined();
    expect((await createMemory(ctx, { content: "My passport number ends in 4471.", userId: "u", metadata: { turn: 7 } })).deduplicated).toBeUndefined();
    expect((await createMemory(ctx, { content: "my passport number ends in 4471!", userId: "u", metadata: { turn: 7 } })).deduplicated).toBe(true);
    expect((await listMemories(ctx, { userId: "u" })).pagination.total).toBe(7); // first, forced, two "Thanks!", "ok", tagged, with metadata
  });

  it("reads once the memories of a user whose notes say nothing changed, and finds the next duplicates among the rows the process keeps; a user with more than KEEP_SCAN is asked each time", async () => {
    const dir = await tempDir();
    const ctx = await open(dir);
    const asked = vi.spyOn(ctx.store, "currentMemoriesMatching");
    const turn = "Melanie: That sounds great, how did the pottery class go last week?";
    const first = await createMemory(ctx, { content: turn, userId: "u" });
    await createMemory(ctx, { content: "Caroline: It was lovely, we made little bowls and laughed a lot.", userId: "u" });
    expect(await createMemory(ctx, { content: turn.toLowerCase(), userId: "u" })).toMatchObject({ id: first.id, deduplicated: true });
    expect(asked).not.toHaveBeenCalled();
    // More than KEEP_SCAN: not read whole, asked (in a process that keeps nothing of them yet).
    const many = Array.from({ length: KEEP_SCAN + 1 }, (_, i) => JSON.stringify({ content: `Caroline: note number ${i} about the garden.`, userId: "big" }));
    await addMemoriesFromLines(ctx, many, { batchSize: 256, onResult: () => undefined });
    const other = await open(dir);
    const askedThere = vi.spyOn(other.store, "currentMemoriesMatching");
    expect(await createMemory(other, { content: "caroline: note number 7 about the garden", userId: "big" })).toMatchObject({ deduplicated: true });
    expect(askedThere).toHaveBeenCalledTimes(1);
    // A small user in that process is read whole at its first create, and asked nothing after.
    expect(await createMemory(other, { content: turn, userId: "u" })).toMatchObject({ id: first.id, deduplicated: true });
    expect(await createMemory(other, { content: "Melanie: Bowls! Send me a picture of the blue one.", userId: "u" })).not.toHaveProperty("deduplicated");
    expect(askedThere).toHaveBeenCalledTimes(1);
  });
});

describe("near-duplicates", () => {
  it("counts the same words in other contractions, punctuation, case or spacing as a duplicate", async () => {
    const ctx = await open();
    const first = await createMemory(ctx, { content: "I'm allergic to penicillin", userId: "u" });
    for (const again of ["I am allergic to penicillin.", "i AM   allergic to Penicillin!", "I\u2019m allergic to penicillin"]) {
      expect(await createMemory(ctx, { content: again, userId: "u" }), again).toMatchObject({ id: first.id, deduplicated: true });
    }
    const dont = await createMemory(ctx, { content: "We don't eat meat at home", userId: "u" });
    expect(await createMemory(ctx, { content: "We do not eat meat at home.", userId: "u" })).toMatchObject({ id: dont.id, deduplicated: true });
    const its = await createMemory(ctx, { content: "It's my sister's birthday on the fifth", userId: "u" });
    expect(await createMemory(ctx, { content: "It is my sister's birthday on the fifth", userId: "u" })).toMatchObject({ id: its.id, deduplicated: true });
    // In one batch too.
    const results: BatchLineResult[] = [];
    const lines = ["We've got two cats at home", "We have got two cats at home."].map((c) => JSON.stringify({ content: c, userId: "w" }));
    await addMemoriesFromLines(ctx, lines, { batchSize: 64, onResult: (r) => results.push(r) });
    expect(results[1].memory).toMatchObject({ id: results[0].memory!.id, deduplicated: true });
    // Other words are not a duplicate: a possessive stays one, and a negation is not the statement.
    expect((await createMemory(ctx, { content: "I'm not allergic to penicillin", userId: "u" })).deduplicated).toBeUndefined();
    expect((await createMemory(ctx, { content: "It is my sister birthday on the fifth", userId: "u" })).deduplicated).toBeUndefined();
  });
});

describe("stores made before replaced facts", () => {
  it("open, read old memories as current, and take replacements", async () => {
    const dir = await tempDir();
    const ctx = await open(dir);
    const kept = await createMemory(ctx, { content: "I live in Paris", userId: "u" });
    await ctx.close();
    opened.splice(opened.indexOf(ctx), 1);
    const { lancedb } = loadLance();
    const db = await lancedb.connect(join(dir, "db"));
    const table = await db.openTable("memories");
    await table.dropColumns(["supersededBy", "supersededAt", "matchKeys", "history"]);
    expect((await table.schema()).fields.map((f) => f.name)).not.toContain("history");

    const upgraded = await open(dir, "2026-02-01T00:00:00.000Z");
    expect((await getMemory(upgraded, kept.id)).supersededBy).toBeUndefined();
    const moved = await createMemory(upgraded, { content: "I moved to Berlin", userId: "u", supersedes: [kept.id] });
    expect((await getMemory(upgraded, kept.id)).supersededBy).toBe(moved.id);
    expect((await memoryHistory(upgraded, kept.id)).versions).toHaveLength(1);
    table.close();
    db.close();
  });
});

describe("export and import", () => {
  it("carry history and replacements, with ids kept or remapped", async () => {
    const { exportStore, importExport, jsonLines } = await import("../../src/core/transfer.js");
    const ctx = await open();
    const paris = await createMemory(ctx, { content: "I live in Paris", userId: "u" });
    await updateMemory(ctx, paris.id, { tags: ["home"] });
    const berlin = await createMemory(ctx, { content: "I moved to Berlin", userId: "u" });
    expect(berlin.supersedes).toEqual([paris.id]);
    const lines: string[] = [];
    await exportStore(ctx, {}, (l) => void lines.push(l));
    const exported = lines.map((l) => JSON.parse(l)).find((r) => r.id === paris.id);
    expect(exported).toMatchObject({ supersededBy: berlin.id, supersededAt: berlin.createdAt });
    expect(exported.history.map((e: { type: string }) => e.type)).toEqual(["version", "superseded"]);

    for (const remapIds of [false, true]) {
      const copy = await open();
      expect(await importExport(copy, jsonLines(lines), { remapIds })).toMatchObject({ added: 2, failed: 0 });
      const items = (await listMemories(copy, {})).items;
      const oldOne = items.find((m) => m.content === "I live in Paris")!;
      const newOne = items.find((m) => m.content === "I moved to Berlin")!;
      expect(oldOne.id === paris.id).toBe(!remapIds);
      expect(oldOne.supersededBy).toBe(newOne.id);
      const h = await memoryHistory(copy, oldOne.id);
      expect(h.versions.map((v) => v.tags)).toEqual([undefined, ["home"]]);
      expect(h.replacedBy.map((l) => l.id)).toEqual([newOne.id]);
      expect((await searchMemories(copy, { query: "Paris", userId: "u", threshold: 0, mode: "semantic" })).results.map((r) => r.id)).toEqual([newOne.id]);
    }
  });
});
