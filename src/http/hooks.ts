import * as z from "zod/mini";
import { agentNamed, DEFAULT_BUDGET_TOKENS, DEFAULT_HOOK_USER, eventOf, hookOutput, startsAfresh, unanswerable } from "../cli/hooks/agents.js";
import * as memories from "../core/memories.js";
import { findProject } from "../core/project.js";
import { frequentlyRecalled, recallFor, type RecallApi } from "../core/recall.js";
import { MmError } from "../errors.js";
import { identifier, parseWith } from "../schemas/validate.js";
import type { Route } from "./routes.js";

/**
 * The URL hook (docs/agents.md, "Claude Code's http hooks: mm serve answers, no process starts"):
 * `POST /hooks/<agent>?userId=…` with the agent's event as the body answers what `mm hook <agent>` prints, from this server, so no
 * process starts and no model loads per prompt. Not a /v1 endpoint: its body and answer are the
 * agent's, not the API's. It is authenticated, rate-limited and billed as one search (a capture
 * in the prompt included), like `/v1/memories/search`.
 *
 * Whatever it can't answer for (an event mm doesn't answer, a prompt that isn't one, a `cwd` that
 * isn't a folder on this machine, so its project can't be known) answers 200 `{}`: the agent reads
 * an empty object as nothing to add. A bad key is 401 and a bad query 400: the agent reports those
 * and carries on.
 */

const HookQuery = z.strictObject({
  userId: z.optional(identifier),
  budget: z.optional(z.pipe(z.string().check(z.regex(/^[1-9]\d{0,5}$/, "must be a whole number of tokens, 1 to 999999")), z.transform(Number))),
});

/**
 * What each agent session was shown, so a memory is injected once per session, as `mm hook` does
 * with its files, and of that what its prompts were shown (`recalled`, for frequentlyRecalled):
 * per account and session, the most recent SESSIONS_KEPT sessions, in memory (a restart forgets
 * them; a memory may then be shown again).
 */
const sessions = new Map<string, { seen: Set<string>; recalled: Set<string> }>();
const SESSIONS_KEPT = 1000;

function sessionIn(key: string | undefined, fresh: boolean): { seen: Set<string>; recalled: Set<string> } {
  if (!key) return { seen: new Set(), recalled: new Set() };
  let session = sessions.get(key) ?? { seen: new Set<string>(), recalled: new Set<string>() };
  if (fresh) session = { seen: new Set(), recalled: session.recalled };
  sessions.delete(key);
  sessions.set(key, session);
  while (sessions.size > SESSIONS_KEPT) sessions.delete(sessions.keys().next().value!);
  return session;
}

/** What the prompts of an account's kept sessions were shown, per session. */
function recalledPerSession(accountId: string): Set<string>[] {
  return [...sessions].filter(([key]) => key.startsWith(`${accountId}\u0000`)).map(([, s]) => s.recalled);
}

export const HOOK_ROUTE: Route = {
  method: "POST",
  path: "/hooks/:agent",
  bucket: "search",
  summary: "A coding agent's hook event, answered with the memories to add to its context",
  body: z.record(z.string(), z.unknown()),
  query: HookQuery,
  response: z.record(z.string(), z.unknown()),
  status: 200,
  extension: true,
  cli: "hook",
  run: async (ctx, { params, query, body }) => {
    const agent = agentNamed(params.agent ?? "");
    if (!agent) throw new MmError("NOT_FOUND", `No hook for an agent named ${JSON.stringify(String(params.agent).slice(0, 40))}; mm answers claude-code and gemini-cli.`);
    const q = parseWith(HookQuery, query, "hook query");
    if (!body || typeof body !== "object" || Array.isArray(body)) return {};
    const event = eventOf(agent, body as Record<string, unknown>);
    const cwd = (body as Record<string, unknown>).cwd;
    if (!event || unanswerable(event, cwd)) return {};
    const session = sessionIn(event.session && `${ctx.accountId}\u0000${event.session}`, startsAfresh(event));
    const project = findProject(cwd as string)?.name;
    const frequent = event.kind === "session" ? frequentlyRecalled(recalledPerSession(ctx.accountId)) : undefined;
    const block = await recallFor(memories as unknown as RecallApi, ctx, event, { user: q.userId ?? DEFAULT_HOOK_USER, project, budget: q.budget ?? DEFAULT_BUDGET_TOKENS, frequent, recalled: session.recalled }, session.seen);
    if (!block) return {};
    for (const id of block.ids) session.seen.add(id);
    return hookOutput(event, block.text);
  },
};
