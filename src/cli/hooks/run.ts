import { createHash } from "node:crypto";
import { appendFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import type { Env } from "../../embedder/index.js";
import type { CliApp } from "../main.js";
import type { CommandContext } from "../context.js";
import { readLogin, remoteContext, service, type RemoteContext } from "../remote.js";
import { agentNamed, eventOf, hookAnswer, startsAfresh, unanswerable, type HookEvent } from "./agents.js";
import { projectOf } from "./scope.js";

export interface HookOptions {
  user: string;
  /** Tokens the block may take (characters / 4). */
  budget: number;
  /** Seconds before the hook gives up and prints nothing. */
  timeout: number;
}

/** The most of stdin a hook reads: an event is a few kilobytes; a prompt is at most 10,000 characters. */
const MAX_INPUT_BYTES = 1_000_000;

/** mm's state directory: `$XDG_STATE_HOME/mm`, else `~/.local/state/mm`. */
function stateDir(env: Env): string {
  return join(env.XDG_STATE_HOME?.trim() ? env.XDG_STATE_HOME : join(env.HOME || homedir(), ".local", "state"), "mm");
}

/** Where hooks write why they answered nothing: `hooks.log` in mm's state directory. */
export function hookLogFile(env: Env): string {
  return join(stateDir(env), "hooks.log");
}

/** How long a session's list of injected memories is kept after its last use. */
const SESSION_KEPT_MS = 7 * 24 * 3600_000;

/**
 * The memories already injected in an agent's session, so that a memory is shown once per
 * session, not on every prompt it bears on: the model still has it in its context. A session
 * that starts afresh (startup, clear, compact: the context is gone) starts an empty list; a
 * resumed one keeps it. Kept in `hook-sessions/` of the state directory, with the ones shown for
 * prompts apart (`recalled`: what frequentlyRecalled counts); a list that can't be read or written
 * only means a memory may be shown again.
 */
function sessionList(env: Env, event: HookEvent): { seen: Set<string>; add(ids: string[], recalled: string[]): void } {
  if (!event.session) return { seen: new Set(), add: () => undefined };
  const dir = sessionsDir(env);
  const file = join(dir, `${createHash("sha256").update(event.session).digest("hex").slice(0, 32)}.json`);
  const fresh = startsAfresh(event);
  let kept: SessionFile = { ids: [], recalled: [] };
  try {
    kept = readSession(file);
  } catch {
    // No list yet.
  }
  const seen = new Set(fresh ? [] : kept.ids);
  return {
    seen,
    add(ids, recalled) {
      if (!ids.length && !fresh && recalled.every((id) => kept.recalled.includes(id))) return;
      try {
        mkdirSync(dir, { recursive: true });
        // A session that starts afresh keeps what its prompts were shown before: that is how often a memory was recalled.
        writeFileSync(file, JSON.stringify({ ids: [...seen, ...ids], recalled: [...new Set([...kept.recalled, ...recalled])] }));
        if (fresh) for (const f of readdirSync(dir)) if (Date.now() - statSync(join(dir, f)).mtimeMs > SESSION_KEPT_MS) rmSync(join(dir, f), { force: true });
      } catch {
        // See above: at worst a memory is shown again.
      }
    },
  };
}

/** A session's file: the ids shown in it, and of those the ones shown for its prompts. */
interface SessionFile {
  ids: string[];
  recalled: string[];
}

function sessionsDir(env: Env): string {
  return join(stateDir(env), "hook-sessions");
}

function readSession(file: string): SessionFile {
  const parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<SessionFile>;
  const list = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
  return { ids: list(parsed.ids), recalled: list(parsed.recalled) };
}

/** The most session files read to count recalls: the week SESSION_KEPT_MS keeps is usually far fewer. */
const MAX_SESSION_FILES = 2_000;

/** What the prompts of the kept sessions were shown, per session (core/recall.ts frequentlyRecalled). */
function recalledPerSession(env: Env): string[][] {
  try {
    const dir = sessionsDir(env);
    return readdirSync(dir)
      .slice(0, MAX_SESSION_FILES)
      .flatMap((f) => {
        try {
          return [readSession(join(dir, f)).recalled];
        } catch {
          return [];
        }
      });
  } catch {
    return [];
  }
}

/** One line in the hook log; the log is rotated at 1 MB (one old copy). A log that can't be written is let go. */
function logReason(env: Env, agentId: string, event: string, reason: string): void {
  try {
    const file = hookLogFile(env);
    mkdirSync(join(file, ".."), { recursive: true });
    if ((statSync(file, { throwIfNoEntry: false })?.size ?? 0) > 1_000_000) renameSync(file, `${file}.1`);
    appendFileSync(file, `${new Date().toISOString()} ${agentId.slice(0, 40)} ${event} ${reason.replace(/\s+/g, " ").slice(0, 500)}\n`);
  } catch {
    // The hook must not fail the agent because its log can't be written.
  }
}

/** A reason to answer nothing, logged; not an error of mm's. */
class Skip extends Error {}

/**
 * `mm hook <agent>`: reads one event on stdin and prints what the agent adds to the model's context,
 * or nothing. It never fails the agent: whatever goes wrong (bad input, no store, a slow disk, the
 * time limit) ends in exit 0, no output, and a line in the hook log saying why.
 */
export async function runHook(app: CliApp, cmd: Command, agentId: string, options: HookOptions): Promise<void> {
  const agent = agentNamed(agentId);
  let eventName = "-";
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), options.timeout * 1000)));
  const work = (async () => {
    const payload = parseEvent(await readInput(app.io.stdin));
    if (!agent) throw new Skip(`unknown agent ${JSON.stringify(agentId.slice(0, 40))}`);
    const event = eventOf(agent, payload);
    eventName = typeof payload.hook_event_name === "string" ? payload.hook_event_name.slice(0, 40) : "-";
    if (!event) throw new Skip(`not an event mm answers (hook_event_name ${JSON.stringify(payload.hook_event_name ?? null)})`);
    const why = unanswerable(event, payload.cwd);
    if (why) throw new Skip(why);
    return answer(app, cmd, event, payload.cwd as string, options);
  })();
  // Past the time limit nobody awaits the work: its failure must not end the process with an error.
  work.catch(() => undefined);
  try {
    const result = await Promise.race([work, limit]);
    if (result === "timeout") return logReason(app.io.env, agentId, eventName, `no answer within --timeout ${options.timeout} s`);
    // Only what is printed counts as shown in the session.
    result.session.add(result.block?.ids ?? [], [...result.recalled]);
    if (result.block) app.io.stdout.write(hookAnswer(result.event, result.block.text) + "\n");
  } catch (err) {
    logReason(app.io.env, agentId, eventName, err instanceof Skip ? err.message : `failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    clearTimeout(timer);
  }
}

async function readInput(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += b.length;
    if (size > MAX_INPUT_BYTES) throw new Skip(`input over ${MAX_INPUT_BYTES} bytes`);
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function parseEvent(text: string): Record<string, unknown> {
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    throw new Skip(`input is not JSON (${text.length} characters)`);
  }
  if (!payload || typeof payload !== "object" || Array.isArray(payload)) throw new Skip("input is not a JSON object");
  return payload as Record<string, unknown>;
}

const memories = service("memories", () => import("../../core/memories.js"));

type HookContext = CommandContext | RemoteContext;

interface Answer {
  event: HookEvent;
  /** The context for the event, or undefined when there is nothing to say. */
  block: { text: string; ids: string[] } | undefined;
  session: ReturnType<typeof sessionList>;
  /** The memories a prompt's search found relevant, shown now or earlier in the session. */
  recalled: Set<string>;
}

async function answer(app: CliApp, cmd: Command, event: HookEvent, cwd: string, options: HookOptions): Promise<Answer> {
  const { frequentlyRecalled, recallFor } = await import("../../core/recall.js");
  const session = sessionList(app.io.env, event);
  const ctx = await openHookContext(app, cmd);
  try {
    const frequent = event.kind === "session" ? frequentlyRecalled(recalledPerSession(app.io.env)) : undefined;
    const recalled = new Set<string>();
    const block = await recallFor(await memories(), ctx, event, { user: options.user, project: projectOf(cwd), budget: options.budget, frequent, recalled }, session.seen);
    return { event, block, session, recalled };
  } finally {
    if ("close" in ctx) await ctx.close();
  }
}

/**
 * The running `mm serve` on the store, when there is one and a key for it (MM_API_KEY, or the one
 * `mm login` saved for its address): the server has the model loaded, a fresh process would load
 * it again. Else the local store, which must exist already: a hook never creates one.
 */
async function openHookContext(app: CliApp, cmd: Command): Promise<HookContext> {
  const env = app.io.env;
  const [{ locateStore, storeStatus }, { runningServerOrigin }] = await Promise.all([import("../../core/store-location.js"), import("../../core/console-access.js")]);
  const location = locateStore((cmd.optsWithGlobals() as { store?: string }).store, env);
  if ((await storeStatus(location)) === "missing") throw new Skip(`no store at ${location.dir}`);
  const origin = await runningServerOrigin(location.dir, env);
  if (origin) {
    const saved = await readLogin(env);
    const key = env.MM_API_KEY || (saved && saved.url.replace(/\/+$/, "") === origin ? saved.key : undefined);
    if (key) return remoteContext({ url: origin, key });
  }
  const { openCommandContext } = await import("../context.js");
  return openCommandContext(app, cmd);
}
