import { afterEach, describe, expect, it, vi } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { createMemory } from "../../src/core/memories.js";
import { saysChanged } from "../../src/core/supersede.js";
import { NEAR_SCAN } from "../../src/core/validity.js";
import { StoreWriter } from "../../src/storage/store.js";
import { useAzurite } from "../helpers/azurite.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { countSeqQueries } from "../helpers/seq-queries.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const azurite = useAzurite();

/** A process on the Azurite store (read consistency 0). */
async function open(uri: string, state: string): Promise<Context> {
  return openContext({ storeDir: uri, env: { ...azurite().env, XDG_STATE_HOME: state, MM_STORE_READ_CONSISTENCY_S: "0" }, embedder: createTestEmbedder(32, "m1") });
}

/** Counts the store's reads that detection may make, on this process's store. */
function readsOf(ctx: Context) {
  const store = ctx.store;
  return {
    search: vi.spyOn(store, "searchMemories"),
    candidates: vi.spyOn(store, "currentMemoriesMatching"),
    users: vi.spyOn(store, "currentMemoriesOf"),
    rows: vi.spyOn(store, "getMemoryRows"),
  };
}


afterEach(() => {
  vi.restoreAllMocks();
});

const OLD = "I live in Paris.";
const NEW = "I moved to Berlin.";

describe("detection's reads on an object store (real Azurite)", () => {
  it("a note that says something changed, of a user this process knows to have few memories: one query reads them all, and the replaced one is marked without reading it again", async () => {
    expect(saysChanged(NEW)).toBe(true);
    const uri = `az://${await azurite().container()}/known`;
    const ctx = await open(uri, await tempDir());
    const old = await createMemory(ctx, { content: OLD, userId: "ana" });
    await createMemory(ctx, { content: "The tomatoes on the balcony turned red.", userId: "ana" });
    await createMemory(ctx, { content: "Someone else's note.", userId: "bo" });

    // The tomatoes "turned": that create read ana's memories, and the process keeps them (storage/current-rows.ts). Without them:
    ctx.store.currentRows.forget();
    const reads = readsOf(ctx);
    const made = await createMemory(ctx, { content: NEW, userId: "ana" });
    expect(made.supersedes).toEqual([old.id]);
    expect(reads.users).toHaveBeenCalledTimes(1);
    expect(reads.users.mock.calls[0].slice(0, 2)).toEqual([ctx.accountId, ["ana"]]);
    // Before: a candidates query and a vector search side by side, then the candidates' vectors.
    expect(reads.candidates).not.toHaveBeenCalled();
    expect(reads.search).not.toHaveBeenCalled();
    expect(reads.rows).not.toHaveBeenCalled();
    expect((await ctx.store.getMemory(ctx.accountId, old.id))!.supersededBy).toBe(made.id);

    // The next note of ana's that says something changed reads none of her memories: they are kept.
    vi.restoreAllMocks();
    const again = readsOf(ctx);
    const moved = await createMemory(ctx, { content: "I moved to Lisbon.", userId: "ana" });
    expect(moved.supersedes).toEqual([made.id]);
    for (const read of Object.values(again)) expect(read).not.toHaveBeenCalled();
    await ctx.close();
  });

  it("of a user this process doesn't know (another process wrote last): the user's last sequence number is asked first, once for the create, and the user read whole", async () => {
    const uri = `az://${await azurite().container()}/unknown`;
    const state = await tempDir();
    const a = await open(uri, state);
    const old = await createMemory(a, { content: OLD, userId: "ana" });
    await createMemory(a, { content: "The tomatoes on the balcony turned red.", userId: "ana" });
    const b = await open(uri, state);

    const reads = readsOf(b);
    const asked = countSeqQueries();
    const made = await createMemory(b, { content: NEW, userId: "ana" });
    expect(made.supersedes).toEqual([old.id]);
    expect(asked.count()).toBe(1); // by detection; the insert knows it then
    expect(reads.users).toHaveBeenCalledTimes(1);
    expect(reads.candidates).not.toHaveBeenCalled();
    expect(reads.search).not.toHaveBeenCalled();
    expect(await b.store.write(async () => (await b.store.memoriesAtMost(b.accountId, ["ana"])).get("ana"))).toBe(3);

    // Another process's write: asked again.
    await createMemory(a, { content: "Another note from the first process.", userId: "ana" });
    const before = asked.count();
    expect(await b.store.write(async () => (await b.store.memoriesAtMost(b.accountId, ["ana"])).get("ana"))).toBe(4);
    expect(asked.count()).toBe(before + 1);
    await Promise.all([a.close(), b.close()]);
  });

  it("of a user with more memories than are read whole: the candidates come without vectors, the user's memories are searched, and only a candidate the model must read is read whole", async () => {
    const uri = `az://${await azurite().container()}/many`;
    const ctx = await open(uri, await tempDir());
    const old = await createMemory(ctx, { content: OLD, userId: "ana" });
    const rents = await createMemory(ctx, { content: "Dana rents a studio in Williamsburg.", userId: "ana" });
    await createMemory(ctx, { content: "The tomatoes on the balcony turned red.", userId: "ana" });
    vi.spyOn(ctx.store, "memoriesAtMost").mockResolvedValue(new Map([["ana", NEAR_SCAN + 1]]));
    ctx.store.currentRows.forget(); // the creates read ana's few memories, and the process kept them

    // The words decide (self.home: paris → berlin): no vector is read, and the replaced row is read
    // whole once, to mark it.
    let reads = readsOf(ctx);
    const made = await createMemory(ctx, { content: NEW, userId: "ana" });
    expect(made.supersedes).toEqual([old.id]);
    expect(reads.users).not.toHaveBeenCalled();
    expect(reads.candidates).toHaveBeenCalledTimes(1);
    const candidates = [...(await reads.candidates.mock.results[0].value).values()].flat();
    expect(candidates.map((r) => r.id)).toContain(old.id);
    for (const r of candidates) expect(r).not.toHaveProperty("vector");
    expect(reads.search).toHaveBeenCalledTimes(1);
    expect(reads.rows).toHaveBeenCalledTimes(1);
    expect(reads.rows.mock.calls[0][1]).toEqual([old.id]);

    // The words share a key ("Dana", the home) but don't decide; "bought" is a word of change the
    // older note doesn't say: the model's reading needs that candidate's vector. It is read whole
    // once, before the plan, and the mark uses the same row.
    vi.restoreAllMocks();
    vi.spyOn(ctx.store, "memoriesAtMost").mockResolvedValue(new Map([["ana", NEAR_SCAN + 1]]));
    ctx.store.currentRows.forget();
    reads = readsOf(ctx);
    const bought = await createMemory(ctx, { content: "Dana bought a studio in Williamsburg.", userId: "ana" });
    expect(bought.supersedes).toEqual([rents.id]);
    expect(reads.rows).toHaveBeenCalledTimes(1);
    expect(reads.rows.mock.calls[0][1]).toEqual([rents.id]);
    expect((await ctx.store.getMemory(ctx.accountId, rents.id))!.supersededBy).toBe(bought.id);
    await ctx.close();
  });

  it("a note that says nothing changed, of a user this process doesn't know: the user's last sequence number is asked beside detection's reads, and the insert asks nothing", async () => {
    const uri = `az://${await azurite().container()}/numbering`;
    const state = await tempDir();
    const a = await open(uri, state);
    await createMemory(a, { content: "My dentist is Dr. Lee.", userId: "ana" });
    await createMemory(a, { content: "The tomatoes on the balcony turned red.", userId: "ana" });
    const b = await open(uri, state);

    const asked = countSeqQueries();
    const candidates = vi.spyOn(b.store, "currentMemoriesMatching");
    const insert = StoreWriter.prototype.insertMemories;
    let askedBeforeInsert = -1;
    vi.spyOn(StoreWriter.prototype, "insertMemories").mockImplementation(function (this: StoreWriter, ...args) {
      askedBeforeInsert = asked.count();
      return insert.apply(this, args);
    });
    const content = "My dentist's office is on Elm Street.";
    expect(saysChanged(content)).toBe(false);
    const made = await createMemory(b, { content, userId: "ana" });
    expect(candidates).toHaveBeenCalledTimes(1);
    expect(askedBeforeInsert).toBe(1);
    expect(asked.count()).toBe(1);
    expect(made.supersedes ?? []).toEqual([]);
    // Numbered after the user's last: the third.
    expect(await b.store.write(async () => (await b.store.memoriesAtMost(b.accountId, ["ana"])).get("ana"))).toBe(3);
    await Promise.all([a.close(), b.close()]);
  });

  it("a note that says nothing changed reads its candidates without vectors, as before", async () => {
    const uri = `az://${await azurite().container()}/plain`;
    const ctx = await open(uri, await tempDir());
    const lee = await createMemory(ctx, { content: "My dentist is Dr. Lee.", userId: "ana" });
    const reads = readsOf(ctx);
    const smith = await createMemory(ctx, { content: "My dentist is Dr. Smith.", userId: "ana" });
    expect(smith.supersedes).toEqual([lee.id]);
    expect(reads.candidates).toHaveBeenCalledTimes(1);
    expect(reads.users).not.toHaveBeenCalled();
    expect(reads.search).not.toHaveBeenCalled();
    // Only the replaced row, to mark it.
    expect(reads.rows).toHaveBeenCalledTimes(1);
    expect(reads.rows.mock.calls[0][1]).toEqual([lee.id]);
    await ctx.close();
  });
});
