import { describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { createMemory } from "../../src/core/memories.js";
import { segmentWork } from "../../src/storage/maintenance.js";
import { compactionThreshold, DEFAULT_TUNING, OBJECT_STORE_TUNING, type SegmentStats } from "../../src/storage/store-types.js";
import { requestsDuring, useAzurite } from "../helpers/azurite.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
// Azurite's debug log has a line per request it served: what the store cost, counted at the store.
const azurite = useAzurite({ debug: true });

/** A process on the Azurite store; read consistency 0, so a read sees another's commit at once. */
async function open(uri: string, state: string): Promise<Context> {
  return openContext({ storeDir: uri, env: { ...azurite().env, XDG_STATE_HOME: state, MM_STORE_READ_CONSISTENCY_S: "0" }, embedder: createTestEmbedder(32, "m1") });
}

/** The requests `fn` made, as Azurite logged them. */
const requestsOf = (fn: () => Promise<unknown>) => requestsDuring(azurite(), fn);

/** LIST requests for a table's versions: how a handle finds its table's latest version. */
const listsOf = (lines: string[], table: string) => lines.filter((l) => l.includes("comp=list") && (l.includes(`${table}.lance%2F_versions`) || l.includes(`${table}.lance/_versions`)));

describe("object-store requests of the store's hot paths (real Azurite)", () => {
  it("a writer that alone wrote since its last write doesn't list the tables again; after another process's write it catches up first", async () => {
    const uri = `az://${await azurite().container()}/writes`;
    const state = await tempDir();
    const [a, b] = [await open(uri, state), await open(uri, state)];
    await createMemory(a, { content: "first note about the garden", userId: "ana" });
    const alone = await requestsOf(() => createMemory(a, { content: "second note about the garden", userId: "ana" }));
    expect(alone.length).toBeGreaterThan(0);
    // The graph and the documents aren't written by a create: only a catch-up would list them.
    expect(listsOf(alone, "graph")).toHaveLength(0);
    expect(listsOf(alone, "meta")).toHaveLength(0);

    await createMemory(b, { content: "third note about the garden", userId: "ana" });
    const after = await requestsOf(() => createMemory(a, { content: "fourth note about the garden", userId: "ana" }));
    expect(listsOf(after, "graph").length).toBeGreaterThan(0);
    // Caught up: the numbering continues after b's memory, not from a's stale view.
    const rows = await a.store.memoriesAfter({ accountId: "acct_default", userId: "ana" }, undefined, 10, false);
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    await Promise.all([a.close(), b.close()]);
  });

  it("a scope's count and word lookups are remembered by table version: repeated they cost no request, and another process's write is seen at once", async () => {
    const uri = `az://${await azurite().container()}/reads`;
    const state = await tempDir();
    const [a, b] = [await open(uri, state), await open(uri, state)];
    for (const content of ["the boat is in Cascais", "the boat needs paint", "lunch with Ana"]) await createMemory(a, { content, userId: "bo" });
    const scope = { accountId: "acct_default", userId: "bo" };
    const read = async () => ({ count: await a.store.countMemories(scope), boat: (await a.store.memoriesWithWord("boat", scope, 100)).length });
    const dataReads = (lines: string[]) => lines.filter((l) => l.includes(".lance") && !l.includes("comp=list"));
    const first = await requestsOf(async () => expect(await read()).toEqual({ count: 3, boat: 2 }));
    expect(dataReads(first).length).toBeGreaterThan(0);
    let again: { count: number; boat: number } | undefined;
    const repeated = await requestsOf(async () => (again = await read()));
    expect(again).toEqual({ count: 3, boat: 2 });
    // Only the version checks (a LIST each, at read consistency 0) remain: no data file is read.
    expect(dataReads(repeated)).toEqual([]);

    await createMemory(b, { content: "the boat was sold", userId: "bo" });
    expect(await read()).toEqual({ count: 4, boat: 3 });
    await Promise.all([a.close(), b.close()]);
  });

  it("object storage compacts a small table sooner: one small fragment per 500 rows, at least 4, at most compactFragments", () => {
    const object = { ...DEFAULT_TUNING, ...OBJECT_STORE_TUNING };
    expect([0, 2_000, 5_000, 16_000, 100_000].map((rows) => compactionThreshold(rows, object))).toEqual([4, 4, 10, 32, 32]);
    expect(compactionThreshold(2_000, DEFAULT_TUNING)).toBe(32);
    const segment = (rows: number, smallFragments: number): SegmentStats => ({
      name: "memories",
      sealed: false,
      rows,
      fragments: smallFragments + 1,
      smallFragments,
      versions: 1,
      indices: 2,
      bytes: 0,
      unindexedTextRows: 0,
      vectorIndex: null,
    });
    expect(segmentWork(segment(2_000, 4), object)?.reason).toBe("4 small fragments");
    expect(segmentWork(segment(2_000, 3), object)).toBeNull();
    expect(segmentWork(segment(2_000, 4), DEFAULT_TUNING)).toBeNull();
  });
});
