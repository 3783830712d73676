import { createHash } from "node:crypto";
import type { Embedder } from "../../src/embedder/types.js";
import { normalize } from "../../src/embedder/types.js";

/**
 * A deterministic bag-of-words embedder for unit-speed suites: each lower-cased word adds a
 * pseudo-random ±1 pattern, so texts sharing words are close and others are near-orthogonal.
 * It is not semantic; search-quality tests use the real model.
 */
export function createTestEmbedder(dims = 64, model = "bag-of-words"): Embedder & { calls: number } {
  return {
    id: `test:${model}`,
    provider: "test",
    model,
    dims,
    calls: 0,
    async embed(texts: string[]) {
      this.calls++;
      return texts.map((t) => {
        const v = new Float32Array(dims);
        const words = t.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [t];
        for (const w of words) {
          const h = createHash("sha256").update(w).digest();
          for (let i = 0; i < dims; i++) v[i] += (h[i % h.length] >> (i % 8)) & 1 ? 1 : -1;
        }
        return normalize(v);
      });
    },
  };
}

/** The test embedder's identity (so a store accepts it) with another `embed`: for faulty embedders. */
export function withEmbed(embed: (texts: string[], dims: number) => Promise<Float32Array[]>, dims = 64): Embedder {
  const base = createTestEmbedder(dims);
  return { id: base.id, provider: base.provider, model: base.model, dims, embed: (texts) => embed(texts, dims) };
}
