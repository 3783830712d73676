import { describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { createMemory } from "../../src/core/memories.js";
import { maintain } from "../../src/storage/maintenance.js";
import { requestsDuring, useAzurite } from "../helpers/azurite.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
// Azurite's debug log has a line per request it served.
const azurite = useAzurite({ debug: true });

async function open(uri: string, state: string): Promise<Context> {
  return openContext({ storeDir: uri, env: { ...azurite().env, XDG_STATE_HOME: state, MM_STORE_READ_CONSISTENCY_S: "1" }, embedder: createTestEmbedder(32, "m1") });
}

/** LIST requests for a table's versions: how a writer catching up finds its tables' latest versions. */
const listsOf = (lines: string[], table: string) => lines.filter((l) => l.includes("comp=list") && (l.includes(`${table}.lance%2F_versions`) || l.includes(`${table}.lance/_versions`)));

describe("a writer after maintenance (real Azurite)", () => {
  it("doesn't catch up after its own process's maintenance pass, and does after another process's", async () => {
    const uri = `az://${await azurite().container()}/maintained`;
    const state = await tempDir();
    const a = await open(uri, state);
    const b = await open(uri, state);
    for (let i = 0; i < 5; i++) await createMemory(a, { content: `note ${i} about the garden`, userId: "ana" });

    expect((await maintain(a.store, { force: true, keepVersionsMs: 60_000 })).work.map((w) => w.table)).toContain("memories");
    const own = await requestsDuring(azurite(), () => createMemory(a, { content: "after a's own pass", userId: "ana" }));
    // A catch-up lists every table; a create alone lists only its own commit's.
    expect(listsOf(own, "graph")).toHaveLength(0);
    expect(listsOf(own, "meta")).toHaveLength(0);

    expect((await maintain(b.store, { force: true, keepVersionsMs: 60_000 })).work.map((w) => w.table)).toContain("memories");
    const others = await requestsDuring(azurite(), () => createMemory(a, { content: "after b's pass", userId: "ana" }));
    expect(listsOf(others, "graph").length).toBeGreaterThan(0);

    const rows = await a.store.memoriesAfter({ accountId: a.accountId, userId: "ana" }, undefined, 10, false);
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    await Promise.all([a.close(), b.close()]);
  });
});
