import { describe, expect, it } from "vitest";
import { openContext } from "../../src/core/context.js";
import { createMemory, updateMemory } from "../../src/core/memories.js";
import { Maintainer, type MaintenancePass } from "../../src/storage/maintenance.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

describe("a compaction that lost to a write", () => {
  it("is made again holding the write lock, so updates streaming in can't make it lose pass after pass", async () => {
    const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder(), tuning: { compactFragments: 4 } });
    const ids: string[] = [];
    for (let i = 0; i < 24; i++) ids.push((await createMemory(ctx, { content: `note ${i} about the garden`, userId: "u" })).id);
    // Writers that touch rows of every fragment all the time: each update rewrites a row, as
    // marking a replaced memory does, and a new memory adds a small fragment to compact.
    let stop = false;
    let k = 0;
    const writers = [
      (async () => {
        while (!stop) await updateMemory(ctx, ids[k++ % ids.length], { tags: [`t${k}`] });
      })(),
      (async () => {
        for (let i = 0; !stop; i++) ids.push((await createMemory(ctx, { content: `later note ${i}`, userId: "u" })).id);
      })(),
    ];
    const passes: MaintenancePass[] = [];
    const maintainer = new Maintainer(ctx.store, { intervalMs: 20, onPass: (p) => passes.push(p) }).start();
    await new Promise((r) => setTimeout(r, 6000));
    stop = true;
    await Promise.all(writers);
    await maintainer.stop();

    const compactions = passes.flatMap((p) => p.work.filter((w) => w.table !== "graph"));
    const lostTwiceInARow = compactions.filter((w, i) => w.conflict && compactions[i - 1]?.conflict);
    // Measured: 24 of 60 compactions lost, never two in a row; without the rule 36 of 67, 18 right
    // after one that had lost.
    expect(compactions.some((w) => w.conflict)).toBe(true); // the writers did make compactions lose
    expect(lostTwiceInARow).toEqual([]);
    await ctx.close();
  }, 60_000);
});
