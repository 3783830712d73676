import { existsSync } from "node:fs";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { MmError } from "../errors.js";
import type { EmbedderProvider, Env, ProviderInput } from "./index.js";
import { normalize, type Embedder, type EmbedderConfig } from "./types.js";

const PACKAGE = "@huggingface/transformers";
/** all-MiniLM-L6-v2 as exported to ONNX by the transformers.js maintainers: 384 dims, mean pooling. */
export const DEFAULT_TRANSFORMERS_MODEL = "Xenova/all-MiniLM-L6-v2";
const BATCH = 32;
const DEFAULT_TIMEOUT_MS = 20_000;
const PROBE_TEXT = "dimension probe";
const HUB = "https://huggingface.co";

/** sentence-transformers pooling modes, in the order its Pooling module concatenates them. */
const POOLING_MODES = ["cls", "max", "mean", "mean_sqrt_len", "weightedmean", "lasttoken"] as const;
type PoolingMode = (typeof POOLING_MODES)[number];
const POOLING_FLAGS: Record<PoolingMode, string> = {
  cls: "pooling_mode_cls_token",
  max: "pooling_mode_max_tokens",
  mean: "pooling_mode_mean_tokens",
  mean_sqrt_len: "pooling_mode_mean_sqrt_len_tokens",
  weightedmean: "pooling_mode_weightedmean_tokens",
  lasttoken: "pooling_mode_lasttoken",
};

/** What we read from the model's own sentence-transformers files. */
interface ModelSettings {
  pooling: PoolingMode[];
  /** Whether modules.json ends in a Normalize module; we normalise either way. */
  normalize: boolean;
  /** sentence_bert_config.json `max_seq_length`, which is often below the tokenizer's limit. */
  maxLength?: number;
}

/** Settings of one embedder, parsed once from `EmbedderConfig.options`. */
interface Settings {
  model: string;
  local: boolean;
  /** The absolute directory of a local model, else the Hub id. */
  path: string;
  cacheDir: string;
  timeoutMs: number;
  dtype: string;
  remoteHost?: string;
  batchSize: number;
  /** Undefined when the config predates the probe; then read from the model at load. */
  modelSettings?: ModelSettings;
}

// The slice of @huggingface/transformers this module uses. Typed here, not imported, because the
// package is an optional dependency: `tsc` and `mm` must work without it.
interface TfTensor {
  readonly dims: number[];
  readonly data: Float32Array | BigInt64Array;
}
type TfInputs = Record<string, TfTensor>;
type TfTokenizer = (texts: string[], opts: { padding: boolean; truncation: boolean; max_length?: number }) => TfInputs;
interface TfModel {
  (inputs: TfInputs): Promise<Record<string, TfTensor | undefined>>;
  dispose(): Promise<unknown>;
}
interface TfEnv {
  allowRemoteModels: boolean;
  allowLocalModels: boolean;
  cacheDir: string | null;
  remoteHost: string;
  logLevel: number;
  fetch: typeof fetch;
}
interface TfModule {
  env: TfEnv;
  LogLevel: { ERROR: number };
  AutoTokenizer: { from_pretrained(id: string, opts: object): Promise<TfTokenizer> };
  AutoModel: { from_pretrained(id: string, opts: object): Promise<TfModel> };
}

interface Loaded {
  tokenizer: TfTokenizer;
  model: TfModel;
  settings: ModelSettings;
}

/**
 * Imports the runtime only when a model is needed: it costs ~350 ms and ~470 MB on disk, so it
 * is an optional dependency. The specifier is a parameter so a test can prove the fallback.
 */
export async function importTransformers(specifier: string = PACKAGE): Promise<TfModule> {
  try {
    return (await import(specifier)) as TfModule;
  } catch (err) {
    throw new MmError(
      "EMBEDDER_UNAVAILABLE",
      `The transformers provider needs the optional package ${PACKAGE}, which failed to load (${reason(err)}): ` +
        `install @huggingface/transformers (npm install ${PACKAGE}) or choose another embedding provider.`,
      {},
      { cause: err },
    );
  }
}

function invalid(field: string, message: string): MmError {
  return new MmError("VALIDATION_ERROR", `Invalid transformers setting ${field}: ${message}.`, {
    details: [{ field, message }],
  });
}

function expandHome(p: string, env: Env): string {
  return p === "~" || p.startsWith("~/") ? join(env.HOME ?? homedir(), p.slice(1)) : p;
}

/** A path-looking or existing directory is a local model; anything else is a Hub model id. */
function isLocalModel(model: string): boolean {
  return isAbsolute(model) || /^(\.{1,2}|~)(\/|$)/.test(model) || existsSync(model);
}

function defaultCacheDir(env: Env): string {
  return join(env.XDG_CACHE_HOME ?? join(env.HOME ?? homedir(), ".cache"), "mm", "transformers");
}

function optionalString(options: Record<string, unknown>, field: string): string | undefined {
  const v = options[field];
  if (v === undefined) return undefined;
  if (typeof v !== "string" || v === "") throw invalid(`options.${field}`, "must be a non-empty string");
  return v;
}

function positiveInt(options: Record<string, unknown>, field: string, fallback: number): number {
  const v = options[field];
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isInteger(v) || v <= 0) throw invalid(`options.${field}`, "must be a positive integer");
  return v;
}

function parsePooling(value: unknown): PoolingMode[] {
  const modes = typeof value === "string" ? value.split("+") : [];
  if (modes.length === 0 || !modes.every((m): m is PoolingMode => (POOLING_MODES as readonly string[]).includes(m))) {
    throw invalid("options.pooling", `must be one of ${POOLING_MODES.join(", ")}, or several joined with "+"`);
  }
  return modes;
}

function parseSettings(config: EmbedderConfig, env: Env): Settings {
  const options = config.options ?? {};
  if (typeof config.model !== "string" || config.model === "") throw invalid("model", "must be a Hugging Face model id or a local directory");
  const cacheDir = optionalString(options, "cacheDir");
  const local = isLocalModel(config.model);
  const settings: Settings = {
    model: config.model,
    local,
    // transformers.js takes a relative path shaped like "org/name" for a Hub id.
    path: local ? resolve(expandHome(config.model, env)) : config.model,
    cacheDir: cacheDir ? resolve(expandHome(cacheDir, env)) : defaultCacheDir(env),
    timeoutMs: positiveInt(options, "timeoutMs", DEFAULT_TIMEOUT_MS),
    dtype: optionalString(options, "dtype") ?? "fp32",
    remoteHost: optionalString(options, "remoteHost") ?? env.HF_ENDPOINT,
    batchSize: positiveInt(options, "batchSize", BATCH),
  };
  if (options.pooling !== undefined) {
    const maxLength = options.maxLength === undefined ? undefined : positiveInt(options, "maxLength", 0);
    settings.modelSettings = { pooling: parsePooling(options.pooling), normalize: options.normalize === true, maxLength };
  }
  return settings;
}

/**
 * Wraps fetch so a request that gets no response within `ms` is aborted. Only the wait for the
 * response is bounded, not the body: with no network `mm` fails fast, yet a slow first download
 * of a large model is not cut off.
 */
const BASE_FETCH = Symbol.for("mm.transformers.baseFetch");
function timedFetch(current: typeof fetch, ms: number): typeof fetch {
  const base = (current as typeof fetch & { [BASE_FETCH]?: typeof fetch })[BASE_FETCH] ?? current;
  const wrapped = async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    const ctrl = new AbortController();
    const timer = setTimeout(() => ctrl.abort(new Error(`no response within ${ms} ms`)), ms);
    const signal = init?.signal ? AbortSignal.any([init.signal, ctrl.signal]) : ctrl.signal;
    try {
      return await base(input, { ...init, signal });
    } finally {
      clearTimeout(timer);
    }
  };
  return Object.assign(wrapped, { [BASE_FETCH]: base }) as typeof fetch;
}

/** The message with its causes: fetch says only "fetch failed", its cause says why. */
function reason(err: unknown): string {
  const parts: string[] = [];
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 4; depth++) {
    const msg = e instanceof Error ? e.message : String(e);
    if (msg && !parts.includes(msg)) parts.push(msg);
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(": ");
}

async function readJson(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, "utf8"));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new MmError("EMBEDDER_UNAVAILABLE", `Cannot read ${path}: ${reason(err)}`, {}, { cause: err });
  }
}

/**
 * Reads a small model file (modules.json and friends, which transformers.js never fetches):
 * from the model's directory when it loaded from one (a local model or a cached copy), else
 * from the cache or the network, caching it beside the model files so the next load needs no
 * network.
 */
async function readModelFile(s: Settings, dir: string | undefined, name: string, tf: TfModule): Promise<unknown> {
  if (dir) return readJson(join(dir, name));
  const cached = join(s.cacheDir, s.model, name);
  const hit = await readJson(cached);
  if (hit !== undefined) return hit;
  const host = (s.remoteHost ?? HUB).replace(/\/+$/, "");
  const res = await timedFetch(tf.env.fetch, s.timeoutMs)(`${host}/${s.model}/resolve/main/${name}`);
  if (res.status === 404 || res.status === 401) return undefined;
  if (!res.ok) throw new Error(`HTTP ${res.status} fetching ${name}`);
  const text = await res.text();
  await mkdir(dirname(cached), { recursive: true });
  await writeFile(cached, text);
  return JSON.parse(text);
}

/**
 * Pooling and normalisation as the model's sentence-transformers config declares them. A model
 * without that config gets mean pooling, the common default for BERT-style encoders.
 */
async function readModelSettings(s: Settings, dir: string | undefined, tf: TfModule): Promise<ModelSettings> {
  const modules = (await readModelFile(s, dir, "modules.json", tf)) as { type?: string; path?: string }[] | undefined;
  if (!Array.isArray(modules)) return { pooling: ["mean"], normalize: false };

  const pool = modules.find((m) => m.type?.endsWith(".Pooling"));
  const unsupported = modules.filter((m) => m.type && !/\.(Transformer|Pooling|Normalize)$/.test(m.type));
  if (unsupported.length > 0) {
    throw new MmError(
      "VALIDATION_ERROR",
      `The model ${s.model} uses sentence-transformers modules the transformers provider cannot apply ` +
        `(${unsupported.map((m) => m.type).join(", ")}); its vectors would not match the model's. Choose another model.`,
      { details: [{ field: "model", message: "unsupported sentence-transformers modules" }] },
    );
  }
  let pooling: PoolingMode[] = ["mean"];
  if (pool) {
    const cfg = (await readModelFile(s, dir, `${pool.path ?? "1_Pooling"}/config.json`, tf)) as Record<string, unknown> | undefined;
    const modes = cfg ? POOLING_MODES.filter((m) => cfg[POOLING_FLAGS[m]] === true) : [];
    if (modes.length > 0) pooling = modes;
  }
  const st = (await readModelFile(s, dir, "sentence_bert_config.json", tf)) as { max_seq_length?: unknown } | undefined;
  const maxLength = typeof st?.max_seq_length === "number" && st.max_seq_length > 0 ? st.max_seq_length : undefined;
  return { pooling, normalize: modules.some((m) => m.type?.endsWith(".Normalize")), maxLength };
}

function unavailable(s: Settings, detail: string, err?: unknown): MmError {
  const where = s.local
    ? `Put a local copy of the model (config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx) at ${s.path}, ` +
      `or set the model to a Hugging Face model id and allow network access`
    : `Put a local copy of the model in a directory and set the model to that path, or into the cache at ${join(s.cacheDir, s.model)}, or allow network access to ${s.remoteHost ?? HUB}`;
  return new MmError("EMBEDDER_UNAVAILABLE", `Cannot load the transformers model "${s.model}": ${detail}. ${where}.`, {}, { cause: err });
}

async function checkLocalDir(s: Settings): Promise<string> {
  const info = await stat(s.path).catch(() => undefined);
  if (!info?.isDirectory()) throw unavailable(s, "no such directory");
  const missing = ["config.json", "tokenizer.json", "tokenizer_config.json"].filter((f) => !existsSync(join(s.path, f)));
  if (missing.length > 0) throw unavailable(s, `missing ${missing.join(", ")}`);
  // optimum exports put model.onnx at the top level; transformers.js repos use onnx/.
  if (existsSync(join(s.path, "onnx"))) return "onnx";
  if (existsSync(join(s.path, "model.onnx"))) return "";
  throw unavailable(s, "no onnx/ folder or model.onnx");
}

/** Where transformers.js 4 names the ONNX file for each dtype (`onnx/model<suffix>.onnx`). */
const DTYPE_SUFFIX: Record<string, string> = {
  fp32: "",
  fp16: "_fp16",
  int8: "_int8",
  uint8: "_uint8",
  q8: "_quantized",
  q4: "_q4",
  q4f16: "_q4f16",
  bnb4: "_bnb4",
};

/** The cache's copy of a Hub model, if complete enough to load as a local directory. */
function cachedCopy(s: Settings): string | undefined {
  const dir = join(s.cacheDir, s.model);
  const needed = ["config.json", "tokenizer.json", "tokenizer_config.json", `onnx/model${DTYPE_SUFFIX[s.dtype] ?? ""}.onnx`];
  return needed.every((f) => existsSync(join(dir, f))) ? dir : undefined;
}

/**
 * Loads tokenizer and model in parallel. When both fail, the model's error wins: the
 * tokenizer's network failures surface as vague TypeErrors inside transformers.js.
 */
async function loadFrom(tf: TfModule, s: Settings, path: string, opts: object): Promise<Pick<Loaded, "tokenizer" | "model">> {
  const [tokenizer, model] = await Promise.allSettled([
    tf.AutoTokenizer.from_pretrained(path, opts),
    tf.AutoModel.from_pretrained(path, { ...opts, dtype: s.dtype, device: "cpu" }),
  ]);
  if (model.status === "rejected") throw model.reason;
  if (tokenizer.status === "rejected") {
    await model.value.dispose();
    throw tokenizer.reason;
  }
  return { tokenizer: tokenizer.value, model: model.value };
}

/**
 * Loads tokenizer and model. A local directory, or a Hub model already complete in the cache
 * dir, loads with remote access off. Otherwise the model is downloaded, each request bounded by
 * `timeoutMs` until it answers, so no network means a fast, clear error rather than a hang.
 *
 * transformers.js keeps its settings in one global `env`; we set them right before each load.
 * Two embedders loading different models at the same instant could interleave, which `mm`
 * (one store, one model per process) never does.
 */
async function loadModel(s: Settings): Promise<Loaded> {
  const subfolder = s.local ? await checkLocalDir(s) : undefined;
  const tf = await importTransformers();
  const { env } = tf;
  env.logLevel = tf.LogLevel.ERROR;
  env.allowLocalModels = true;
  let loaded: Pick<Loaded, "tokenizer" | "model"> | undefined;
  /** The directory it loaded from; undefined when downloaded. */
  let dir: string | undefined;
  if (s.local) {
    dir = s.path;
    env.allowRemoteModels = false;
    try {
      loaded = await loadFrom(tf, s, s.path, { local_files_only: true, subfolder });
    } catch (err) {
      throw unavailable(s, reason(err), err);
    }
  } else {
    // transformers.js 4 looks for tokenizer files in the global cache dir, ignoring `cache_dir`.
    env.cacheDir = s.cacheDir;
    env.remoteHost = `${(s.remoteHost ?? HUB).replace(/\/+$/, "")}/`;
    const cached = cachedCopy(s);
    if (cached) {
      env.allowRemoteModels = false;
      // A broken cached copy is downloaded again below.
      loaded = await loadFrom(tf, s, cached, { local_files_only: true, subfolder: "onnx" }).catch(() => undefined);
      if (loaded) dir = cached;
    }
    if (!loaded) {
      env.allowRemoteModels = true;
      env.fetch = timedFetch(env.fetch, s.timeoutMs);
      try {
        loaded = await loadFrom(tf, s, s.path, { cache_dir: s.cacheDir });
      } catch (err) {
        throw unavailable(s, `it is not in the cache and the download failed (${reason(err)})`, err);
      }
    }
  }
  try {
    return { ...loaded, settings: s.modelSettings ?? (await readModelSettings(s, dir, tf)) };
  } catch (err) {
    await loaded.model.dispose();
    if (err instanceof MmError) throw err;
    throw unavailable(s, `cannot read its sentence-transformers config (${reason(err)})`, err);
  }
}

/** The per-token hidden states, [batch, seq, hidden], under either name exporters give them. */
function tokenVectors(model: string, outputs: Record<string, TfTensor | undefined>): TfTensor & { data: Float32Array } {
  const hidden = outputs.last_hidden_state ?? outputs.token_embeddings;
  if (!hidden || hidden.dims.length !== 3 || !(hidden.data instanceof Float32Array)) {
    throw new MmError(
      "EMBEDDER_UNAVAILABLE",
      `The model ${model} has no float last_hidden_state output of token vectors; it is not a sentence-embedding model.`,
    );
  }
  return hidden as TfTensor & { data: Float32Array };
}

/** Pools one sequence's token vectors exactly as sentence-transformers' Pooling module does. */
function pool(hidden: Float32Array, mask: ArrayLike<number | bigint>, seq: number, dim: number, mode: PoolingMode): Float64Array {
  const out = new Float64Array(dim);
  const on = (t: number) => Number(mask[t]) !== 0;
  const row = (t: number) => hidden.subarray(t * dim, (t + 1) * dim);
  switch (mode) {
    case "cls":
      out.set(row(0));
      return out;
    case "lasttoken": {
      let last = 0;
      for (let t = 0; t < seq; t++) if (on(t)) last = t;
      out.set(row(last));
      return out;
    }
    case "max": {
      out.fill(-Infinity);
      for (let t = 0; t < seq; t++) {
        if (!on(t)) continue;
        const r = row(t);
        for (let d = 0; d < dim; d++) if (r[d] > out[d]) out[d] = r[d];
      }
      return out;
    }
    default: {
      let weightSum = 0;
      for (let t = 0; t < seq; t++) {
        if (!on(t)) continue;
        const w = mode === "weightedmean" ? t + 1 : 1;
        weightSum += w;
        const r = row(t);
        for (let d = 0; d < dim; d++) out[d] += r[d] * w;
      }
      const div = mode === "mean_sqrt_len" ? Math.sqrt(weightSum) : weightSum;
      for (let d = 0; d < dim; d++) out[d] /= Math.max(div, 1e-9);
      return out;
    }
  }
}

/**
 * Any Hugging Face ONNX sentence-embedding model, run in-process through transformers.js.
 * Pooling follows the model's own config; output is always unit-normalised because the
 * Embedder contract requires it (for models that normalise themselves this changes nothing).
 */
class TransformersEmbedder implements Embedder {
  readonly provider = "transformers";
  readonly model: string;
  readonly dims: number;
  readonly id: string;
  private loading: Promise<Loaded> | undefined;

  constructor(private readonly settings: Settings, dims: number) {
    this.model = settings.model;
    this.dims = dims;
    this.id = `transformers:${settings.model}`;
  }

  load(): Promise<Loaded> {
    this.loading ??= loadModel(this.settings).catch((err: unknown) => {
      this.loading = undefined;
      throw err;
    });
    return this.loading;
  }

  async warm(): Promise<void> {
    await this.load();
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const { tokenizer, model, settings } = await this.load();
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.settings.batchSize) {
      const batch = texts.slice(i, i + this.settings.batchSize);
      const inputs = tokenizer(batch, { padding: true, truncation: true, max_length: settings.maxLength });
      const hidden = tokenVectors(this.model, await model(inputs));
      const [rows, seq, dim] = hidden.dims;
      if (rows !== batch.length) {
        throw new MmError("INTERNAL_ERROR", `transformers returned ${rows} vectors for ${batch.length} texts.`);
      }
      const data = hidden.data;
      const mask = inputs.attention_mask.data;
      for (let b = 0; b < rows; b++) {
        const tokens = data.subarray(b * seq * dim, (b + 1) * seq * dim);
        const rowMask = mask.subarray(b * seq, (b + 1) * seq);
        const parts = settings.pooling.map((mode) => pool(tokens, rowMask, seq, dim, mode));
        const vector = new Float64Array(parts.length * dim);
        parts.forEach((p, k) => vector.set(p, k * dim));
        if (vector.length !== this.dims) {
          throw new MmError(
            "EMBEDDER_MISMATCH",
            `The model ${this.model} produces ${vector.length}-dim vectors but the store is configured for ${this.dims} dims.`,
          );
        }
        out.push(normalize(vector));
      }
    }
    return out;
  }

  async close(): Promise<void> {
    const loading = this.loading;
    this.loading = undefined;
    if (loading) await (await loading.catch(() => undefined))?.model.dispose();
  }
}

function checkDims(dims: unknown, field: string): number {
  if (typeof dims !== "number" || !Number.isInteger(dims) || dims <= 0) throw invalid(field, "must be a positive integer");
  return dims;
}

export const transformersProvider: EmbedderProvider = {
  name: "transformers",

  /**
   * Loads the model once and embeds a probe text, so `mm init` fails on a model that cannot
   * load, and `dims` is what the model really produces (pooling modes can concatenate).
   */
  async configure(input: ProviderInput): Promise<EmbedderConfig> {
    const raw = input.model ?? DEFAULT_TRANSFORMERS_MODEL;
    const model = isLocalModel(raw) ? resolve(expandHome(raw, input.env)) : raw;
    const options: Record<string, unknown> = {};
    if (input.cacheDir) options.cacheDir = resolve(expandHome(input.cacheDir, input.env));
    const settings = parseSettings({ provider: "transformers", model, dims: 1, options }, input.env);
    const probe = new TransformersEmbedder(settings, 0);
    try {
      const { settings: ms } = await probe.load();
      const dims = ms.pooling.length * (await embedProbe(probe));
      if (input.dims !== undefined && checkDims(input.dims, "dims") !== dims) {
        throw invalid("dims", `the model ${model} produces ${dims} dims, not ${input.dims}`);
      }
      options.pooling = ms.pooling.join("+");
      options.normalize = ms.normalize;
      if (ms.maxLength !== undefined) options.maxLength = ms.maxLength;
      return { provider: "transformers", model, dims, options };
    } finally {
      await probe.close();
    }
  },

  create(config: EmbedderConfig, env: Env): Embedder {
    return new TransformersEmbedder(parseSettings(config, env), checkDims(config.dims, "dims"));
  },
};

/** The hidden size, read off one real forward pass rather than trusted from config.json. */
async function embedProbe(probe: TransformersEmbedder): Promise<number> {
  const { tokenizer, model } = await probe.load();
  return tokenVectors(probe.model, await model(tokenizer([PROBE_TEXT], { padding: true, truncation: true }))).dims[2];
}
