import { afterEach, describe, expect, it, vi } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { createMemory, deleteMemory, getMemory, updateMemory } from "../../src/core/memories.js";
import { maintain, segmentWork } from "../../src/storage/maintenance.js";
import { compactionThreshold, DEFAULT_TUNING, OBJECT_STORE_TUNING, type SegmentStats } from "../../src/storage/store-types.js";
import { requestsDuring, useAzurite } from "../helpers/azurite.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { countSeqQueries } from "../helpers/seq-queries.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
// Azurite's debug log has a line per request it served: what the store cost, counted at the store.
const azurite = useAzurite({ debug: true });

/** A process on the Azurite store; read consistency 0 (a read sees another's commit at once) unless `interval` is given. */
async function open(uri: string, state: string, interval = "0"): Promise<Context> {
  return openContext({ storeDir: uri, env: { ...azurite().env, XDG_STATE_HOME: state, MM_STORE_READ_CONSISTENCY_S: interval }, embedder: createTestEmbedder(32, "m1") });
}

/** Two processes on a new store in the same Azurite, sharing one machine's coordination directory. */
async function twoProcesses(prefix: string, interval = "0"): Promise<[Context, Context]> {
  const uri = `az://${await azurite().container()}/${prefix}`;
  const state = await tempDir();
  return [await open(uri, state, interval), await open(uri, state, interval)];
}


afterEach(() => {
  vi.restoreAllMocks();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const seqsOf = async (ctx: Context, userId: string) =>
  (await ctx.store.memoriesAfter({ accountId: "acct_default", userId }, undefined, 100, false)).map((r) => [r.content, r.seq]);

/** The requests `fn` made, as Azurite logged them. */
const requestsOf = (fn: () => Promise<unknown>) => requestsDuring(azurite(), fn);

/** LIST requests for a table's versions: how a handle finds its table's latest version. */
const listsOf = (lines: string[], table: string) => lines.filter((l) => l.includes("comp=list") && (l.includes(`${table}.lance%2F_versions`) || l.includes(`${table}.lance/_versions`)));

describe("object-store requests of the store's hot paths (real Azurite)", () => {
  it("a writer that alone wrote since its last write doesn't list the tables again; after another process's write it catches up first", async () => {
    const [a, b] = await twoProcesses("writes");
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
    const [a, b] = await twoProcesses("reads");
    for (const content of ["the boat is in Cascais", "the boat needs paint", "lunch with Ana"]) await createMemory(a, { content, userId: "bo" });
    const scope = { accountId: "acct_default", userId: "bo" };
    const read = async () => ({ count: await a.store.countMemories(scope), boat: (await a.store.memoriesWithWords(["boat"], scope, 100))[0].length });
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

  it("a create at the default read-consistency interval lists its segment's versions once (the commit's own), and is read by id at once; another process sees it within the interval", async () => {
    const [a, b] = await twoProcesses("commit", "1");
    await createMemory(a, { content: "first note about the garden", userId: "ana" });
    await sleep(1_200); // older than the interval: a handle that kept LanceDB's interval would list before reading
    let id = "";
    const lines = await requestsOf(async () => (id = (await createMemory(a, { content: "second note about the garden", userId: "ana" })).id));
    // LanceDB's own interval made it 3: before the first read, and after the commit (list, manifest GET).
    expect(listsOf(lines, "memories")).toHaveLength(1);
    expect((await getMemory(a, id)).content).toBe("second note about the garden");

    expect(await b.store.countMemories()).toBe(2); // b's handles were just read: it sees the next create within its interval
    const made = await createMemory(a, { content: "third note about the garden", userId: "ana" });
    const created = Date.now();
    let seenAfter = -1;
    while (Date.now() - created < 5_000) {
      if (await getMemory(b, made.id).then(() => true, () => false)) {
        seenAfter = Date.now() - created;
        break;
      }
      await sleep(20);
    }
    expect(seenAfter).toBeGreaterThanOrEqual(0);
    expect(seenAfter).toBeLessThan(2_000);
    await Promise.all([a.close(), b.close()]);
  });

  it("a user's last sequence number stays known past another process's maintenance commit and this one's rewrites, and is asked again after another process's insert or this one's delete", async () => {
    const [a, b] = await twoProcesses("seqs", "1");
    await createMemory(a, { content: "ana one", userId: "ana" });
    const two = await createMemory(a, { content: "ana two", userId: "ana" });
    const pass = await maintain(b.store, { force: true, keepVersionsMs: 0 });
    expect(pass.work.map((w) => w.table)).toContain("memories");
    await updateMemory(a, two.id, { tags: ["kept"] });

    const asked = countSeqQueries();
    await createMemory(a, { content: "ana three", userId: "ana" });
    expect(asked.count()).toBe(0);

    await createMemory(b, { content: "ana four", userId: "ana" });
    const asked2 = asked.count();
    await createMemory(a, { content: "ana five", userId: "ana" });
    expect(asked.count() - asked2).toBe(1);

    const six = await createMemory(a, { content: "ana six", userId: "ana" });
    await deleteMemory(a, six.id);
    const asked3 = asked.count();
    await createMemory(a, { content: "ana six again", userId: "ana" });
    expect(asked.count() - asked3).toBe(1);
    expect(await seqsOf(a, "ana")).toEqual([["ana one", 1], ["ana two", 2], ["ana three", 3], ["ana four", 4], ["ana five", 5], ["ana six again", 6]]);
    await Promise.all([a.close(), b.close()]);
  });

  it("a local store trusts them past this process's own rewrites too", async () => {
    const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder(32, "m1") });
    await createMemory(ctx, { content: "bo one", userId: "bo" });
    const two = await createMemory(ctx, { content: "bo two", userId: "bo" });
    await updateMemory(ctx, two.id, { content: "bo two, amended" });
    const asked = countSeqQueries();
    await createMemory(ctx, { content: "bo three", userId: "bo" });
    expect(asked.count()).toBe(0);
    expect(await seqsOf(ctx, "bo")).toEqual([["bo one", 1], ["bo two, amended", 2], ["bo three", 3]]);
    await ctx.close();
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
