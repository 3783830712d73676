/**
 * `prepare` (scripts/prepare.mjs): `npm install` builds dist/ once, and again only when something
 * the build reads changed, so installing the clone into another project doesn't rebuild it every
 * time. Run on a tree of its own whose build writes a file and counts.
 */
import { spawnSync } from "node:child_process";
import { mkdir, readFile, utimes, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "scripts", "prepare.mjs");
const prepare = (root: string) => spawnSync(process.execPath, [SCRIPT, "--root", root], { encoding: "utf8" });

describe("prepare", () => {
  it("builds when dist/ is missing or older than src/, says so, and otherwise leaves dist/ alone", async () => {
    const root = await tempDir();
    await mkdir(join(root, "src"));
    await writeFile(join(root, "src", "a.ts"), "export const a = 1;\n");
    // The tree's build appends a line to dist/builds: how many times it ran.
    const build = `const fs = require("fs"); fs.mkdirSync("dist", { recursive: true }); fs.appendFileSync("dist/builds", "x");`;
    await writeFile(join(root, "package.json"), JSON.stringify({ name: "t", version: "1.0.0", scripts: { build: `node -e '${build}'` } }));
    const builds = async () => (await readFile(join(root, "dist", "builds"), "utf8")).length;

    const first = prepare(root);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toContain("mm: building dist/ from src/");
    expect(await builds()).toBe(1);

    const again = prepare(root);
    expect(again.status).toBe(0);
    expect(again.stdout).toContain("up to date");
    expect(await builds()).toBe(1);

    // A source newer than the last build: built again.
    const later = new Date(Date.now() + 5_000);
    await utimes(join(root, "src", "a.ts"), later, later);
    expect(prepare(root).stdout).toContain("mm: building");
    expect(await builds()).toBe(2);
  });

  it("fails, and writes no stamp, when the build fails", async () => {
    const root = await tempDir();
    await mkdir(join(root, "src"));
    await writeFile(join(root, "package.json"), JSON.stringify({ name: "t", version: "1.0.0", scripts: { build: "node -e 'process.exit(3)'" } }));
    expect(prepare(root).status).toBe(3);
    expect(prepare(root).stdout).toContain("mm: building"); // still not up to date
  });
});
