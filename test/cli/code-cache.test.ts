import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MM_BIN, runMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BUNDLE = join(ROOT, "dist", "bundle");
const REPORTER = fileURLToPath(new URL("../helpers/code-cache-report.mjs", import.meta.url));
const resolve = createRequire(join(ROOT, "package.json")).resolve;
/** What a cold search compiles that is worth caching: LanceDB's JavaScript, Arrow and TensorFlow.js (and the CLI's chunks, see `cliChunks`). */
const SEARCH_FILES = [
  join(BUNDLE, "lancedb.cjs"),
  join(dirname(resolve("apache-arrow")), "Arrow.es2015.min.js"),
  resolve("@energetic-ai/core"),
];

/** How to spawn `mm` on `store` so that it writes what its code cache did (see code-cache-report.mjs), and the reader. */
function reporting(dir: string, store: string) {
  const report = join(dir, "uses.json");
  return {
    node: ["--import", REPORTER, MM_BIN],
    env: { ...process.env, MM_STORE: store, LANCEDB_LOG: "error", MM_CODE_CACHE_REPORT: report, MM_CODE_CACHE_MODULE: join(BUNDLE, "code-cache.js") },
    uses: async () => JSON.parse(await readFile(report, "utf8")) as { file: string; outcome: string }[],
  };
}

/**
 * The CLI's own chunks among `files`. Their names are content hashes, and main.js itself is now
 * small (commands load on demand) and compiles about as fast as a cache is read, so the test
 * asks for at least one, without naming it.
 */
function cliChunks(files: string[]): string[] {
  return files.filter((f) => f.startsWith(BUNDLE) && !f.endsWith("lancedb.cjs"));
}

describe("the CLI's code cache", () => {
  it("is recorded by the build for the files a search compiles, from their current bytes", async () => {
    const manifest = JSON.parse(await readFile(join(BUNDLE, "code-cache", "manifest.json"), "utf8")) as {
      v8: string;
      entries: { file: string; sha1: string }[];
    };
    expect(manifest.v8).toBe(process.versions.v8);
    expect(manifest.entries.map((e) => e.file)).toEqual(expect.arrayContaining(SEARCH_FILES));
    expect(cliChunks(manifest.entries.map((e) => e.file))).not.toEqual([]);
    for (const { file, sha1 } of manifest.entries) {
      expect(createHash("sha1").update(await readFile(file)).digest("hex"), file).toBe(sha1);
    }
  });

  it("is what a spawned `mm memories search` compiles those files from", async () => {
    const dir = await tempDir();
    const store = join(dir, "store");
    expect((await runMm(["memories", "add", "the cache is warm", "--user", "u"], { store })).code).toBe(0);
    const spawned = reporting(dir, store);
    const r = spawnSync(process.execPath, [...spawned.node, "memories", "search", "is the cache warm?", "--user", "u", "--threshold", "0"], {
      env: spawned.env,
      encoding: "utf8",
    });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).results[0].content).toBe("the cache is warm");
    const uses = await spawned.uses();
    expect(uses.filter((u) => u.outcome !== "used")).toEqual([]);
    expect(uses.map((u) => u.file)).toEqual(expect.arrayContaining(SEARCH_FILES));
    expect(cliChunks(uses.map((u) => u.file))).not.toEqual([]);
  });

  it("is not what a long-running `mm serve` compiles the model and the store from", async () => {
    const dir = await tempDir();
    const spawned = reporting(dir, join(dir, "store"));
    const child = spawn(process.execPath, [...spawned.node, "serve", "--port", "0"], { env: spawned.env, stdio: ["ignore", "ignore", "pipe"] });
    // Listening means the model is loaded (serve warms it first) and the store is open.
    for await (const line of createInterface({ input: child.stderr! })) if (line.includes('"listening"')) break;
    child.kill("SIGTERM");
    await once(child, "exit");
    const uses = await spawned.uses();
    expect(cliChunks(uses.filter((u) => u.outcome === "used").map((u) => u.file))).not.toEqual([]);
    expect(uses.map((u) => u.file)).not.toContain(resolve("@energetic-ai/core"));
    expect(uses.map((u) => u.file)).not.toContain(join(BUNDLE, "lancedb.cjs"));
  });
});
