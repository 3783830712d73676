// Memories an older mm stored carry the keys its rules worked out (or none). refreshMatchKeys, which
// `mm store optimize` runs, works them out again with today's rules, so a newer memory finds them.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { createMemory, getMemory, refreshMatchKeys } from "../../src/core/memories.js";
import { KEYS_MARK, matchKeysOf } from "../../src/core/supersede.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const opened: Context[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

async function open(): Promise<Context> {
  let t = Date.parse("2026-01-01T00:00:00.000Z");
  const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder(), clock: () => new Date((t += 1000)) });
  opened.push(ctx);
  return ctx;
}

/** Stores `content` for `userId` as an mm before labelled values would have: with no keys at all. */
async function storedByOlderMm(ctx: Context, userId: string, content: string): Promise<string> {
  const { id } = await createMemory(ctx, { content, userId });
  await ctx.store.write(async (w) => {
    const row = (await w.getMemoryRow(ctx.accountId, id))!;
    await w.replaceMemories([{ ...row, matchKeys: [] }]);
  });
  return id;
}

/** Texts whose keys stand for the rules': the fixtures' development and check facts, their fillers, and bench/everyday's notes. */
function sampleTexts(): string[] {
  const texts: string[] = [];
  const dir = join(import.meta.dirname, "..", "fixtures", "supersede");
  for (const name of ["replaced-dev.jsonl", "both-true-dev.jsonl", "replaced-check.jsonl", "both-true-check.jsonl", "replaced-check5.jsonl", "both-true-check5.jsonl", "replaced-logs.jsonl", "both-true-logs.jsonl", "fillers.jsonl"]) {
    for (const line of readFileSync(join(dir, name), "utf8").split("\n").filter(Boolean)) {
      const r = JSON.parse(line) as { facts?: string[]; content?: string };
      texts.push(...(r.facts ?? [r.content!]));
    }
  }
  for (const part of ["a", "b"]) {
    const { users } = JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "bench", "everyday", `part-${part}.json`), "utf8")) as { users: { memories: { content: string }[] }[] };
    for (const u of users) texts.push(...u.memories.map((m) => m.content));
  }
  return texts;
}

describe("the rules' version", () => {
  // When this fails, the keys matchKeysOf works out changed: raise KEYS_MARK (src/core/supersede.ts),
  // so that `mm store optimize` keys older memories again, and record the new digest here.
  it("KEYS_MARK is raised whenever the keys the rules work out change", () => {
    const texts = sampleTexts();
    const digest = createHash("sha256").update(JSON.stringify(texts.map((t) => matchKeysOf(t)))).digest("hex").slice(0, 16);
    expect({ texts: texts.length, mark: KEYS_MARK, digest }).toEqual({ texts: 1105, mark: "keys:12", digest: "bc9b9e203942a855" });
  });
});

describe("refreshing match keys", () => {
  it("gives memories an older mm stored today's keys, once, and detection then finds them", async () => {
    const ctx = await open();
    const before = await storedByOlderMm(ctx, "ana", "Mobile: 0412 111 908");
    const other = await storedByOlderMm(ctx, "ben", "Mobile: 0412 555 018");

    // Without its keys, the older note is not found by the newer one.
    await createMemory(ctx, { content: "Mobile: 0412 338 771", userId: "ana" });
    expect((await getMemory(ctx, before)).supersededBy).toBeUndefined();

    // Both stale notes get today's keys (ana's newer one already has them); a second pass finds nothing to do.
    expect(await refreshMatchKeys(ctx)).toBe(2);
    const refreshed = (await ctx.store.getMemoryRows(ctx.accountId, [other]))[0];
    expect(refreshed.matchKeys).toEqual([...matchKeysOf("Mobile: 0412 555 018"), KEYS_MARK]);
    expect(refreshed).toMatchObject({ content: "Mobile: 0412 555 018", userId: "ben", supersededBy: null });
    expect(await refreshMatchKeys(ctx)).toBe(0);

    const newer = await createMemory(ctx, { content: "Mobile: 0412 777 301", userId: "ben" });
    expect((await getMemory(ctx, other)).supersededBy).toBe(newer.id);
  });

  it("leaves replaced memories and their rows' other columns as they are", async () => {
    const ctx = await open();
    const old = await createMemory(ctx, { content: "I live in Paris", userId: "u", tags: ["home"], metadata: { source: "chat" } });
    const moved = await createMemory(ctx, { content: "I moved to Berlin", userId: "u" });
    expect((await getMemory(ctx, old.id)).supersededBy).toBe(moved.id);
    const kept = await storedByOlderMm(ctx, "u", "We have a dog named Rex");
    const [row] = await ctx.store.getMemoryRows(ctx.accountId, [kept]);

    expect(await refreshMatchKeys(ctx)).toBe(1);
    const [after] = await ctx.store.getMemoryRows(ctx.accountId, [kept]);
    expect({ ...after, matchKeys: [] }).toEqual({ ...row, matchKeys: [] });
    expect(after.vector).toEqual(row.vector);
    expect((await getMemory(ctx, old.id)).supersededBy).toBe(moved.id);
  });
});
