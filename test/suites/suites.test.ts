import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { collect } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * Short runs of the three on-demand suites, through their real scripts (a real `mm serve` with
 * the real model, real kill -9), so they keep working and keep passing: `npm run fuzz`,
 * `npm run crash` and `npm run soak` run the same scripts longer.
 */

const tempDir = useTempDirs();
const SCRIPTS = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "scripts");

async function runSuite(script: string, args: string[]): Promise<{ code: number | null; stdout: string; json: any }> {
  const out = join(await tempDir(), "out.json");
  // Not spawnSync: a long synchronous wait blocks the worker's event loop and vitest's RPC times out.
  const child = spawn(process.execPath, [join(SCRIPTS, script), ...args, "--out", out], { env: { ...process.env, LANCEDB_LOG: "error" }, stdio: ["ignore", "pipe", "pipe"] });
  const r = await collect(child);
  return { code: r.code, stdout: r.stdout + r.stderr, json: JSON.parse(await readFile(out, "utf8")) };
}

describe("the hardening suites, short runs", () => {
  it("npm run fuzz: 5,000 seeded requests, no 5xx, no answer without the envelope, no hang, the server alive", async () => {
    const { code, stdout, json } = await runSuite("fuzz.mjs", ["--requests", "5000", "--seed", "1"]);
    expect(code, stdout).toBe(0);
    expect(json.requests).toBe(5000);
    expect(json.failures).toEqual([]);
    expect(Object.keys(json.statuses).filter((s) => Number(s) >= 500)).toEqual([]);
    // Every kind of request was sent, and the errors the fuzzer expects were met.
    expect(Object.keys(json.kinds).sort()).toEqual(["api", "body", "console", "consoleForm", "encoding", "fetch", "headers", "malformed", "mcp", "mcpBatch", "nesting", "pipelined", "query", "size"]);
    // MCP batches over 16 messages are refused, console reads from other sites too; and every format was imported without an internal error.
    expect(json.statuses["403"]).toBeGreaterThan(0);
    expect(json.imports.map((i: { format: string }) => i.format)).toEqual(["mm", "mcp-memory", "mem0"]);
    for (const i of json.imports) expect([0, 2, 3, 4]).toContain(i.exit);
    for (const status of ["200", "201", "400", "401", "404", "405", "413", "431"]) expect(json.statuses[status], status).toBeGreaterThan(0);
    expect(json.serverErrorsLogged).toBe(0);
  }, 240_000);

  it("npm run crash: a CLI batch and mm serve killed with kill -9; nothing acknowledged lost, nothing unstored billed", async () => {
    const { code, stdout, json } = await runSuite("crash.mjs", ["--trials", "2", "--seed", "3"]);
    expect(code, stdout).toBe(0);
    expect([json.cliTrials, json.serverTrials]).toEqual([1, 1]);
    expect(json.acknowledgedButLost).toBe(0);
    expect(json.billedButNotStored).toBe(0);
    expect(json.failedTrials).toBe(0);
  }, 240_000);

  it("npm run soak: mixed traffic with the server's RSS sampled, every request answered", async () => {
    const { code, stdout, json } = await runSuite("soak.mjs", ["--requests", "240", "--samples", "4", "--max-growth-pct", "1000", "--memory-every-ms", "100"]);
    expect(code, stdout).toBe(0);
    expect(json.requests).toBe(240);
    expect(json.failures).toEqual([]);
    expect(json.samples.length).toBeGreaterThanOrEqual(5);
    for (const s of json.samples) expect(s.rssMb).toBeGreaterThan(50);
    // MM_DEBUG_MEMORY_MS: the server's own view (V8 heap, LanceDB's caches) rides along with the samples.
    const last = json.samples.at(-1).server;
    expect(last, stdout).toBeDefined();
    expect(last.rssMb).toBeGreaterThan(50);
    expect(last.heapUsedMb).toBeGreaterThan(1);
    expect(last.heapUsedMb).toBeLessThan(last.rssMb);
    expect(last.lanceCacheMb).toBeGreaterThanOrEqual(0);
    expect(last.lanceCacheItems).toBeGreaterThan(0);
    expect(stdout).toContain("mm soak ·");
  }, 240_000);

  it("npm run soak --mix: only the named groups and requests are sent, each sample has the heap's peak; an unknown name is refused", async () => {
    const { code, stdout, json } = await runSuite("soak.mjs", ["--requests", "160", "--samples", "2", "--max-growth-pct", "1000", "--memory-every-ms", "50", "--mix", "mcp,console search"]);
    expect(code, stdout).toBe(0);
    expect(json.failures).toEqual([]);
    const sent = Object.entries(json.mix as Record<string, number>).filter(([, n]) => n > 0).map(([name]) => name);
    expect(new Set(Object.keys(json.mix))).toEqual(new Set(["mcp search", "mcp read", "mcp add", "mcp delete", "mcp batch", "console search"]));
    expect(sent.length).toBeGreaterThanOrEqual(4);
    expect(Object.values(json.mix as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(160);
    const last = json.samples.at(-1).server;
    expect(last.heapPeakMb, stdout).toBeGreaterThanOrEqual(last.heapUsedMb);

    const refused = await collect(spawn(process.execPath, [join(SCRIPTS, "soak.mjs"), "--requests", "10", "--mix", "mcp,bogus"], { stdio: ["ignore", "pipe", "pipe"] }));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("--mix: unknown bogus");
  }, 240_000);
});
