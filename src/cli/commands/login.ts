import { rm } from "node:fs/promises";
import type { Command } from "commander";
import { MmError } from "../../errors.js";
import { readStdin } from "../flags.js";
import type { CliApp } from "../main.js";
import { canPrompt } from "../prompt.js";
import { asMmError, loginFile, remoteContext, resolveRemote, saveLogin } from "../remote.js";

const KEY = /^mm_[0-9A-Za-z]{40}$/;

/**
 * `mm login <url>` saves a server and its API key for `mm --remote`, in the user's config directory
 * (mode 600). The key is asked for with a hidden prompt, or read from stdin when piped, never taken
 * from the command line, where shell history and `ps` would keep it. It is checked against the
 * server before it is saved.
 */
export function registerLogin(program: Command, app: CliApp): void {
  program
    .command("login")
    .description("save a server's URL and API key for --remote (the key from a hidden prompt, or stdin)")
    .argument("[url]", "the server, e.g. https://mm.example.com (default: $MM_URL)")
    .addHelpText("after", "\nExamples:\n  mm login https://mm.example.com            # asks for the key\n  pass show mm | mm login https://mm.example.com\n  mm --remote memories list                 # then: the saved server and key")
    .action(async (url: string | undefined, _opts: unknown, cmd: Command) => {
      url ??= app.io.env.MM_URL || undefined;
      if (!url) throw new MmError("VALIDATION_ERROR", "<url> is required: the server to log in to, e.g. mm login https://mm.example.com.", { details: [{ field: "url", message: "required" }] });
      const key = (await readKey(app)).trim();
      if (!KEY.test(key)) {
        throw new MmError("VALIDATION_ERROR", "That is not an mm API key: one is mm_ followed by 40 letters and digits (`mm keys create` prints it).", {
          details: [{ field: "key", message: "not an mm API key" }],
        });
      }
      const remote = (await resolveRemote({ ...cmd.optsWithGlobals(), remote: url, key }, app.io.env))!;
      const ctx = await remoteContext(remote);
      // One cheap read proves the URL is mm's API and the key works, before anything is saved.
      await ctx.remote.memories.list({ limit: 1 }).catch((err: unknown) => {
        throw asMmError(err, remote.url);
      });
      const file = await saveLogin(app.io.env, { url: remote.url, key });
      await app.output.result({ url: remote.url, file }, () => `Logged in to ${remote.url}. The key is saved in ${file}, readable only by you.\n\`mm --remote <command>\` now uses it.`);
    });

  program
    .command("logout")
    .description("forget the server and key `mm login` saved")
    .action(async () => {
      const file = loginFile(app.io.env);
      await rm(file, { force: true });
      await app.output.result({ file, removed: true }, () => `Removed ${file}.`);
    });
}

async function readKey(app: CliApp): Promise<string> {
  if (canPrompt(app.io)) {
    const { password } = await (await import("../inquirer.js")).loadInquirer();
    return password({ message: "API key:", mask: true }, { input: app.io.stdin, output: app.io.stderr });
  }
  return readStdin(app.io.stdin);
}
