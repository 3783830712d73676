import type { Command } from "commander";
import { openContext, type Context } from "../core/context.js";
import { resolveStorePath } from "../storage/paths.js";
import type { CliApp } from "./main.js";

/** Opens the store named by the global flags for one command, and always closes it. */
export async function withContext<T>(app: CliApp, cmd: Command, fn: (ctx: Context) => Promise<T>): Promise<T> {
  const globals = cmd.optsWithGlobals() as { store?: string };
  const ctx = await openContext({
    storeDir: resolveStorePath(globals.store, app.io.env),
    env: app.io.env,
    embedder: app.io.embedder,
    clock: app.io.clock,
    hooks: crashHook(app.io.env.MM_TEST_CRASH_AT),
  });
  try {
    return await fn(ctx);
  } finally {
    await ctx.close();
  }
}

/** Repeatable flag collector: `--tag a --tag b` → ["a", "b"]. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** MM_TEST_CRASH_AT=<point> makes the process SIGKILL itself at that point (crash-safety tests). */
function crashHook(point: string | undefined): ((at: string) => void) | undefined {
  if (!point) return undefined;
  return (at) => {
    if (at === point) process.kill(process.pid, "SIGKILL");
  };
}
