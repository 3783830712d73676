import { spawnSync } from "node:child_process";
import { readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "./helpers/temp.js";

const tempDir = useTempDirs();
const RUNNER = fileURLToPath(new URL("./helpers/code-cache-runner.mjs", import.meta.url));
const CODE_CACHE = fileURLToPath(new URL("../dist/code-cache.js", import.meta.url));

/** `throw new Error` starts at column 23 of line 1: the stack must say so, cache or not. */
const HEAD = 'function boom(){throw new Error("boom")}';
const PADDING = `\n/*${"x".repeat(20_000)}*/\n`;

/** A CommonJS file over the 16 KB the cache starts at, which requires a sibling and reports on itself. */
function source(answer: number, extra = ""): string {
  return `${HEAD}
let stack; try { boom(); } catch (e) { stack = e.stack.split("\\n")[1].trim(); }
module.exports = { answer: ${answer}, sibling: require("./sibling.js"), file: __filename, dir: __dirname, thisIsExports: this === module.exports, stack };
${extra}${PADDING}`;
}

interface Outcome {
  value: { answer: number; sibling: string; file: string; dir: string; thisIsExports: boolean; stack: string };
  uses: { file: string; outcome: string }[];
}

function load(dir: string, mode: "record" | "use" | "stop", file: string): Outcome {
  const r = spawnSync(process.execPath, [RUNNER, CODE_CACHE, join(dir, "cache"), mode, file], { encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Outcome;
}

async function fixture(text = source(42)): Promise<{ dir: string; file: string }> {
  const dir = await tempDir();
  await writeFile(join(dir, "sibling.js"), 'module.exports = "sibling";\n');
  const file = join(dir, "big.js");
  await writeFile(file, text);
  return { dir, file };
}

describe("code cache", () => {
  it("records a file at exit, then compiles it from the cache into the same module", async () => {
    const { dir, file } = await fixture();
    const plain = spawnSync(process.execPath, ["-p", `JSON.stringify(require(${JSON.stringify(file)}))`], { encoding: "utf8" });
    const recorded = load(dir, "record", file);
    expect(recorded.uses).toEqual([{ file, outcome: "recorded" }]);
    const manifest = JSON.parse(await readFile(join(dir, "cache", "manifest.json"), "utf8"));
    expect(manifest.v8).toBe(process.versions.v8);
    expect(manifest.entries).toEqual([{ file, sha1: expect.stringMatching(/^[0-9a-f]{40}$/), cache: expect.stringMatching(/^big\.js-[0-9a-f]{12}\.v8cache$/) }]);

    const cached = load(dir, "use", file);
    expect(cached.uses).toEqual([{ file, outcome: "used" }]);
    // Same exports, require, __filename, __dirname and `this` as Node's own compile, and stack
    // positions that point into the file, not into the wrapper around it.
    expect(cached.value).toEqual(JSON.parse(plain.stdout));
    expect(cached.value).toMatchObject({ answer: 42, sibling: "sibling", file, dir, thisIsExports: true });
    expect(cached.value.stack).toContain(`${file}:1:23`);
    expect(recorded.value).toEqual(cached.value);
  });

  it("compiles the ordinary way again once stopped", async () => {
    const { dir, file } = await fixture();
    load(dir, "record", file);
    expect(load(dir, "use", file).uses).toEqual([{ file, outcome: "used" }]);
    expect(load(dir, "stop", file)).toMatchObject({ uses: [], value: { answer: 42, sibling: "sibling" } });
  });

  it("never uses the cache of a file whose bytes changed, even at the same length", async () => {
    const { dir, file } = await fixture();
    load(dir, "record", file);
    await writeFile(file, source(43)); // V8 alone checks only the length: it would run the old code
    const after = load(dir, "use", file);
    expect(after.uses).toEqual([{ file, outcome: "changed" }]);
    expect(after.value.answer).toBe(43);
  });

  it("falls back to a plain compile when V8 rejects the cache or it was made by another V8", async () => {
    const { dir, file } = await fixture();
    load(dir, "record", file);
    const cacheDir = join(dir, "cache");
    const [cacheFile] = (await readdir(cacheDir)).filter((f) => f.endsWith(".v8cache"));
    const bytes = await readFile(join(cacheDir, cacheFile!));
    await writeFile(join(cacheDir, cacheFile!), Buffer.alloc(bytes.length, 7));
    const rejected = load(dir, "use", file);
    expect(rejected.uses).toEqual([{ file, outcome: "rejected" }]);
    expect(rejected.value.answer).toBe(42);

    const manifestFile = join(cacheDir, "manifest.json");
    await writeFile(manifestFile, JSON.stringify({ ...JSON.parse(await readFile(manifestFile, "utf8")), v8: "0.0.0" }));
    const otherV8 = load(dir, "use", file);
    expect(otherV8.uses).toEqual([]);
    expect(otherV8.value.answer).toBe(42);

    await writeFile(manifestFile, "{ not json");
    expect(load(dir, "use", file)).toMatchObject({ uses: [], value: { answer: 42 } });
  });

  it("records neither small files nor files that may hold an import(), which a cached script cannot run", async () => {
    const withImport = await fixture(source(1, 'module.exports.later = () => import("node:fs");\n'));
    expect(load(withImport.dir, "record", withImport.file).uses).toEqual([]);
    expect(JSON.parse(await readFile(join(withImport.dir, "cache", "manifest.json"), "utf8")).entries).toEqual([]);

    // A method named `import` is not an import().
    const method = await fixture(source(2, "module.exports.later = (t) => t.import(1);\n"));
    expect(load(method.dir, "record", method.file).uses).toEqual([{ file: method.file, outcome: "recorded" }]);

    const small = await fixture(source(3).replace(PADDING, "\n"));
    expect(load(small.dir, "record", small.file).uses).toEqual([]);
  });
});
