/**
 * The coding agents `mm hooks install` knows, as one table: where each keeps its settings, the
 * events mm hooks into, the entry it writes and the answer it prints. Both agents read the same
 * shape (`hooks` → event → `[{matcher?, hooks: [{type: "command", command, timeout}]}]`), from
 * their own documentation (sources named in docs/agents.md); they differ in names and units.
 */

import { statSync } from "node:fs";

export type AgentId = "claude-code" | "gemini-cli";

/** Whose memories a hook recalls and stores when it is given no user (issue #55). */
export const DEFAULT_HOOK_USER = "me";
/** The default budget of a hook's block, in tokens (estimated as characters / 4). */
export const DEFAULT_BUDGET_TOKENS = 1000;
/** The longest prompt a hook reads: a search query's limit (schemas/memory.ts MAX_QUERY_LENGTH). */
export const MAX_PROMPT_CHARS = 10_000;
// Control characters other than tab and line breaks, and U+FFFD (bytes that weren't UTF-8): binary, not a prompt.
const BINARY = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufffd]/;

/** What an agent's event asks of mm: the session's memories, or a prompt's. */
export type HookEvent = ({ kind: "session"; name: string; source?: string } | { kind: "prompt"; name: string; prompt: string }) & {
  /** The agent's session, when it names one: what was injected in it is not injected again. */
  session?: string;
};

export interface Agent {
  id: AgentId;
  name: string;
  /** The settings folder, in the home directory (user scope) or the project root (project scope). */
  dir: string;
  /** The agent's event names for a session's start and a submitted prompt. */
  events: { session: string; prompt: string };
  /** The hook entry mm adds, with a timeout past mm's own (2 s) in the agent's unit. */
  entry(command: string): Record<string, unknown>;
}

export const AGENTS: Record<AgentId, Agent> = {
  // Claude Code: timeout in seconds; UserPromptSubmit takes no matcher, and SessionStart without
  // one runs on every source (startup, resume, clear, compact).
  "claude-code": {
    id: "claude-code",
    name: "Claude Code",
    dir: ".claude",
    events: { session: "SessionStart", prompt: "UserPromptSubmit" },
    entry: (command) => ({ type: "command", command, timeout: 10 }),
  },
  // Gemini CLI: timeout in milliseconds; BeforeAgent is its prompt event.
  "gemini-cli": {
    id: "gemini-cli",
    name: "Gemini CLI",
    dir: ".gemini",
    events: { session: "SessionStart", prompt: "BeforeAgent" },
    entry: (command) => ({ name: "mm", type: "command", command, timeout: 10_000 }),
  },
};

export const AGENT_IDS = Object.keys(AGENTS) as AgentId[];

/** The agent named on the command line, or undefined. */
export function agentNamed(id: string): Agent | undefined {
  return Object.hasOwn(AGENTS, id) ? AGENTS[id as AgentId] : undefined;
}

/** The event an agent's payload names, if it is one mm answers. */
export function eventOf(agent: Agent, payload: Record<string, unknown>): HookEvent | undefined {
  const name = payload.hook_event_name;
  const session = typeof payload.session_id === "string" && payload.session_id ? `${agent.id}:${payload.session_id}` : undefined;
  if (name === agent.events.session) return { kind: "session", name, session, source: typeof payload.source === "string" ? payload.source : undefined };
  if (name === agent.events.prompt && typeof payload.prompt === "string") return { kind: "prompt", name, session, prompt: payload.prompt };
  return undefined;
}

/** What both agents read from a hook's stdout on exit 0 (or an http hook's answer): context added for the model. */
export function hookOutput(event: HookEvent, context: string): { hookSpecificOutput: { hookEventName: string; additionalContext: string } } {
  return { hookSpecificOutput: { hookEventName: event.name, additionalContext: context } };
}

export function hookAnswer(event: HookEvent, context: string): string {
  return JSON.stringify(hookOutput(event, context));
}

/**
 * Why a hook answers nothing for `event` sent from `cwd`, or undefined when it answers: the same
 * reasons for `mm hook` (which logs them) and the URL hook (which answers `{}`). A `cwd` that isn't
 * a folder here leaves the project unknown, so nothing is recalled rather than every project's.
 */
export function unanswerable(event: HookEvent, cwd: unknown): string | undefined {
  if (typeof cwd !== "string" || cwd === "") return "the event has no cwd";
  if (!isFolder(cwd)) return `cwd ${JSON.stringify(cwd.slice(0, 200))} is not a directory`;
  if (event.kind !== "prompt") return undefined;
  if (event.prompt.length > MAX_PROMPT_CHARS) return `prompt of ${event.prompt.length} characters, over ${MAX_PROMPT_CHARS}`;
  if (BINARY.test(event.prompt)) return "prompt holds binary bytes";
  if (event.prompt.trim() === "") return "empty prompt";
  return undefined;
}

/** Whether a session starts with an empty context (startup, clear, compact), so what it was shown starts again; a resumed one keeps it. */
export function startsAfresh(event: HookEvent): boolean {
  return event.kind === "session" && event.source !== "resume";
}

/** Whether `path` is a folder here; a path the system refuses to look up (too long, a NUL byte) is not one. */
function isFolder(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
  } catch {
    return false;
  }
}
