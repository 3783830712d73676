import type { Readable } from "node:stream";
import { Command, CommanderError } from "commander";
import { EXIT, MmError, toMmError } from "../errors.js";
import type { Embedder, Env } from "../embedder/index.js";
import { Output, type OutputStreams } from "./output.js";
import { registerEntities } from "./commands/entities.js";
import { registerGraph } from "./commands/graph.js";
import { registerInit } from "./commands/init.js";
import { registerMcp } from "./commands/mcp.js";
import { registerExport } from "./commands/export.js";
import { registerImport } from "./commands/import.js";
import { registerMemories } from "./commands/memories.js";
import { registerRelations } from "./commands/relations.js";
import { registerAccounts } from "./commands/accounts.js";
import { registerServe } from "./commands/serve.js";
import { registerStore } from "./commands/store.js";
import { VERSION } from "./version.js";

export interface CliIO extends OutputStreams {
  stdin: Readable & { isTTY?: boolean };
  env: Env;
  /** Tests inject an embedder in place of the store's model. */
  embedder?: Embedder;
  clock?: () => Date;
  /**
   * Lets a long command take over Ctrl-C: the first one calls `handler` (a batch add commits the
   * batch in hand, then stops); the default hard stop applies again after `release()`.
   */
  onInterrupt?: (handler: () => void) => () => void;
  /** Lets `mm serve` stop gracefully on SIGINT or SIGTERM. */
  onShutdown?: (handler: (signal: string) => void | Promise<void>) => () => void;
}

/** What every command gets: the process's streams and the output chosen from the global flags. */
export interface CliApp {
  io: CliIO;
  output: Output;
}

/**
 * The process boundary: parses argv, runs one command, and is the only place that turns errors
 * into exit codes (see EXIT in errors.ts). Returns the code instead of exiting, so tests can run
 * the whole CLI in-process.
 */
export async function run(argv: string[], partial: Partial<CliIO> = {}): Promise<number> {
  const io = realIO(partial);
  let output: Output;
  try {
    output = Output.create(io, scanOutputFlags(argv));
  } catch (err) {
    output = Output.create(io, { json: true });
    output.error(toMmError(err));
    return EXIT.usage;
  }
  const app: CliApp = { io, output };
  let usageMessage = "";
  const program = new Command("mm")
    .description("mm: local-first semantic memory (memories, entities, relations) on an embedded LanceDB store")
    .version(VERSION, "-V, --version")
    .option("--store <dir>", "store directory (default: $MM_STORE, else ~/.local/share/mm)")
    .option("--account <account>", "act as this account (id or name; default: $MM_ACCOUNT, else the local default account)")
    .option("--json", "print JSON (the HTTP API's response body); the default when stdout is not a terminal")
    .option("--format <format>", "table | json | ndjson (one list item per line) | mermaid | dot (graph export only)")
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      outputError: (s) => (usageMessage = s.replace(/^error: /, "").trim()),
    });
  registerInit(program, app);
  registerMemories(program, app);
  registerEntities(program, app);
  registerRelations(program, app);
  registerGraph(program, app);
  registerServe(program, app);
  registerMcp(program, app);
  registerExport(program, app);
  registerImport(program, app);
  registerAccounts(program, app);
  registerStore(program, app);

  try {
    await program.parseAsync(argv, { from: "user" });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (["commander.helpDisplayed", "commander.version", "commander.help"].includes(err.code)) return EXIT.ok;
      if (err.code === "commander.executeSubCommandAsync") return EXIT.ok;
      output.error(new MmError("VALIDATION_ERROR", usageMessage || err.message, { details: [{ field: "command", message: usageMessage || err.message }] }));
      return EXIT.usage;
    }
    const mmErr = toMmError(err);
    if (mmErr.code === "INTERNAL_ERROR") io.stderr.write(`mm: internal error: ${(mmErr.cause as Error)?.stack ?? String(mmErr.cause)}\n`);
    output.error(mmErr);
    return mmErr.exitCode;
  }
}

/** Output flags must be known before parsing, so even a usage error is printed in the right form. */
function scanOutputFlags(argv: string[]): { json?: boolean; format?: string } {
  const out: { json?: boolean; format?: string } = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") break;
    if (a === "--json") out.json = true;
    else if (a === "--format") out.format = argv[i + 1];
    else if (a.startsWith("--format=")) out.format = a.slice("--format=".length);
  }
  return out;
}

function realIO(partial: Partial<CliIO>): CliIO {
  return {
    stdout: partial.stdout ?? process.stdout,
    stderr: partial.stderr ?? process.stderr,
    stdin: partial.stdin ?? process.stdin,
    env: partial.env ?? process.env,
    embedder: partial.embedder,
    clock: partial.clock,
    onInterrupt: partial.onInterrupt ?? (partial.stdout ? undefined : processInterrupts),
    onShutdown: partial.onShutdown ?? (partial.stdout ? undefined : processShutdown),
  };
}

/** SIGINT or SIGTERM runs `handler` once (graceful stop); a second signal exits at once. */
function processShutdown(handler: (signal: string) => void | Promise<void>): () => void {
  let seen = false;
  const listener = (signal: string) => {
    if (seen) process.exit(EXIT.interrupted);
    seen = true;
    void handler(signal);
  };
  process.on("SIGINT", listener);
  process.on("SIGTERM", listener);
  return () => {
    process.off("SIGINT", listener);
    process.off("SIGTERM", listener);
  };
}

/** First SIGINT goes to the handler; a second one exits at once with 130, as a shell expects. */
function processInterrupts(handler: () => void): () => void {
  let seen = false;
  const listener = () => {
    if (seen) process.exit(EXIT.interrupted);
    seen = true;
    handler();
  };
  process.on("SIGINT", listener);
  return () => process.off("SIGINT", listener);
}
