import { open } from "node:fs/promises";
import { dirname } from "node:path";
import type { Writable } from "node:stream";
import type { Command } from "commander";
import { MmError } from "../../errors.js";
import { withContext, type CommandContext } from "../context.js";
import type { CliApp } from "../main.js";
import { counted } from "../output.js";
import { isRemote, localOnly } from "../remote.js";

const transfer = () => import("../../core/transfer.js");

/** `mm export`: the store, an account or a user as JSON Lines (docs/import-export.md). */
export function registerExport(program: Command, app: CliApp): void {
  program
    .command("export")
    .description("write memories, entities, relations and links as JSON Lines (a header line first), or as Markdown files, for mm import")
    .argument("[path]", "--format markdown: the folder to write into; --to agents-md: the file (AGENTS.md, CLAUDE.md, .cursor/rules/*.mdc)")
    .option("--to <format>", "agents-md: the user's memories of the file's project, into a marked block of the file <path>")
    .option("-u, --user <userId>", "only this user's memories, and the entities they link to")
    .option("--all-accounts", "every account of the store, not just --account's")
    .option("--vectors", "include each memory's vector, so an import into a store with the same model needn't embed")
    .option("-o, --output <file>", "write to this file instead of stdout")
    .addHelpText(
      "after",
      "\nExamples:\n  mm export > backup.jsonl\n  mm export --user alice --vectors -o alice.jsonl\n  mm export --all-accounts -o store.jsonl\n  mm export --format markdown notes/\n  mm export --to agents-md AGENTS.md --user me",
    )
    .action((path: string | undefined, opts: ExportFlags, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        if (app.output.format === "markdown" || opts.to !== undefined || path !== undefined) return exportToFiles(app, ctx, path, opts);
        if (isRemote(ctx) && opts.allAccounts) throw localOnly("`mm export --all-accounts`", "an API key acts for one account");
        if (isRemote(ctx) && opts.vectors) throw localOnly("`mm export --vectors`", "the API gives no vectors");
        const out: Writable = opts.output ? await outputFile(opts.output) : app.io.stdout;
        const sink = bufferedLines(out);
        let counts: Awaited<ReturnType<Awaited<ReturnType<typeof transfer>>["exportStore"]>>;
        try {
          counts = isRemote(ctx)
            ? await (await import("./export-remote.js")).exportViaApi(ctx, { userId: opts.user }, sink.write)
            : await (await transfer()).exportStore(ctx, { userId: opts.user, allAccounts: opts.allAccounts, vectors: opts.vectors }, sink.write);
          await sink.end(Boolean(opts.output));
        } catch (err) {
          // `mm export | head`: the reader has all it wants; stop quietly, as `git log | head` does.
          if ((err as NodeJS.ErrnoException).code === "EPIPE") return;
          throw err;
        }
        app.output.note(
          `Exported ${counted(counts.memories, "memory", "memories")}, ${counted(counts.entities, "entity", "entities")}, ${counted(counts.relations, "relation")}${opts.allAccounts ? ` of ${counted(counts.accounts, "account")}` : ""}${opts.output ? ` to ${opts.output}` : ""}.` +
            // docs/import-export.md, "Through --remote".
            (isRemote(ctx) ? " Through the API: without each memory's earlier versions (history), which it doesn't give." : ""),
        );
      }),
    );
}

interface ExportFlags {
  to?: string;
  user?: string;
  allAccounts?: boolean;
  vectors?: boolean;
  output?: string;
}

/** `--format markdown <dir>` and `--to agents-md <file>`: formats a person reads, on a local store only. */
async function exportToFiles(app: CliApp, ctx: CommandContext, path: string | undefined, opts: ExportFlags): Promise<void> {
  const refuse = (field: string, message: string) => new MmError("VALIDATION_ERROR", `${field} ${message}.`, { details: [{ field, message }] });
  if (opts.to !== undefined && opts.to !== "agents-md") throw refuse("--to", "must be agents-md");
  if (opts.to === undefined && app.output.format !== "markdown") throw refuse("path", "is for --format markdown (a folder) or --to agents-md (a file); JSON Lines go to stdout or --output");
  if (opts.to !== undefined && app.output.format === "markdown") throw refuse("--to", "agents-md writes one file; leave out --format markdown");
  if (path === undefined) throw refuse(opts.to ? "file" : "folder", opts.to ? "is required: the AGENTS.md, CLAUDE.md or .mdc file to write into" : "is required: where to write the Markdown files");
  if (isRemote(ctx)) throw localOnly(opts.to ? "`mm export --to agents-md`" : "`mm export --format markdown`", "it reads the whole store");
  if (opts.allAccounts || opts.vectors || opts.output) throw refuse(opts.allAccounts ? "--all-accounts" : opts.vectors ? "--vectors" : "--output", "applies to JSON Lines only");
  if (opts.to) {
    if (opts.user === undefined) throw refuse("--user", "is required with --to agents-md");
    const { exportAgentsMd } = await import("../../core/agents-md.js");
    const r = await exportAgentsMd(ctx, path, { userId: opts.user });
    app.output.note(`${r.changed ? "Wrote" : "Unchanged:"} ${counted(r.memories, "memory", "memories")} of project ${r.project} in ${path}'s mm block.`);
    return;
  }
  const { exportMarkdown } = await import("../../core/markdown.js");
  const r = await exportMarkdown(ctx, path, { userId: opts.user });
  app.output.note(
    `Exported ${counted(r.memories, "memory", "memories")}, ${counted(r.entities, "entity", "entities")}, ${counted(r.relations, "relation")} to ${path}: ${counted(r.written, "file")} written, ${counted(r.unchanged, "file")} unchanged, ${counted(r.removed, "file")} removed.`,
  );
}

/**
 * The file `--output` names, opened before anything is exported, so a directory or a missing
 * folder is a message about the flag instead of a stream's crash.
 */
async function outputFile(path: string): Promise<Writable> {
  try {
    // The stream owns the handle and closes it once.
    return (await open(path, "w")).createWriteStream();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === "EISDIR"
        ? "it is a directory; name a file in it, e.g. " + `${path.replace(/\/+$/, "")}/export.jsonl`
        : code === "ENOENT"
          ? `there is no directory ${dirname(path)}`
          : code === "ENOTDIR"
            ? "part of that path is a file, not a directory"
            : code === "EACCES" || code === "EPERM"
              ? "permission denied"
              : undefined;
    if (!why) throw err;
    throw new MmError("VALIDATION_ERROR", `--output ${path} can't be written: ${why}.`, { details: [{ field: "output", message: `${path} can't be written: ${why}` }] });
  }
}

/** Lines gathered into ~64 KB writes that wait when the stream is full, so exports of any size stream. */
function bufferedLines(out: Writable): { write(line: string): Promise<void> | void; end(close: boolean): Promise<void> } {
  let buffer = "";
  const flush = () =>
    new Promise<void>((resolve, reject) => {
      const chunk = buffer;
      buffer = "";
      out.once("error", reject);
      if (out.write(chunk)) {
        out.off("error", reject);
        resolve();
      } else
        out.once("drain", () => {
          out.off("error", reject);
          resolve();
        });
    });
  return {
    write(line) {
      buffer += line + "\n";
      if (buffer.length >= 65_536) return flush();
    },
    async end(close) {
      if (buffer) await flush();
      if (close) await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    },
  };
}
