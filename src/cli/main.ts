import type { Readable } from "node:stream";
import { Command, CommanderError, Help } from "commander";
import { EXIT, MmError, toMmError } from "../errors.js";
import type { Embedder, Env } from "../embedder/index.js";
import { Output, type OutputStreams } from "./output.js";
import { fieldNamer } from "./messages.js";
import { FS_REASONS } from "./files.js";
import { hints } from "./hints.js";
import { orList } from "../words.js";
import { isApiCommand } from "./context.js";
import { localOnly, resolveRemote, viaRemote } from "./remote.js";
import { settleKeyFlags } from "./secret-flags.js";
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
  return runCommands(argv, partial, argv[firstWord(argv)] === "hook" ? hooks : remoteGroup(argv, partial.env ?? process.env));
}

type Register = (program: Command, app: CliApp) => void;

const memories = async () => (await import("./commands/memories.js")).registerMemories;
const entities = async () => (await import("./commands/entities.js")).registerEntities;
const relations = async () => (await import("./commands/relations.js")).registerRelations;
const graph = async () => (await import("./commands/graph.js")).registerGraph;
// `mm hook` runs on every prompt an agent sends: its program holds that group alone (as a remote
// command's does, see remoteGroup), without loading the modules of the other twenty commands.
const hooks = async () => (await import("./commands/hooks.js")).registerHooks;

/** Every command group's module, in the order `mm --help` lists them. */
const COMMANDS: (() => Promise<Register>)[] = [
  async () => (await import("./commands/init.js")).registerInit,
  memories,
  entities,
  relations,
  graph,
  async () => (await import("./commands/serve.js")).registerServe,
  async () => (await import("./commands/mcp.js")).registerMcp,
  async () => (await import("./commands/export.js")).registerExport,
  async () => (await import("./commands/import.js")).registerImport,
  async () => (await import("./commands/accounts.js")).registerAccounts,
  async () => (await import("./commands/console.js")).registerConsole,
  async () => (await import("./commands/store.js")).registerStore,
  async () => (await import("./commands/login.js")).registerLogin,
  hooks,
];

/** The groups whose every command is an API operation, by the names a person may type. */
const API_GROUPS: Record<string, () => Promise<Register>> = {
  memories,
  memory: memories,
  mem: memories,
  entities,
  entity: entities,
  ent: entities,
  relations,
  relation: relations,
  rel: relations,
  graph,
};

/**
 * The one group a remote command needs, when it is sure to be one of the API's: `mm --remote URL
 * memories get ID` builds a program of that group alone, and never loads the modules of `serve`,
 * `store`, `accounts`, `console`… (nor, through them, the store's). A remote command's start-up is
 * most of its cost over a direct HTTP call: with cli/context.ts loading the store's modules only
 * for a local store, this took a remote get from 77.5 to 73.7 ms of CPU at p50 (docs/client.md,
 * "Measured"). The guess is only an optimisation: a usage error, or anything else commander
 * refuses, runs again with every command, so its message is the whole CLI's whatever commander's
 * suggestions come to depend on.
 */
function remoteGroup(argv: string[], env: Env): (() => Promise<Register>) | undefined {
  const end = argv.indexOf("--");
  const flags = end < 0 ? argv : argv.slice(0, end);
  if (!env.MM_URL && !flags.some((a) => a === "--remote" || a.startsWith("--remote="))) return undefined;
  const word = argv[firstWord(argv)];
  return word !== undefined && Object.hasOwn(API_GROUPS, word) ? API_GROUPS[word] : undefined;
}

async function runCommands(argv: string[], partial: Partial<CliIO>, only: (() => Promise<Register>) | undefined): Promise<number> {
  const original = argv;
  const io = realIO(partial);
  argv = helpArgs(argv);
  const flags = scanGlobalFlags(argv);
  const debug = flags.debug || io.env.MM_DEBUG === "1";
  let output: Output;
  try {
    output = Output.create(io, { ...flags, env: io.env });
  } catch (err) {
    output = Output.create(io, { env: io.env, color: flags.color });
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
    .option("--format <format>", "table | json | ndjson (one list item per line) | mermaid | dot (graph export only) | markdown (export and import only)")
    .option("--wide", "tables show every column, ids included, however narrow the terminal")
    .option("--no-color", "no colour (also: NO_COLOR=1; FORCE_COLOR=1 forces it)")
    .option("--debug", "show internal details of unexpected errors (also: MM_DEBUG=1)")
    .option("--remote [url]", "run against an mm server instead of a local store (also: $MM_URL; alone: the server `mm login` saved)")
    .option("--key <key>", "the API key for --remote; - reads it from stdin (default: $MM_API_KEY, else the one `mm login` saved)")
    .option("--key-file <path>", "read the API key for --remote from this file")
    .helpCommand("help [command...]", "show help for a command, e.g. mm help memories search")
    .configureHelp(HELP)
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      outputError: (s) => (usageMessage = plainUsage(s)),
    });
  for (const register of await Promise.all((only ? [only] : COMMANDS).map((load) => load()))) register(program, app);
  // Messages name the flags of the command that runs, once it is known.
  program.hook("preAction", (_program, action) => void (output.fieldName = fieldNamer(action, io.env)));
  // Before anything reads --key: `--key -` and `--key-file` become the key itself.
  program.hook("preAction", () => settleKeyFlags(program, app));
  // Through --remote only what the API offers (export and import go record by record through it);
  // the rest says it needs a local store.
  program.hook("preAction", async (_program, action) => {
    // The hooks find a running server themselves, and change only an agent's settings.
    if (isApiCommand(action) || ["login", "logout", "export", "import", "hook"].includes(action.name()) || action.parent?.name() === "hooks") return;
    if (await resolveRemote(action.optsWithGlobals(), io.env)) throw localOnly(`\`mm ${commandPath(action)}\``);
  });
  for (const cmd of allCommands(program)) cmd.exitOverride().configureHelp(HELP);
  argv = bareRemote(argv, program);
  const misread = flagAsValue(program, argv);
  if (misread) {
    output.error(new MmError("VALIDATION_ERROR", `${misread}.`, { details: [{ field: "command", message: misread }] }));
    return EXIT.usage;
  }

  try {
    await program.parseAsync(argv, { from: "user" });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (["commander.helpDisplayed", "commander.version", "commander.help"].includes(err.code)) return EXIT.ok;
      if (err.code === "commander.executeSubCommandAsync") return EXIT.ok;
      // Nothing ran and nothing was printed: the whole CLI says what was wrong.
      if (only) return runCommands(original, partial, undefined);
      const message = err.code === "commander.unknownCommand" ? unknownCommand(program, err.message, argv) : usageMessage || err.message;
      output.error(new MmError("VALIDATION_ERROR", message, { details: [{ field: "command", message }] }));
      return EXIT.usage;
    }
    // Ctrl-C at a prompt: the person chose to stop; say nothing more, as a shell expects.
    if (err instanceof Error && (err.name === "ExitPromptError" || err.name === "AbortPromptError")) {
      if (output.isTable) io.stderr.write("\n");
      return EXIT.interrupted;
    }
    const mmErr = fileSystemError(err) ?? toMmError(err);
    if (mmErr.code === "INTERNAL_ERROR") {
      const cause = mmErr.cause as Error | undefined;
      if (debug) io.stderr.write(`mm: internal error: ${cause?.stack ?? String(cause)}\n`);
      // The first sentence only: native errors go on with source paths and nested causes.
      const what = (cause?.message ?? String(cause)).split(/\n|\s+Caused by:/)[0].slice(0, 200);
      output.error(
        new MmError("INTERNAL_ERROR", `something went wrong inside mm: ${what}`),
        debug ? [] : ["Run the command again with --debug (or MM_DEBUG=1) to see where, and report it."],
      );
      return mmErr.exitCode;
    }
    output.error(mmErr, viaRemote(program, io.env) ? [] : await hints(app, program, mmErr));
    return mmErr.exitCode;
  }
}

/**
 * Help that lists the global options too, but not one the command has itself (`mm console link
 * --url` and `mm console --url`): each flag appears once.
 */
const HELP = {
  showGlobalOptions: true,
  visibleGlobalOptions(this: Help, cmd: Command) {
    const own = new Set(cmd.options.map((o) => o.long));
    return Help.prototype.visibleGlobalOptions.call(this, cmd).filter((o) => !own.has(o.long));
  },
};

/**
 * A file-system error is about the person's disk, not a bug in mm: STORE_ERROR naming the path and
 * the reason in words, never a stack. (The HTTP layer keeps answering 500: a client can't fix the
 * server's disk.)
 */
function fileSystemError(err: unknown): MmError | undefined {
  const e = err instanceof MmError ? err.cause : err;
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const path = (e as NodeJS.ErrnoException | undefined)?.path;
  if (!code || !FS_REASONS[code] || !path) return undefined;
  return new MmError("STORE_ERROR", `Cannot use ${path}: ${FS_REASONS[code]}.`, {}, { cause: e });
}

/** Commander's usage errors, on one line and naming flags as they are typed. */
function plainUsage(s: string): string {
  const long = (spec: string) => /--[\w-]+/.exec(spec)?.[0] ?? spec;
  const text = s
    .replace(/^error: /, "")
    .replace(/option '([^']+)' cannot be used with option '([^']+)'/, (_, a: string, b: string) => `${long(a)} can't be used with ${long(b)}`)
    .replace(/missing required argument '([^']+)'/, "<$1> is required")
    .replace(/required option '([^']+)' not specified/, (_, a: string) => `${long(a)} is required`)
    .replace(/option '([^']+)' argument missing/, (_, a: string) => `${long(a)} needs a value`)
    .replace(/\n\((Did you mean .*)\)/, " ($1)")
    .trim();
  return /[.?!)]$/.test(text) ? text : `${text}.`;
}

/**
 * `mm memories add --batch --user u`: commander gives --batch the value "--user", whatever the next
 * word is, and then says something about too many arguments, or reads a file named "--user". The
 * flags that take a value, of the command the words name and of its parents, each followed by a
 * flag: say that instead. (`--batch=--user` is a value that starts with dashes, and passes.)
 */
function flagAsValue(program: Command, argv: string[]): string | undefined {
  const chain = [program];
  for (const word of argv) {
    const sub = word.startsWith("-") ? undefined : chain[0].commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (sub) chain.unshift(sub);
  }
  const takesValue = new Set(chain.flatMap((c) => c.options.filter((o) => o.required).flatMap((o) => [o.long, o.short].filter((f): f is string => !!f))));
  const i = argv.findIndex((a, k) => takesValue.has(a) && argv[k + 1]?.startsWith("--"));
  if (i < 0) return undefined;
  return `${argv[i]} needs a value, but the next word is the flag ${argv[i + 1]}: put the value right after ${argv[i]} (or write ${argv[i]}=${argv[i + 1]} if that is the value)`;
}

/** `mm help memories search` is `mm memories search --help`, at any depth. */
function helpArgs(argv: string[]): string[] {
  const i = firstWord(argv);
  if (argv[i] !== "help") return argv;
  const rest = argv.slice(i + 1);
  return [...argv.slice(0, i), ...rest.filter((a) => !a.startsWith("-")), "--help"];
}

/** Where the command's name is in argv: after the global flags (and their values). */
function firstWord(argv: string[]): number {
  const withValue = new Set(["--store", "--account", "--format", "--key", "--key-file"]);
  let i = 0;
  while (i < argv.length && argv[i].startsWith("-")) i += withValue.has(argv[i]) || (argv[i] === "--remote" && argv[i + 1]?.includes("://")) ? 2 : 1;
  return i;
}

/**
 * `mm --remote memories list` means the server `mm login` saved, not a server named "memories":
 * a bare --remote followed by a command becomes `--remote=` (empty, as `resolveRemote` reads it).
 */
function bareRemote(argv: string[], program: Command): string[] {
  const names = new Set(program.commands.flatMap((c) => [c.name(), ...c.aliases()]));
  return argv.map((a, i) => (a === "--remote" && names.has(argv[i + 1] ?? "") ? "--remote=" : a));
}

/** `memories search` for the command `mm memories search`. */
function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

function allCommands(cmd: Command): Command[] {
  return cmd.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/**
 * `mm search tea` means `mm memories search tea`: point at the command that has that name one
 * level down, rather than at the nearest spelling among the groups (which would be `serve`).
 */
function unknownCommand(program: Command, message: string, argv: string[]): string {
  const word = /'([^']+)'/.exec(message)?.[1] ?? "";
  // `mm memories serach`: the unknown word is a subcommand of a group; suggest among the group's.
  const group = program.commands.find((g) => {
    const at = argv.indexOf(word);
    return at > 0 && (argv[at - 1] === g.name() || g.aliases().includes(argv[at - 1])) && g.commands.length > 0;
  });
  if (group) {
    const near = [...new Set(group.commands.filter((c) => [c.name(), ...c.aliases()].some((n) => editDistance(n, word) <= Math.max(1, Math.floor(word.length / 3)))).map((c) => c.name()))];
    return `unknown command '${word}' for \`mm ${group.name()}\`.${near.length ? ` Did you mean ${orList(near.map((c) => `\`mm ${group.name()} ${c}\``))}?` : ""} See \`mm ${group.name()} --help\`.`;
  }
  const matches = program.commands.flatMap((group) =>
    group.commands.filter((c) => c.name() === word || c.aliases().includes(word)).map((c) => `mm ${group.name()} ${c.name()}`),
  );
  if (matches.length) return `unknown command '${word}'. Did you mean ${orList(matches.map((m) => `\`${m}\``))}?`;
  const close = program.commands.map((c) => c.name()).filter((n) => editDistance(n, word) <= Math.max(1, Math.floor(word.length / 3)));
  return `unknown command '${word}'.${close.length ? ` Did you mean ${orList(close.map((c) => `\`mm ${c}\``))}?` : ""} See \`mm --help\`.`;
}

function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
  }
  return d[a.length][b.length];
}

/** Output flags must be known before parsing, so even a usage error is printed in the right form. */
function scanGlobalFlags(argv: string[]): { json?: boolean; format?: string; color?: boolean; debug?: boolean; wide?: boolean } {
  const out: { json?: boolean; format?: string; color?: boolean; debug?: boolean; wide?: boolean } = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") break;
    if (a === "--json") out.json = true;
    else if (a === "--no-color") out.color = false;
    else if (a === "--debug") out.debug = true;
    else if (a === "--wide") out.wide = true;
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
