/**
 * What every embedding provider implements. Vectors come back unit-normalised, so cosine
 * similarity is a dot product and scores are comparable across providers' queries.
 *
 * Providers must load their model lazily, on the first `embed` call, so commands that never
 * embed (list, get, delete) never pay for the model.
 */
export interface Embedder {
  /** Stable identity recorded in the store: `<provider>:<model>`. */
  readonly id: string;
  readonly provider: string;
  readonly model: string;
  /** Output dimension; known before the model loads (from config or the store). */
  readonly dims: number;
  /** Embeds texts in order, batching internally. Every vector has length `dims` and norm 1. */
  embed(texts: string[]): Promise<Float32Array[]>;
  /**
   * Loads the model now, ahead of the first `embed`, for a caller that knows an embedding is
   * coming and has other work to overlap with the load. Optional: remote providers load nothing.
   */
  warm?(): Promise<void>;
  /**
   * For a long-running server: embed every batch, however small, off the main thread and spread
   * over all cores, so that requests keep being answered while the model runs and concurrent
   * creates use every core. Starts (and warms) the threads now. Optional: a no-op where the model
   * doesn't run in this process.
   */
  serve?(): Promise<void>;
  /** Releases workers or handles, if any. */
  close?(): Promise<void>;
}

/** How a store records its embedder in `config.json`. Secrets are never written here. */
export interface EmbedderConfig {
  provider: string;
  model: string;
  dims: number;
  /** Provider-specific settings: URL, local model path, cache dir, api-key env var name… */
  options?: Record<string, unknown>;
}

/** Scales a vector to unit length; a zero vector stays zero (callers reject it). */
export function normalize(v: ArrayLike<number>): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i] * v[i];
  const norm = Math.sqrt(sum);
  const out = new Float32Array(v.length);
  if (norm === 0) return out;
  for (let i = 0; i < v.length; i++) out[i] = v[i] / norm;
  return out;
}
