import type { Command } from "commander";
import { toMmError } from "../../errors.js";
import { describeEmbedder, loadProvider, PROVIDERS, type EmbedderConfig, type ProviderName } from "../../embedder/index.js";
import { describeStore, initStore, locateStore, storeStatus } from "../../core/store-location.js";
import type { CliApp } from "../main.js";
import { count } from "../output.js";
import { canPrompt, promptSelect, promptText } from "../prompt.js";

interface InitFlags {
  provider?: string;
  model?: string;
  url?: string;
  apiKeyEnv?: string;
  cacheDir?: string;
  dims?: string;
}

/** What `mm init` offers first for each provider; Enter takes it. */
const SUGGESTED = {
  transformers: { model: "Xenova/all-MiniLM-L6-v2" },
  openai: { url: "http://127.0.0.1:11434/v1", model: "nomic-embed-text" },
};

export function registerInit(program: Command, app: CliApp): void {
  program
    .command("init")
    .description("create a store and choose its embedding model; on an existing store, show how it is set up")
    .option("--provider <name>", `embedding provider: ${PROVIDERS.join(" | ")} (default use-lite)`)
    .option("--model <model>", "model: a Hugging Face id or local directory (transformers), or the endpoint's model name (openai)")
    .option("--url <url>", "openai: base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1")
    .option("--api-key-env <name>", "openai: environment variable holding the API key (default OPENAI_API_KEY); the key itself is never stored")
    .option("--cache-dir <dir>", "transformers: where downloaded models are cached")
    .option("--dims <n>", "expected vector dimension (checked against the model)")
    .addHelpText(
      "after",
      "\nExamples:\n  mm init                                   # use-lite, fully offline; on a terminal it asks\n  mm init --provider transformers --model ./models/all-MiniLM-L6-v2\n  mm init --provider openai --url http://127.0.0.1:11434/v1 --model nomic-embed-text",
    )
    .action(async (flags: InitFlags, cmd: Command) => {
      const { io, output } = app;
      const location = locateStore((cmd.optsWithGlobals() as { store?: string }).store, io.env);
      const chosen = Object.values(flags).some((v) => v !== undefined);
      if (!chosen && (await storeStatus(location)) === "ready") {
        // Nothing asked for: show the set-up rather than re-run the choice (and refuse it).
        const current = await describeStore(location);
        return output.result(current, (t) =>
          [
            t.prose(`The store at ${current.store} uses ${t.bold(describeEmbedder(current.embedder))} and holds ${count(current.memories)} memor${current.memories === 1 ? "y" : "ies"}.`),
            t.dim(
              t.prose(
                current.memories
                  ? "Another model needs another store: mm init --store <new directory> --provider …"
                  : "It holds no memories yet, so it can still switch: mm init --provider …",
              ),
            ),
          ].join("\n"),
        );
      }
      const embedder = await chooseEmbedder(app, flags);
      const body = await initStore(location, embedder);
      await output.result(body, (t) =>
        t.prose(
          body.created
            ? `Created a store at ${body.store} using ${describeEmbedder(body.embedder)}.`
            : body.changed
              ? `The store at ${body.store} now uses ${describeEmbedder(body.embedder)}.`
              : `The store at ${body.store} already uses ${describeEmbedder(body.embedder)}.`,
        ),
      );
    });
}

/**
 * The embedder from the flags, or asked for on a terminal when no provider is given: each question
 * offers a default (Enter takes it), and a choice the provider can't set up (an unreachable URL, a
 * model directory that isn't one) is reported and asked again instead of ending the command.
 */
async function chooseEmbedder(app: CliApp, flags: InitFlags): Promise<EmbedderConfig> {
  const { io, output } = app;
  const interactive = canPrompt(io) && flags.provider === undefined;
  for (;;) {
    const input = interactive ? await ask(app, flags) : { ...flags, provider: flags.provider ?? "use-lite" };
    try {
      const provider = await loadProvider(input.provider);
      return await provider.configure({
        model: input.model,
        url: input.url,
        apiKeyEnv: input.apiKeyEnv,
        cacheDir: input.cacheDir,
        dims: input.dims === undefined ? undefined : Number(input.dims),
        env: io.env,
      });
    } catch (err) {
      if (!interactive) throw err;
      output.error(toMmError(err));
      output.note("Let's try again.");
    }
  }
}

async function ask(app: CliApp, flags: InitFlags): Promise<InitFlags & { provider: string }> {
  const { io } = app;
  const provider = await promptSelect<ProviderName>(
    io,
    "Embedding provider",
    [
      { value: "use-lite", name: "use-lite", description: "Universal Sentence Encoder lite: bundled, fully offline (512 dims)" },
      { value: "transformers", name: "transformers", description: "a Hugging Face ONNX sentence-embedding model, local directory or download" },
      { value: "openai", name: "openai", description: "an OpenAI-compatible /v1/embeddings endpoint (Ollama, LM Studio, vLLM, OpenAI)" },
    ],
    "use-lite",
  );
  const out: InitFlags & { provider: string } = { ...flags, provider };
  if (provider === "transformers") out.model = await promptText(io, "Model (Hugging Face id or local directory):", flags.model ?? SUGGESTED.transformers.model);
  if (provider === "openai") {
    out.url = await promptText(io, "Base URL:", flags.url ?? SUGGESTED.openai.url, (v) => (/^https?:\/\/\S+$/.test(v) ? true : "a URL starting with http:// or https://"));
    out.model = await promptText(io, "Model name:", flags.model ?? SUGGESTED.openai.model);
  }
  return out;
}
