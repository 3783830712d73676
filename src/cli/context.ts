import type { Command } from "commander";
import type { Account } from "../core/accounts.js";
import type { Context } from "../core/context.js";
import type { Bucket, OperationMeter } from "../limits/ledger.js";
import type { CliApp } from "./main.js";
import { confirmDelete } from "./prompt.js";
import { isRemote, remoteContext, remoteEntityRef, resolveRemote } from "./remote.js";

/** The rate/quota bucket of each command that is an API operation; other commands aren't counted. */
export const BUCKETS: Record<string, Bucket> = {
  "memories.add": "write",
  "memories.search": "search",
  "memories.list": "read",
  "memories.get": "read",
  "memories.update": "write",
  "memories.delete": "write",
  "memories.history": "read",
  "memories.supersede": "write",
  "memories.restore": "write",
  "entities.create": "write",
  "entities.list": "read",
  "entities.get": "read",
  "entities.update": "write",
  "entities.delete": "write",
  "entities.memories": "read",
  "entities.merge": "write",
  "relations.create": "write",
  "relations.list": "read",
  "relations.get": "read",
  "relations.update": "write",
  "relations.delete": "write",
  "graph.neighbors": "read",
  "graph.path": "read",
  "graph.export": "read",
};

/** Whether a command (`memories.search`) is an API operation, so it can run through `--remote`. */
export function isApiCommand(cmd: Command): boolean {
  return `${cmd.parent?.name()}.${cmd.name()}` in BUCKETS;
}

export interface CommandContext extends Context {
  account: Account;
  /** The command's rate/quota bucket; undefined for commands that aren't API operations. */
  bucket?: Bucket;
  /** Bills this command (see withContext); undefined when it isn't an API operation. */
  meter?: OperationMeter;
  /** A meter for one more operation in this context (each `mm mcp` tool call is one). */
  meterFor(bucket: Bucket): OperationMeter;
  /** The meter of another account of the store (an --all-accounts import writes into several), within its own quota. */
  meterOf(accountId: string, bucket: Bucket): Promise<OperationMeter>;
}

/**
 * Opens the store named by the global flags for one command, as the account named by
 * `--account` / MM_ACCOUNT (else the local default account), counts the command against that
 * account's monthly quota like the API would, and always closes the store. Only commands that add
 * data (`create`) may create a missing store; every other command says there is none.
 *
 * Billing (see limits/ledger.ts): a write is charged right after the commit that stores it; one
 * that fails before storing anything (a validation error, an unknown id) is charged when it fails,
 * as the API charges a 400 or a 404. A read is charged before it runs, because its answer is
 * printed as it is made; a read killed between the two is billed without an answer. With
 * `charge: false` (a batch add, an import, a delete that asks first) only the commits bill.
 */
export async function withContext<T>(
  app: CliApp,
  cmd: Command,
  fn: (ctx: CommandContext) => Promise<T>,
  options: { charge?: boolean; warmEmbedder?: boolean; create?: boolean } = {},
): Promise<T> {
  // Through a server: it validates, bills and keeps its store itself.
  const remote = await resolveRemote(cmd.optsWithGlobals(), app.io.env);
  if (remote) return fn((await remoteContext(remote)) as unknown as CommandContext);
  const ctx = await openCommandContext(app, cmd, options);
  const { startUpkeep } = await import("../core/upkeep.js");
  // A long batch keeps the store compact as it goes; any command that wrote leaves it so.
  // With --debug (MM_DEBUG=1) each pass that did work is logged to stderr as a JSON line.
  const debug = app.io.env.MM_DEBUG === "1" || Boolean(cmd.optsWithGlobals().debug);
  const upkeep = startUpkeep(ctx, {
    ownWritesOnly: true,
    onError: (err) => maintenanceFailed(app, err),
    onPass: debug ? (pass) => app.io.stderr.write(JSON.stringify({ event: "maintenance", ms: pass.ms, work: pass.work }) + "\n") : undefined,
  });
  try {
    const meter = ctx.meter;
    if (!meter) return await fn(ctx);
    if (options.charge === false) {
      await meter.check(1);
      return await fn(ctx);
    }
    if (ctx.bucket === "write") return await meter.run(() => fn(ctx));
    await meter.settle();
    return await fn(ctx);
  } finally {
    await upkeep.stop();
    await ctx.close();
  }
}

/**
 * The store named by the global flags, opened as the account named by `--account` / MM_ACCOUNT
 * (else the local default account), with that account's quota ledger: for `withContext`, and for
 * long-running commands (`mm mcp`) that keep it open and count each operation themselves.
 */
export async function openCommandContext(app: CliApp, cmd: Command, options: { warmEmbedder?: boolean; create?: boolean } = {}): Promise<CommandContext> {
  // Loaded here, not with this file: every command module imports it, and `mm --remote` must not
  // load the store's modules (LanceDB's wrappers, the ledger) to start (docs/client.md, "Measured").
  const [{ Accounts }, { crashHooks, openContext, warmEmbedder }, { openCommandLedger }, { createdStoreNote, locateStore, missingStore, storeStatus }] = await Promise.all([
    import("../core/accounts.js"),
    import("../core/context.js"),
    import("../limits/index.js"),
    import("../core/store-location.js"),
  ]);
  const globals = cmd.optsWithGlobals() as { store?: string; account?: string };
  const location = locateStore(globals.store, app.io.env);
  const status = await storeStatus(location);
  if (status === "missing" && !options.create) throw missingStore(location);
  const storeDir = location.dir;
  // First, so that the model's own start (compiling TensorFlow.js) is done before the store opens.
  const warmed = options.warmEmbedder && !app.io.embedder && status === "ready" ? await warmEmbedder(storeDir, app.io.env) : undefined;
  const accountRef = globals.account ?? (app.io.env.MM_ACCOUNT || undefined);
  const account = await new Accounts(storeDir, app.io.clock).resolve(accountRef ?? "acct_default");
  // With $MM_REDIS_URL, commands count against the same ledger as the replicas serving the store.
  const { ledger, close: closeLedger } = await openCommandLedger(storeDir, app.io.env, app.io.clock);
  const opened = await openContext({
    storeDir,
    env: app.io.env,
    embedder: app.io.embedder,
    clock: app.io.clock,
    accountId: account.id,
    hooks: crashHooks(app.io.env.MM_TEST_CRASH_AT),
    warmed,
  }).catch(async (err) => {
    await closeLedger();
    throw err;
  });
  const base = { ...opened, close: async () => (await opened.close(), await closeLedger()) };
  if (status === "missing") app.output.personNote(createdStoreNote(location));
  const bucket = BUCKETS[`${cmd.parent?.name()}.${cmd.name()}`];
  return {
    ...base,
    account,
    bucket,
    meter: bucket && ledger.meter(account.id, account.quota, bucket),
    meterFor: (b) => ledger.meter(account.id, account.quota, b),
    meterOf: async (id, b) => {
      const other = await new Accounts(storeDir, app.io.clock).resolve(id);
      return ledger.meter(other.id, other.quota, b);
    },
  };
}

/**
 * An entity as the person wrote it, id or name (core/entities.ts resolveEntityRef): every command
 * that takes an entity accepts `"Ada Lovelace"` as well as `ent_…`. Undefined stays undefined.
 */
export async function entityRef(ctx: Context, ref: string | undefined): Promise<string | undefined> {
  if (ref === undefined) return undefined;
  if (isRemote(ctx)) return remoteEntityRef(ctx, ref);
  return (await import("../core/entities.js")).resolveEntityRef(ctx, ref);
}

/**
 * A delete command: on a terminal it first asks (unless `--yes`; without a terminal it needs `--yes`), naming
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
      if (!(await confirmDelete(app.io, yes, () => describe(ctx), `mm ${cmd.parent?.name()} ${cmd.name()}`))) return app.output.note("Nothing deleted.");
      // Billed by the delete's commit, or, if it fails (an unknown id), as the API bills a 404.
      const body = ctx.meter ? await ctx.meter.run(() => remove(ctx)) : await remove(ctx);
      await app.output.result(body, () => done(body));
    },
    { charge: false },
  );
}

/** Maintenance after a command's work failed: the work is saved; say so, and how to retry. */
function maintenanceFailed(app: CliApp, err: unknown): void {
  const reason = err instanceof Error ? err.message : String(err);
  app.output.warn(`the store's upkeep after this command failed (${reason}); everything the command wrote is saved. \`mm store optimize\` runs it again.`);
}

/** Repeatable flag collector: `--tag a --tag b` → ["a", "b"]. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}
