import { describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { createMemory, getMemory, listMemories } from "../../src/core/memories.js";
import { searchMemories } from "../../src/core/search.js";
import { createEntity, getEntity } from "../../src/core/entities.js";
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

describe("mm store optimize --keep-minutes 0 beside another process (real Azurite)", () => {
  it("the other process's reads on the versions it removed move to the latest version and succeed", async () => {
    const uri = `az://${await azurite().container()}/cleanup`;
    const state = await tempDir();
    const writer = await open(uri, state, "0");
    const made = [];
    for (let i = 0; i < 6; i++) made.push(await createMemory(writer, { content: `note ${i} about the boat in Cascais`, userId: "bo" }));
    const { entity } = await createEntity(writer, { name: "Cascais", type: "LOCATION" });
    const reader = await open(uri, state, "60");
    // The reader's handles are at the versions these reads saw.
    expect((await getMemory(reader, made[0].id)).content).toBe("note 0 about the boat in Cascais");
    expect((await getEntity(reader, entity.id)).name).toBe("Cascais");

    const later = await createMemory(writer, { content: "the boat was sold in May", userId: "bo" });
    const pass = await writer.store.optimize({ keepVersionsMs: 0 });
    expect(pass.work.map((w) => w.table)).toContain("memories");

    // Every version the reader had is gone with its data files: its reads retry on the latest,
    // the graph's first (alone: the memories' handles are moved on by their own first read).
    expect((await getEntity(reader, entity.id)).name).toBe("Cascais");
    expect((await getMemory(reader, made[1].id)).content).toBe("note 1 about the boat in Cascais");
    expect((await getMemory(reader, later.id)).content).toBe("the boat was sold in May");
    const hits = await searchMemories(reader, { query: "boat sold", userId: "bo" });
    expect(hits.results.map((h) => h.id)).toContain(later.id);
    expect((await listMemories(reader, { userId: "bo" })).pagination.total).toBe(7);
    await Promise.all([writer.close(), reader.close()]);
  });
});
