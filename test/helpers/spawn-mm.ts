import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const MM_BIN = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "bin", "mm.js");

export interface MmResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `mm` executable as a user would: a separate node process, piped stdio. */
export function runMm(args: string[], options: { store?: string; input?: string; env?: Record<string, string>; cwd?: string } = {}): Promise<MmResult> {
  const child = spawnMm(args, options);
  if (options.input !== undefined) child.stdin!.end(options.input);
  else child.stdin!.end();
  return collect(child);
}

export function spawnMm(args: string[], options: { store?: string; env?: Record<string, string>; cwd?: string } = {}): ChildProcess {
  return spawn(process.execPath, [MM_BIN, ...args], {
    cwd: options.cwd,
    env: { ...process.env, LANCEDB_LOG: "error", ...(options.store ? { MM_STORE: options.store } : {}), ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
}

export function collect(child: ChildProcess): Promise<MmResult> {
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Parses JSON output the way a script piping into `jq` would: the whole stdout must be JSON. */
export function json<T = any>(r: MmResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON (exit ${r.code}):\n${r.stdout}\nstderr:\n${r.stderr}`);
  }
}
