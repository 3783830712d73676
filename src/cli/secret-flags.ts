import type { Command } from "commander";
import { MmError } from "../errors.js";
import { readStdin } from "./flags.js";
import type { CliApp } from "./main.js";

/**
 * A warning, on a terminal only, for a secret given as a flag's value: any local user can read a
 * process's command line (`ps`), and the shell keeps it in its history. A script that passes one
 * on purpose, with stderr captured, is left in peace.
 */
export function warnSecretFlag(app: CliApp, flag: string, instead: string): void {
  if (app.io.stderr.isTTY) app.output.warn(`${flag} puts a secret on the command line, where \`ps\` and your shell's history show it; ${instead}.`);
}

/**
 * The API key of `--key -` (stdin) or `--key-file <path>`, read once before the command runs and
 * set as `--key`, so every later reader of the flags sees the key itself. A key typed as `--key`
 * gets warnSecretFlag.
 */
export async function settleKeyFlags(program: Command, app: CliApp): Promise<void> {
  const { key, keyFile } = program.opts<{ key?: string; keyFile?: string }>();
  if (key !== undefined && keyFile !== undefined) {
    throw new MmError("VALIDATION_ERROR", "Give the API key one way: --key or --key-file, not both.", { details: [{ field: "--key-file", message: "given with --key" }] });
  }
  let read: string;
  if (keyFile !== undefined) {
    const { readFile } = await import("node:fs/promises");
    read = await readFile(keyFile, "utf8").catch((err: NodeJS.ErrnoException) => {
      throw new MmError("VALIDATION_ERROR", `--key-file: can't read ${keyFile} (${err.code ?? err.message}).`, { details: [{ field: "--key-file", message: "can't be read" }] });
    });
  } else if (key === "-") read = await readStdin(app.io.stdin);
  else {
    if (key !== undefined) warnSecretFlag(app, "--key", "set MM_API_KEY, or pass --key-file <path> or --key - (stdin), or save it once with `mm login`");
    return;
  }
  const flag = keyFile !== undefined ? "--key-file" : "--key -";
  if (!read.trim()) throw new MmError("VALIDATION_ERROR", `${flag} gave an empty key.`, { details: [{ field: flag, message: "empty" }] });
  program.setOptionValue("key", read.trim());
}
