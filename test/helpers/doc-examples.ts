import { execFile } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { MM_BIN } from "./spawn-mm.js";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** A fenced ```sh block of a Markdown file, with the heading it sits under. */
export interface ShellBlock {
  file: string;
  line: number;
  heading: string;
  code: string;
}

export async function shellBlocks(file: string): Promise<ShellBlock[]> {
  const lines = (await readFile(join(ROOT, file), "utf8")).split("\n");
  const blocks: ShellBlock[] = [];
  let heading = "";
  for (let i = 0; i < lines.length; i++) {
    if (/^#{1,6} /.test(lines[i])) heading = lines[i].replace(/^#+ /, "");
    if (lines[i].trim() !== "```sh") continue;
    const start = i + 1;
    while (i + 1 < lines.length && lines[i + 1].trim() !== "```") i++;
    blocks.push({ file, line: start, heading, code: lines.slice(start, i + 1).join("\n") });
    i++;
  }
  return blocks;
}

/**
 * Runs a shell example as a reader would paste it: bash, `set -e -o pipefail`, in an empty working
 * directory, with `mm` on the PATH (this checkout's bin/mm.js) and MM_STORE pointing at a store of
 * its own that does not exist yet.
 */
export async function runShell(code: string, dir: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = join(dir, "bin");
  const work = join(dir, "work");
  await mkdir(bin, { recursive: true });
  await mkdir(work, { recursive: true });
  await writeFile(join(bin, "mm"), `#!/bin/sh\nexec "${process.execPath}" "${MM_BIN}" "$@"\n`, { mode: 0o755 });
  return new Promise((resolve) => {
    execFile(
      "bash",
      ["-c", `set -e -o pipefail\n${code}`],
      {
        cwd: work,
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, MM_STORE: join(dir, "store"), LANCEDB_LOG: "error", ...env },
        timeout: 120_000,
      },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
