import { describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { createEntity, getEntity } from "../../src/core/entities.js";
import { createMemory, getMemory, listMemories } from "../../src/core/memories.js";
import { searchMemories } from "../../src/core/search.js";
import { useAzurite } from "../helpers/azurite.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const azurite = useAzurite();

/**
 * A process on the Azurite store with a read-consistency interval of `intervalS`: a reader with a
 * long one keeps using the versions it last read, as any reader does for up to 1 s by default,
 * so that what follows an optimize by another process doesn't depend on timing.
 */
async function open(uri: string, state: string, intervalS: string): Promise<Context> {
  return openContext({ storeDir: uri, env: { ...azurite().env, XDG_STATE_HOME: state, MM_STORE_READ_CONSISTENCY_S: intervalS }, embedder: createTestEmbedder(32, "m1") });
}

describe("mm store optimize --keep-minutes 0 beside other processes (real Azurite)", () => {
  it("their reads on the versions it removed move to the latest version and succeed: each kind of read the first after the optimize in a process of its own", async () => {
    const uri = `az://${await azurite().container()}/cleanup`;
    const state = await tempDir();
    const writer = await open(uri, state, "0");
    const made = [];
    for (let i = 0; i < 6; i++) made.push(await createMemory(writer, { content: `note ${i} about the boat in Cascais`, userId: "bo" }));
    const { entity } = await createEntity(writer, { name: "Cascais", type: "LOCATION" });
    await createEntity(writer, { name: "Lisbon", type: "LOCATION" }); // two graph fragments: the optimize rewrites them
    // Each reader's handles are at the versions its first reads saw.
    const readers: Context[] = [];
    for (let i = 0; i < 5; i++) {
      const reader = await open(uri, state, "60");
      expect((await getMemory(reader, made[0].id)).content).toBe("note 0 about the boat in Cascais");
      expect((await getEntity(reader, entity.id)).name).toBe("Cascais");
      readers.push(reader);
    }

    const later = await createMemory(writer, { content: "the boat was sold in May", userId: "bo" });
    const pass = await writer.store.optimize({ keepVersionsMs: 0 });
    expect(pass.work.map((w) => w.table)).toEqual(expect.arrayContaining(["memories", "graph"]));
    expect(pass.oldVersionsRemoved).toBeGreaterThan(0);

    // Every version the readers had is gone with its data files (without the retry, the read by
    // id, the search, the entity and the stats failed with "Not found").
    const [byId, search, list, graph, stats] = readers;
    expect((await getMemory(byId, later.id)).content).toBe("the boat was sold in May");
    expect((await searchMemories(search, { query: "boat sold", userId: "bo" })).results.map((h) => h.id)).toContain(later.id);
    // A list reads a snapshot, opened at whatever version this process's session holds: within its
    // interval it may not show the last create yet, but it doesn't fail.
    expect((await listMemories(list, { userId: "bo" })).pagination.total).toBeGreaterThanOrEqual(6);
    expect((await getEntity(graph, entity.id)).name).toBe("Cascais");
    // `mm store stats` lists each table's versions and counts the graph's entities (that count, read
    // outside the retry, failed until 26 November).
    const counted = await stats.store.stats();
    expect([counted.memories.rows, counted.graph.entities]).toEqual([7, 2]);
    await Promise.all([writer.close(), ...readers.map((r) => r.close())]);
  });
});
