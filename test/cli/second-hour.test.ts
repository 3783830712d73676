import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/run-cli.js";
import { collect, runMm, spawnMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

/** Issue #26: what a newcomer met in their second hour, each checked the way they met it. */

const tempDir = useTempDirs();
const STACK = /\bat .+:\d+:\d+|Unhandled 'error' event|INTERNAL_ERROR|internal error/;

/** A store with `n` memories of about `size` characters each, added as one batch (test embedder). */
async function storeWith(n: number, size = 40): Promise<string> {
  const store = join(await tempDir(), "store");
  const lines = Array.from({ length: n }, (_, i) => JSON.stringify({ content: `Note ${i} ${"about the garden and the weather ".repeat(Math.ceil(size / 32))}`.slice(0, size), userId: "alice" }));
  const r = await runCli(store, ["memories", "add", "--batch", "-"], { input: lines.join("\n") + "\n" });
  expect(r.code, r.stderr).toBe(0);
  return store;
}

describe("mm export: the person's mistakes and pipes", () => {
  it("-o naming a directory or a file in a missing directory: a message about --output, no crash", async () => {
    const store = await storeWith(2);
    const dir = await tempDir();
    for (const [target, why] of [
      [dir, `it is a directory; name a file in it, e.g. ${dir}/export.jsonl`],
      [join(dir, "nodir", "x.jsonl"), `there is no directory ${join(dir, "nodir")}`],
    ]) {
      for (const json of [true, false]) {
        const r = await runMm(["export", "-o", target, ...(json ? [] : ["--format", "table"])], { store });
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).not.toMatch(STACK);
        if (json) expect(JSON.parse(r.stderr).error).toMatchObject({ code: "VALIDATION_ERROR", message: `--output ${target} can't be written: ${why}.` });
        else expect(r.stderr).toBe(`mm: --output ${target} can't be written: ${why}.\n`);
      }
    }
  });

  it("`mm export | head -2` stops quietly with exit 0, like `mm memories list | head`", async () => {
    const store = await storeWith(300, 2000);
    const child = spawnMm(["export"], { store });
    child.stdin!.end();
    let seen = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      seen += d;
      if (seen.split("\n").length > 2) child.stdout!.destroy(); // head -2 has its lines and exits
    });
    let stderr = "";
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
    expect(stderr).not.toMatch(/EPIPE|INTERNAL_ERROR|internal error/);
    expect(code, stderr).toBe(0);
    expect(JSON.parse(seen.split("\n")[0])).toHaveProperty("format");
  });
});
