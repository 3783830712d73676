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

/**
 * Two unit vectors' cosine, their dot product: an embedder's vectors have norm 1, and
 * imported ones are normalised (normalize, above).
 * Four sums side by side: a batch add compares each note that says something changed with up to
 * 2,000 of its user's vectors, and this runs 1.8× as fast as one sum (512 dimensions, Node 20).
 */
export function dot(a: Float32Array, b: Float32Array): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  const n = a.length;
  let i = 0;
  for (; i + 3 < n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; i++) s0 += a[i] * b[i];
  return s0 + s1 + s2 + s3;
}

/** Two vectors' cosine (0 when either is all zeros). */
export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na > 0 && nb > 0 ? dot / Math.sqrt(na * nb) : 0;
}
