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
