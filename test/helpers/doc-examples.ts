import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { MM_BIN } from "./spawn-mm.js";

const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * A fenced code block (```sh, ```js, ```json…) of a Markdown file, with the heading it sits under, the ```output block
 * right after it (if any), and the reason it is not run (a `<!-- doc-test: skip: … -->` line just
 * before it).
 */
export interface ShellBlock {
  file: string;
  line: number;
  heading: string;
  code: string;
  output?: string;
  skip?: string;
}

/** The Markdown files whose examples the suite runs: the README, CONTRIBUTING and docs/. */
export async function documentedFiles(): Promise<string[]> {
  const docs = (await readdir(join(ROOT, "docs"))).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`);
  return ["README.md", ...(existsSync(join(ROOT, "CONTRIBUTING.md")) ? ["CONTRIBUTING.md"] : []), ...docs.sort()];
}

export function shellBlocks(file: string): Promise<ShellBlock[]> {
  return codeBlocks(file, "sh");
}

/** The fenced blocks of one language in a Markdown file, each with its heading and its ```output. */
export async function codeBlocks(file: string, lang: string): Promise<ShellBlock[]> {
  const lines = (await readFile(join(ROOT, file), "utf8")).split("\n");
  const blocks: ShellBlock[] = [];
  let heading = "";
  const fenced = (i: number) => {
    const body: string[] = [];
    while (i + 1 < lines.length && lines[i + 1].trim() !== "```") body.push(lines[++i]);
    return { body: body.join("\n"), end: i + 1 };
  };
  for (let i = 0; i < lines.length; i++) {
    if (/^#{1,6} /.test(lines[i])) heading = lines[i].replace(/^#+ /, "");
    if (lines[i].trim() !== "```" + lang) continue;
    const skip = i > 0 ? /^<!-- doc-test: skip: (.+?) -->$/.exec(lines[i - 1].trim())?.[1] : undefined;
    const { body, end } = fenced(i);
    const block: ShellBlock = { file, line: i + 2, heading, code: body, ...(skip ? { skip } : {}) };
    let next = end + 1;
    while (next < lines.length && lines[next].trim() === "") next++;
    if (lines[next]?.trim() === "```output") {
      const out = fenced(next);
      block.output = out.body;
      i = out.end;
    } else {
      i = end;
    }
    blocks.push(block);
  }
  return blocks;
}

/**
 * Runs a shell example as a reader would paste it: bash, `set -e -o pipefail`, in an empty working
 * directory, with `mm` on the PATH (this checkout's bin/mm.js) and MM_STORE pointing at a store of
 * its own that does not exist yet. Two conventions let examples show what a person does:
 * - a line that runs `mm serve` in the foreground starts it in the background and waits until it
 *   listens, as if in a second terminal; it is stopped when the block ends;
 * - port 8080 is replaced by a free port, so examples can run side by side.
 */
export async function runShell(code: string, dir: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = join(dir, "bin");
  const work = join(dir, "work");
  await mkdir(bin, { recursive: true });
  await mkdir(work, { recursive: true });
  // Examples run "from the clone" (docs/scale-out.md starts ./node_modules/.bin/azurite-blob).
  await symlink(join(REPO, "node_modules"), join(work, "node_modules")).catch(() => undefined);
  await writeFile(join(bin, "mm"), `#!/bin/sh\nexec "${process.execPath}" "${MM_BIN}" "$@"\n`, { mode: 0o755 });
  const port = String(await freePort());
  const script = code
    .replaceAll("8080", port)
    .split("\n")
    .map((line) => (/^\s*mm serve\b/.test(line) && !/&\s*$/.test(line) ? serveInBackground(line, port) : line))
    .join("\n");
  return new Promise((resolve) => {
    execFile(
      "bash",
      ["-c", `set -e -o pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n${script}`],
      {
        cwd: work,
        // No desktop: `mm console` prints its link instead of opening a browser on the developer's screen.
        // Its own config directory too: `mm login` in an example must not log the developer's mm in.
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, MM_STORE: join(dir, "store"), XDG_CONFIG_HOME: join(dir, "config"), LANCEDB_LOG: "error", DISPLAY: "", WAYLAND_DISPLAY: "", ...env },
        timeout: 120_000,
      },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function serveInBackground(line: string, port: string): string {
  return `${line.trim()} 2>>"$PWD/serve.log" &\nfor _ in $(seq 1 300); do curl -s -o /dev/null "http://127.0.0.1:${port}/v1/openapi.json" && break; sleep 0.1; done`;
}

/** A port nothing listens on now (the OS's pick). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * Whether `actual` shows the documented output: every non-empty expected line matches an actual
 * line, in order, where `…` in the expected line stands for any text (an id, a time, a score).
 */
export function showsOutput(actual: string, expected: string): { ok: boolean; missing?: string } {
  const got = actual.split("\n");
  let at = 0;
  for (const want of expected.split("\n").filter((l) => l.trim() !== "")) {
    const pattern = new RegExp(`^${want.trimEnd().split("…").map(escape).join(".*")}\\s*$`);
    while (at < got.length && !pattern.test(got[at].trimEnd())) at++;
    if (at === got.length) return { ok: false, missing: want };
    at++;
  }
  return { ok: true };
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
