import type { CliIO } from "./main.js";

/** True when a person can answer a prompt: both stdin and stderr (where prompts draw) are terminals. */
export function canPrompt(io: CliIO): boolean {
  return Boolean(io.stdin.isTTY && io.stderr.isTTY);
}

/** Asks for a missing value on a terminal. @inquirer/prompts loads only here (≈115 ms). */
export async function promptText(io: CliIO, message: string): Promise<string> {
  const { input } = await (await import("./inquirer.js")).loadInquirer();
  return input({ message }, { input: io.stdin, output: io.stderr });
}

export async function promptSelect<T extends string>(io: CliIO, message: string, choices: { value: T; name: string; description?: string }[]): Promise<T> {
  const { select } = await (await import("./inquirer.js")).loadInquirer();
  return select<T>({ message, choices }, { input: io.stdin, output: io.stderr });
}
