import { join } from "node:path";
import type { Command } from "commander";
import { Accounts, type Account } from "../core/accounts.js";
import { crashHooks, openContext, warmEmbedder, type Context } from "../core/context.js";
import { QuotaLedger, type Bucket } from "../limits/ledger.js";
import { resolveStorePath } from "../storage/paths.js";
import type { CliApp } from "./main.js";

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
}

/**
 * Opens the store named by the global flags for one command, as the account named by
 * `--account` / MM_ACCOUNT (else the local default account), counts the command against that
 * account's monthly quota like the API would, and always closes the store.
 *
 * Billing (see limits/ledger.ts): a write is charged right after the commit that stores it; one
 * that fails before storing anything (a validation error, an unknown id) is charged when it fails,
 * as the API charges a 400 or a 404. A read is charged before it runs, because its answer is
 * printed as it is made; a read killed between the two is billed without an answer. With
 * `charge: false` (a batch add) only the commits bill, per line stored.
 */
export async function withContext<T>(
  app: CliApp,
  cmd: Command,
  fn: (ctx: CommandContext) => Promise<T>,
  options: { charge?: boolean; warmEmbedder?: boolean } = {},
): Promise<T> {
  const globals = cmd.optsWithGlobals() as { store?: string; account?: string };
  const storeDir = resolveStorePath(globals.store, app.io.env);
  // First, so that the model's own start (compiling TensorFlow.js) is done before the store opens.
  const warmed = options.warmEmbedder && !app.io.embedder ? await warmEmbedder(storeDir, app.io.env) : undefined;
  const accountRef = globals.account ?? (app.io.env.MM_ACCOUNT || undefined);
  const account = await new Accounts(storeDir, app.io.clock).resolve(accountRef ?? "acct_default");
  const base = await openContext({
    storeDir,
    env: app.io.env,
    embedder: app.io.embedder,
    clock: app.io.clock,
    accountId: account.id,
    hooks: crashHooks(app.io.env.MM_TEST_CRASH_AT),
    warmed,
  });
  const bucket = BUCKETS[`${cmd.parent?.name()}.${cmd.name()}`];
  const meter = bucket && new QuotaLedger(join(storeDir, "ledger"), app.io.clock).meter(account.id, account.quota, bucket);
  const ctx: CommandContext = { ...base, account, meter };
  try {
    if (!meter) return await fn(ctx);
    if (options.charge === false) {
      await meter.check(1);
      return await fn(ctx);
    }
    if (bucket !== "write") await meter.settle();
    else await meter.check(1);
    try {
      const result = await fn(ctx);
      await meter.settle();
      return result;
    } catch (err) {
      throw await meter.settleFailure(err);
    }
  } finally {
    await base.close();
  }
}

/** Repeatable flag collector: `--tag a --tag b` → ["a", "b"]. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}
