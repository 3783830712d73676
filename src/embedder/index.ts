import { MmError } from "../errors.js";
import type { Embedder, EmbedderConfig } from "./types.js";

export type { Embedder, EmbedderConfig } from "./types.js";

export type Env = Record<string, string | undefined>;

/** What `mm init` collects for a provider; each provider fills in the rest (dims above all). */
export interface ProviderInput {
  model?: string;
  url?: string;
  apiKeyEnv?: string;
  cacheDir?: string;
  dims?: number;
  env: Env;
}

/**
 * A provider module. `configure` may probe (load the model's config, call the endpoint once)
 * because it runs only at `mm init`; `create` must stay cheap and load nothing until `embed`.
 */
export interface EmbedderProvider {
  readonly name: string;
  configure(input: ProviderInput): Promise<EmbedderConfig>;
  create(config: EmbedderConfig, env: Env): Embedder;
}

export const PROVIDERS = ["use-lite", "transformers", "openai"] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export const DEFAULT_EMBEDDER: EmbedderConfig = {
  provider: "use-lite",
  model: "universal-sentence-encoder-lite",
  dims: 512,
};

/** Loads a provider module on demand, so `mm memories list` never imports a model runtime. */
export async function loadProvider(name: string): Promise<EmbedderProvider> {
  switch (name) {
    case "use-lite":
      return (await import("./use-lite.js")).useLiteProvider;
    case "transformers":
      return (await import("./transformers.js")).transformersProvider;
    case "openai":
      return (await import("./openai.js")).openaiProvider;
    default:
      throw new MmError(
        "VALIDATION_ERROR",
        `Unknown embedding provider "${name}". Use one of: ${PROVIDERS.join(", ")}.`,
        { details: [{ field: "provider", message: `must be one of ${PROVIDERS.join(", ")}` }] },
      );
  }
}

export async function createEmbedder(config: EmbedderConfig, env: Env): Promise<Embedder> {
  return (await loadProvider(config.provider)).create(config, env);
}

/** `provider:model (N dims)`, the form every mismatch message uses. */
export function describeEmbedder(e: { provider: string; model: string; dims: number }): string {
  return `${e.provider}:${e.model} (${e.dims} dims)`;
}
