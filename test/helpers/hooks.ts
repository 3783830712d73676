import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect } from "vitest";
import { json, runMm, type MmResult } from "./spawn-mm.js";

/**
 * A coding agent's hook as the agent runs it: `mm hook` spawned, the event's JSON on stdin in the
 * shape the agent documents, and the answer read from stdout as the agent reads it. Real model,
 * real store, a HOME of its own.
 */


/** A temp directory for a whole describe block (useTempDirs' go after each test). */
export function sharedDir(): () => Promise<string> {
  const made: string[] = [];
  afterAll(async () => void (await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })))));
  return async () => {
    const d = await mkdtemp(join(tmpdir(), "mm-test-"));
    made.push(d);
    return d;
  };
}

export interface HookEnv {
  dir: string;
  home: string;
  store: string;
  project: string;
  env: Record<string, string>;
}

/** A HOME, a store, a state directory and a project folder (orders-api, a git root with a .mm-project), apart from the machine's. */
export async function newEnv(make: () => Promise<string>): Promise<HookEnv> {
  const dir = await make();
  const home = join(dir, "home");
  const project = join(dir, "work", "api");
  await mkdir(home, { recursive: true });
  await mkdir(join(project, ".git"), { recursive: true });
  await writeFile(join(project, ".mm-project"), "orders-api\n");
  const store = join(dir, "store");
  return { dir, home, store, project, env: { HOME: home, MM_STORE: store, XDG_STATE_HOME: join(dir, "state"), XDG_CONFIG_HOME: join(dir, "config"), XDG_DATA_HOME: join(dir, "data") } };
}

/** Adds memories (JSON objects as `mm memories add --batch` reads them). */
export async function seed(e: HookEnv, lines: Record<string, unknown>[]): Promise<void> {
  const file = join(e.dir, "seed.jsonl");
  await writeFile(file, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  const r = await runMm(["memories", "add", "--batch", file], { env: e.env });
  expect(r.code, r.stderr).toBe(0);
}

/** A new session id each call unless one is given: a memory is injected once per session. */
const newSession = () => `s-${Math.random().toString(36).slice(2)}`;

export function sessionStart(cwd: string | undefined, source = "startup", session = newSession()) {
  return { session_id: session, transcript_path: "/home/me/.claude/projects/x/abc123.jsonl", cwd, permission_mode: "default", hook_event_name: "SessionStart", source };
}

export function promptSubmit(cwd: string | undefined, prompt: string, session = newSession()) {
  return { session_id: session, transcript_path: "/home/me/.claude/projects/x/abc123.jsonl", cwd, permission_mode: "default", hook_event_name: "UserPromptSubmit", prompt };
}

/** `mm hook <agent>` spawned in the project folder, the payload (an object, or raw text or bytes) on stdin. */
export function hook(e: HookEnv, payload: unknown, args: string[] = [], agent = "claude-code"): Promise<MmResult> {
  const input = typeof payload === "string" || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload);
  // Tests assert what is answered, not how fast: a busy machine gets more than the default 2 s.
  return runMm(["hook", agent, "--user", "me", "--timeout", "60", ...args], { env: e.env, input, cwd: e.project });
}

/** The context Claude Code adds: hookSpecificOutput.additionalContext of the one JSON object on stdout. */
export function contextOf(r: MmResult, event: string): string {
  expect(r.code, r.stderr).toBe(0);
  const body = json(r);
  expect(Object.keys(body)).toEqual(["hookSpecificOutput"]);
  expect(body.hookSpecificOutput.hookEventName).toBe(event);
  return body.hookSpecificOutput.additionalContext as string;
}

/** The hook log's text. */
export async function logOf(e: HookEnv): Promise<string> {
  const file = join(e.env.XDG_STATE_HOME, "mm", "hooks.log");
  return existsSync(file) ? readFile(file, "utf8") : "";
}

