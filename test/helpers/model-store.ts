import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";

/**
 * A context on the store's default embedder (the bundled model), in a temp directory opened before
 * the enclosing describe's tests and removed after them, so the model loads once for all of them.
 * Hooks registered after this one (seeding) run after it has opened.
 */
export function useModelStore(prefix: string): () => Context {
  let dir = "";
  let ctx: Context | undefined;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
    ctx = await openContext({ storeDir: dir });
  });
  afterAll(async () => {
    await ctx?.close();
    await rm(dir, { recursive: true, force: true });
  });
  return () => ctx!;
}
