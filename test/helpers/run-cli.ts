import { Readable, Writable } from "node:stream";
import { run } from "../../src/cli/main.js";
import { createTestEmbedder } from "./test-embedder.js";

/** A stream that keeps what was written, and says whether it is a terminal. */
export class Capture extends Writable {
  text = "";
  constructor(
    readonly isTTY: boolean,
    readonly columns?: number,
  ) {
    super();
  }
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A non-TTY stdin holding `input` (or nothing). */
export function stdinOf(input?: string): Readable & { isTTY: boolean } {
  return Object.assign(Readable.from(input !== undefined ? [Buffer.from(input)] : []), { isTTY: false });
}

/** Runs the whole CLI in-process on `store`, with the deterministic test embedder and captured streams. */
export async function runCli(
  store: string,
  args: string[],
  opts: { tty?: boolean; columns?: number; input?: string; env?: Record<string, string>; clock?: () => Date } = {},
): Promise<CliResult> {
  const stdout = new Capture(opts.tty ?? false, opts.columns);
  const stderr = new Capture(opts.tty ?? false);
  const code = await run(["--store", store, ...args], {
    stdout,
    stderr,
    stdin: stdinOf(opts.input),
    env: { ...opts.env },
    embedder: createTestEmbedder(),
    clock: opts.clock,
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}
