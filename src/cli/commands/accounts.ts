import type { Command } from "commander";
import { Accounts, DEFAULT_ACCOUNT, KEY_SHOWN_ONCE, type Account, type KeyInfo } from "../../core/accounts.js";
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
      const accounts = await svc(cmd);
      const account = accountFlag(app, cmd);
      const body = await accounts.listKeys(account);
      // Short ids must be unique among all the store's keys: `keys revoke` looks in all of them.
      const all = account === undefined ? body.items : (await accounts.listKeys()).items;
      await app.output.result(body, (t) => renderKeys(t, body.items, shortIds(all.map((k) => k.id))));
    });

  keys
    .command("revoke")
    .description("revoke a key; a running server refuses it from the next request")
    .argument("<id>", "key id (key_…), or the start of it that `mm keys list` shows")
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const body = await (await svc(cmd)).revokeKey(id, undefined, { byPrefix: true });
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
  // The default account of a store that doesn't record its own creation time keeps a placeholder date.
  const created = (a: Account) => (a.id === DEFAULT_ACCOUNT.id && a.createdAt === DEFAULT_ACCOUNT.createdAt ? "unknown" : when(a.createdAt));
  return t.table(["id", "name", "plan", "monthly quota", "created"], items.map((a) => [a.id, a.name, a.plan, a.quota === null || a.quota === undefined ? "unlimited" : count(a.quota), created(a)]), { flex: 1, ids: [0] });
}

/**
 * Keys listed with their ids shortened to the shortest start (12 characters at least) that no other
 * key's id shares, which `mm keys revoke` takes: a whole id (30 characters) would crowd the name out
 * at 80 columns, and leaving it out would hide what `revoke` needs. `--wide` shows ids whole.
 */
function renderKeys(t: TableKit, items: KeyInfo[], short: Map<string, string>): string {
  if (!items.length) return "No keys.";
  const table = t.table(
    ["id", "name", "prefix", "account", "created", "last used", "revoked"],
    items.map((k) => [t.wide ? k.id : (short.get(k.id) ?? k.id), k.name, k.prefix + "…", k.accountId, when(k.createdAt), k.lastUsedAt ? when(k.lastUsedAt) : "never", k.revokedAt ? when(k.revokedAt) : "no"]),
    t.wide ? { flex: 1, ids: [0, 3] } : { flex: 1, ids: [3], whole: [0] },
  );
  return t.wide ? table : `${table}\n${t.dim("ids shortened: mm keys revoke takes them as shown; --wide shows them whole")}`;
}

/** Each id's shortest start, of `min` characters at least, that no other id in `ids` begins with. */
function shortIds(ids: string[], min = 12): Map<string, string> {
  return new Map(
    ids.map((id) => {
      let n = Math.min(min, id.length);
      while (n < id.length && ids.some((other) => other !== id && other.startsWith(id.slice(0, n)))) n++;
      return [id, id.slice(0, n)];
    }),
  );
}
