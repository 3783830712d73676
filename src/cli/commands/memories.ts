import { constants, createReadStream } from "node:fs";
import { access } from "node:fs/promises";
import { createInterface } from "node:readline";
import { createRequire } from "node:module";
import type { Command } from "commander";
import { MmError } from "../../errors.js";
import type { BatchLineResult, Memory, MemoryListItem, MemorySearchHit, Page } from "../../core/memories.js";
import { collect, withContext } from "../context.js";
import { defined, jsonFlag, numberFlag, readStdin } from "../flags.js";
import type { CliApp } from "../main.js";
import { preview, type TableKit } from "../output.js";
import { canPrompt, promptText } from "../prompt.js";

const core = () => import("../../core/memories.js");
const schemas = () => import("../../schemas/memory.js");

/**
 * `parse(raw)`, or undefined when it throws. Decides whether a command starts loading the model
 * up front; the command still validates (and counts) the request as usual, so a bad one reports
 * its error without waiting for a model it never needed.
 */
function passes<T>(parse: (raw: unknown) => T, raw: unknown): T | undefined {
  try {
    return parse(raw);
  } catch {
    return undefined;
  }
}

interface FieldFlags {
  user?: string;
  agent?: string;
  tag?: string[];
  metadata?: string;
  entity?: string[];
}

export function registerMemories(program: Command, app: CliApp): void {
  const memories = program.command("memories").alias("mem").description("store, search and manage memories");

  memories
    .command("add")
    .description("add a memory (content as an argument, '-' for stdin), or many with --batch")
    .argument("[content]", "the memory text, or '-' to read it from stdin")
    .option("-u, --user <userId>", "user the memory belongs to (default: $MM_USER)")
    .option("-a, --agent <agentId>", "agent the memory belongs to")
    .option("-t, --tag <tag>", "tag (repeatable)", collect)
    .option("-m, --metadata <json>", "metadata, a JSON object")
    .option("-e, --entity <id>", "link an existing entity (repeatable)", collect)
    .option("-x, --extract", "find people, places and organisations in the text; create or reuse their entities and link them")
    .option("--batch <file>", "add one memory per JSON line of <file> ('-' for stdin); flags fill fields a line leaves out")
    .option("--batch-size <n>", "lines embedded and committed together", "64")
    .addHelpText("after", "\nExamples:\n  mm memories add \"Alice prefers tea\" --user alice --tag prefs\n  echo 'note' | mm memories add - --user alice\n  mm memories add --batch notes.jsonl --user alice")
    .action((content: string | undefined, opts: FieldFlags & { batch?: string; batchSize: string; extract?: boolean }, cmd: Command) =>
      opts.batch !== undefined ? addBatch(app, cmd, opts as FieldFlags & { batch: string; batchSize: string }) : addOne(app, cmd, content, opts),
    );

  memories
    .command("search")
    .description("find memories by meaning")
    .argument("<query>", "natural-language query")
    .option("-u, --user <userId>", "only this user's memories")
    .option("-a, --agent <agentId>", "only this agent's memories")
    .option("-t, --tag <tag>", "only memories with this tag (repeatable; all must match)", collect)
    .option("-l, --limit <n>", "maximum results (default 10, at most 100)")
    .option("--threshold <score>", "minimum score, 0 to 1 (default 0.5)")
    .option("--mode <mode>", "hybrid (default: keywords + meaning + conversational context), semantic or keyword")
    .action(async (query: string, opts: FieldFlags & { limit?: string; threshold?: string; mode?: string }, cmd: Command) => {
      const raw = defined({
        query,
        userId: opts.user,
        agentId: opts.agent,
        tags: opts.tag,
        limit: numberFlag(opts.limit),
        threshold: numberFlag(opts.threshold),
        mode: opts.mode,
      });
      const valid = passes((await schemas()).parseSearchMemories, raw);
      await withContext(
        app,
        cmd,
        async (ctx) => {
          const body = await (await core()).searchMemories(ctx, raw);
          await app.output.result(body, (t) => renderHits(t, body.results));
        },
        // A valid search in any mode but keyword embeds the query: its model loads while the store opens.
        { warmEmbedder: valid !== undefined && valid.mode !== "keyword" },
      );
    });

  memories
    .command("list")
    .description("list memories, newest first")
    .option("-u, --user <userId>", "only this user's memories")
    .option("-a, --agent <agentId>", "only this agent's memories")
    .option("-t, --tag <tag>", "only memories with this tag (repeatable; all must match)", collect)
    .option("-p, --page <n>", "page number (default 1)")
    .option("-l, --limit <n>", "page size (default 20, at most 100)")
    .action((opts: FieldFlags & { page?: string; limit?: string }, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).listMemories(
          ctx,
          defined({ userId: opts.user, agentId: opts.agent, tags: opts.tag, page: opts.page, limit: opts.limit }),
        );
        await app.output.result(body, (t) => renderList(t, body));
      }),
    );

  memories
    .command("get")
    .description("show one memory with its metadata")
    .argument("<id>", "memory id (mem_…)")
    .action((id: string, _opts: unknown, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).getMemory(ctx, id);
        await app.output.result(body, (t) => renderMemory(t, body));
      }),
    );

  memories
    .command("update")
    .description("change a memory's content, tags, metadata or agent (content changes are re-embedded)")
    .argument("<id>", "memory id (mem_…)")
    .argument("[content]", "new content, or '-' to read it from stdin")
    .option("-a, --agent <agentId>", "set the agent")
    .option("--clear-agent", "remove the agent")
    .option("-t, --tag <tag>", "replace the tags (repeatable)", collect)
    .option("--clear-tags", "remove all tags")
    .option("-m, --metadata <json>", "replace the metadata with this JSON object")
    .option("--clear-metadata", "remove the metadata")
    .option("-e, --entity <id>", "replace the linked entities (repeatable)", collect)
    .option("--clear-entities", "remove every entity link")
    .action(
      (
        id: string,
        content: string | undefined,
        opts: FieldFlags & { clearAgent?: boolean; clearTags?: boolean; clearMetadata?: boolean; clearEntities?: boolean },
        cmd: Command,
      ) =>
        withContext(app, cmd, async (ctx) => {
          const patch = defined({
            content: content === "-" ? await readStdin(app.io.stdin) : content,
            agentId: opts.clearAgent ? null : opts.agent,
            tags: opts.clearTags ? null : opts.tag,
            metadata: opts.clearMetadata ? null : jsonFlag("metadata", opts.metadata),
            entityIds: opts.clearEntities ? null : opts.entity,
          });
          const body = await (await core()).updateMemory(ctx, id, patch);
          await app.output.result(body, (t) => renderMemory(t, body));
        }),
    );

  memories
    .command("delete")
    .alias("rm")
    .description("delete a memory permanently")
    .argument("<id>", "memory id (mem_…)")
    .action((id: string, _opts: unknown, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).deleteMemory(ctx, id);
        await app.output.result(body, () => `Deleted ${body.id}`);
      }),
    );
}

async function addOne(app: CliApp, cmd: Command, content: string | undefined, opts: FieldFlags & { extract?: boolean }): Promise<void> {
  const { io } = app;
  if (content === "-") content = await readStdin(io.stdin);
  else if (content === undefined && canPrompt(io)) content = await promptText(io, "Memory:");
  let user = opts.user ?? io.env.MM_USER;
  if (user === undefined && canPrompt(io)) user = await promptText(io, "User id:");
  const raw = defined({ content, userId: user, agentId: opts.agent, tags: opts.tag, metadata: jsonFlag("metadata", opts.metadata), entityIds: opts.entity });
  await withContext(
    app,
    cmd,
    async (ctx) => {
      if (!opts.extract) {
        const body = await (await core()).createMemory(ctx, raw);
        await app.output.result(body, (t) => renderMemory(t, body));
        return;
      }
      const { memory, extracted } = await (await core()).createMemoryWithExtraction(ctx, raw);
      reportExtraction(app, extracted);
      await app.output.result(memory, (t) => renderMemory(t, memory));
    },
    // The new memory is embedded: its model loads while the store opens.
    { warmEmbedder: passes((await schemas()).parseCreateMemory, raw) !== undefined },
  );
}

/** What extraction did goes to stderr, so stdout stays exactly the API's memory body. */
function reportExtraction(app: CliApp, extracted: { entity: { id: string; name: string; type: string }; created: boolean }[], line?: number): void {
  if (!app.output.isTable) {
    app.output.note(JSON.stringify({ ...(line ? { line } : {}), extracted: extracted.map((x) => ({ ...x.entity, created: x.created })) }));
    return;
  }
  const where = line ? `line ${line}: ` : "";
  if (!extracted.length) {
    app.output.note(`${where}extracted no people, places or organisations`);
    return;
  }
  app.output.note(`${where}extracted ${extracted.map((x) => `${x.entity.type} "${x.entity.name}" (${x.created ? "new" : "existing"} ${x.entity.id})`).join(", ")}`);
}

async function addBatch(app: CliApp, cmd: Command, opts: FieldFlags & { batch: string; batchSize: string; extract?: boolean }): Promise<void> {
  const { io, output } = app;
  const batchSize = Number(opts.batchSize);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 1024) {
    throw new MmError("VALIDATION_ERROR", "--batch-size must be an integer from 1 to 1024.", {
      details: [{ field: "batch-size", message: "must be an integer from 1 to 1024" }],
    });
  }
  const defaults = defined({
    userId: opts.user ?? io.env.MM_USER,
    agentId: opts.agent,
    tags: opts.tag,
    metadata: jsonFlag("metadata", opts.metadata),
  });
  const unreadable = (err: Error) =>
    new MmError("VALIDATION_ERROR", `Cannot read ${opts.batch}: ${err.message}`, { details: [{ field: "batch", message: err.message }] });
  if (opts.batch !== "-") await access(opts.batch, constants.R_OK).catch((err: Error) => Promise.reject(unreadable(err)));
  const source = opts.batch === "-" ? io.stdin : createReadStream(opts.batch);
  const openError = new Promise<never>((_, reject) => source.once("error", (err: Error) => reject(unreadable(err))));
  openError.catch(() => undefined); // raced below; a failure before the race starts is not unhandled
  const lines = readLines(source);
  const progress = output.isTable && io.stderr.isTTY ? await startProgress(io.stderr) : undefined;
  let firstError: MmError | undefined;
  const onResult = (r: BatchLineResult) => {
    if (r.error) firstError ??= r.error;
    if (!output.isTable) {
      output.out(
        JSON.stringify(
          r.memory
            ? { line: r.line, memory: r.memory, ...(r.extracted ? { extracted: r.extracted.map((x) => ({ ...x.entity, created: x.created })) } : {}) }
            : { line: r.line, error: r.error!.toBody().error },
        ),
      );
    } else if (r.error) {
      progress?.log(`line ${r.line}: ${r.error.code}: ${r.error.message}`);
      if (!progress) output.note(`line ${r.line}: ${r.error.code}: ${r.error.message}`);
    }
    progress?.tick();
  };
  const stop = new AbortController();
  const release = io.onInterrupt?.(() => {
    output.note("Interrupted: committing the lines already read, then stopping (Ctrl-C again to quit at once).");
    stop.abort();
  });
  const summary = await withContext(
    app,
    cmd,
    async (ctx) =>
      Promise.race([
        openError,
        (await core()).addMemoriesFromLines(ctx, lines, {
          defaults,
          batchSize,
          onResult,
          signal: stop.signal,
          extract: opts.extract,
        }),
      ]),
    { charge: false },
  ).finally(() => {
    release?.();
    progress?.stop();
  });
  const text = `Added ${summary.added} memor${summary.added === 1 ? "y" : "ies"}${summary.failed ? `; ${summary.failed} line${summary.failed === 1 ? "" : "s"} failed` : ""}${summary.stopped ? " (stopped by interrupt)" : ""}.`;
  if (output.isTable) output.out(text);
  else output.note(text);
  if (summary.stopped) {
    throw new MmError("INTERRUPTED", `Stopped by interrupt after ${summary.added + summary.failed} lines; every line reported as added is stored.`, {
      added: summary.added,
      failed: summary.failed,
    });
  }
  if (firstError) {
    throw new MmError(firstError.code, `${summary.failed} line${summary.failed === 1 ? "" : "s"} failed (the other lines were added); first failure: ${firstError.message}`, {
      added: summary.added,
      failed: summary.failed,
    });
  }
}

/**
 * Lines of a stream, read only once iteration starts: a readline interface created earlier would
 * emit lines while the store opens, and a later `for await` would never see them.
 */
async function* readLines(source: NodeJS.ReadableStream): AsyncGenerator<string> {
  yield* createInterface({ input: source, crlfDelay: Infinity });
}

async function startProgress(stream: NodeJS.WritableStream): Promise<{ tick(): void; log(s: string): void; stop(): void }> {
  // CommonJS, so `require`: an `import()` here would keep the CLI's main chunk out of the code cache.
  const cliProgress = createRequire(import.meta.url)("cli-progress") as typeof import("cli-progress");
  const bar = new cliProgress.SingleBar(
    { stream, format: "adding {value} lines | {rate}/s | {duration_formatted}", fps: 5, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  let count = 0;
  bar.start(0, 0, { rate: "0" });
  return {
    tick() {
      count++;
      bar.update(count, { rate: (count / Math.max(0.001, (Date.now() - started) / 1000)).toFixed(1) });
    },
    log(s: string) {
      stream.write(`\r\u001b[K${s}\n`);
    },
    stop() {
      bar.stop();
    },
  };
}

function renderMemory(t: TableKit, m: Memory): string {
  return t.record([
    ["id", m.id],
    ["content", m.content],
    ["userId", m.userId],
    ["agentId", m.agentId],
    ["tags", m.tags?.join(", ")],
    ["metadata", m.metadata],
    ["entityIds", m.entityIds?.join(", ")],
    ["createdAt", m.createdAt],
    ["updatedAt", m.updatedAt],
  ]);
}

function renderList(t: TableKit, page: Page<MemoryListItem>): string {
  const { pagination: p } = page;
  const footer = t.dim(`page ${p.page} of ${Math.max(p.totalPages, 1)} · ${p.total} memor${p.total === 1 ? "y" : "ies"}`);
  if (!page.items.length) return `No memories.\n${footer}`;
  const rows = page.items.map((m) => [m.id, preview(m.content, 50), m.userId, m.agentId ?? "", (m.tags ?? []).join(", "), m.createdAt]);
  return `${t.table(["id", "content", "user", "agent", "tags", "created"], rows)}\n${footer}`;
}

function renderHits(t: TableKit, hits: MemorySearchHit[]): string {
  if (!hits.length) return "No memories above the threshold.";
  return t.table(
    ["score", "content", "user", "tags", "id"],
    hits.map((h) => [h.score.toFixed(3), preview(h.content, 60), h.userId, (h.tags ?? []).join(", "), h.id]),
  );
}
