import type { Command } from "commander";
import { describeEmbedder, loadProvider, PROVIDERS, type ProviderName } from "../../embedder/index.js";
import { Store } from "../../storage/store.js";
import { resolveStorePath } from "../../storage/paths.js";
import type { CliApp } from "../main.js";
import { canPrompt, promptSelect, promptText } from "../prompt.js";

interface InitFlags {
  provider?: string;
  model?: string;
  url?: string;
  apiKeyEnv?: string;
  cacheDir?: string;
  dims?: string;
}

export function registerInit(program: Command, app: CliApp): void {
  program
    .command("init")
    .description("create a store and choose its embedding model (interactive on a terminal, flags otherwise)")
    .option("--provider <name>", `embedding provider: ${PROVIDERS.join(" | ")} (default use-lite)`)
    .option("--model <model>", "model: a Hugging Face id or local directory (transformers), or the endpoint's model name (openai)")
    .option("--url <url>", "openai: base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1")
    .option("--api-key-env <name>", "openai: environment variable holding the API key (default OPENAI_API_KEY); the key itself is never stored")
    .option("--cache-dir <dir>", "transformers: where downloaded models are cached")
    .option("--dims <n>", "expected vector dimension (checked against the model)")
    .addHelpText(
      "after",
      "\nExamples:\n  mm init                                   # use-lite, fully offline\n  mm init --provider transformers --model ./models/all-MiniLM-L6-v2\n  mm init --provider openai --url http://127.0.0.1:11434/v1 --model nomic-embed-text",
    )
    .action(async (flags: InitFlags, cmd: Command) => {
      const { io, output } = app;
      const dir = resolveStorePath((cmd.optsWithGlobals() as { store?: string }).store, io.env);
      const input = await collectInput(app, flags);
      const provider = await loadProvider(input.provider);
      const config = await provider.configure({
        model: input.model,
        url: input.url,
        apiKeyEnv: input.apiKeyEnv,
        cacheDir: input.cacheDir,
        dims: input.dims === undefined ? undefined : Number(input.dims),
        env: io.env,
      });
      let created = false;
      let changed = false;
      let store: Store;
      if (await Store.exists(dir)) {
        store = await Store.open(dir);
        const cur = store.config.embedder;
        if (cur.provider !== config.provider || cur.model !== config.model || cur.dims !== config.dims || JSON.stringify(cur.options ?? {}) !== JSON.stringify(config.options ?? {})) {
          const next = await store.resetEmbedder(config);
          store.close();
          store = next;
          changed = true;
        }
      } else {
        store = await Store.open(dir, { create: config });
        created = true;
      }
      const body = { store: dir, embedder: store.config.embedder, created, changed };
      store.close();
      await output.result(body, () =>
        created
          ? `Created a store at ${dir} using ${describeEmbedder(body.embedder)}.`
          : changed
            ? `The store at ${dir} now uses ${describeEmbedder(body.embedder)}.`
            : `The store at ${dir} already uses ${describeEmbedder(body.embedder)}.`,
      );
    });
}

async function collectInput(app: CliApp, flags: InitFlags): Promise<InitFlags & { provider: string }> {
  const { io } = app;
  const interactive = canPrompt(io) && flags.provider === undefined;
  let provider = flags.provider;
  if (provider === undefined) {
    provider = interactive
      ? await promptSelect<ProviderName>(io, "Embedding provider", [
          { value: "use-lite", name: "use-lite", description: "Universal Sentence Encoder lite: bundled, fully offline (512 dims)" },
          { value: "transformers", name: "transformers", description: "a Hugging Face ONNX sentence-embedding model, local directory or download" },
          { value: "openai", name: "openai", description: "an OpenAI-compatible /v1/embeddings endpoint (Ollama, LM Studio, vLLM, OpenAI)" },
        ])
      : "use-lite";
  }
  const out = { ...flags, provider };
  if (interactive && provider === "transformers" && !out.model) out.model = await promptText(io, "Model (Hugging Face id or local directory):");
  if (interactive && provider === "openai") {
    out.url ??= await promptText(io, "Base URL (e.g. http://127.0.0.1:11434/v1):");
    out.model ??= await promptText(io, "Model name:");
  }
  return out;
}
