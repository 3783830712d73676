import { join } from "node:path";
import type { Command } from "commander";
import { Accounts, type Account } from "../core/accounts.js";
import { openContext, warmEmbedder, type Context } from "../core/context.js";
import { QuotaLedger, type Bucket } from "../limits/ledger.js";
import { locateStore, missingStore, storeStatus } from "../core/store-location.js";
import type { CliApp } from "./main.js";
import { confirmDelete } from "./prompt.js";

/** The rate/quota bucket of each command that is an API operation; other commands aren't counted. */
const BUCKETS: Record<string, Bucket> = {
  "memories.add": "write",
  "memories.search": "search",
  "memories.list": "read",
  "memories.get": "read",
  "memories.update": "write",
  "memories.delete": "write",
  "entities.create": "write",
  "entities.list": "read",
  "entities.get": "read",
  "entities.update": "write",
  "entities.delete": "write",
  "entities.memories": "read",
  "relations.create": "write",
  "relations.list": "read",
  "relations.get": "read",
  "relations.delete": "write",
  "graph.neighbors": "read",
  "graph.path": "read",
  "graph.export": "read",
};

export interface CommandContext extends Context {
  account: Account;
  /** Counts `count` operations against the account's quota (batch adds count per line). */
  charge(bucket: Bucket, count: number): Promise<void>;
}

/**
 * Opens the store named by the global flags for one command, as the account named by
 * `--account` / MM_ACCOUNT (else the local default account), counts the command against that
 * account's monthly quota like the API would, and always closes the store. Only commands that add
 * data (`create`) may create a missing store; every other command says there is none.
 */
export async function withContext<T>(
  app: CliApp,
  cmd: Command,
  fn: (ctx: CommandContext) => Promise<T>,
  options: { charge?: boolean; warmEmbedder?: boolean; create?: boolean } = {},
): Promise<T> {
  const ctx = await openCommandContext(app, cmd, options);
  try {
    const bucket = BUCKETS[`${cmd.parent?.name()}.${cmd.name()}`];
    if (bucket && options.charge !== false) await ctx.charge(bucket, 1);
    return await fn(ctx);
  } finally {
    await ctx.close();
  }
}

/**
 * The store named by the global flags, opened as the account named by `--account` / MM_ACCOUNT
 * (else the local default account), with that account's quota ledger: for `withContext`, and for
 * long-running commands (`mm mcp`) that keep it open and count each operation themselves.
 */
export async function openCommandContext(app: CliApp, cmd: Command, options: { warmEmbedder?: boolean; create?: boolean } = {}): Promise<CommandContext> {
  const globals = cmd.optsWithGlobals() as { store?: string; account?: string };
  const location = locateStore(globals.store, app.io.env);
  const status = await storeStatus(location);
  if (status === "missing" && !options.create) throw missingStore(location);
  const storeDir = location.dir;
  // First, so that the model's own start (compiling TensorFlow.js) is done before the store opens.
  const warmed = options.warmEmbedder && !app.io.embedder && status === "ready" ? await warmEmbedder(storeDir, app.io.env) : undefined;
  const accountRef = globals.account ?? (app.io.env.MM_ACCOUNT || undefined);
  const account = await new Accounts(storeDir, app.io.clock).resolve(accountRef ?? "acct_default");
  const base = await openContext({
    storeDir,
    env: app.io.env,
    embedder: app.io.embedder,
    clock: app.io.clock,
    accountId: account.id,
    hooks: crashHook(app.io.env.MM_TEST_CRASH_AT),
    warmed,
  });
  const ledger = new QuotaLedger(join(storeDir, "ledger"), app.io.clock);
  return {
    ...base,
    account,
    charge: async (bucket, count) => void (await ledger.charge(account.id, account.quota, bucket, count)),
  };
}

/**
 * An entity as the person wrote it, id or name (core/entities.ts resolveEntityRef): every command
 * that takes an entity accepts `"Ada Lovelace"` as well as `ent_…`. Undefined stays undefined.
 */
export async function entityRef(ctx: Context, ref: string | undefined): Promise<string | undefined> {
  if (ref === undefined) return undefined;
  return (await import("../core/entities.js")).resolveEntityRef(ctx, ref);
}

/**
 * A delete command: on a terminal it first asks (unless `--yes`; scripts are never asked), naming
 * what goes with `describe`; the operation is counted against the quota only once it goes ahead.
 */
export function confirmedDelete<T>(
  app: CliApp,
  cmd: Command,
  yes: boolean | undefined,
  describe: (ctx: CommandContext) => Promise<string>,
  remove: (ctx: CommandContext) => Promise<T>,
  done: (body: T) => string,
): Promise<void> {
  return withContext(
    app,
    cmd,
    async (ctx) => {
      if (!(await confirmDelete(app.io, yes, () => describe(ctx)))) return app.output.note("Nothing deleted.");
      await ctx.charge("write", 1);
      const body = await remove(ctx);
      await app.output.result(body, () => done(body));
    },
    { charge: false },
  );
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
