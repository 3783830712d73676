import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { MmError } from "../../errors.js";
import { replaceFileSync } from "../../storage/atomic-file.js";
import type { Env } from "../../embedder/index.js";
import type { Agent } from "./agents.js";
import { projectRootOf } from "./scope.js";

/**
 * An agent's settings file, changed the way a careful person would: mm's entries merged into what
 * is there, every other key and hook left as it was, a backup kept, and nothing touched when the
 * file isn't JSON mm can read.
 */

export type Scope = "user" | "project";

/** Where the agent's settings are: `~/.claude/settings.json` (HOME respected), or in the project's root. */
export function settingsPath(agent: Agent, scope: Scope, env: Env, cwd: string): string {
  const base = scope === "user" ? env.HOME || homedir() : projectRootOf(cwd);
  return join(base, agent.dir, "settings.json");
}

/** The backup `install` keeps of the settings as they were before mm's entries: `settings.json.mm-backup` beside them. */
export function backupPath(path: string): string {
  return `${path}.mm-backup`;
}

type Json = Record<string, unknown>;
interface Entry {
  type?: unknown;
  command?: unknown;
  url?: unknown;
}
interface Group {
  matcher?: string;
  hooks?: Entry[];
}

/** Whether an entry's command is mm's hook for this agent, however mm was run when it was written. */
export function isMmCommand(command: unknown, agent: Agent): boolean {
  return typeof command === "string" && new RegExp(`(?:^|[\\s'"/])mm(?:\\.js)?['"]?\\s(?:.*\\s)?hook ${agent.id}(?:\\s|$)`).test(command);
}

/** Whether an entry is mm's: its command runs `mm … hook <agent>`, or it calls a `mm serve`'s `/hooks/<agent>` (an http hook). */
function isMm(entry: Entry | undefined, agent: Agent): boolean {
  if (entry?.type === "http") return typeof entry.url === "string" && new RegExp(`/hooks/${agent.id}(?:[?#]|$)`).test(entry.url);
  return isMmCommand(entry?.command, agent);
}

interface Read {
  path: string;
  text?: string;
  data: Json;
}

function refuse(path: string, why: string): MmError {
  const message = `${path} ${why}; mm changed nothing. Fix the file (or move it away) and run the command again.`;
  return new MmError("VALIDATION_ERROR", message, { details: [{ field: "settings", message }] });
}

function readSettings(path: string, agent: Agent): Read {
  if (!existsSync(path)) return { path, data: {} };
  const text = readFileSync(path, "utf8");
  let data: unknown;
  try {
    data = text.trim() === "" ? {} : JSON.parse(text);
  } catch (err) {
    throw refuse(path, `is not valid JSON (${(err as Error).message})`);
  }
  if (!data || typeof data !== "object" || Array.isArray(data)) throw refuse(path, "does not hold a JSON object");
  const hooks = (data as Json).hooks;
  if (hooks !== undefined && (!hooks || typeof hooks !== "object" || Array.isArray(hooks))) throw refuse(path, `has a "hooks" that is not an object`);
  for (const event of Object.values(agent.events)) {
    const groups = (hooks as Json | undefined)?.[event];
    if (groups !== undefined && !Array.isArray(groups)) throw refuse(path, `has a "hooks.${event}" that is not a list`);
  }
  return { path, text, data: data as Json };
}

/** The settings without mm's entries for this agent; a group, list or `hooks` emptied by that goes too. */
function withoutMm(data: Json, agent: Agent): Json {
  const out = structuredClone(data);
  const hooks = out.hooks as Json | undefined;
  if (!hooks) return out;
  for (const event of Object.values(agent.events)) {
    const groups = hooks[event] as Group[] | undefined;
    if (!groups) continue;
    const kept = groups.flatMap((g) => {
      if (!g || !Array.isArray(g.hooks) || !g.hooks.some((h) => isMm(h, agent))) return [g];
      const rest = g.hooks.filter((h) => !isMm(h, agent));
      return rest.length ? [{ ...g, hooks: rest }] : [];
    });
    if (kept.length === groups.length && kept.every((g, i) => g === groups[i])) continue;
    if (kept.length) hooks[event] = kept;
    else delete hooks[event];
  }
  if (Object.keys(hooks).length === 0) delete out.hooks;
  return out;
}

/** mm's commands (or, for http hooks, URLs) in the settings, by event. */
function mmEntries(data: Json, agent: Agent): Record<string, string> {
  const found: Record<string, string> = {};
  for (const event of Object.values(agent.events)) {
    for (const g of ((data.hooks as Json | undefined)?.[event] as Group[] | undefined) ?? []) {
      const h = (Array.isArray(g?.hooks) ? g.hooks : []).find((x) => isMm(x, agent));
      if (h) found[event] = String(h.type === "http" ? h.url : h.command);
    }
  }
  return found;
}

/** JSON as the file had it: its indentation (two spaces when new), and a final newline. */
function serialise(data: Json, before?: string): string {
  const indent = before ? (/^\{\s*?\n([ \t]+)"/.exec(before)?.[1] ?? "  ") : "  ";
  return JSON.stringify(data, null, indent) + "\n";
}

/** Replaces the file whole, with the mode it had (replaceFileSync), making its folder if need be. */
function writeSettings(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  replaceFileSync(path, text);
}

export interface InstallResult {
  agent: string;
  scope: Scope;
  settings: string;
  /** The copy of the settings before mm's entries, or null when there was no file. */
  backup: string | null;
  events: string[];
  command: string;
  changed: boolean;
}

/**
 * Adds mm's hook for each of the agent's events, after any entry already there. Idempotent: mm's
 * old entries (any command of `mm … hook <agent>`, any http hook of `/hooks/<agent>`) are replaced, never added to. The backup is the
 * settings as they were before mm's first entry, and stays that while mm's entries are there.
 */
export function installHooks(agent: Agent, scope: Scope, path: string, command: string, entry: Record<string, unknown> = agent.entry(command)): InstallResult {
  const read = readSettings(path, agent);
  const clean = withoutMm(read.data, agent);
  const next = structuredClone(clean);
  const hooks = ((next.hooks as Json | undefined) ?? (next.hooks = {})) as Json;
  for (const event of Object.values(agent.events)) hooks[event] = [...((hooks[event] as Group[] | undefined) ?? []), { hooks: [entry] }];
  const text = serialise(next, read.text);
  const backup = read.text === undefined ? null : backupPath(path);
  if (backup && Object.keys(mmEntries(read.data, agent)).length === 0) writeFileSync(backup, read.text!);
  const changed = text !== read.text;
  if (changed) writeSettings(path, text);
  return { agent: agent.id, scope, settings: path, backup: backup && existsSync(backup) ? backup : null, events: Object.values(agent.events), command, changed };
}

export interface UninstallResult {
  agent: string;
  scope: Scope;
  settings: string;
  removed: string[];
  /** True when the file is back byte for byte as the backup kept it. */
  restored: boolean;
}

/**
 * Removes mm's entries and nothing else. When what is left is what the backup holds, the backup's
 * bytes are written back, so the file is exactly as it was before `install` (formatting too).
 */
export function uninstallHooks(agent: Agent, scope: Scope, path: string): UninstallResult {
  const read = readSettings(path, agent);
  const removed = Object.keys(mmEntries(read.data, agent));
  if (!removed.length) return { agent: agent.id, scope, settings: path, removed, restored: false };
  const clean = withoutMm(read.data, agent);
  const backup = backupPath(path);
  let before: string | undefined;
  try {
    before = readFileSync(backup, "utf8");
    if (JSON.stringify(before.trim() === "" ? {} : JSON.parse(before)) !== JSON.stringify(clean)) before = undefined;
  } catch {
    before = undefined;
  }
  writeSettings(path, before ?? serialise(clean, read.text));
  return { agent: agent.id, scope, settings: path, removed, restored: before !== undefined };
}

export interface HookStatus {
  agent: string;
  scope: Scope;
  settings: string;
  exists: boolean;
  installed: boolean;
  events: Record<string, string>;
  problem?: string;
}

/** What mm has in an agent's settings file; a file mm can't read is reported, not thrown. */
export function hookStatus(agent: Agent, scope: Scope, path: string): HookStatus {
  try {
    const read = readSettings(path, agent);
    const events = mmEntries(read.data, agent);
    return { agent: agent.id, scope, settings: path, exists: read.text !== undefined, installed: Object.keys(events).length > 0, events };
  } catch (err) {
    return { agent: agent.id, scope, settings: path, exists: true, installed: false, events: {}, problem: (err as Error).message };
  }
}
