import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openContext, warmEmbedder } from "../../src/core/context.js";
import { createMemory, searchMemories } from "../../src/core/memories.js";
import { DEFAULT_EMBEDDER } from "../../src/embedder/index.js";
import { Store } from "../../src/storage/store.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

describe("warming the embedder before the store opens", () => {
  it("warms nothing without a store, or when the store's embedder can't be made; the error then comes from the embed", async () => {
    expect(await warmEmbedder(join(await tempDir(), "none"), {})).toBeUndefined();

    const dir = await tempDir();
    (await Store.open(dir, { create: { provider: "test", model: "bag-of-words", dims: 64 } })).close();
    expect(await warmEmbedder(dir, {})).toBeUndefined();
    const ctx = await openContext({ storeDir: dir });
    const err = await ctx.embedder().catch((e) => e);
    expect(err.code).toBe("VALIDATION_ERROR");
    expect(err.message).toContain('Unknown embedding provider "test"');
    await ctx.close();
  });

  it("loads the store's own model, which the context then embeds with and closes", async () => {
    const dir = await tempDir();
    (await Store.open(dir, { create: DEFAULT_EMBEDDER })).close();
    const warmed = await warmEmbedder(dir, {});
    expect(warmed?.id).toBe("use-lite:universal-sentence-encoder-lite");
    let closed = 0;
    const close = warmed!.close?.bind(warmed);
    warmed!.close = async () => {
      closed++;
      await close?.();
    };

    const ctx = await openContext({ storeDir: dir, warmed });
    expect(await ctx.embedder()).toBe(warmed);
    await createMemory(ctx, { content: "Alice drinks green tea every morning", userId: "alice" });
    const { results } = await searchMemories(ctx, { query: "what does Alice drink?", userId: "alice", mode: "semantic", threshold: 0 });
    expect(results.map((r) => r.content)).toEqual(["Alice drinks green tea every morning"]);
    await ctx.close();
    expect(closed).toBe(1);
  }, 60_000);

  it("refuses a warmed embedder that is not the store's", async () => {
    const dir = await tempDir();
    (await Store.open(dir, { create: DEFAULT_EMBEDDER })).close();
    const ctx = await openContext({ storeDir: dir, warmed: createTestEmbedder() });
    const err = await ctx.embedder().catch((e) => e);
    expect(err.code).toBe("EMBEDDER_MISMATCH");
    await ctx.close();
  });
});
