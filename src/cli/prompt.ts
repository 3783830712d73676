import { MmError } from "../errors.js";
import type { CliIO } from "./main.js";

/** True when a person can answer a prompt: both stdin and stderr (where prompts draw) are terminals. */
export function canPrompt(io: CliIO): boolean {
  return Boolean(io.stdin.isTTY && io.stderr.isTTY);
}

/**
 * Asks for a missing value on a terminal. @inquirer/prompts loads only here (≈115 ms). Enter takes
 * `fallback` when there is one; `check` returns true, or what is wrong, and the question is asked
 * again until the answer passes. Blank answers are never accepted.
 */
export async function promptText(io: CliIO, message: string, fallback?: string, check?: (value: string) => true | string): Promise<string> {
  const { input } = await (await import("./inquirer.js")).loadInquirer();
  return input(
    {
      message,
      ...(fallback !== undefined ? { default: fallback } : {}),
      validate: (v: string) => (v.trim() === "" ? "Please type a value (Ctrl-C to stop)." : (check?.(v.trim()) ?? true)),
    },
    { input: io.stdin, output: io.stderr },
  );
}

export async function promptSelect<T extends string>(io: CliIO, message: string, choices: { value: T; name: string; description?: string }[], fallback?: T): Promise<T> {
  const { select } = await (await import("./inquirer.js")).loadInquirer();
  return select<T>({ message, choices, ...(fallback !== undefined ? { default: fallback } : {}) }, { input: io.stdin, output: io.stderr });
}

export async function promptConfirm(io: CliIO, message: string): Promise<boolean> {
  const { confirm } = await (await import("./inquirer.js")).loadInquirer();
  return confirm({ message, default: false }, { input: io.stdin, output: io.stderr });
}

/**
 * Asks before a permanent delete, on a terminal; `--yes` skips the question. Where no one can be
 * asked (a pipe, a script), the delete needs `--yes`, as `gh` does, instead of going ahead
 * unasked. False when the person says no.
 */
export async function confirmDelete(io: CliIO, yes: boolean | undefined, what: () => Promise<string>, command: string): Promise<boolean> {
  if (yes) return true;
  if (!canPrompt(io)) {
    const message = `\`${command}\` deletes for good and can't ask for confirmation without a terminal; add --yes to go ahead.`;
    throw new MmError("VALIDATION_ERROR", message, { details: [{ field: "command", message }] });
  }
  return promptConfirm(io, `Delete ${await what()}? This can't be undone.`);
}
