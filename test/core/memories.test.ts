// Search tests here pin the semantic mode's score definition (cosine clamped to [0, 1], decisions.md),
// so they name that mode; hybrid ranking and calibration are tested in ranking.test.ts and
// search-quality.test.ts.
import { afterEach, describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import {
  addMemoriesFromLines,
  createMemory,
  deleteMemory,
  getMemory,
  listMemories,
  searchMemories,
  updateMemory,
  type BatchLineResult,
  type Memory,
} from "../../src/core/memories.js";
import type { Embedder } from "../../src/embedder/types.js";
import { MmError } from "../../src/errors.js";
import { createTestEmbedder, withEmbed } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

// Registered after useTempDirs: vitest runs after-hooks in reverse order, so contexts close before
// their directories are removed.
const opened: Context[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

const ID_RE = /^mem_[0-9A-Z]{24}$/;
const ISO_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const START = "2026-01-01T00:00:00.000Z";

interface FakeClock {
  (): Date;
  set(iso: string): void;
  advance(ms: number): void;
}

function fakeClock(start = START): FakeClock {
  let t = Date.parse(start);
  const clock = (() => new Date(t)) as FakeClock;
  clock.set = (iso) => void (t = Date.parse(iso));
  clock.advance = (ms) => void (t += ms);
  return clock;
}

interface Env {
  dir: string;
  ctx: Context;
  embedder: ReturnType<typeof createTestEmbedder>;
  clock: FakeClock;
}

async function setup(options: { dir?: string; accountId?: string; embedder?: Embedder } = {}): Promise<Env> {
  const dir = options.dir ?? (await tempDir());
  const embedder = createTestEmbedder();
  const clock = fakeClock();
  const ctx = await openContext({ storeDir: dir, embedder: options.embedder ?? embedder, clock, accountId: options.accountId });
  opened.push(ctx);
  return { dir, ctx, embedder, clock };
}

async function catchError(p: Promise<unknown>): Promise<MmError> {
  let caught: unknown;
  let resolved: unknown = "<not resolved>";
  try {
    resolved = await p;
  } catch (err) {
    caught = err;
  }
  expect(caught, `expected a rejection, got ${JSON.stringify(resolved)}`).toBeInstanceOf(MmError);
  return caught as MmError;
}

async function expectMmError(p: Promise<unknown>, code: string, extra?: Record<string, unknown>): Promise<MmError> {
  const err = await catchError(p);
  expect(err.code, err.message).toBe(code);
  if (extra) expect(err.extra).toMatchObject(extra);
  return err;
}

function detailFields(err: MmError): string[] {
  const details = err.extra.details as { field: string; message: string }[] | undefined;
  expect(Array.isArray(details), "VALIDATION_ERROR carries details").toBe(true);
  for (const d of details!) {
    expect(typeof d.field).toBe("string");
    expect(typeof d.message).toBe("string");
    expect(d.message.length).toBeGreaterThan(0);
  }
  return details!.map((d) => d.field);
}

/** A VALIDATION_ERROR whose details name `field` (or an element of it, such as `tags.1`). */
async function expectValidation(p: Promise<unknown>, field: string): Promise<MmError> {
  const err = await expectMmError(p, "VALIDATION_ERROR");
  const fields = detailFields(err);
  expect(
    fields.some((f) => f === field || f.startsWith(`${field}.`)),
    `details ${JSON.stringify(fields)} name ${field}`,
  ).toBe(true);
  return err;
}

/** Everything the account can see, plus the raw row count of the whole store (all accounts). */
async function snapshot(ctx: Context) {
  const count = await ctx.store.countMemories();
  const items = (await listMemories(ctx, { limit: 100 })).items;
  const full = await Promise.all(items.map((i) => getMemory(ctx, i.id)));
  return { count, items, full };
}

function keys(o: object): string[] {
  return Object.keys(o).sort();
}

function jsonLines(objects: unknown[]): string[] {
  return objects.map((o) => JSON.stringify(o));
}

/** Bulk insert in one batch (one embed call, one commit), through the service. */
async function seed(ctx: Context, objects: Record<string, unknown>[]): Promise<Memory[]> {
  const out: Memory[] = [];
  const r = await addMemoriesFromLines(ctx, jsonLines(objects), {
    batchSize: 1000,
    onResult: (res) => res.memory && out.push(res.memory),
  });
  expect(r).toEqual({ added: objects.length, failed: 0, stopped: false });
  return out;
}

function sortNewestFirst<T extends { createdAt: string; id: string }>(items: T[]): T[] {
  return [...items].sort((a, b) =>
    a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? 1 : -1) : a.id < b.id ? 1 : a.id > b.id ? -1 : 0,
  );
}

// ---------------------------------------------------------------------------------------------
describe("createMemory / getMemory: shapes", () => {
  it("returns exactly id, content, userId, createdAt, updatedAt for a minimal memory", async () => {
    const { ctx, clock } = await setup();
    clock.set("2026-03-04T05:06:07.089Z");
    const m = await createMemory(ctx, { content: "I like green tea", userId: "alice" });
    expect(keys(m)).toEqual(["content", "createdAt", "id", "updatedAt", "userId"]);
    expect(m.id).toMatch(ID_RE);
    expect(m.content).toBe("I like green tea");
    expect(m.userId).toBe("alice");
    expect(m.createdAt).toBe("2026-03-04T05:06:07.089Z");
    expect(m.updatedAt).toBe(m.createdAt);
    expect(await getMemory(ctx, m.id)).toStrictEqual(m);
    expect(await ctx.store.countMemories()).toBe(1);
  });

  it("returns every supplied field, metadata deeply equal", async () => {
    const { ctx } = await setup();
    const metadata = { source: "chat", n: 42, f: 1.5, ok: true, none: null, nested: { list: [1, "two", null, false], deep: { ü: "ß" } } };
    const m = await createMemory(ctx, { content: "full", userId: "alice", agentId: "agent-1", tags: ["a", "b"], metadata });
    expect(m).toStrictEqual({
      id: m.id,
      content: "full",
      userId: "alice",
      agentId: "agent-1",
      tags: ["a", "b"],
      metadata,
      createdAt: START,
      updatedAt: START,
    });
    expect(keys(m)).toEqual(["agentId", "content", "createdAt", "id", "metadata", "tags", "updatedAt", "userId"]);
    expect(await getMemory(ctx, m.id)).toStrictEqual(m);
  });

  it("omits tags when given an empty array, keeps metadata {} when given {}", async () => {
    const { ctx } = await setup();
    const m = await createMemory(ctx, { content: "c", userId: "u", tags: [], metadata: {} });
    expect(keys(m)).toEqual(["content", "createdAt", "id", "metadata", "updatedAt", "userId"]);
    expect(m.metadata).toStrictEqual({});
    const got = await getMemory(ctx, m.id);
    expect(keys(got)).toEqual(["content", "createdAt", "id", "metadata", "updatedAt", "userId"]);
    expect(got.metadata).toStrictEqual({});
  });

  it("deduplicates repeated tags, keeping first-seen order", async () => {
    const { ctx } = await setup();
    const m = await createMemory(ctx, { content: "c", userId: "u", tags: ["b", "a", "b", "a"] });
    expect(m.tags).toEqual(["b", "a"]);
    expect((await getMemory(ctx, m.id)).tags).toEqual(["b", "a"]);
  });

  it("uses the real clock when none is injected: ISO UTC with milliseconds, updatedAt == createdAt", async () => {
    const dir = await tempDir();
    const ctx = await openContext({ storeDir: dir, embedder: createTestEmbedder() });
    opened.push(ctx);
    const before = Date.now();
    const m = await createMemory(ctx, { content: "now", userId: "u" });
    const after = Date.now();
    expect(m.createdAt).toMatch(ISO_RE);
    expect(m.updatedAt).toBe(m.createdAt);
    const t = Date.parse(m.createdAt);
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(after);
  });

  it("assigns unique, well-formed ids", async () => {
    const { ctx, clock } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      if (i % 3 === 0) clock.advance(1); // some share a millisecond, some don't
      const m = await createMemory(ctx, { content: `memory ${i}`, userId: "u" });
      expect(m.id).toMatch(ID_RE);
      expect(m.createdAt).toMatch(ISO_RE);
      expect(m.updatedAt).toBe(m.createdAt);
      ids.push(m.id);
    }
    const bulk = await seed(ctx, Array.from({ length: 20 }, (_, i) => ({ content: `bulk ${i}`, userId: "u" })));
    ids.push(...bulk.map((m) => m.id));
    for (const id of ids) expect(id).toMatch(ID_RE);
    expect(new Set(ids).size).toBe(32);
    expect(await ctx.store.countMemories()).toBe(32);
  });

  it("list items have no metadata; search hits have no metadata or updatedAt", async () => {
    const { ctx } = await setup();
    const full = await createMemory(ctx, {
      content: "shape check memory",
      userId: "u",
      agentId: "ag",
      tags: ["t1"],
      metadata: { k: "v" },
    });
    const bare = await createMemory(ctx, { content: "bare shape memory", userId: "u", metadata: {} });

    const list = await listMemories(ctx, {});
    const byId = new Map(list.items.map((i) => [i.id, i]));
    expect(byId.get(full.id)).toStrictEqual({
      id: full.id,
      content: full.content,
      userId: "u",
      agentId: "ag",
      tags: ["t1"],
      createdAt: full.createdAt,
      updatedAt: full.updatedAt,
    });
    expect(byId.get(bare.id)).toStrictEqual({
      id: bare.id,
      content: bare.content,
      userId: "u",
      createdAt: bare.createdAt,
      updatedAt: bare.updatedAt,
    });

    const { results } = await searchMemories(ctx, { mode: "semantic", query: "shape check memory", threshold: 0 });
    const hits = new Map(results.map((h) => [h.id, h]));
    const hitFull = hits.get(full.id)!;
    expect(keys(hitFull)).toEqual(["agentId", "content", "createdAt", "id", "score", "tags", "userId"]);
    expect(hitFull).toStrictEqual({
      id: full.id,
      content: full.content,
      score: expect.any(Number),
      userId: "u",
      agentId: "ag",
      tags: ["t1"],
      createdAt: full.createdAt,
    });
    expect(hitFull.score).toBeCloseTo(1, 5);
    const hitBare = hits.get(bare.id)!;
    expect(keys(hitBare)).toEqual(["content", "createdAt", "id", "score", "userId"]);
  });
});

// ---------------------------------------------------------------------------------------------
describe("createMemory: bad input is rejected and stores nothing", () => {
  const longTag = "t".repeat(101);
  const bigMetadata = { s: "x".repeat(64 * 1024) };
  const cases: [string, unknown, string, string | undefined][] = [
    ["body null", null, "VALIDATION_ERROR", "body"],
    ["body array", [{ content: "c", userId: "u" }], "VALIDATION_ERROR", "body"],
    ["body string", "content", "VALIDATION_ERROR", "body"],
    ["body number", 42, "VALIDATION_ERROR", "body"],
    ["body undefined", undefined, "VALIDATION_ERROR", "body"],
    ["content missing", { userId: "u" }, "VALIDATION_ERROR", "content"],
    ["content empty", { content: "", userId: "u" }, "VALIDATION_ERROR", "content"],
    ["content whitespace", { content: " \n\t\r ", userId: "u" }, "VALIDATION_ERROR", "content"],
    ["content number", { content: 123, userId: "u" }, "VALIDATION_ERROR", "content"],
    ["content null", { content: null, userId: "u" }, "VALIDATION_ERROR", "content"],
    ["content array", { content: ["a"], userId: "u" }, "VALIDATION_ERROR", "content"],
    ["content object", { content: { text: "a" }, userId: "u" }, "VALIDATION_ERROR", "content"],
    ["content lone high surrogate", { content: "bad \uD800 text", userId: "u" }, "VALIDATION_ERROR", "content"],
    ["content lone low surrogate", { content: "bad \uDC00", userId: "u" }, "VALIDATION_ERROR", "content"],
    ["userId missing", { content: "c" }, "INVALID_USER_ID", undefined],
    ["userId empty", { content: "c", userId: "" }, "INVALID_USER_ID", undefined],
    ["userId blank", { content: "c", userId: "   " }, "INVALID_USER_ID", undefined],
    ["userId null", { content: "c", userId: null }, "INVALID_USER_ID", undefined],
    ["userId number", { content: "c", userId: 7 }, "VALIDATION_ERROR", "userId"],
    ["userId array", { content: "c", userId: ["u"] }, "VALIDATION_ERROR", "userId"],
    ["userId too long", { content: "c", userId: "u".repeat(257) }, "VALIDATION_ERROR", "userId"],
    ["agentId empty", { content: "c", userId: "u", agentId: "" }, "VALIDATION_ERROR", "agentId"],
    ["agentId blank", { content: "c", userId: "u", agentId: "  " }, "VALIDATION_ERROR", "agentId"],
    ["agentId number", { content: "c", userId: "u", agentId: 5 }, "VALIDATION_ERROR", "agentId"],
    ["tags string", { content: "c", userId: "u", tags: "a" }, "VALIDATION_ERROR", "tags"],
    ["tags comma string", { content: "c", userId: "u", tags: "a,b" }, "VALIDATION_ERROR", "tags"],
    ["tags object", { content: "c", userId: "u", tags: { a: 1 } }, "VALIDATION_ERROR", "tags"],
    ["tags with a number", { content: "c", userId: "u", tags: ["ok", 5] }, "VALIDATION_ERROR", "tags"],
    ["tags with null", { content: "c", userId: "u", tags: ["ok", null] }, "VALIDATION_ERROR", "tags"],
    ["tags with empty string", { content: "c", userId: "u", tags: ["ok", ""] }, "VALIDATION_ERROR", "tags"],
    ["tags with blank string", { content: "c", userId: "u", tags: ["  "] }, "VALIDATION_ERROR", "tags"],
    ["tags with a comma", { content: "c", userId: "u", tags: ["a,b"] }, "VALIDATION_ERROR", "tags"],
    ["51 tags", { content: "c", userId: "u", tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, "VALIDATION_ERROR", "tags"],
    ["tag of 101 characters", { content: "c", userId: "u", tags: [longTag] }, "VALIDATION_ERROR", "tags"],
    ["metadata array", { content: "c", userId: "u", metadata: [1, 2] }, "VALIDATION_ERROR", "metadata"],
    ["metadata null", { content: "c", userId: "u", metadata: null }, "VALIDATION_ERROR", "metadata"],
    ["metadata string", { content: "c", userId: "u", metadata: "{}" }, "VALIDATION_ERROR", "metadata"],
    ["metadata number", { content: "c", userId: "u", metadata: 1 }, "VALIDATION_ERROR", "metadata"],
    ["metadata over 64 KiB", { content: "c", userId: "u", metadata: bigMetadata }, "VALIDATION_ERROR", "metadata"],
    ["unknown field user_id", { content: "c", userId: "u", user_id: "u" }, "VALIDATION_ERROR", "user_id"],
    ["client-chosen id", { content: "c", userId: "u", id: "mem_00000000000000000000000000" }, "VALIDATION_ERROR", "id"],
    ["client-chosen createdAt", { content: "c", userId: "u", createdAt: START }, "VALIDATION_ERROR", "createdAt"],
  ];

  it.each(cases)("%s → %s", async (_name, body, code, field) => {
    const { ctx, embedder } = await setup();
    await createMemory(ctx, { content: "existing memory", userId: "u", tags: ["keep"], metadata: { keep: true } });
    const before = await snapshot(ctx);
    const callsBefore = embedder.calls;

    const err = field ? await expectValidation(createMemory(ctx, body), field) : await expectMmError(createMemory(ctx, body), code);
    expect(err.code).toBe(code);
    expect(err.status).toBe(400);

    expect(await snapshot(ctx)).toStrictEqual(before);
    expect(before.count).toBe(1);
    expect(embedder.calls, "invalid input is rejected before embedding").toBe(callsBefore);
  });

  it("accepts the limits themselves: 50 tags, a 100-character tag, a 256-character userId, 64 KiB of metadata", async () => {
    const { ctx } = await setup();
    const tags = Array.from({ length: 50 }, (_, i) => `t${i}`);
    const a = await createMemory(ctx, { content: "c", userId: "u", tags });
    expect(a.tags).toEqual(tags);
    const tag100 = "é".repeat(100);
    const b = await createMemory(ctx, { content: "c", userId: "u".repeat(256), tags: [tag100] });
    expect(b.tags).toEqual([tag100]);
    expect(b.userId).toBe("u".repeat(256));
    // {"s":"…"} is 8 bytes of JSON around the string: exactly 65,536 bytes in all.
    const metadata = { s: "x".repeat(64 * 1024 - 8) };
    expect(Buffer.byteLength(JSON.stringify(metadata))).toBe(64 * 1024);
    const c = await createMemory(ctx, { content: "c", userId: "u", metadata });
    expect((await getMemory(ctx, c.id)).metadata).toStrictEqual(metadata);
    expect(await ctx.store.countMemories()).toBe(3);
  });

  // Regression: z.record rebuilt metadata key by key, and an own "__proto__" key (as JSON.parse
  // makes it) set the copy's prototype instead, silently dropping the key.
  it("never silently drops a metadata key named __proto__ (round-trips it or rejects it)", async () => {
    const { ctx } = await setup();
    const metadata = JSON.parse('{"__proto__": {"x": 1}, "a": 1}') as Record<string, unknown>;
    expect(Object.keys(metadata)).toEqual(["__proto__", "a"]);
    let created: Memory | undefined;
    try {
      created = await createMemory(ctx, { content: "c", userId: "u", metadata });
    } catch (err) {
      expect((err as MmError).code).toBe("VALIDATION_ERROR");
      expect(await ctx.store.countMemories()).toBe(0);
      return;
    }
    const got = await getMemory(ctx, created.id);
    expect(Object.keys(got.metadata!)).toEqual(["__proto__", "a"]);
    expect(JSON.stringify(got.metadata)).toBe('{"__proto__":{"x":1},"a":1}');
  });
});

// ---------------------------------------------------------------------------------------------
describe("content length and exact round trips", () => {
  it("accepts exactly 10,000 ASCII characters and rejects 10,001 with CONTENT_TOO_LONG", async () => {
    const { ctx } = await setup();
    const ok = await createMemory(ctx, { content: "a".repeat(10_000), userId: "u" });
    expect((await getMemory(ctx, ok.id)).content).toBe("a".repeat(10_000));
    const err = await expectMmError(createMemory(ctx, { content: "a".repeat(10_001), userId: "u" }), "CONTENT_TOO_LONG", {
      maxLength: 10_000,
      length: 10_001,
    });
    expect(err.status).toBe(400);
    expect(err.toBody().error).toMatchObject({ code: "CONTENT_TOO_LONG", maxLength: 10_000, length: 10_001 });
    expect(await ctx.store.countMemories()).toBe(1);
  });

  it("counts characters, not UTF-16 units: 10,000 emoji (20,000 units) pass, 10,001 fail", async () => {
    const { ctx } = await setup();
    const content = "😀".repeat(10_000);
    expect(content.length).toBe(20_000);
    const ok = await createMemory(ctx, { content, userId: "u" });
    expect(ok.content).toBe(content);
    expect((await getMemory(ctx, ok.id)).content).toBe(content);
    await expectMmError(createMemory(ctx, { content: "😀".repeat(10_001), userId: "u" }), "CONTENT_TOO_LONG", {
      maxLength: 10_000,
      length: 10_001,
    });
    expect(await ctx.store.countMemories()).toBe(1);
  });

  it("accepts 10,000 multi-byte CJK characters (30,000 UTF-8 bytes) and rejects 10,001", async () => {
    const { ctx } = await setup();
    const content = "漢".repeat(10_000);
    const ok = await createMemory(ctx, { content, userId: "u" });
    expect((await getMemory(ctx, ok.id)).content).toBe(content);
    await expectMmError(createMemory(ctx, { content: "漢".repeat(10_001), userId: "u" }), "CONTENT_TOO_LONG", { length: 10_001 });
    expect(await ctx.store.countMemories()).toBe(1);
  });

  const tricky: [string, string][] = [
    ["accents and scripts", "naïve café — Grüße, 日本語のテキスト, 한국어, Ελληνικά, Ünïcödé"],
    ["emoji sequences", "emoji 😀👍🏽 family 👨‍👩‍👧‍👦 flag 🇫🇷 keycap 1️⃣"],
    ["combining marks (NFD) next to precomposed (NFC)", "e\u0301 vs \u00e9, a\u0300, n\u0303, Z\u0351\u0358\u035c"],
    ["right-to-left text and bidi controls", "שלום עולם مرحبا بالعالم \u202Eevil\u202C mixed ltr"],
    ["newlines, CRLF and tabs", "line1\nline2\r\nline3\ttabbed\t\ttext\n\nend"],
    ["quotes and backslashes", `single ' double " backslash \\ escaped \\' \\" and \\n literal`],
    ["SQL-looking text", "'; DROP TABLE memories; --"],
    ["more SQL", "Robert'); DELETE FROM memories WHERE ('1'='1"],
    ["LIKE wildcards", "100% _match_ LIKE '%' ESCAPE '\\'"],
    ["JSON-looking text", '{"content": "nested", "userId": "x"}'],
    ["zero-width and BOM characters", "zero\u200Bwidth\u200Djoiner\uFEFFbom"],
  ];

  it.each(tricky)("%s round-trip exactly through create → get → list → search", async (_name, content) => {
    const { ctx } = await setup();
    await createMemory(ctx, { content: "unrelated control memory", userId: "someone-else" });
    const m = await createMemory(ctx, { content, userId: "rt-user", tags: ["rt"] });
    expect(m.content).toBe(content);
    expect((await getMemory(ctx, m.id)).content).toBe(content);
    const list = await listMemories(ctx, { userId: "rt-user" });
    expect(list.items.map((i) => i.content)).toEqual([content]);
    const { results } = await searchMemories(ctx, { mode: "semantic", query: content, userId: "rt-user", threshold: 0 });
    expect(results.map((r) => r.content)).toEqual([content]);
    expect(results[0].id).toBe(m.id);
    expect(results[0].score).toBeCloseTo(1, 5);
    expect(await ctx.store.countMemories()).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------
describe("quotes and SQL-ish text in filter values", () => {
  const userIds = ["O'Brien", "it's'; DROP TABLE memories; --", "' OR '1'='1", "back\\slash", "trail\\", "x\\' OR 1=1 --", "用户 ünï"];

  it("filters list and search by userIds containing quotes, backslashes and SQL, with no injection", async () => {
    const { ctx } = await setup();
    const made = new Map<string, Memory>();
    for (const userId of userIds) made.set(userId, await createMemory(ctx, { content: `memory of ${userId}`, userId }));
    await createMemory(ctx, { content: "control memory", userId: "control" });
    expect(await ctx.store.countMemories()).toBe(userIds.length + 1);

    for (const userId of userIds) {
      const list = await listMemories(ctx, { userId });
      expect(list.items.map((i) => i.id), userId).toEqual([made.get(userId)!.id]);
      expect(list.pagination.total).toBe(1);
      const { results } = await searchMemories(ctx, { mode: "semantic", query: "memory of", userId, threshold: 0 });
      expect(results.map((r) => r.id), userId).toEqual([made.get(userId)!.id]);
      expect(results[0].userId).toBe(userId);
    }
    expect((await listMemories(ctx, { userId: "O'Brien' OR '1'='1" })).pagination.total).toBe(0);
    expect(await ctx.store.countMemories()).toBe(userIds.length + 1);
  });

  it("filters by agentId and tags containing quotes", async () => {
    const { ctx } = await setup();
    const a = await createMemory(ctx, { content: "quoted tag one", userId: "u", agentId: "O'Malley", tags: ["it's", "plain"] });
    const b = await createMemory(ctx, { content: "quoted tag two", userId: "u", agentId: "agent", tags: ["plain", "a'b'c\\"] });
    await createMemory(ctx, { content: "quoted tag three", userId: "u" });

    expect((await listMemories(ctx, { agentId: "O'Malley" })).items.map((i) => i.id)).toEqual([a.id]);
    expect((await listMemories(ctx, { tags: "it's" })).items.map((i) => i.id)).toEqual([a.id]);
    expect((await listMemories(ctx, { tags: ["a'b'c\\"] })).items.map((i) => i.id)).toEqual([b.id]);
    expect((await listMemories(ctx, { tags: "it's,plain" })).items.map((i) => i.id)).toEqual([a.id]);
    expect((await listMemories(ctx, { tags: "' OR 1=1 --" })).pagination.total).toBe(0);
    expect((await listMemories(ctx, { agentId: "x' OR '1'='1" })).pagination.total).toBe(0);

    const s1 = await searchMemories(ctx, { mode: "semantic", query: "quoted tag", agentId: "O'Malley", threshold: 0 });
    expect(s1.results.map((r) => r.id)).toEqual([a.id]);
    const s2 = await searchMemories(ctx, { mode: "semantic", query: "quoted tag", tags: ["it's"], threshold: 0 });
    expect(s2.results.map((r) => r.id)).toEqual([a.id]);
    const s3 = await searchMemories(ctx, { mode: "semantic", query: "quoted tag", tags: ["') OR true --"], threshold: 0 });
    expect(s3.results).toEqual([]);
  });

  it("treats SQL-looking ids as unknown: get, update and delete touch nothing", async () => {
    const { ctx } = await setup();
    await createMemory(ctx, { content: "one", userId: "u" });
    await createMemory(ctx, { content: "two", userId: "u" });
    const before = await snapshot(ctx);
    for (const id of ["' OR '1'='1", "x' OR id LIKE '%", "mem_' OR 1=1 --", "\\' OR 1=1 --", ""]) {
      await expectMmError(getMemory(ctx, id), "MEMORY_NOT_FOUND");
      await expectMmError(updateMemory(ctx, id, { tags: ["hacked"] }), "MEMORY_NOT_FOUND");
      await expectMmError(deleteMemory(ctx, id), "MEMORY_NOT_FOUND");
    }
    expect(await snapshot(ctx)).toStrictEqual(before);
    expect(before.count).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------
describe("listMemories", () => {
  it("defaults to page 1, limit 20", async () => {
    const { ctx } = await setup();
    await seed(ctx, Array.from({ length: 25 }, (_, i) => ({ content: `item ${i}`, userId: "u" })));
    const p1 = await listMemories(ctx, {});
    expect(p1.pagination).toStrictEqual({ page: 1, limit: 20, total: 25, totalPages: 2 });
    expect(p1.items).toHaveLength(20);
    const p2 = await listMemories(ctx, { page: 2 });
    expect(p2.pagination).toStrictEqual({ page: 2, limit: 20, total: 25, totalPages: 2 });
    expect(p2.items).toHaveLength(5);
    expect(new Set([...p1.items, ...p2.items].map((i) => i.id)).size).toBe(25);
  });

  it("returns an empty page with zero totals on an empty store", async () => {
    const { ctx } = await setup();
    expect(await listMemories(ctx, {})).toStrictEqual({ items: [], pagination: { page: 1, limit: 20, total: 0, totalPages: 0 } });
  });

  it("orders newest first by createdAt, then id descending, and pages stably", async () => {
    const { ctx, clock } = await setup();
    const at = async (iso: string, content: string) => {
      clock.set(iso);
      return createMemory(ctx, { content, userId: "u" });
    };
    const m0 = await at("2026-05-01T10:00:00.000Z", "m0");
    const m1 = await at("2026-05-01T10:00:01.000Z", "m1");
    const tie1 = await at("2026-05-01T10:00:05.000Z", "tie1");
    const tie2 = await at("2026-05-01T10:00:05.000Z", "tie2");
    const tie3 = await at("2026-05-01T10:00:05.000Z", "tie3");
    const tie4 = await at("2026-05-01T10:00:05.000Z", "tie4");
    const old = await at("2026-05-01T09:00:00.000Z", "created last, but oldest createdAt");
    const m7 = await at("2026-05-01T10:00:03.000Z", "m7");
    const newest = await at("2026-05-01T10:00:09.000Z", "newest");
    const tie5 = await at("2026-05-01T10:00:05.000Z", "tie5");

    const ties = [tie1, tie2, tie3, tie4, tie5].map((m) => m.id).sort().reverse();
    const expected = [newest.id, ...ties, m7.id, m1.id, m0.id, old.id];
    expect(expected).toEqual(sortNewestFirst([m0, m1, tie1, tie2, tie3, tie4, old, m7, newest, tie5]).map((m) => m.id));

    const all = await listMemories(ctx, { limit: 100 });
    expect(all.items.map((i) => i.id)).toEqual(expected);
    expect(all.pagination).toStrictEqual({ page: 1, limit: 100, total: 10, totalPages: 1 });

    const walked: string[] = [];
    for (let page = 1; page <= 4; page++) {
      const p = await listMemories(ctx, { page, limit: 3 });
      expect(p.pagination).toStrictEqual({ page, limit: 3, total: 10, totalPages: 4 });
      expect(p.items).toHaveLength(page < 4 ? 3 : 1);
      walked.push(...p.items.map((i) => i.id));
    }
    expect(walked).toEqual(expected);
    expect(new Set(walked).size).toBe(10);

    // Same walk again (order must not depend on physical layout or a previous read).
    const again: string[] = [];
    for (let page = 1; page <= 4; page++) again.push(...(await listMemories(ctx, { page: String(page), limit: "3" })).items.map((i) => i.id));
    expect(again).toEqual(expected);

    expect(await listMemories(ctx, { page: 5, limit: 3 })).toStrictEqual({
      items: [],
      pagination: { page: 5, limit: 3, total: 10, totalPages: 4 },
    });
    expect((await listMemories(ctx, { page: 1000 })).pagination).toStrictEqual({ page: 1000, limit: 20, total: 10, totalPages: 1 });
  });

  it("clamps limit above 100 to 100 and accepts numeric strings", async () => {
    const { ctx } = await setup();
    await seed(ctx, Array.from({ length: 105 }, (_, i) => ({ content: `row ${i}`, userId: "u" })));
    const big = await listMemories(ctx, { limit: 150 });
    expect(big.pagination).toStrictEqual({ page: 1, limit: 100, total: 105, totalPages: 2 });
    expect(big.items).toHaveLength(100);
    expect((await listMemories(ctx, { limit: "1000" })).pagination.limit).toBe(100);
    const s = await listMemories(ctx, { page: "2", limit: "2" });
    expect(s.pagination).toStrictEqual({ page: 2, limit: 2, total: 105, totalPages: 53 });
    expect(s.items).toHaveLength(2);
    expect((await listMemories(ctx, { limit: 100 })).items.slice(2, 4).map((i) => i.id)).toEqual(s.items.map((i) => i.id));
  });

  it("rejects bad page and limit forms with VALIDATION_ERROR naming the field", async () => {
    const { ctx } = await setup();
    await createMemory(ctx, { content: "c", userId: "u" });
    for (const limit of ["0", 0, -1, 1.5, "1.5", "abc", "", "-1", " ", null, true, NaN, Infinity, [5]]) {
      await expectValidation(listMemories(ctx, { limit }), "limit");
    }
    for (const page of [0, "0", "x", -1, 1.5, "", null]) {
      await expectValidation(listMemories(ctx, { page }), "page");
    }
    expect(await ctx.store.countMemories()).toBe(1);
  });

  it("rejects unknown query keys and bad filter values", async () => {
    const { ctx } = await setup();
    await expectValidation(listMemories(ctx, { user_id: "u" }), "user_id");
    await expectValidation(listMemories(ctx, { q: "x" }), "q");
    await expectValidation(listMemories(ctx, { userId: "" }), "userId");
    await expectValidation(listMemories(ctx, { userId: 5 }), "userId");
    await expectValidation(listMemories(ctx, { agentId: "  " }), "agentId");
    await expectValidation(listMemories(ctx, { tags: 5 }), "tags");
    await expectValidation(listMemories(ctx, null), "body");
  });

  it("filters by userId, agentId and tags (AND; comma string or array; empty items ignored)", async () => {
    const { ctx, clock } = await setup();
    const mk = async (body: Record<string, unknown>) => {
      clock.advance(1000);
      return createMemory(ctx, { content: "filter me", ...body });
    };
    const ab = await mk({ userId: "alice", agentId: "bot", tags: ["a", "b"] });
    const abc = await mk({ userId: "alice", tags: ["a", "b", "c"] });
    const a = await mk({ userId: "alice", agentId: "bot", tags: ["a"] });
    const b = await mk({ userId: "bob", agentId: "bot", tags: ["b", "a"] });
    const none = await mk({ userId: "bob" });

    const ids = async (q: Record<string, unknown>) => (await listMemories(ctx, q)).items.map((i) => i.id);
    expect(await ids({ userId: "alice" })).toEqual([a.id, abc.id, ab.id]);
    expect(await ids({ userId: "bob" })).toEqual([none.id, b.id]);
    expect(await ids({ agentId: "bot" })).toEqual([b.id, a.id, ab.id]);
    expect(await ids({ userId: "alice", agentId: "bot" })).toEqual([a.id, ab.id]);
    expect(await ids({ tags: "a" })).toEqual([b.id, a.id, abc.id, ab.id]);
    expect(await ids({ tags: "a,b" })).toEqual([b.id, abc.id, ab.id]);
    expect(await ids({ tags: ["b", "a"] })).toEqual([b.id, abc.id, ab.id]);
    expect(await ids({ tags: "a,,b" })).toEqual([b.id, abc.id, ab.id]);
    expect(await ids({ tags: " a , b ," })).toEqual([b.id, abc.id, ab.id]);
    expect(await ids({ tags: "a,b,c" })).toEqual([abc.id]);
    expect(await ids({ tags: "a,b", userId: "alice" })).toEqual([abc.id, ab.id]);
    expect(await ids({ tags: "a,zzz" })).toEqual([]);
    expect(await ids({ tags: "" })).toHaveLength(5);
    expect(await ids({ tags: ",," })).toHaveLength(5);
    expect(await ids({ userId: "nobody" })).toEqual([]);

    const paged = await listMemories(ctx, { tags: "a", limit: 3 });
    expect(paged.pagination).toStrictEqual({ page: 1, limit: 3, total: 4, totalPages: 2 });
    const filteredEmpty = await listMemories(ctx, { userId: "nobody" });
    expect(filteredEmpty.pagination).toStrictEqual({ page: 1, limit: 20, total: 0, totalPages: 0 });
  });

  it("computes totalPages = ceil(total / limit)", async () => {
    const { ctx } = await setup();
    await seed(ctx, Array.from({ length: 7 }, (_, i) => ({ content: `p ${i}`, userId: "u" })));
    for (const [limit, pages] of [
      [1, 7],
      [2, 4],
      [3, 3],
      [7, 1],
      [8, 1],
      [100, 1],
    ] as const) {
      expect((await listMemories(ctx, { limit })).pagination, `limit ${limit}`).toStrictEqual({ page: 1, limit, total: 7, totalPages: pages });
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe("searchMemories", () => {
  async function scoredFixture() {
    const env = await setup();
    const { ctx, clock } = env;
    const texts = [
      "green tea garden morning",
      "green tea garden evening",
      "green tea",
      "green",
      "coffee bicycle",
      "quantum physics lecture notes",
      "the weather in oslo is cold",
    ];
    const made: Memory[] = [];
    for (const content of texts) {
      clock.advance(1000);
      made.push(await createMemory(ctx, { content, userId: "alice" }));
    }
    await createMemory(ctx, { content: "green tea garden morning", userId: "bob" });
    return { ...env, made };
  }

  it("sorts by score descending, every score in [0, 1]; threshold 0 returns all of a user's memories", async () => {
    const { ctx, made } = await scoredFixture();
    const { results } = await searchMemories(ctx, { mode: "semantic", query: "green tea garden morning", userId: "alice", threshold: 0 });
    expect(results.map((r) => r.id).sort()).toEqual(made.map((m) => m.id).sort());
    for (const r of results) {
      expect(r.score).toBeGreaterThanOrEqual(0);
      expect(r.score).toBeLessThanOrEqual(1);
      expect(r.userId).toBe("alice");
    }
    for (let i = 1; i < results.length; i++) expect(results[i - 1].score).toBeGreaterThanOrEqual(results[i].score);
    expect(results[0].id).toBe(made[0].id);
    expect(results[0].score).toBeCloseTo(1, 5);
    expect(results[results.length - 1].score).toBeLessThan(0.5);
  });

  it("applies the default threshold 0.5 when omitted, and filters by explicit thresholds", async () => {
    const { ctx } = await scoredFixture();
    const q = { query: "green tea garden morning", userId: "alice" };
    const all = (await searchMemories(ctx, { ...q, threshold: 0 })).results;
    const dflt = (await searchMemories(ctx, q)).results;
    const half = (await searchMemories(ctx, { ...q, threshold: 0.5 })).results;
    expect(dflt).toStrictEqual(all.filter((r) => r.score >= 0.5));
    expect(half).toStrictEqual(dflt);
    expect(dflt.length).toBeGreaterThan(0);
    expect(dflt.length).toBeLessThan(all.length);
    for (const t of [0.2, 0.6, 0.9]) {
      const got = (await searchMemories(ctx, { ...q, threshold: t })).results;
      expect(got, `threshold ${t}`).toStrictEqual(all.filter((r) => r.score >= t));
    }
  });

  it("threshold 1 returns only exact-duplicate content; equal scores are ordered newest first", async () => {
    const { ctx, clock } = await setup();
    clock.set("2026-02-02T00:00:00.000Z");
    const mid = await createMemory(ctx, { content: "exact duplicate text", userId: "u" });
    clock.set("2026-02-01T00:00:00.000Z");
    const oldest = await createMemory(ctx, { content: "exact duplicate text", userId: "u" });
    clock.set("2026-02-03T00:00:00.000Z");
    const newest = await createMemory(ctx, { content: "exact duplicate text", userId: "u" });
    await createMemory(ctx, { content: "exact duplicate text plus more", userId: "u" });
    await createMemory(ctx, { content: "something else", userId: "u" });

    const { results } = await searchMemories(ctx, { mode: "semantic", query: "exact duplicate text", threshold: 1 });
    expect(results.map((r) => r.id)).toEqual([newest.id, mid.id, oldest.id]);
    for (const r of results) expect(r.score).toBe(1);
    const none = await searchMemories(ctx, { mode: "semantic", query: "nothing like it at all", threshold: 1 });
    expect(none.results).toEqual([]);
  });

  it("rejects bad thresholds, limits, queries, filters and unknown fields", async () => {
    const { ctx, embedder } = await setup();
    await createMemory(ctx, { content: "c", userId: "u" });
    const calls = embedder.calls;
    for (const threshold of [-0.1, 1.1, "0.5", null, NaN, Infinity, true]) {
      await expectValidation(searchMemories(ctx, { mode: "semantic", query: "c", threshold }), "threshold");
    }
    for (const limit of [0, "0", -1, 1.5, "abc", "", null]) {
      await expectValidation(searchMemories(ctx, { mode: "semantic", query: "c", limit }), "limit");
    }
    for (const query of [undefined, "", "   ", 5, null, ["c"], "bad \uD800"]) {
      await expectValidation(searchMemories(ctx, { mode: "semantic", query, userId: "u" }), "query");
    }
    await expectValidation(searchMemories(ctx, { mode: "semantic", query: "c", userId: "" }), "userId");
    await expectValidation(searchMemories(ctx, { mode: "semantic", query: "c", agentId: 3 }), "agentId");
    await expectValidation(searchMemories(ctx, { mode: "semantic", query: "c", tags: "a,b" }), "tags");
    await expectValidation(searchMemories(ctx, { mode: "semantic", query: "c", tags: ["a", ""] }), "tags");
    await expectValidation(searchMemories(ctx, { mode: "semantic", query: "c", user_id: "u" }), "user_id");
    await expectValidation(searchMemories(ctx, null), "body");
    await expectValidation(searchMemories(ctx, "c"), "body");
    expect(embedder.calls, "invalid searches never embed").toBe(calls);
    expect(await ctx.store.countMemories()).toBe(1);
  });

  it("defaults limit to 10 and clamps limits above 100 to 100", async () => {
    const { ctx } = await setup();
    await seed(ctx, Array.from({ length: 105 }, (_, i) => ({ content: `limit probe ${i}`, userId: i < 15 ? "fifteen" : "many" })));
    expect((await searchMemories(ctx, { mode: "semantic", query: "limit probe", userId: "fifteen", threshold: 0 })).results).toHaveLength(10);
    expect((await searchMemories(ctx, { mode: "semantic", query: "limit probe", userId: "fifteen", threshold: 0, limit: 12 })).results).toHaveLength(12);
    expect((await searchMemories(ctx, { mode: "semantic", query: "limit probe", userId: "fifteen", threshold: 0, limit: 50 })).results).toHaveLength(15);
    expect((await searchMemories(ctx, { mode: "semantic", query: "limit probe", threshold: 0, limit: 200 })).results).toHaveLength(100);
    expect((await searchMemories(ctx, { mode: "semantic", query: "limit probe", threshold: 0, limit: 100 })).results).toHaveLength(100);
    expect((await searchMemories(ctx, { mode: "semantic", query: "limit probe", threshold: 0, limit: 1 })).results).toHaveLength(1);
  });

  it("filters by tags with AND logic, and by agentId", async () => {
    const { ctx } = await setup();
    const ab = await createMemory(ctx, { content: "tagged search text", userId: "u", agentId: "x", tags: ["a", "b"] });
    const a = await createMemory(ctx, { content: "tagged search text", userId: "u", tags: ["a"] });
    await createMemory(ctx, { content: "tagged search text", userId: "u", tags: ["b"] });
    const ids = async (extra: Record<string, unknown>) =>
      (await searchMemories(ctx, { mode: "semantic", query: "tagged search text", threshold: 0, ...extra })).results.map((r) => r.id).sort();
    expect(await ids({ tags: ["a", "b"] })).toEqual([ab.id]);
    expect(await ids({ tags: ["a"] })).toEqual([a.id, ab.id].sort());
    expect(await ids({ tags: ["a", "zzz"] })).toEqual([]);
    expect(await ids({ agentId: "x" })).toEqual([ab.id]);
    expect(await ids({ agentId: "y" })).toEqual([]);
    expect(await ids({ tags: [] })).toHaveLength(3);
  });

  describe("filters before taking the top k (prefilter)", () => {
    const query = "the quick brown fox jumps";

    it("by userId", async () => {
      const { ctx } = await setup();
      const mine = await createMemory(ctx, { content: "apple orchard harvest", userId: "A" });
      await seed(ctx, Array.from({ length: 50 }, () => ({ content: query, userId: "B", dedupe: false })));
      const unfiltered = await searchMemories(ctx, { mode: "semantic", query, threshold: 0, limit: 5 });
      expect(unfiltered.results.map((r) => r.userId)).toEqual(["B", "B", "B", "B", "B"]);
      for (const limit of [1, 5]) {
        const { results } = await searchMemories(ctx, { mode: "semantic", query, userId: "A", limit, threshold: 0 });
        expect(results.map((r) => r.id), `limit ${limit}`).toEqual([mine.id]);
      }
    });

    it("by agentId", async () => {
      const { ctx } = await setup();
      const mine = await createMemory(ctx, { content: "apple orchard harvest", userId: "u", agentId: "rare" });
      await seed(ctx, Array.from({ length: 50 }, () => ({ content: query, userId: "u", agentId: "common", dedupe: false })));
      for (const limit of [1, 5]) {
        const { results } = await searchMemories(ctx, { mode: "semantic", query, agentId: "rare", limit, threshold: 0 });
        expect(results.map((r) => r.id), `limit ${limit}`).toEqual([mine.id]);
      }
    });

    it("by tags", async () => {
      const { ctx } = await setup();
      const mine = await createMemory(ctx, { content: "apple orchard harvest", userId: "u", tags: ["rare", "x"] });
      await seed(ctx, Array.from({ length: 50 }, (_, i) => ({ content: query, userId: "u", tags: i % 2 ? ["common", "x"] : ["rare"] })));
      for (const limit of [1, 5]) {
        const { results } = await searchMemories(ctx, { mode: "semantic", query, tags: ["rare", "x"], limit, threshold: 0 });
        expect(results.map((r) => r.id), `limit ${limit}`).toEqual([mine.id]);
      }
    });
  });
});

// ---------------------------------------------------------------------------------------------
describe("get / delete / unknown ids / other accounts", () => {
  it("get, update and delete of an unknown id give MEMORY_NOT_FOUND (404) and change nothing", async () => {
    const { ctx } = await setup();
    await createMemory(ctx, { content: "keep me", userId: "u" });
    const before = await snapshot(ctx);
    const unknown = `mem_${"0".repeat(24)}`;
    expect(unknown).toMatch(ID_RE);
    const e1 = await expectMmError(getMemory(ctx, unknown), "MEMORY_NOT_FOUND");
    expect(e1.status).toBe(404);
    expect(e1.message).toContain(unknown);
    await expectMmError(updateMemory(ctx, unknown, { content: "new" }), "MEMORY_NOT_FOUND");
    await expectMmError(updateMemory(ctx, unknown, { metadata: { a: 1 } }), "MEMORY_NOT_FOUND");
    await expectMmError(deleteMemory(ctx, unknown), "MEMORY_NOT_FOUND");
    await expectMmError(getMemory(ctx, "not-an-id"), "MEMORY_NOT_FOUND");
    expect(await snapshot(ctx)).toStrictEqual(before);
  });

  it("delete returns {success: true, id}; the memory is gone; a second delete is MEMORY_NOT_FOUND; others untouched", async () => {
    const { ctx } = await setup();
    const keep1 = await createMemory(ctx, { content: "keep one", userId: "u", tags: ["k"] });
    const victim = await createMemory(ctx, { content: "delete me please", userId: "u", tags: ["k"] });
    const keep2 = await createMemory(ctx, { content: "keep two", userId: "u", metadata: { a: 1 } });
    expect(await ctx.store.countMemories()).toBe(3);

    expect(await deleteMemory(ctx, victim.id)).toStrictEqual({ success: true, id: victim.id });
    await expectMmError(getMemory(ctx, victim.id), "MEMORY_NOT_FOUND");
    await expectMmError(deleteMemory(ctx, victim.id), "MEMORY_NOT_FOUND");
    await expectMmError(updateMemory(ctx, victim.id, { tags: ["x"] }), "MEMORY_NOT_FOUND");
    expect(await ctx.store.countMemories()).toBe(2);

    expect(await getMemory(ctx, keep1.id)).toStrictEqual(keep1);
    expect(await getMemory(ctx, keep2.id)).toStrictEqual(keep2);
    const list = await listMemories(ctx, {});
    expect(list.items.map((i) => i.id).sort()).toEqual([keep1.id, keep2.id].sort());
    expect(list.pagination.total).toBe(2);
    const { results } = await searchMemories(ctx, { mode: "semantic", query: "delete me please", threshold: 0 });
    expect(results.map((r) => r.id)).not.toContain(victim.id);
    expect(results).toHaveLength(2);
  });

  it("another account on the same store sees none of this account's memories and cannot change them", async () => {
    const a = await setup();
    const mine = await createMemory(a.ctx, { content: "private account memory", userId: "shared-user", agentId: "ag", tags: ["t"], metadata: { s: 1 } });
    const b = await setup({ dir: a.dir, accountId: "acct_other" });
    expect(b.ctx.accountId).toBe("acct_other");

    await expectMmError(getMemory(b.ctx, mine.id), "MEMORY_NOT_FOUND");
    expect(await listMemories(b.ctx, {})).toStrictEqual({ items: [], pagination: { page: 1, limit: 20, total: 0, totalPages: 0 } });
    expect(await listMemories(b.ctx, { userId: "shared-user", tags: "t", agentId: "ag" })).toMatchObject({ items: [], pagination: { total: 0 } });
    expect((await searchMemories(b.ctx, { query: "private account memory", threshold: 0 })).results).toEqual([]);
    expect((await searchMemories(b.ctx, { query: "private account memory", userId: "shared-user", threshold: 0 })).results).toEqual([]);
    await expectMmError(updateMemory(b.ctx, mine.id, { content: "hijacked" }), "MEMORY_NOT_FOUND");
    await expectMmError(updateMemory(b.ctx, mine.id, { metadata: null }), "MEMORY_NOT_FOUND");
    await expectMmError(deleteMemory(b.ctx, mine.id), "MEMORY_NOT_FOUND");

    expect(await getMemory(a.ctx, mine.id)).toStrictEqual(mine);
    const aSearch = await searchMemories(a.ctx, { mode: "semantic", query: "private account memory", threshold: 0 });
    expect(aSearch.results.map((r) => r.id)).toEqual([mine.id]);
    expect(aSearch.results[0].score).toBeCloseTo(1, 5);

    // B's own memory, same userId, stays in B.
    const theirs = await createMemory(b.ctx, { content: "private account memory", userId: "shared-user" });
    expect((await listMemories(a.ctx, { userId: "shared-user" })).items.map((i) => i.id)).toEqual([mine.id]);
    expect((await listMemories(b.ctx, { userId: "shared-user" })).items.map((i) => i.id)).toEqual([theirs.id]);
    await expectMmError(getMemory(a.ctx, theirs.id), "MEMORY_NOT_FOUND");
    await expectMmError(deleteMemory(a.ctx, theirs.id), "MEMORY_NOT_FOUND");
    expect(await a.ctx.store.countMemories()).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------
describe("updateMemory (PATCH)", () => {
  it("re-embeds when content changes", async () => {
    const { ctx, embedder, clock } = await setup();
    const m = await createMemory(ctx, { content: "alpha beta gamma", userId: "u", tags: ["t"], metadata: { k: 1 }, agentId: "ag" });
    const scoreFor = async (query: string) =>
      (await searchMemories(ctx, { mode: "semantic", query, userId: "u", threshold: 0 })).results.find((r) => r.id === m.id)?.score ?? -1;
    const before = await scoreFor("delta epsilon zeta");
    expect(before).toBeLessThan(0.5);

    const calls = embedder.calls;
    clock.advance(60_000);
    const updated = await updateMemory(ctx, m.id, { content: "delta epsilon zeta" });
    expect(embedder.calls).toBe(calls + 1);
    expect(updated).toStrictEqual({ ...m, content: "delta epsilon zeta", updatedAt: "2026-01-01T00:01:00.000Z" });
    expect(await getMemory(ctx, m.id)).toStrictEqual(updated);

    const after = await scoreFor("delta epsilon zeta");
    expect(after).toBeCloseTo(1, 5);
    expect(after).toBeGreaterThan(before);
    expect(await scoreFor("alpha beta gamma")).toBeLessThan(0.5);
    expect(await ctx.store.countMemories()).toBe(1);
  });

  it("metadata-, tags- and agentId-only changes do not embed and keep the vector", async () => {
    const { ctx, embedder } = await setup();
    const m = await createMemory(ctx, { content: "stable vector text", userId: "u" });
    const calls = embedder.calls;
    await updateMemory(ctx, m.id, { metadata: { a: 1 } });
    await updateMemory(ctx, m.id, { tags: ["x"] });
    await updateMemory(ctx, m.id, { agentId: "ag" });
    expect(embedder.calls).toBe(calls);
    const { results } = await searchMemories(ctx, { mode: "semantic", query: "stable vector text", threshold: 0.99 });
    expect(results.map((r) => r.id)).toEqual([m.id]);
    expect(results[0].score).toBeCloseTo(1, 5);
    expect(results[0]).toMatchObject({ tags: ["x"], agentId: "ag" });
    expect(await ctx.store.countMemories()).toBe(1);
  });

  it("replaces tags and metadata whole, leaves absent fields unchanged", async () => {
    const { ctx, clock } = await setup();
    const m = await createMemory(ctx, { content: "c", userId: "u", agentId: "ag", tags: ["a", "b"], metadata: { a: 1, b: 2 } });
    clock.advance(1000);
    const u1 = await updateMemory(ctx, m.id, { tags: ["c"] });
    expect(u1).toStrictEqual({ ...m, tags: ["c"], updatedAt: "2026-01-01T00:00:01.000Z" });
    clock.advance(1000);
    const u2 = await updateMemory(ctx, m.id, { metadata: { c: 3 } });
    expect(u2).toStrictEqual({ ...u1, metadata: { c: 3 }, updatedAt: "2026-01-01T00:00:02.000Z" });
    expect(await getMemory(ctx, m.id)).toStrictEqual(u2);
    expect((await listMemories(ctx, { tags: "a" })).pagination.total).toBe(0);
    expect((await listMemories(ctx, { tags: "c" })).items.map((i) => i.id)).toEqual([m.id]);
    clock.advance(1000);
    const u3 = await updateMemory(ctx, m.id, { tags: [] });
    expect(keys(u3)).toEqual(["agentId", "content", "createdAt", "id", "metadata", "updatedAt", "userId"]);
    const u4 = await updateMemory(ctx, m.id, { metadata: {} });
    expect(u4.metadata).toStrictEqual({});
  });

  it("null clears agentId, tags and metadata", async () => {
    const { ctx } = await setup();
    const m = await createMemory(ctx, { content: "clear me", userId: "u", agentId: "ag", tags: ["a"], metadata: { a: 1 } });
    const cleared = await updateMemory(ctx, m.id, { agentId: null, tags: null, metadata: null });
    expect(cleared).toStrictEqual({ id: m.id, content: "clear me", userId: "u", createdAt: m.createdAt, updatedAt: m.updatedAt });
    expect(await getMemory(ctx, m.id)).toStrictEqual(cleared);
    expect((await listMemories(ctx, { agentId: "ag" })).pagination.total).toBe(0);
    expect((await listMemories(ctx, { tags: "a" })).pagination.total).toBe(0);
    const hit = (await searchMemories(ctx, { mode: "semantic", query: "clear me", threshold: 0 })).results[0];
    expect(keys(hit)).toEqual(["content", "createdAt", "id", "score", "userId"]);
  });

  it("moves updatedAt forward with the clock, never backwards; id, userId and createdAt never change", async () => {
    const { ctx, clock } = await setup();
    clock.set("2026-06-01T12:00:00.000Z");
    const m = await createMemory(ctx, { content: "time travel", userId: "u" });
    clock.set("2026-06-01T12:30:00.500Z");
    const u1 = await updateMemory(ctx, m.id, { content: "time travel again" });
    expect(u1.updatedAt).toBe("2026-06-01T12:30:00.500Z");
    expect(u1.createdAt).toBe("2026-06-01T12:00:00.000Z");
    expect(u1.id).toBe(m.id);
    expect(u1.userId).toBe("u");
    clock.set("2026-05-01T00:00:00.000Z"); // the clock went backwards
    const u2 = await updateMemory(ctx, m.id, { tags: ["x"] });
    expect(u2.updatedAt).toBe("2026-06-01T12:30:00.500Z");
    expect(u2.createdAt).toBe("2026-06-01T12:00:00.000Z");
    const list = await listMemories(ctx, {});
    expect(list.items).toStrictEqual([{ id: m.id, content: "time travel again", userId: "u", tags: ["x"], createdAt: m.createdAt, updatedAt: u2.updatedAt }]);
  });

  const badPatches: [string, unknown, string, string | undefined][] = [
    ["userId", { userId: "someone-else" }, "VALIDATION_ERROR", "userId"],
    ["userId with content", { content: "x", userId: "u" }, "VALIDATION_ERROR", "userId"],
    ["empty patch", {}, "VALIDATION_ERROR", undefined],
    ["patch null", null, "VALIDATION_ERROR", "body"],
    ["patch array", [], "VALIDATION_ERROR", "body"],
    ["patch string", "new content", "VALIDATION_ERROR", "body"],
    ["content 10,001", { content: "a".repeat(10_001) }, "CONTENT_TOO_LONG", undefined],
    ["content empty", { content: "" }, "VALIDATION_ERROR", "content"],
    ["content blank", { content: "  \n" }, "VALIDATION_ERROR", "content"],
    ["content null", { content: null }, "VALIDATION_ERROR", "content"],
    ["content number", { content: 1 }, "VALIDATION_ERROR", "content"],
    ["content lone surrogate", { content: "\uD800" }, "VALIDATION_ERROR", "content"],
    ["agentId empty", { agentId: "" }, "VALIDATION_ERROR", "agentId"],
    ["agentId number", { agentId: 1 }, "VALIDATION_ERROR", "agentId"],
    ["tags string", { tags: "a" }, "VALIDATION_ERROR", "tags"],
    ["tags with comma", { tags: ["a,b"] }, "VALIDATION_ERROR", "tags"],
    ["51 tags", { tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, "VALIDATION_ERROR", "tags"],
    ["metadata array", { metadata: [] }, "VALIDATION_ERROR", "metadata"],
    ["metadata string", { metadata: "x" }, "VALIDATION_ERROR", "metadata"],
    ["metadata over 64 KiB", { metadata: { s: "x".repeat(64 * 1024) } }, "VALIDATION_ERROR", "metadata"],
    ["unknown field", { contents: "typo" }, "VALIDATION_ERROR", "contents"],
    ["id", { id: "mem_X" }, "VALIDATION_ERROR", "id"],
    ["createdAt", { createdAt: START }, "VALIDATION_ERROR", "createdAt"],
    ["valid field plus a bad one", { tags: ["ok"], metadata: [] }, "VALIDATION_ERROR", "metadata"],
  ];

  it.each(badPatches)("invalid patch (%s) → %s, stored memory exactly as before", async (_name, patch, code, field) => {
    const { ctx, embedder, clock } = await setup();
    const m = await createMemory(ctx, { content: "original content", userId: "u", agentId: "ag", tags: ["a"], metadata: { a: 1 } });
    const before = await snapshot(ctx);
    const calls = embedder.calls;
    clock.advance(5000);
    const err = field ? await expectValidation(updateMemory(ctx, m.id, patch), field) : await expectMmError(updateMemory(ctx, m.id, patch), code);
    expect(err.code).toBe(code);
    if (code === "CONTENT_TOO_LONG") expect(err.extra).toMatchObject({ maxLength: 10_000, length: 10_001 });
    expect(await snapshot(ctx)).toStrictEqual(before);
    expect(await getMemory(ctx, m.id)).toStrictEqual(m);
    expect(embedder.calls).toBe(calls);
    const { results } = await searchMemories(ctx, { mode: "semantic", query: "original content", threshold: 0.99 });
    expect(results.map((r) => r.id)).toEqual([m.id]);
  });
});

// ---------------------------------------------------------------------------------------------
describe("addMemoriesFromLines", () => {
  it("reports every non-blank line once, in order, with its line number; good lines are stored", async () => {
    const { ctx } = await setup();
    const lines = [
      JSON.stringify({ content: "first good", userId: "u1", tags: ["t"] }), // 1
      "", // 2 blank
      "{oops not json", // 3
      JSON.stringify({ content: "no user here" }), // 4
      JSON.stringify({ content: "x".repeat(10_001), userId: "u1" }), // 5
      "   \t", // 6 blank
      JSON.stringify("a bare JSON string, no userId"), // 7
      JSON.stringify({ content: "second good", userId: "u2", agentId: "ag", metadata: { n: 1 } }), // 8
      "null", // 9
      "[1, 2]", // 10
      JSON.stringify({ content: "c", userId: "u1", bogus: true }), // 11
      JSON.stringify({ content: "crlf line", userId: "u1" }) + "\r", // 12
      JSON.stringify({ content: "", userId: "u1" }), // 13
    ];
    const results: BatchLineResult[] = [];
    const r = await addMemoriesFromLines(ctx, lines, { onResult: (x) => results.push(x) });
    expect(r).toEqual({ added: 3, failed: 8, stopped: false });

    expect(results.map((x) => x.line)).toEqual([1, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13]);
    const outcome = results.map((x) => [x.line, x.memory ? "ok" : x.error?.code]);
    expect(outcome).toEqual([
      [1, "ok"],
      [3, "VALIDATION_ERROR"],
      [4, "INVALID_USER_ID"],
      [5, "CONTENT_TOO_LONG"],
      [7, "INVALID_USER_ID"],
      [8, "ok"],
      [9, "VALIDATION_ERROR"],
      [10, "VALIDATION_ERROR"],
      [11, "VALIDATION_ERROR"],
      [12, "ok"],
      [13, "VALIDATION_ERROR"],
    ]);
    for (const x of results) {
      expect(x.memory === undefined).toBe(x.error !== undefined);
      if (x.error) expect(x.error).toBeInstanceOf(MmError);
    }
    expect(results[3].error!.extra).toMatchObject({ maxLength: 10_000, length: 10_001 });
    expect(detailFields(results[8].error!)).toContain("bogus");

    const good = results.filter((x) => x.memory).map((x) => x.memory!);
    expect(good.map((m) => m.content)).toEqual(["first good", "second good", "crlf line"]);
    expect(good[0]).toMatchObject({ userId: "u1", tags: ["t"] });
    expect(good[1]).toMatchObject({ userId: "u2", agentId: "ag", metadata: { n: 1 } });
    for (const m of good) {
      expect(m.id).toMatch(ID_RE);
      expect(await getMemory(ctx, m.id)).toStrictEqual(m);
    }
    expect(await ctx.store.countMemories()).toBe(3);
  });

  it("fills missing fields from defaults without overriding a line's own", async () => {
    const { ctx } = await setup();
    const defaults = { userId: "def-user", agentId: "def-agent", tags: ["def"], metadata: { from: "defaults" } };
    const lines = [
      JSON.stringify("plain string content"),
      JSON.stringify({ content: "own user", userId: "own-user" }),
      JSON.stringify({ content: "own everything", userId: "me", agentId: "mine", tags: ["own"], metadata: { own: true } }),
      JSON.stringify({ content: "own tags only", tags: ["t1", "t2"] }),
    ];
    const results: BatchLineResult[] = [];
    const r = await addMemoriesFromLines(ctx, lines, { defaults, onResult: (x) => results.push(x) });
    expect(r).toEqual({ added: 4, failed: 0, stopped: false });
    const strip = (m: Memory) => ({ ...m, id: undefined, createdAt: undefined, updatedAt: undefined });
    expect(results.map((x) => strip(x.memory!))).toEqual([
      strip({ id: "", content: "plain string content", userId: "def-user", agentId: "def-agent", tags: ["def"], metadata: { from: "defaults" }, createdAt: "", updatedAt: "" }),
      strip({ id: "", content: "own user", userId: "own-user", agentId: "def-agent", tags: ["def"], metadata: { from: "defaults" }, createdAt: "", updatedAt: "" }),
      strip({ id: "", content: "own everything", userId: "me", agentId: "mine", tags: ["own"], metadata: { own: true }, createdAt: "", updatedAt: "" }),
      strip({ id: "", content: "own tags only", userId: "def-user", agentId: "def-agent", tags: ["t1", "t2"], metadata: { from: "defaults" }, createdAt: "", updatedAt: "" }),
    ]);
    expect((await listMemories(ctx, { userId: "def-user" })).pagination.total).toBe(2);
    expect(await ctx.store.countMemories()).toBe(4);
  });

  it("stores everything when batchSize is smaller than the input, embedding once per batch", async () => {
    const { ctx, embedder } = await setup();
    const lines = Array.from({ length: 10 }, (_, i) => JSON.stringify({ content: `batched line ${i + 1}`, userId: "u" }));
    const results: BatchLineResult[] = [];
    const calls = embedder.calls;
    const r = await addMemoriesFromLines(ctx, lines, { batchSize: 3, onResult: (x) => results.push(x) });
    expect(r).toEqual({ added: 10, failed: 0, stopped: false });
    expect(embedder.calls - calls).toBe(4);
    expect(results.map((x) => x.line)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(results.map((x) => x.memory?.content)).toEqual(lines.map((_, i) => `batched line ${i + 1}`));
    expect(await ctx.store.countMemories()).toBe(10);
    const listed = (await listMemories(ctx, { limit: 100 })).items.map((i) => i.content).sort();
    expect(listed).toEqual(lines.map((_, i) => `batched line ${i + 1}`).sort());
  });

  it("reads async iterables", async () => {
    const { ctx } = await setup();
    async function* gen() {
      yield JSON.stringify({ content: "async one", userId: "u" });
      yield "";
      yield JSON.stringify({ content: "async two", userId: "u" });
    }
    const results: BatchLineResult[] = [];
    expect(await addMemoriesFromLines(ctx, gen(), { batchSize: 1, onResult: (x) => results.push(x) })).toEqual({ added: 2, failed: 0, stopped: false });
    expect(results.map((x) => [x.line, x.memory?.content])).toEqual([
      [1, "async one"],
      [3, "async two"],
    ]);
    expect(await ctx.store.countMemories()).toBe(2);
  });

  it("an already-aborted signal stops after the first batch and reports stopped: true", async () => {
    const { ctx } = await setup();
    const lines = Array.from({ length: 10 }, (_, i) => JSON.stringify({ content: `abort line ${i + 1}`, userId: "u" }));
    const controller = new AbortController();
    controller.abort();
    const results: BatchLineResult[] = [];
    const r = await addMemoriesFromLines(ctx, lines, { batchSize: 3, signal: controller.signal, onResult: (x) => results.push(x) });
    expect(r.stopped).toBe(true);
    expect(r.failed).toBe(0);
    expect(r.added).toBeGreaterThanOrEqual(1);
    expect(r.added).toBeLessThanOrEqual(3);
    expect(results.map((x) => x.line)).toEqual(Array.from({ length: r.added }, (_, i) => i + 1));
    expect(await ctx.store.countMemories()).toBe(r.added);
  });

  it("aborting during a run commits the batches already read and reads no further", async () => {
    const { ctx } = await setup();
    const lines = Array.from({ length: 10 }, (_, i) => JSON.stringify({ content: `abort line ${i + 1}`, userId: "u" }));
    const controller = new AbortController();
    const results: BatchLineResult[] = [];
    const r = await addMemoriesFromLines(ctx, lines, {
      batchSize: 3,
      signal: controller.signal,
      onResult: (x) => {
        results.push(x);
        if (x.line === 3) controller.abort();
      },
    });
    // Batches are pipelined (N+1 and N+2 may be read, N+1 embedding, while N is written), so the
    // batches already read when the abort lands are committed too; reading stops there, and every
    // reported line is stored.
    expect(r.stopped).toBe(true);
    expect(r.failed).toBe(0);
    expect([3, 6, 9]).toContain(r.added);
    expect(results.map((x) => x.line)).toEqual(Array.from({ length: r.added }, (_, i) => i + 1));
    expect(await ctx.store.countMemories()).toBe(r.added);
  });

  it("starts embedding the next batch before the current one is done, and still commits and reports in order", async () => {
    const base = createTestEmbedder();
    let secondStarted!: () => void;
    const second = new Promise<void>((r) => (secondStarted = r));
    let overlapped = false;
    const gated = withEmbed(async (texts) => {
      if (texts.includes("b1")) overlapped = await Promise.race([second.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 2_000))]);
      if (texts.includes("b2")) secondStarted();
      return base.embed(texts);
    });
    const { ctx } = await setup({ embedder: gated });
    const lines = ["a1", "b1", "a2", "b2", "a3"].map((content) => JSON.stringify({ content, userId: "u" }));
    const results: BatchLineResult[] = [];
    const r = await addMemoriesFromLines(ctx, lines, { batchSize: 2, onResult: (x) => results.push(x) });
    expect(overlapped).toBe(true); // batch 2's embedding began while batch 1's was still running
    expect(r).toEqual({ added: 5, failed: 0, stopped: false });
    expect(results.map((x) => x.memory?.content)).toEqual(["a1", "b1", "a2", "b2", "a3"]);
    const stored = await ctx.store.memoriesAfter({ accountId: ctx.accountId, userId: "u" }, undefined, 10, false);
    const seqOf = new Map(stored.map((m) => [m.content, m.seq]));
    expect(["a1", "b1", "a2", "b2", "a3"].map((c) => seqOf.get(c))).toEqual([1, 2, 3, 4, 5]); // committed in order
  });

  it("a failing embed fails only its own batch; other batches are stored", async () => {
    const base = createTestEmbedder();
    const flaky = withEmbed(async (texts) => {
      if (texts.some((t) => t.includes("boom"))) throw new Error("embedder exploded");
      return base.embed(texts);
    });
    const { ctx } = await setup({ embedder: flaky });
    const lines = ["g1", "g2", "g3", "boom", "g5"].map((content) => JSON.stringify({ content, userId: "u" }));
    const results: BatchLineResult[] = [];
    const r = await addMemoriesFromLines(ctx, lines, { batchSize: 2, onResult: (x) => results.push(x) });
    expect(r).toEqual({ added: 3, failed: 2, stopped: false });
    expect(results.map((x) => [x.line, x.memory?.content ?? x.error?.code])).toEqual([
      [1, "g1"],
      [2, "g2"],
      [3, "INTERNAL_ERROR"],
      [4, "INTERNAL_ERROR"],
      [5, "g5"],
    ]);
    expect(results[2].error!.message).not.toContain("exploded");
    expect(await ctx.store.countMemories()).toBe(3);
  });
});

// ---------------------------------------------------------------------------------------------
describe("embedder output checks", () => {
  // Regression: only the length was checked, so a zero vector was stored and never found again.
  it("rejects an all-zero embedding instead of storing an unsearchable memory", async () => {
    const zero = withEmbed(async (texts, dims) => texts.map(() => new Float32Array(dims)));
    const { ctx } = await setup({ embedder: zero });
    await catchError(createMemory(ctx, { content: "green tea", userId: "u" }));
    expect(await ctx.store.countMemories()).toBe(0);
  });

  it("rejects vectors of the wrong length with EMBEDDER_MISMATCH and stores nothing", async () => {
    const short = withEmbed(async (texts, dims) => texts.map(() => new Float32Array(dims - 1).fill(0.1)));
    const { ctx } = await setup({ embedder: short });
    await expectMmError(createMemory(ctx, { content: "green tea", userId: "u" }), "EMBEDDER_MISMATCH");
    expect(await ctx.store.countMemories()).toBe(0);
  });
});
