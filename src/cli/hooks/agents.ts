/**
 * The coding agents `mm hooks install` knows, as one table: where each keeps its settings, the
 * events mm hooks into, the entry it writes and the answer it prints. Both agents read the same
 * shape (`hooks` → event → `[{matcher?, hooks: [{type: "command", command, timeout}]}]`), from
 * their own documentation (sources named in docs/agents.md); they differ in names and units.
 */

export type AgentId = "claude-code" | "gemini-cli";

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

/** What both agents read from a hook's stdout on exit 0: context added for the model. */
export function hookAnswer(event: HookEvent, context: string): string {
  return JSON.stringify({ hookSpecificOutput: { hookEventName: event.name, additionalContext: context } });
}
