import { existsSync, realpathSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { MmError } from "../../errors.js";
import { shellQuote } from "../../core/store-location.js";
import type { CliApp } from "../main.js";
import { AGENT_IDS, AGENTS, agentNamed, DEFAULT_BUDGET_TOKENS, DEFAULT_HOOK_USER as DEFAULT_USER, type Agent } from "../hooks/agents.js";
import { hookStatus, installHooks, settingsPath, uninstallHooks, type Scope } from "../hooks/settings.js";

/**
 * `mm hooks install | uninstall | status` change a coding agent's settings so that it runs
 * `mm hook <agent>` on a session's start and on each prompt; `mm hook <agent>` is what it runs
 * (cli/hooks/run.ts). What each writes and injects:
 * (docs/agents.md, "Hooks: memory in coding agents").
 */
export function registerHooks(program: Command, app: CliApp): void {
  const hooks = program.command("hooks").description(`recall and capture memories in a coding agent's hooks (${AGENT_IDS.join(", ")})`);
  const scopeOption = ["--scope <scope>", "user (the agent's settings in your home) or project (in this project's root)", "user"] as const;

  hooks
    .command("install")
    .description("add mm's hooks to a coding agent's settings, keeping everything else there (a backup is kept)")
    .argument("<agent>", AGENT_IDS.join(" | "))
    .option(...scopeOption)
    .option("-u, --user <userId>", `whose memories the hooks recall and store (default: ${DEFAULT_USER})`)
    .option("--url <server>", "claude-code only: call this running mm serve (an http hook, key from $MM_API_KEY) instead of starting mm for each event")
    .addHelpText("after", "\nExamples:\n  mm hooks install claude-code --user me\n  mm hooks install claude-code --scope project\n  mm hooks install claude-code --url http://127.0.0.1:8080")
    .action(async (id: string, opts: { scope: string; user?: string; url?: string }, cmd: Command) => {
      const agent = agentOf(id);
      const scope = scopeOf(opts.scope);
      const user = opts.user ?? DEFAULT_USER;
      const http = opts.url === undefined ? undefined : httpEntry(agent, opts.url, user);
      const command = http ? String(http.url) : hookCommand(app, cmd, agent, user);
      const body = installHooks(agent, scope, settingsPath(agent, scope, app.io.env, process.cwd()), command, http);
      await app.output.result(body, () =>
        [
          `${body.changed ? "Installed" : "Already installed:"} mm's hooks for ${agent.name} (${body.events.join(", ")}) in ${body.settings}.`,
          body.backup ? `The settings as they were before mm's hooks are kept in ${body.backup}.` : "There was no settings file; mm made one.",
          http ? `It calls: ${command} (with the key in $MM_API_KEY, which the agent must have in its environment)` : `It runs: ${command}`,
        ].join("\n"),
      );
    });

  hooks
    .command("uninstall")
    .description("remove mm's hooks from a coding agent's settings, and nothing else")
    .argument("<agent>", AGENT_IDS.join(" | "))
    .option(...scopeOption)
    .action(async (id: string, opts: { scope: string }) => {
      const agent = agentOf(id);
      const scope = scopeOf(opts.scope);
      const body = uninstallHooks(agent, scope, settingsPath(agent, scope, app.io.env, process.cwd()));
      await app.output.result(body, () =>
        body.removed.length
          ? `Removed mm's hooks (${body.removed.join(", ")}) from ${body.settings}${body.restored ? "; the file is as it was before mm's hooks" : ""}.`
          : `mm's hooks for ${agent.name} are not in ${body.settings}; nothing changed.`,
      );
    });

  hooks
    .command("status")
    .description("where mm's hooks are installed, for each agent and scope")
    .action(async () => {
      // In the home folder itself (no project above it), the project's settings are the user's: listed once.
      const rows = AGENT_IDS.flatMap((id) => {
        const [user, project] = (["user", "project"] as const).map((scope) => settingsPath(AGENTS[id], scope, app.io.env, process.cwd()));
        return [hookStatus(AGENTS[id], "user", user), ...(project === user ? [] : [hookStatus(AGENTS[id], "project", project)])];
      });
      await app.output.result({ hooks: rows }, () =>
        rows
          .map((r) => `${AGENTS[r.agent as keyof typeof AGENTS].name}, ${r.scope}: ${r.problem ? `can't read: ${r.problem}` : r.installed ? `installed (${Object.keys(r.events).join(", ")})` : "not installed"} — ${r.settings}`)
          .join("\n"),
      );
    });

  program
    .command("hook")
    .description("what a coding agent runs on its events: reads the event's JSON on stdin, prints the memories to add to its context")
    .argument("<agent>", AGENT_IDS.join(" | "))
    .option("-u, --user <userId>", `whose memories (default: ${DEFAULT_USER})`)
    .option("--budget <tokens>", "most tokens the memories may take, estimated as characters / 4 (default 1000)")
    .option("--timeout <seconds>", "answer nothing rather than take longer (default 2)")
    // Whatever it is given, a hook exits 0: an agent reads another code as "block the prompt".
    .allowUnknownOption()
    .allowExcessArguments()
    .action(async (id: string, opts: { user?: string; budget?: string; timeout?: string }, cmd: Command) => {
      const { runHook } = await import("../hooks/run.js");
      await runHook(app, cmd, id, { user: opts.user ?? DEFAULT_USER, budget: positive(opts.budget, DEFAULT_BUDGET_TOKENS), timeout: positive(opts.timeout, 2) });
    });
}

function positive(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value !== undefined && Number.isFinite(n) && n > 0 ? n : fallback;
}

function agentOf(id: string): Agent {
  const agent = agentNamed(id);
  if (agent) return agent;
  const message = `must be ${AGENT_IDS.join(" or ")} (the agents mm has hooks for), not "${id}"`;
  throw new MmError("VALIDATION_ERROR", `agent ${message}.`, { details: [{ field: "agent", message }] });
}

/**
 * Claude Code's http hook entry for a running `mm serve` (http/hooks.ts): the event is POSTed to
 * `/hooks/claude-code`, the key comes from the agent's environment ($MM_API_KEY, which Claude Code
 * only puts in a header when the entry lists it in allowedEnvVars), never written in the settings.
 */
function httpEntry(agent: Agent, server: string, user: string): Record<string, unknown> {
  if (agent.id !== "claude-code") {
    const message = `is for claude-code only: ${agent.name} runs commands as its hooks`;
    throw new MmError("VALIDATION_ERROR", `--url ${message}.`, { details: [{ field: "--url", message }] });
  }
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    url = new URL("invalid:");
  }
  if (!/^https?:$/.test(url.protocol) || url.search || url.hash || url.username || url.password) {
    const message = `must be a server's address, like http://127.0.0.1:8080 (got ${JSON.stringify(server.slice(0, 100))})`;
    throw new MmError("VALIDATION_ERROR", `--url ${message}.`, { details: [{ field: "--url", message }] });
  }
  const base = url.href.replace(/\/+$/, "");
  return {
    type: "http",
    url: `${base}/hooks/${agent.id}?userId=${encodeURIComponent(user)}`,
    headers: { Authorization: "Bearer $MM_API_KEY" },
    allowedEnvVars: ["MM_API_KEY"],
    timeout: 5,
  };
}

function scopeOf(scope: string): Scope {
  if (scope === "user" || scope === "project") return scope;
  const message = `must be user or project, not "${scope}"`;
  throw new MmError("VALIDATION_ERROR", `--scope ${message}.`, { details: [{ field: "--scope", message }] });
}

/**
 * The command the agent runs: this Node and this mm's bin/mm.js by absolute path, so that it works
 * whatever PATH the agent has (an app started from a desktop often has none of the shell's), for a
 * global install and a clone alike; with the store and account that install was run with, when
 * they aren't the defaults. After moving mm or changing Node, run install again.
 */
function hookCommand(app: CliApp, cmd: Command, agent: Agent, user: string): string {
  const globals = cmd.optsWithGlobals() as { store?: string; account?: string };
  const store = globals.store ?? (app.io.env.MM_STORE || undefined);
  const account = globals.account ?? (app.io.env.MM_ACCOUNT || undefined);
  return [
    shellQuote(process.execPath),
    shellQuote(mmScript()),
    ...(store ? ["--store", shellQuote(/^[a-z0-9]+:\/\//.test(store) ? store : resolve(store))] : []),
    ...(account ? ["--account", shellQuote(account)] : []),
    "hook",
    agent.id,
    "--user",
    shellQuote(user),
  ].join(" ");
}

/** This mm's bin/mm.js, found upwards of this module (the bundle, dist/ or the sources). */
function mmScript(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dirname(dir) !== dir; dir = dirname(dir)) {
    const bin = join(dir, "bin", "mm.js");
    if (existsSync(bin)) return realpathSync(bin);
  }
  throw new MmError("INTERNAL_ERROR", "mm's bin/mm.js was not found above its own files.");
}
