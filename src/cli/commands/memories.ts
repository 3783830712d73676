import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { Option, type Command } from "commander";
import { MmError } from "../../errors.js";
import type { BatchLineResult, Memory, MemoryHistory, MemoryListItem, MemorySearchHit, Page } from "../../core/memories.js";
import { collect, confirmedDelete, entityRef, withContext } from "../context.js";
import type { Context } from "../../core/context.js";
import { assertReadable } from "../files.js";
import { defined, jsonFlag, numberFlag, readStdin } from "../flags.js";
import { projectFromArg } from "../../core/project.js";
import type { CliApp } from "../main.js";
import { count, pageLine, when, type TableKit } from "../output.js";
import { canPrompt, promptText } from "../prompt.js";
import { countLines, startProgress } from "../progress.js";
import { humanMessage } from "../messages.js";
import { service, viaRemote } from "../remote.js";

const core = service("memories", () => import("../../core/memories.js"));
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
  project?: string;
  supersedes?: string[];
  /** --no-dedupe and --no-detect: false when given. */
  dedupe?: boolean;
  detect?: boolean;
}

/** `--project <name|path>`: a name, or a folder read as the project it is in (core/project.ts). */
function projectFlag(value: string | undefined): string | undefined {
  return value === undefined ? undefined : projectFromArg(value, process.cwd());
}

/** The list and search fields of `--project` and `--project-only`. */
function projectScope(opts: { project?: string; projectOnly?: boolean }): { project?: string; projectOnly?: boolean } {
  if (opts.projectOnly && opts.project === undefined) {
    throw new MmError("VALIDATION_ERROR", "--project-only needs --project: which project's memories alone?", { details: [{ field: "project-only", message: "needs --project" }] });
  }
  return defined({ project: projectFlag(opts.project), projectOnly: opts.projectOnly });
}

const PROJECT_HELP = "a project's name, or a folder ('.' for here) read as the project it is in";

/** The create fields of the replaced-facts flags: only what the person gave. */
function validityFields(opts: FieldFlags): Record<string, unknown> {
  return defined({ supersedes: opts.supersedes, dedupe: opts.dedupe === false ? false : undefined, autoSupersede: opts.detect === false ? false : undefined });
}

export function registerMemories(program: Command, app: CliApp): void {
  const memories = program.command("memories").aliases(["memory", "mem"]).description("store, search and manage memories");

  memories
    .command("add")
    .description("add a memory (content as an argument, '-' for stdin), or many with --batch")
    .argument("[content]", "the memory text, or '-' to read it from stdin")
    .option("-u, --user <userId>", "user the memory belongs to (default: $MM_USER)")
    .option("-a, --agent <agentId>", "agent the memory belongs to")
    .option("-t, --tag <tag>", "tag (repeatable)", collect)
    .option("-m, --metadata <json>", "metadata, a JSON object")
    .option("-e, --entity <entity>", "link an existing entity, by id or name (repeatable)", collect)
    .option("--project <name|path>", `the project the memory belongs to: ${PROJECT_HELP} (default: none, a global memory)`)
    .option("-x, --extract", "find people, places and organisations in the text; create or reuse their entities and link them")
    .option("--supersedes <id>", "mark this older memory replaced by the new one (repeatable)", collect)
    .option("--no-dedupe", "store the memory even when a current memory of the same user already says the same")
    .option("--no-detect", "don't look for older memories this one replaces")
    .option("--batch <file>", "add one memory per JSON line of <file> ('-' for stdin); flags fill fields a line leaves out")
    .option("--batch-size <n>", "lines embedded and committed together", "64")
    .option("--skip <n>", "with --batch: skip the first n lines (to resume after an interrupt; mm prints the number)")
    .addHelpText("after", "\nExamples:\n  mm memories add \"Alice prefers tea\" --user alice --tag prefs\n  echo 'note' | mm memories add - --user alice\n  mm memories add --batch notes.jsonl --user alice")
    .action((content: string | undefined, opts: FieldFlags & { batch?: string; batchSize: string; extract?: boolean }, cmd: Command) => {
      if (opts.batch === undefined) return addOne(app, cmd, content, opts);
      if (content !== undefined) {
        throw new MmError("VALIDATION_ERROR", "give the content as an argument or lines with --batch, not both.", {
          details: [{ field: "command", message: "give the content as an argument or lines with --batch, not both" }],
        });
      }
      return addBatch(app, cmd, opts as FieldFlags & { batch: string; batchSize: string });
    });

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
    .option("--meta <key=value>", "only memories whose metadata has this key and value (repeatable; all must match)", collect)
    .option("-e, --entity <entity>", "only memories linked to this entity (id or name)")
    .option("--all", "include memories replaced by newer ones (marked)")
    .option("--as-of <time>", "answer as of this ISO 8601 date or time: what was current then, nothing created later")
    .option("--explain", "show how each score came about: its signals and what each added")
    .option("--project <name|path>", `that project's memories and the global ones (no project): ${PROJECT_HELP}`)
    .option("--project-only", "with --project: that project's memories alone")
    .action(async (query: string, opts: FieldFlags & { limit?: string; threshold?: string; mode?: string; meta?: string[]; entity?: string; all?: boolean; asOf?: string; explain?: boolean; projectOnly?: boolean }, cmd: Command) => {
      const given = defined({
        query,
        userId: opts.user,
        agentId: opts.agent,
        tags: opts.tag,
        ...projectScope(opts),
        limit: numberFlag(opts.limit),
        threshold: numberFlag(opts.threshold),
        mode: opts.mode,
        metadata: metaFlags(opts.meta),
        includeSuperseded: opts.all,
        asOf: opts.asOf,
        explain: opts.explain,
      });
      // Through a server, which validates, the search is sent as given: the check only decides what
      // to warm locally, and the no-hit message reads the flags as they were given.
      const valid = viaRemote(cmd, app.io.env) ? undefined : passes((await schemas()).parseSearchMemories, given);
      await withContext(
        app,
        cmd,
        async (ctx) => {
          const raw = defined({ ...given, entityId: await entityRef(ctx, opts.entity) });
          const api = await core();
          const body = await api.searchMemories(ctx, raw);
          await app.output.result(body, async (t) => {
            if (body.results.length) return opts.explain ? `${renderHits(t, body.results)}\n${renderExplanations(t, body.results)}` : renderHits(t, body.results);
            // Nothing passed: say what the nearest miss scored, so the person knows what to lower.
            const threshold = valid?.threshold ?? given.threshold ?? 0.5;
            const [closest] = (await api.searchMemories(ctx, { ...raw, threshold: 0, limit: 1 })).results;
            if (!closest) return "No memories to search.";
            const lower = Math.floor(closest.score * 100) / 100;
            const byMeaning = (valid?.mode ?? given.mode ?? "hybrid") === "hybrid" ? "--mode semantic --threshold 0.3 searches by meaning alone" : "";
            const how = lower >= 0.01 ? [`--threshold ${lower} shows it`, byMeaning].filter(Boolean).join("; ") : byMeaning || "--threshold 0 ranks everything";
            return `No memory scored ${threshold} or more. The closest scored ${closest.score.toFixed(3)}: "${short(closest.content)}"\n${t.dim(`(${how})`)}`;
          });
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
    .option("--meta <key=value>", "only memories whose metadata has this key and value (repeatable; all must match)", collect)
    .option("-e, --entity <entity>", "only memories linked to this entity (id or name)")
    .option("--project <name|path>", `that project's memories and the global ones (no project): ${PROJECT_HELP}`)
    .option("--project-only", "with --project: that project's memories alone")
    .action((opts: FieldFlags & { page?: string; limit?: string; meta?: string[]; entity?: string; projectOnly?: boolean }, cmd: Command) => {
      const scope = projectScope(opts);
      return withContext(app, cmd, async (ctx) => {
        const body = await (await core()).listMemories(
          ctx,
          defined({
            userId: opts.user,
            agentId: opts.agent,
            tags: opts.tag,
            ...scope,
            metadata: metaFlags(opts.meta),
            entityId: await entityRef(ctx, opts.entity),
            page: opts.page,
            limit: opts.limit,
          }),
        );
        await app.output.result(body, (t) => renderList(t, body));
      });
    });

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
    .addOption(new Option("--clear-agent", "remove the agent").conflicts("agent"))
    .option("-t, --tag <tag>", "replace the tags (repeatable)", collect)
    .addOption(new Option("--clear-tags", "remove all tags").conflicts("tag"))
    .option("-m, --metadata <json>", "replace the metadata with this JSON object")
    .addOption(new Option("--clear-metadata", "remove the metadata").conflicts("metadata"))
    .option("-e, --entity <entity>", "replace the linked entities, by id or name (repeatable)", collect)
    .addOption(new Option("--clear-entities", "remove every entity link").conflicts("entity"))
    .option("--project <name|path>", `move it to this project: ${PROJECT_HELP}`)
    .addOption(new Option("--clear-project", "make it global (no project)").conflicts("project"))
    .option("--supersedes <id>", "mark this older memory replaced by this one (repeatable)", collect)
    .action(
      (
        id: string,
        content: string | undefined,
        opts: FieldFlags & { clearAgent?: boolean; clearTags?: boolean; clearMetadata?: boolean; clearEntities?: boolean; clearProject?: boolean },
        cmd: Command,
      ) =>
        withContext(app, cmd, async (ctx) => {
          const patch = defined({
            content: content === "-" ? await readStdin(app.io.stdin) : content,
            agentId: opts.clearAgent ? null : opts.agent,
            tags: opts.clearTags ? null : opts.tag,
            metadata: opts.clearMetadata ? null : jsonFlag("metadata", opts.metadata),
            entityIds: opts.clearEntities ? null : await entityRefs(ctx, opts.entity),
            project: opts.clearProject ? null : projectFlag(opts.project),
            supersedes: opts.supersedes,
          });
          const body = await (await core()).updateMemory(ctx, id, patch);
          await app.output.result(body, (t) => renderMemory(t, body));
        }),
    );

  memories
    .command("supersede")
    .description("mark a memory replaced by a newer one of the same user (search then prefers the newer)")
    .argument("<old>", "the memory that is no longer true (mem_…)")
    .argument("<new>", "the memory that replaces it (mem_…)")
    .action((oldId: string, newId: string, _opts: unknown, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).supersedeMemory(ctx, oldId, { by: newId });
        await app.output.result(body, (t) => renderMemory(t, body));
      }),
    );

  memories
    .command("restore")
    .description("undo a replacement: the memory is current again")
    .argument("<id>", "memory id (mem_…)")
    .action((id: string, _opts: unknown, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).restoreMemory(ctx, id);
        await app.output.result(body, (t) => renderMemory(t, body));
      }),
    );

  memories
    .command("history")
    .description("every version of a memory, and what it replaced or was replaced by")
    .argument("<id>", "memory id (mem_…)")
    .action((id: string, _opts: unknown, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).memoryHistory(ctx, id);
        await app.output.result(body, (t) => renderHistory(t, body));
      }),
    );

  memories
    .command("delete")
    .alias("rm")
    .description("delete a memory permanently")
    .argument("<id>", "memory id (mem_…)")
    .option("-y, --yes", "don't ask for confirmation (required without a terminal, e.g. in scripts)")
    .action((id: string, opts: { yes?: boolean }, cmd: Command) =>
      confirmedDelete(
        app,
        cmd,
        opts.yes,
        async (ctx) => `memory ${id}: "${short((await (await core()).getMemory(ctx, id)).content)}"`,
        async (ctx) => (await core()).deleteMemory(ctx, id),
        (body) => `Deleted ${body.id}`,
      ),
    );
}

async function addOne(app: CliApp, cmd: Command, content: string | undefined, opts: FieldFlags & { extract?: boolean }): Promise<void> {
  const { io } = app;
  if (content === "-") content = await readStdin(io.stdin);
  else if (content === undefined && canPrompt(io)) content = await promptText(io, "Memory:");
  let user = opts.user ?? io.env.MM_USER;
  if (user === undefined && canPrompt(io)) user = await promptText(io, "User id:");
  const raw = defined({ content, userId: user, agentId: opts.agent, tags: opts.tag, metadata: jsonFlag("metadata", opts.metadata), entityIds: opts.entity, project: projectFlag(opts.project), ...validityFields(opts) });
  await withContext(
    app,
    cmd,
    async (ctx) => {
      if (opts.entity) raw.entityIds = await entityRefs(ctx, opts.entity);
      if (!opts.extract) {
        const body = await (await core()).createMemory(ctx, raw);
        reportValidity(app, body, undefined, await replacedTexts(app, ctx, body));
        await app.output.result(body, (t) => renderMemory(t, body));
        return;
      }
      const { memory, extracted } = await (await core()).createMemoryWithExtraction(ctx, raw);
      reportExtraction(app, extracted);
      reportValidity(app, memory, undefined, await replacedTexts(app, ctx, memory));
      await app.output.result(memory, (t) => renderMemory(t, memory));
    },
    // The new memory is embedded: its model loads while the store opens.
    { warmEmbedder: !viaRemote(cmd, app.io.env) && passes((await schemas()).parseCreateMemory, raw) !== undefined, create: true },
  );
}

/** The start of a text, for a question that names it. */
export function short(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return [...flat].length > max ? `${[...flat].slice(0, max - 1).join("")}…` : flat;
}

/** `--entity` values, ids or names, as entity ids. */
async function entityRefs(ctx: Context, refs: string[] | undefined): Promise<string[] | undefined> {
  return refs && Promise.all(refs.map(async (ref) => (await entityRef(ctx, ref))!));
}

/**
 * On a terminal, a line on stderr when a create stored nothing (a duplicate) or replaced older
 * memories, each replaced one with the start of its text where `texts` has it (a single add reads
 * them; a batch names ids only, rather than read once more per line).
 */
function reportValidity(app: CliApp, m: Memory, line?: number, texts?: Map<string, string>): void {
  if (!app.output.isTable) return;
  const where = line ? `line ${line}: ` : "";
  const named = (id: string) => (texts?.has(id) ? `${id} ("${short(texts.get(id)!, 50)}")` : id);
  if (m.deduplicated) app.output.note(`${where}already stored as ${m.id}; nothing added (--no-dedupe stores a copy)`);
  else if (m.supersedes?.length) app.output.note(`${where}replaces ${m.supersedes.map(named).join(", ")} (mm memories restore <id> undoes it)`);
}

/** The texts of the memories `m` replaced, for the person's terminal only; one that can't be read is left out. */
async function replacedTexts(app: CliApp, ctx: Context, m: Memory): Promise<Map<string, string>> {
  if (!app.output.isTable || m.deduplicated || !m.supersedes?.length) return new Map();
  const service = await core();
  const read = await Promise.all(m.supersedes.map((id) => service.getMemory(ctx, id).then((r) => [id, r.content] as const, () => undefined)));
  return new Map(read.filter((r) => r !== undefined));
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

async function addBatch(app: CliApp, cmd: Command, opts: FieldFlags & { batch: string; batchSize: string; skip?: string; extract?: boolean }): Promise<void> {
  const { io, output } = app;
  const batchSize = Number(opts.batchSize);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 1024) {
    throw new MmError("VALIDATION_ERROR", "--batch-size must be an integer from 1 to 1024.", {
      details: [{ field: "batch-size", message: "must be an integer from 1 to 1024" }],
    });
  }
  const skip = opts.skip === undefined ? 0 : Number(opts.skip);
  if (!Number.isInteger(skip) || skip < 0) {
    throw new MmError("VALIDATION_ERROR", "--skip must be a whole number of lines.", { details: [{ field: "skip", message: "must be a whole number of lines" }] });
  }
  const defaults = defined({
    userId: opts.user ?? io.env.MM_USER,
    agentId: opts.agent,
    tags: opts.tag,
    metadata: jsonFlag("metadata", opts.metadata),
    project: projectFlag(opts.project),
    ...validityFields(opts),
  });
  const unreadable = (err: Error) =>
    new MmError("VALIDATION_ERROR", `Cannot read ${opts.batch}: ${err.message}`, { details: [{ field: "batch", message: err.message }] });
  if (opts.batch !== "-") await assertReadable(opts.batch);
  const source = opts.batch === "-" ? io.stdin : createReadStream(opts.batch);
  const openError = new Promise<never>((_, reject) => source.once("error", (err: Error) => reject(unreadable(err))));
  openError.catch(() => undefined); // raced below; a failure before the race starts is not unhandled
  const lines = readLines(source, skip);
  const total = output.isTable && io.stderr.isTTY && opts.batch !== "-" ? Math.max(0, (await countLines(opts.batch)) - skip) : undefined;
  const progress = output.isTable && io.stderr.isTTY ? startProgress(output, io.stderr, total) : undefined;
  let firstError: MmError | undefined;
  // Line numbers are the input's own, --skip included, so a resume offset can be read off them.
  let lastLine = skip;
  const onResult = (r: BatchLineResult) => {
    const line = r.line + skip;
    lastLine = Math.max(lastLine, line);
    if (r.error) firstError ??= r.error;
    if (!output.isTable) {
      output.out(
        JSON.stringify(
          r.memory
            ? { line, memory: r.memory, ...(r.extracted ? { extracted: r.extracted.map((x) => ({ ...x.entity, created: x.created })) } : {}) }
            : { line, error: r.error!.toBody().error },
        ),
      );
    } else if (r.error) {
      const text = `line ${line}: ${humanMessage(r.error, (f) => (f === "line" ? "the line" : f))}`;
      output.note(text);
    } else if (r.memory && !progress) reportValidity(app, r.memory, line);
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
    { charge: false, create: true },
  ).finally(() => {
    release?.();
    progress?.stop();
  });
  const text = `Added ${count(summary.added)} memor${summary.added === 1 ? "y" : "ies"}${summary.failed ? `; ${count(summary.failed)} line${summary.failed === 1 ? "" : "s"} failed` : ""}${summary.stopped ? " (stopped by interrupt)" : ""}.`;
  if (output.isTable) output.out(text);
  else output.note(text);
  if (summary.stopped) {
    // Every line up to lastLine is stored or reported as failed; the rest were never read.
    const resume = `mm memories add --batch ${opts.batch === "-" ? "-" : shellQuote(opts.batch)} --skip ${lastLine}`;
    throw new MmError("INTERRUPTED", `Stopped by interrupt after line ${lastLine}; every line reported as added is stored. To go on without adding any line twice: ${resume} (with the same other flags).`, {
      added: summary.added,
      failed: summary.failed,
      resumeAfterLine: lastLine,
    });
  }
  if (firstError?.code === "QUOTA_EXCEEDED") {
    const { currentUsage, limit, resetAt } = firstError.extra as { currentUsage: number; limit: number; resetAt: string };
    const n = count;
    throw new MmError(
      "QUOTA_EXCEEDED",
      `The monthly quota of ${n(limit)} operations is used up (${n(currentUsage)} of ${n(limit)}): ${n(summary.added)} memor${summary.added === 1 ? "y was" : "ies were"} added, up to the limit, and ${n(summary.failed)} line${summary.failed === 1 ? " was" : "s were"} not stored. The quota resets at ${resetAt}.`,
      { ...firstError.extra, added: summary.added, failed: summary.failed },
    );
  }
  if (firstError) {
    throw new MmError(firstError.code, `${count(summary.failed)} line${summary.failed === 1 ? "" : "s"} failed (the other lines were added); first failure: ${firstError.message}`, {
      added: summary.added,
      failed: summary.failed,
    });
  }
}

/** A path as a shell would need it typed. */
function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Lines of a stream after the first `skip`, read only once iteration starts: a readline interface
 * created earlier would emit lines while the store opens, and a later `for await` would never see them.
 */
async function* readLines(source: NodeJS.ReadableStream, skip: number): AsyncGenerator<string> {
  let n = 0;
  for await (const line of createInterface({ input: source, crlfDelay: Infinity })) if (++n > skip) yield line;
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
    ["project", m.project],
    ["createdAt", m.createdAt],
    ["updatedAt", m.updatedAt],
    ["supersedes", m.supersedes?.join(", ")],
    ["supersededBy", m.supersededBy],
    ["supersededAt", m.supersededAt],
  ]);
}

function renderHistory(t: TableKit, h: MemoryHistory): string {
  const versions = t.table(
    ["version", "content", "tags", "from", "until"],
    h.versions.map((v) => [String(v.version), v.content, (v.tags ?? []).join(", "), when(v.validFrom), v.validTo ? when(v.validTo) : "now"]),
    { flex: 1 },
  );
  const chain = (label: string, links: MemoryHistory["replaced"]) =>
    links.length ? `\n${label}:\n${t.table(["id", "content", "created", "replaced"], links.map((l) => [l.id, l.content, when(l.createdAt), l.supersededAt ? when(l.supersededAt) : ""]), { flex: 1 })}` : "";
  const events = h.events.length ? `\nevents:\n${h.events.map((e) => `  ${e.at}  ${e.type} ${e.type === "superseded" ? "by" : "from"} ${e.memoryId}${e.reason ? ` (${e.reason})` : ""}`).join("\n")}` : "";
  return `${versions}${chain("replaced (it replaced these)", h.replaced)}${chain("replaced by", h.replacedBy)}${events}`;
}

function renderList(t: TableKit, page: Page<MemoryListItem>): string {
  const line = pageLine(t, page.pagination, "memory", "memories", !page.items.length);
  if (!page.items.length) return line;
  const rows = page.items.map((m) => [m.id, m.supersededBy ? `${m.content} ${t.dim(`(replaced by ${m.supersededBy})`)}` : m.content, m.userId, m.agentId ?? "", (m.tags ?? []).join(", "), when(m.createdAt)]);
  if (!page.items.some((m) => m.project)) return `${t.table(["id", "content", "user", "agent", "tags", "created"], rows, { flex: 1, ids: [0], drop: [3, 4] })}\n${line}`;
  // A list that holds project memories says which are whose (global ones: blank).
  const withProject = rows.map((r, i) => [...r.slice(0, 5), page.items[i].project ?? "", r[5]]);
  return `${t.table(["id", "content", "user", "agent", "tags", "project", "created"], withProject, { flex: 1, ids: [0], drop: [3, 4, 5] })}\n${line}`;
}

function renderHits(t: TableKit, hits: MemorySearchHit[]): string {
  return t.table(
    ["score", "content", "user", "tags", "id"],
    hits.map((h) => [h.score.toFixed(3), h.supersededBy ? `${h.content} ${t.dim(`(replaced by ${h.supersededBy})`)}` : h.content, h.userId, (h.tags ?? []).join(", "), h.id]),
    { flex: 1, ids: [4], drop: [3] },
  );
}

/**
 * `--explain`: under the table, each hit's signals and what each added to its score:
 *   1  0.981  cosine 0.71 (+8.16)  keyword 1.00 (+3.45)  bias −6.80  → logit 4.81
 */
function renderExplanations(t: TableKit, hits: MemorySearchHit[]): string {
  const n = (x: number) => x.toFixed(2);
  const signed = (x: number) => (x < 0 ? `−${n(-x)}` : `+${n(x)}`);
  const lines = hits.map((h, i) => {
    const e = h.explanation;
    if (!e) return `${i + 1}  ${h.score.toFixed(3)}`;
    if (e.mode !== "hybrid") return `${i + 1}  ${h.score.toFixed(3)}  ${Object.entries(e.signals).map(([k, v]) => `${k} ${n(v)}`).join("  ")} (${e.mode} mode: the score is this signal${e.mode === "keyword" ? ", calibrated" : ""})`;
    const c = e.contributions;
    const parts = [`cosine ${n(e.signals.cosine)} (${signed(c.cosine)})`, `keyword ${n(e.signals.keyword)} (${signed(c.keyword)})`];
    if (c.speaker) parts.push(`speaker named (${signed(c.speaker)})`);
    if (e.signals.length !== undefined) parts.push(`length ${n(e.signals.length)} (${signed(c.length ?? 0)})`);
    const logit = c.bias + c.cosine + c.keyword + (c.speaker ?? 0) + (c.length ?? 0);
    return `${i + 1}  ${h.score.toFixed(3)}  ${parts.join("  ")}  bias ${signed(c.bias)}${e.signals.turn ? " (a conversation turn)" : ""}  → logit ${logit.toFixed(2)}`;
  });
  return `${t.dim("why: each signal, and what it added to the logit; score = 1/(1+e^-logit)")}\n${lines.join("\n")}`;
}

/** `--meta source=notes --meta year=1843` → the metadata filter `{source: "notes", year: "1843"}`. */
function metaFlags(values: string[] | undefined): Record<string, string> | undefined {
  if (!values) return undefined;
  const out: Record<string, string> = {};
  for (const v of values) {
    const at = v.indexOf("=");
    if (at < 1) throw new MmError("VALIDATION_ERROR", `--meta must be key=value, e.g. --meta source=notes (got "${v}").`, { details: [{ field: "meta", message: `must be key=value, e.g. --meta source=notes (got "${v}")` }] });
    out[v.slice(0, at)] = v.slice(at + 1);
  }
  return out;
}
