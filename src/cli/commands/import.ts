import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { Command } from "commander";
import { MmError } from "../../errors.js";
import type { ImportResult, ImportSummary } from "../../core/transfer.js";
import { withContext } from "../context.js";
import { assertReadable } from "../files.js";
import { boundedLines, boundedText } from "../lines.js";
import type { CliApp } from "../main.js";
import { countLines, startProgress } from "../progress.js";
import { humanMessage } from "../messages.js";
import { count } from "../output.js";
import { isRemote, localOnly } from "../remote.js";

const FORMATS = ["mm", "mcp-memory", "mem0", "agents-md"] as const;

interface ImportFlags {
  from: string;
  remapIds?: boolean;
  allAccounts?: boolean;
  user?: string;
  agent?: string;
  batchSize: string;
  deleteMissing?: boolean;
  dryRun?: boolean;
}

/**
 * `mm import <file>`: an mm export, the reference MCP memory server's memory.jsonl, or mem0's
 * export. Every record is reported (added, skipped or failed, with its line); a bad line never
 * stops the others, and what exists is skipped, so an import can be run again.
 */
export function registerImport(program: Command, app: CliApp): void {
  program
    .command("import")
    .description("read memories (and entities, relations) from an mm export, an MCP memory server's memory.jsonl, or a mem0 export")
    .argument("<file>", "the file, or '-' for stdin; with --format markdown, the folder")
    .option("--from <format>", "mm (default: mm export), mcp-memory (the reference MCP memory server's memory.jsonl), mem0, or agents-md (AGENTS.md, CLAUDE.md, .cursor/rules/*.mdc)", "mm")
    .option("--delete-missing", "markdown, agents-md: delete the memories whose file (or item) is gone")
    .option("--dry-run", "markdown, agents-md: print what would be created, updated and deleted; change nothing")
    .option("--remap-ids", "give every record a new id (derived from the old one: a re-run still skips what it added)")
    .option("--all-accounts", "mm exports made with --all-accounts: recreate their accounts and import into each")
    .option("-u, --user <userId>", "mcp-memory: the user observations belong to (default $MM_USER, else default); mem0: the user of memories that name none")
    .option("-a, --agent <agentId>", "mcp-memory: the agent of the observations; mem0: the agent of memories that name none")
    .option("--batch-size <n>", "records embedded and committed together", "256")
    .addHelpText(
      "after",
      "\nExamples:\n  mm import backup.jsonl\n  mm import --from mcp-memory ~/memory.jsonl --user me\n  mm import --from mem0 export.json\n  mm import --format markdown notes/ --dry-run\n  mm import --from agents-md AGENTS.md --user me",
    )
    .action(async (file: string, opts: ImportFlags, cmd: Command) => {
      const { io, output } = app;
      const markdown = output.format === "markdown";
      if (markdown || opts.from === "agents-md") return importFiles(app, cmd, file, opts, markdown);
      if (opts.deleteMissing || opts.dryRun) {
        throw new MmError("VALIDATION_ERROR", `${opts.dryRun ? "--dry-run" : "--delete-missing"} applies to --format markdown and --from agents-md.`, { details: [{ field: opts.dryRun ? "dry-run" : "delete-missing", message: "markdown and agents-md only" }] });
      }
      if (!(FORMATS as readonly string[]).includes(opts.from)) {
        throw new MmError("VALIDATION_ERROR", `--from must be ${FORMATS.join(", ")}.`, { details: [{ field: "from", message: `must be ${FORMATS.join(", ")}` }] });
      }
      const batchSize = Number(opts.batchSize);
      if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 4096) {
        throw new MmError("VALIDATION_ERROR", "--batch-size must be an integer from 1 to 4096.", { details: [{ field: "batch-size", message: "must be an integer from 1 to 4096" }] });
      }
      if (file !== "-") {
        await assertReadable(file);
        if ((await stat(file)).isDirectory()) {
          throw new MmError("VALIDATION_ERROR", `${file} is a directory; give the file to import: an export's .jsonl, memory.jsonl, or mem0's export.`, {
            details: [{ field: "file", message: "is a directory" }],
          });
        }
      }
      const input = () => (file === "-" ? io.stdin : createReadStream(file));
      const what = file === "-" ? "stdin" : file;
      const userId = opts.user ?? (io.env.MM_USER || undefined);
      const total = output.isTable && io.stderr.isTTY && file !== "-" ? await countLines(file) : undefined;
      const progress = output.isTable && io.stderr.isTTY ? startProgress(output, io.stderr, total) : undefined;
      let firstError: MmError | undefined;
      const onResult = (r: ImportResult) => {
        if (r.error) firstError ??= r.error;
        if (!output.isTable) {
          const { error, ...rest } = r;
          output.out(JSON.stringify({ ...rest, ...(error ? { error: error.toBody().error } : {}) }));
        } else if (r.error) {
          const text = `line ${r.line}: ${humanMessage(r.error, (f) => (f === "line" ? "the line" : f))}`;
          output.note(text);
        }
        progress?.tick();
      };
      const stop = new AbortController();
      const release = io.onInterrupt?.(() => {
        output.note("Interrupted: committing the records already read, then stopping (Ctrl-C again to quit at once).");
        stop.abort();
      });
      const summary: ImportSummary = await withContext(
        app,
        cmd,
        async (command) => {
          const t = await import("../../core/transfer.js");
          if (isRemote(command)) {
            // docs/import-export.md, "Through --remote".
            if (opts.allAccounts) throw localOnly("`mm import --all-accounts`", "an API key acts for one account");
            if (opts.from !== "mm") throw localOnly(`\`mm import --from ${opts.from}\``, "its records are converted on the store");
            const { importViaApi } = await import("./import-remote.js");
            const { dropped, ...summary } = await importViaApi(command, t.jsonLines(boundedLines(input(), what)), { onResult, signal: stop.signal });
            output.note(`Through the API every record has a new id and the time of the import${dropped ? `; not sent: ${dropped}` : ""}.`);
            return summary;
          }
          // Every record stored counts one write, billed by the commit that stores it.
          const ctx = { ...command, meter: command.meterFor("write") };
          if (opts.from === "mem0") {
            const { mem0Records } = await import("../../core/foreign-formats.js");
            const text = (await boundedText(input(), what)).replace(/\r?\n$/, "");
            return t.importExport(ctx, toAsync(mem0Records(text, { userId, agentId: opts.agent }, ctx.accountId, ctx.clock())), { batchSize, onResult, signal: stop.signal });
          }
          const lines = t.jsonLines(boundedLines(input(), what));
          if (opts.from === "mcp-memory") {
            const { importMcpMemory } = await import("../../core/foreign-formats.js");
            return importMcpMemory(ctx, { userId: userId ?? "default", ...(opts.agent ? { agentId: opts.agent } : {}) }, lines, { onResult });
          }
          // With --all-accounts each record is billed to the account it is written into.
          const meterFor = (accountId: string) => command.meterOf(accountId, "write");
          const onWarning = (line: number, message: string) => output.warn(`line ${line}: ${message}`);
          return t.importExport(ctx, lines, { remapIds: opts.remapIds, allAccounts: opts.allAccounts, batchSize, onResult, onWarning, signal: stop.signal, meterFor });
        },
        { charge: false, create: true },
      ).finally(() => {
        release?.();
        progress?.stop();
      });
      const text = `Imported ${count(summary.added)} record${summary.added === 1 ? "" : "s"}; ${count(summary.skipped)} skipped (already there); ${count(summary.failed)} failed${summary.stopped ? " (stopped by interrupt)" : ""}.`;
      if (output.isTable) output.out(text);
      else output.note(text);
      if (summary.stopped) throw new MmError("INTERRUPTED", "Stopped by interrupt; every record reported as added is stored.", { ...summary });
      if (firstError) {
        throw new MmError(firstError.code, `${summary.failed} record${summary.failed === 1 ? "" : "s"} failed (the others were imported); first failure: ${firstError.message}`, {
          added: summary.added,
          skipped: summary.skipped,
          failed: summary.failed,
        });
      }
    });
}

/**
 * `--format markdown <dir>` and `--from agents-md <file>`: the whole plan is worked out (every file
 * checked) before the first write; each change is one line of the report, billed as its API operation.
 */
async function importFiles(app: CliApp, cmd: Command, path: string, opts: ImportFlags, markdown: boolean): Promise<void> {
  const { io, output } = app;
  const result = await withContext(
    app,
    cmd,
    async (command) => {
      if (isRemote(command)) throw localOnly(markdown ? "`mm import --format markdown`" : "`mm import --from agents-md`", "it compares the files with the whole store");
      const ctx = { ...command, meter: command.meterFor("write") };
      if (markdown) {
        if (opts.from !== "mm") throw new MmError("VALIDATION_ERROR", "--format markdown reads mm's own folder; leave out --from.", { details: [{ field: "from", message: "not with --format markdown" }] });
        const batchSize = Number(opts.batchSize);
        const { importMarkdown } = await import("../../core/markdown.js");
        return importMarkdown(ctx, path, { deleteMissing: opts.deleteMissing, dryRun: opts.dryRun, batchSize: Number.isInteger(batchSize) && batchSize > 0 ? batchSize : undefined });
      }
      const userId = opts.user ?? (io.env.MM_USER || undefined);
      if (userId === undefined) throw new MmError("VALIDATION_ERROR", "--user is required with --from agents-md.", { details: [{ field: "user", message: "required" }] });
      await assertReadable(path);
      const { importAgentsMd } = await import("../../core/agents-md.js");
      return importAgentsMd(ctx, path, { userId, ...(opts.agent ? { agentId: opts.agent } : {}), deleteMissing: opts.deleteMissing, dryRun: opts.dryRun });
    },
    { charge: false, create: !opts.dryRun },
  );
  for (const c of result.changes) {
    // --format markdown names the input, not the output: piped, the report is JSON lines as for any import.
    if (!io.stdout.isTTY || output.format === "json") output.out(JSON.stringify(c));
    else output.out(`${c.action.padEnd(6)} ${c.kind.padEnd(8)} ${c.file ?? c.id ?? ""}${c.fields ? ` (${c.fields.join(", ")})` : ""}`);
  }
  const text = `${result.dryRun ? "Dry run, nothing changed: would create" : "Created"} ${count(result.created)}, ${result.dryRun ? "update" : "updated"} ${count(result.updated)}, ${result.dryRun ? "delete" : "deleted"} ${count(result.deleted)}; ${count(result.unchanged)} unchanged.`;
  output.note(text);
}

async function* toAsync<T>(items: Iterable<T>): AsyncGenerator<T> {
  yield* items;
}
