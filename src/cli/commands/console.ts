import { spawn } from "node:child_process";
import type { Command } from "commander";
import { consoleOrigin, ConsoleAccess, signInUrl, LINK_TTL_MS } from "../../core/console-access.js";
import { locateStore, missingStore, storeStatus } from "../../core/store-location.js";
import type { Env } from "../../embedder/index.js";
import type { CliApp } from "../main.js";

interface LinkFlags {
  url?: string;
}

/**
 * `mm console link | revoke`, and `mm console` alone: the management console's sign-in, made by
 * the operator of the machine for an account owner who has only a browser (docs/console.md).
 */
export function registerConsole(program: Command, app: CliApp): void {
  const storeDir = async (cmd: Command) => {
    const location = locateStore((cmd.optsWithGlobals() as { store?: string }).store, app.io.env);
    if ((await storeStatus(location)) === "missing") throw missingStore(location);
    return location.dir;
  };
  const accountOf = (cmd: Command) => (cmd.optsWithGlobals() as { account?: string }).account ?? (app.io.env.MM_ACCOUNT || "default");

  /** A new one-time link: JSON `{url, account, expiresAt}` when piped, the URL on a terminal. */
  const makeLink = async (cmd: Command, flags: LinkFlags) => {
    const dir = await storeDir(cmd);
    const origin = await consoleOrigin(dir, flags.url, app.io.env);
    const link = await new ConsoleAccess(dir, app.io.clock).createLink(accountOf(cmd));
    return { url: signInUrl(origin, link.token), account: { id: link.account.id, name: link.account.name }, expiresAt: link.expiresAt, origin };
  };
  const validity = (expiresAt: string) => `works once, until ${expiresAt.slice(11, 16)} UTC (${LINK_TTL_MS / 60_000} minutes)`;

  const consoleCmd = program
    .command("console")
    .description("the management console in a browser: sign-in links for account owners (mm serve serves it at /console)")
    .option("--url <url>", "the server's address in the link (default: the store's server host and port, else http://127.0.0.1:8080)")
    .addHelpText("after", "\nWithout a subcommand: opens the console for the account (default: the local default account) in your browser.\n\nExamples:\n  mm console\n  mm console link --account acme --url https://mm.example.com")
    .action(async (flags: LinkFlags, cmd: Command) => {
      const { url, account, expiresAt, origin } = await makeLink(cmd, flags);
      const reachable = await answers(origin);
      if (!reachable) app.output.note(`mm: no mm serve answers at ${origin} yet: start one with \`mm serve\` (the link ${validity(expiresAt)}).`);
      if (await openInBrowser(url, app.io.env)) {
        app.output.note(`Opening the console for ${account.name} in your browser.`);
        return;
      }
      app.output.note(`No browser to open here; open this link (it ${validity(expiresAt)}):`);
      app.io.stdout.write(`${url}\n`);
    });

  consoleCmd
    .command("link")
    .description("print a one-time sign-in link to the console for --account (default: the local default account)")
    .option("--url <url>", "the server's address in the link (default: the store's server host and port, else http://127.0.0.1:8080)")
    .addHelpText("after", "\nThe link works once, for 15 minutes; only its hash is stored.\n\nExample:\n  mm console link --account acme")
    .action(async (flags: LinkFlags, cmd: Command) => {
      const { origin: _origin, ...body } = await makeLink(cmd, { url: flags.url ?? (cmd.parent?.opts() as LinkFlags).url });
      await app.output.result(body, (t) => `${body.url}\n${t.dim(`Sign-in link for ${body.account.name}: it ${validity(body.expiresAt)}.`)}`);
    });

  consoleCmd
    .command("revoke")
    .description("end every console session of --account and void its unused links (a new link grants access again)")
    .addHelpText("after", "\nExample:\n  mm console revoke --account acme")
    .action(async (_o: unknown, cmd: Command) => {
      const dir = await storeDir(cmd);
      const revoked = await new ConsoleAccess(dir, app.io.clock).revoke(accountOf(cmd));
      const body = { account: { id: revoked.account.id, name: revoked.account.name }, sessions: revoked.sessions, links: revoked.links };
      await app.output.result(body, () => `Revoked console access of ${body.account.name}: ${body.sessions} session${body.sessions === 1 ? "" : "s"} ended, ${body.links} unused link${body.links === 1 ? "" : "s"} voided.`);
    });
}

/** Whether a server answers at `origin` within a second (any HTTP answer counts). */
async function answers(origin: string): Promise<boolean> {
  try {
    await fetch(`${origin}/console/`, { signal: AbortSignal.timeout(1_000), redirect: "manual" });
    return true;
  } catch {
    return false;
  }
}

/**
 * Opens `url` in the default browser: `open` on macOS, `start` on Windows, `xdg-open` on a Linux or
 * BSD desktop (DISPLAY or WAYLAND_DISPLAY set). False when there is no desktop or no opener, so
 * the caller prints the URL instead.
 */
function openInBrowser(url: string, env: Env): Promise<boolean> {
  const [command, args] =
    process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["cmd", ["/c", "start", '""', url]]
        : env.DISPLAY || env.WAYLAND_DISPLAY
          ? ["xdg-open", [url]]
          : [undefined, []];
  if (!command) return Promise.resolve(false);
  return new Promise((resolve) => {
    const child = spawn(command, args as string[], { stdio: "ignore", detached: true, env: env as NodeJS.ProcessEnv });
    child.once("error", () => resolve(false));
    child.once("spawn", () => {
      child.unref();
      resolve(true);
    });
  });
}
