import { setTimeout as sleep } from "node:timers/promises";
import { MmError } from "../errors.js";
import { describeEmbedder, type EmbedderProvider, type Env, type ProviderInput } from "./index.js";
import { normalize, type Embedder, type EmbedderConfig } from "./types.js";
import { maskSecrets } from "../secrets.js";

const PROVIDER = "openai";
const DEFAULT_API_KEY_ENV = "OPENAI_API_KEY";
const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_TIMEOUT_MS = 600_000;
const DEFAULT_BATCH = 64;
/** OpenAI rejects more than 2048 inputs per request; other servers are no more generous. */
const MAX_BATCH = 2048;
const MAX_TRIES = 3;
const BACKOFF_MS = 500;
/** A server asking us to wait longer than this is out of quota, not briefly busy: fail now. */
const MAX_RETRY_WAIT_MS = 20_000;
const MAX_SERVER_MESSAGE = 500;
const PROBE_TEXT = "mm embedding dimension probe";
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const FLOAT32_MAX = 3.4028234663852886e38;

/** What `config.json` holds under `embedder.options` for this provider. Never the key itself. */
export interface OpenAiOptions {
  /** Base URL, with or without `/v1`: `http://localhost:11434/v1`, `https://api.openai.com`. */
  url: string;
  /** Name of the environment variable holding the API key; default `OPENAI_API_KEY`. */
  apiKeyEnv?: string;
  timeoutMs?: number;
  batchSize?: number;
}

interface Settings {
  /** `<origin><prefix>/v1`, the canonical form written back to config. */
  base: string;
  /** `<base>/embeddings`, the one URL every request goes to. */
  endpoint: string;
  apiKeyEnv: string;
  timeoutMs: number;
  batchSize: number;
}

function invalid(field: string, message: string): MmError {
  return new MmError("VALIDATION_ERROR", `Invalid openai embedder setting "${field}": ${message}.`, {
    details: [{ field, message }],
  });
}

function unavailable(message: string, cause?: unknown): MmError {
  return new MmError("EMBEDDER_UNAVAILABLE", message, {}, cause === undefined ? undefined : { cause });
}

/**
 * Accepts the base URL in the forms people copy from server docs (with or without `/v1`, a
 * trailing slash, even the full `/v1/embeddings`) and derives the one endpoint we POST to, so
 * `/v1` can never be doubled or missing.
 */
function resolveUrl(raw: unknown): { base: string; endpoint: string } {
  const example = "such as http://localhost:11434/v1";
  if (typeof raw !== "string" || raw.trim() === "") throw invalid("url", `is required, an http(s) URL ${example}`);
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw invalid("url", `must be an http(s) URL ${example}, got "${raw}"`);
  }
  // Credentials in the URL would end up in config.json and in every error message.
  if (url.username || url.password) {
    throw invalid("url", "must not contain credentials; put the key in the environment variable named by apiKeyEnv");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalid("url", `must be an http(s) URL ${example}, got "${raw}"`);
  }
  if (url.search || url.hash) throw invalid("url", `must be a base URL ${example}, without a query string or fragment`);
  let path = url.pathname.replace(/\/+$/, "");
  if (path.endsWith("/embeddings")) path = path.slice(0, -"/embeddings".length).replace(/\/+$/, "");
  if (path.endsWith("/v1")) path = path.slice(0, -"/v1".length);
  const base = `${url.origin}${path}/v1`;
  return { base, endpoint: `${base}/embeddings` };
}

function checkModel(model: unknown): string {
  if (typeof model !== "string" || model.trim() === "") {
    throw invalid("model", "is required: the model name the server knows, e.g. text-embedding-3-small or nomic-embed-text");
  }
  return model.trim();
}

function checkDims(dims: unknown): number {
  if (typeof dims !== "number" || !Number.isInteger(dims) || dims < 1) throw invalid("dims", "must be a positive integer");
  return dims;
}

function checkInt(field: string, value: unknown, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > max) {
    throw invalid(field, `must be an integer from 1 to ${max}`);
  }
  return value;
}

function resolveSettings(options: Record<string, unknown>): Settings {
  const { base, endpoint } = resolveUrl(options.url);
  const apiKeyEnv = options.apiKeyEnv ?? DEFAULT_API_KEY_ENV;
  // Never echo the value: a common mistake is pasting the key itself here.
  if (typeof apiKeyEnv !== "string" || !ENV_NAME.test(apiKeyEnv)) {
    throw invalid("apiKeyEnv", `must be the name of an environment variable (like ${DEFAULT_API_KEY_ENV}), not the key itself`);
  }
  return {
    base,
    endpoint,
    apiKeyEnv,
    timeoutMs: checkInt("timeoutMs", options.timeoutMs, DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS),
    batchSize: checkInt("batchSize", options.batchSize, DEFAULT_BATCH, MAX_BATCH),
  };
}

/** Reads the key at call time, so a key exported after `create` is still picked up. */
function readKey(s: Settings, env: Env): string | undefined {
  const key = env[s.apiKeyEnv]?.trim();
  return key ? key : undefined;
}

/** `retry-after-ms` (OpenAI) wins over `Retry-After` (seconds or an HTTP date); else back off. */
function retryDelay(headers: Headers, attempt: number): number {
  const ms = Number(headers.get("retry-after-ms") ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const after = headers.get("retry-after")?.trim();
  if (after) {
    const seconds = Number(after);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const date = Date.parse(after);
    if (!Number.isNaN(date)) return Math.max(0, date - Date.now());
  }
  return BACKOFF_MS * 2 ** (attempt - 1);
}

/** The server's own explanation, from the shapes OpenAI, Ollama, vLLM and FastAPI use. */
function serverMessage(text: string, key: string | undefined): string | undefined {
  let message: unknown;
  try {
    const body = JSON.parse(text) as Record<string, unknown> | null;
    const error = body?.error;
    message =
      (typeof error === "object" && error !== null ? (error as Record<string, unknown>).message : error) ??
      body?.message ??
      body?.detail;
  } catch {
    // A short plain-text body is still useful; an HTML error page is not.
    if (text.trim() && !text.trimStart().startsWith("<")) message = text;
  }
  if (typeof message !== "string" || message.trim() === "") return undefined;
  // Some servers echo the key they rejected: whole, truncated, inside base64 or URL-encoded.
  const clean = maskSecrets(message.trim().replace(/\s+/g, " "), [key]);
  return clean.length > MAX_SERVER_MESSAGE ? `${clean.slice(0, MAX_SERVER_MESSAGE)}…` : clean;
}

function transportError(s: Settings, err: unknown): MmError {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === "TimeoutError") {
    return unavailable(`The embeddings endpoint ${s.endpoint} did not answer within ${s.timeoutMs} ms.`, err);
  }
  const reason = e?.cause?.message || e?.cause?.code || e?.message || String(err);
  const hint = e?.cause?.code === "ECONNREFUSED" ? " Is the server running?" : "";
  return unavailable(`Could not reach the embeddings endpoint ${s.endpoint}: ${reason}.${hint}`, err);
}

interface Failure {
  status: number;
  statusText: string;
  text: string;
  tries: number;
  /** Set when we stopped because the server asked for a wait longer than we allow. */
  waitMs?: number;
}

function httpError(s: Settings, model: string, key: string | undefined, f: Failure): MmError {
  const message = serverMessage(f.text, key);
  let out = `Embedding request to ${s.endpoint} failed with HTTP ${f.status}${f.statusText ? ` ${f.statusText}` : ""}`;
  if (message) out += `: ${message}`;
  if (f.tries > 1) out += ` (after ${f.tries} tries)`;
  out += ".";
  if (f.status === 401 || f.status === 403) {
    out += key
      ? ` Check the API key in $${s.apiKeyEnv}.`
      : ` No API key was sent; set $${s.apiKeyEnv} if the server needs one.`;
  } else if (f.status === 404) {
    out += ` Check the URL and that the server has the model "${model}".`;
  } else if (f.waitMs !== undefined) {
    out += ` The server asked to retry in ${Math.ceil(f.waitMs / 1000)} s; try again later.`;
  }
  return unavailable(out);
}

/**
 * One batch, with the retry policy: 429 and 5xx are retried (up to MAX_TRIES, honouring
 * Retry-After); other 4xx, timeouts and connection errors are not, since a wrong URL, a dead
 * server or a bad key will not fix themselves within seconds and `mm init` should fail fast.
 */
async function post(s: Settings, model: string, env: Env, texts: string[]): Promise<unknown> {
  const key = readKey(s, env);
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (key) headers.authorization = `Bearer ${key}`;
  const body = JSON.stringify({ model, input: texts, encoding_format: "float" });
  for (let tries = 1; ; tries++) {
    let res: Response;
    let text: string;
    try {
      res = await fetch(s.endpoint, { method: "POST", headers, body, signal: AbortSignal.timeout(s.timeoutMs) });
      text = await res.text();
    } catch (err) {
      throw transportError(s, err);
    }
    const failure: Failure = { status: res.status, statusText: res.statusText, text, tries };
    if (res.ok) {
      try {
        return JSON.parse(text) as unknown;
      } catch (err) {
        throw unavailable(`The embeddings endpoint ${s.endpoint} returned a response that is not JSON.`, err);
      }
    }
    if ((res.status === 429 || res.status >= 500) && tries < MAX_TRIES) {
      const wait = retryDelay(res.headers, tries);
      if (wait <= MAX_RETRY_WAIT_MS) {
        await sleep(wait);
        continue;
      }
      failure.waitMs = wait;
    }
    throw httpError(s, model, key, failure);
  }
}

/** Checks the `{data: [{embedding, index}]}` shape and puts rows back in input order. */
function readVectors(s: Settings, body: unknown, count: number): number[][] {
  const bad = (why: string) =>
    unavailable(`The embeddings endpoint ${s.endpoint} did not return an OpenAI-compatible response: ${why}.`);
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw bad('no "data" array');
  if (data.length !== count) throw bad(`${data.length} embeddings for ${count} texts`);
  const out: (number[] | undefined)[] = Array.from({ length: count }, () => undefined);
  data.forEach((item: { index?: unknown; embedding?: unknown } | null, position) => {
    const index = item?.index ?? position;
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= count || out[index]) {
      throw bad(`index ${String(index)} is out of range or repeated`);
    }
    const embedding = item?.embedding;
    if (!Array.isArray(embedding) || !embedding.every((x) => typeof x === "number" && Number.isFinite(x))) {
      throw bad(`embedding ${index} is not an array of numbers`);
    }
    // The store keeps float32: larger values would become Infinity (and the vector, normalised, zeros).
    if (embedding.some((x: number) => Math.abs(x) > FLOAT32_MAX)) throw bad(`embedding ${index} has values beyond float32's range (±3.4e38)`);
    out[index] = embedding as number[];
  });
  return out as number[][];
}

async function embedBatch(s: Settings, model: string, env: Env, texts: string[]): Promise<number[][]> {
  return readVectors(s, await post(s, model, env, texts), texts.length);
}

/**
 * Any OpenAI-compatible `/v1/embeddings` server: OpenAI, Ollama, LM Studio, vLLM. Holds no
 * connection and makes no request until `embed`, so building it for `mm memories list` is free.
 * Batches run one after another: slower than parallel requests, but gentle on rate limits and
 * on a local server sharing the machine.
 */
class OpenAiEmbedder implements Embedder {
  readonly provider = PROVIDER;
  readonly id: string;

  constructor(
    readonly model: string,
    readonly dims: number,
    private readonly settings: Settings,
    private readonly env: Env,
  ) {
    this.id = `${PROVIDER}:${model}`;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.settings.batchSize) {
      const vectors = await embedBatch(this.settings, this.model, this.env, texts.slice(i, i + this.settings.batchSize));
      for (const v of vectors) {
        if (v.length !== this.dims) {
          throw new MmError(
            "EMBEDDER_MISMATCH",
            `The embeddings endpoint ${this.settings.endpoint} returned ${v.length}-dim vectors, but this store uses ${describeEmbedder(this)}.`,
          );
        }
        out.push(normalize(v));
      }
    }
    return out;
  }
}

export const openaiProvider: EmbedderProvider = {
  name: PROVIDER,
  /** Probes the endpoint once, so a wrong URL, model or key fails at `mm init`, not at the first add. */
  async configure(input: ProviderInput): Promise<EmbedderConfig> {
    const model = checkModel(input.model);
    const settings = resolveSettings({ url: input.url, apiKeyEnv: input.apiKeyEnv });
    const expected = input.dims === undefined ? undefined : checkDims(input.dims);
    const [probe] = await embedBatch(settings, model, input.env, [PROBE_TEXT]);
    if (probe.length === 0) {
      throw unavailable(`The embeddings endpoint ${settings.endpoint} returned an empty vector for model "${model}".`);
    }
    if (expected !== undefined && probe.length !== expected) {
      throw new MmError(
        "EMBEDDER_MISMATCH",
        `Model "${model}" at ${settings.endpoint} returns ${probe.length}-dim vectors, not the ${expected} dims requested.`,
      );
    }
    return {
      provider: PROVIDER,
      model,
      dims: probe.length,
      options: { url: settings.base, apiKeyEnv: settings.apiKeyEnv },
    };
  },
  create(config: EmbedderConfig, env: Env): Embedder {
    const settings = resolveSettings(config.options ?? {});
    return new OpenAiEmbedder(checkModel(config.model), checkDims(config.dims), settings, env);
  },
};
