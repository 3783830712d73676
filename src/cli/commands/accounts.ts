import type { Command } from "commander";
import { Accounts, KEY_SHOWN_ONCE, type Account, type KeyInfo } from "../../core/accounts.js";
import { openCommandLedger } from "../../limits/index.js";
import { PLANS } from "../../schemas/enums.js";
import { createdStoreNote, ensureStore, locateStore, missingStore, storeStatus } from "../../core/store-location.js";
import type { CliApp } from "../main.js";
import { count, when, type TableKit } from "../output.js";

/**
 * The store of an account command: created by the commands that create an account or a key (the
 * first steps of serving a new store), and otherwise required to exist.
 */
async function storeOf(app: CliApp, cmd: Command, options: { create?: boolean } = {}): Promise<string> {
  const location = locateStore((cmd.optsWithGlobals() as { store?: string }).store, app.io.env);
  if (options.create) {
    if (await ensureStore(location)) app.output.personNote(createdStoreNote(location));
  } else if ((await storeStatus(location)) === "missing") throw missingStore(location);
  return location.dir;
}

/** The global --account (or MM_ACCOUNT): the account a key, listing or usage is about. */
function accountFlag(app: CliApp, cmd: Command): string | undefined {
  return (cmd.optsWithGlobals() as { account?: string }).account ?? (app.io.env.MM_ACCOUNT || undefined);
}

/** `mm accounts`, `mm keys` and `mm usage`: the spec's management console, as commands. */
export function registerAccounts(program: Command, app: CliApp): void {
  const accounts = program.command("accounts").description("accounts own data, keys and a monthly quota (plans: free 1,000 · hobby 50,000 · enterprise unlimited)");
  const svc = async (cmd: Command, options: { create?: boolean } = {}) => new Accounts(await storeOf(app, cmd, options), app.io.clock);

  accounts
    .command("create")
    .description("create an account")
    .argument("<name>", "a unique name")
    .option("--plan <plan>", PLANS.join(" | "), "free")
    .action(async (name: string, opts: { plan: string }, cmd: Command) => {
      const body = await (await svc(cmd, { create: true })).create({ name, plan: opts.plan });
      await app.output.result(body, (t) => renderAccounts(t, [body]));
    });

  accounts
    .command("list")
    .description("list accounts")
    .action(async (_o: unknown, cmd: Command) => {
      const body = await (await svc(cmd)).list();
      await app.output.result(body, (t) => renderAccounts(t, body.items));
    });

  accounts
    .command("set-plan")
    .description("change an account's plan")
    .argument("<account>", "account id or name")
    .argument("<plan>", PLANS.join(" | "))
    .action(async (account: string, plan: string, _o: unknown, cmd: Command) => {
      const body = await (await svc(cmd)).setPlan(account, { plan });
      await app.output.result(body, (t) => renderAccounts(t, [body]));
    });

  const keys = program.command("keys").description("API keys for mm serve (shown once; only a hash is stored)");

  keys
    .command("create")
    .description("create an API key for an account (--account, default: the default account) and print it; it is shown only this once")
    .requiredOption("--name <label>", "what the key is for")
    .addHelpText("after", "\nExample:\n  mm keys create --account acme --name laptop")
    .action(async (opts: { name: string }, cmd: Command) => {
      const body = await (await svc(cmd, { create: true })).createKey({ account: accountFlag(app, cmd) ?? "acct_default", name: opts.name });
      await app.output.result(body, (t) => `${t.bold(body.key)}\n${t.dim(`key ${body.id} for account ${body.accountId}: ${KEY_SHOWN_ONCE}`)}`);
    });

  keys
    .command("list")
    .description("list keys (of --account, else all): id, name, prefix, created, last used, revoked")
    .action(async (_o: unknown, cmd: Command) => {
      const body = await (await svc(cmd)).listKeys(accountFlag(app, cmd));
      await app.output.result(body, (t) => renderKeys(t, body.items));
    });

  keys
    .command("revoke")
    .description("revoke a key; a running server refuses it from the next request")
    .argument("<id>", "key id (key_…)")
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const body = await (await svc(cmd)).revokeKey(id);
      await app.output.result(body, () => `Revoked ${body.id} (${body.name})`);
    });

  program
    .command("usage")
    .description("this month's operations, quota and reset time for --account (default: the local default account)")
    .action(async (_o: unknown, cmd: Command) => {
      const storeDir = await storeOf(app, cmd);
      const ref = accountFlag(app, cmd) ?? "acct_default";
      const account = await new Accounts(storeDir, app.io.clock).resolve(ref);
      const { ledger, close } = await openCommandLedger(storeDir, app.io.env, app.io.clock);
      const usage = await ledger.usage(account.id, account.quota).finally(close);
      const body = { accountId: account.id, name: account.name, plan: account.plan, period: usage.period, used: usage.used, limit: usage.limit, resetAt: usage.resetAt };
      await app.output.result(body, (t) =>
        t.record([
          ["account", `${account.name} (${account.id})`],
          ["plan", account.plan],
          ["period", usage.period],
          ["used", count(usage.used)],
          ["limit", usage.limit === null ? "unlimited" : count(usage.limit)],
          ["resets at", usage.resetAt],
        ]),
      );
    });
}

function renderAccounts(t: TableKit, items: Account[]): string {
  return t.table(["id", "name", "plan", "monthly quota", "created"], items.map((a) => [a.id, a.name, a.plan, a.quota === null || a.quota === undefined ? "unlimited" : count(a.quota), when(a.createdAt)]), { flex: 1, ids: [0] });
}

function renderKeys(t: TableKit, items: KeyInfo[]): string {
  if (!items.length) return "No keys.";
  return t.table(
    ["id", "name", "prefix", "account", "created", "last used", "revoked"],
    items.map((k) => [k.id, k.name, k.prefix + "…", k.accountId, when(k.createdAt), k.lastUsedAt ? when(k.lastUsedAt) : "never", k.revokedAt ? when(k.revokedAt) : "no"]),
    { flex: 1, ids: [0, 3] },
  );
}
