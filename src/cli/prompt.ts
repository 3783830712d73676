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
 * Asks before a permanent delete, on a terminal only: scripts (no TTY) are never prompted, and
 * `--yes` skips the question. False when the person says no.
 */
export async function confirmDelete(io: CliIO, yes: boolean | undefined, what: () => Promise<string>): Promise<boolean> {
  if (yes || !canPrompt(io)) return true;
  return promptConfirm(io, `Delete ${await what()}? This can't be undone.`);
}
