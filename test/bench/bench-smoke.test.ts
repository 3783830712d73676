import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { collect } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const BENCH = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "scripts", "bench.mjs");

/**
 * A short run of `npm run bench` (the real script, model, store and `mm serve`), so the benchmark
 * can't silently rot. Small tuning values seal segments and make maintenance build their vector
 * indexes on 8,000 rows, so the segment and index paths (recall against exact search) run too.
 * No figure is asserted against a speed target: timing belongs to the benchmark, not to tests.
 */
describe("npm run bench --quick", () => {
  it("measures every section, prints the table and writes the JSON", async () => {
    const out = join(await tempDir(), "bench.json");
    // Not spawnSync: a minute-long synchronous wait blocks this test worker's event loop, and
    // vitest's worker RPC times out after 60 s ("Timeout calling onTaskUpdate").
    const child = spawn(process.execPath, [BENCH, "--quick", "--sizes", "8000", "--index-min-rows", "2000", "--exact-max-rows", "100", "--segment-rows", "3000", "--out", out], {
      env: { ...process.env, LANCEDB_LOG: "error" },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 400_000,
    });
    const r = await collect(child);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("mm bench ·");
    const json = JSON.parse(await readFile(out, "utf8"));
    expect(Object.keys(json.figures)).toEqual(["ingest", "cold start", "write", "search @8k", "remote CLI", "transfer"]);
    expect(json.figures.transfer["  Markdown import over JSON Lines import"].value).toBeGreaterThan(0);
    expect(json.figures.ingest["mm memories add --batch"].value).toBeGreaterThan(0);
    const cold = json.figures["cold start"];
    expect(cold["mm memories list"].value).toBeGreaterThan(0);
    // The cold search stands beside a whole process that only loads the model and embeds.
    const modelProcess = cold["use-lite model load, whole process (start-up, load, one embedding, exit)"].value;
    expect(modelProcess).toBeGreaterThan(cold["use-lite model load, in process (after Node's start-up)"].value);
    expect(cold["mm memories search"].floor).toBe(modelProcess);
    const write = json.figures.write["HTTP create, 8 clients, single memories"];
    expect(write.value).toBeGreaterThan(0);
    expect(write.floor).toMatch(/^embedder [\d.]+ texts\/s$/);
    const search = json.figures["search @8k"];
    expect(search["fill 0 → 8k (mm import, vectors given)"].value).toBeGreaterThan(0);
    expect(search["segments (sealed + active)"].value).toBeGreaterThanOrEqual(2);
    expect(search["vector index (built by maintenance)"].value).toMatch(/^IVF_FLAT in [1-9]\d* of \d+ segments, \d+ partitions$/);
    expect(search["account-wide recall@10 vs exact search"].value).toBeGreaterThanOrEqual(0.9);
    expect(search["per user recall@10 vs exact search"].value).toBeGreaterThanOrEqual(0.9);
    expect(search["semantic p50 / p95 (HTTP)"].value).toMatch(/^[\d.]+ \/ [\d.]+$/);
    expect(search["mm serve peak RSS"].value).toBeGreaterThan(50);
    // mm --remote beside curl, for a get, a list and a search, over the floor of a bare Node request.
    const remote = json.figures["remote CLI"];
    for (const op of ["get", "list", "search"]) {
      expect(remote[`${op}: curl, p50 / p95`].value).toMatch(/^[\d.]+ \/ [\d.]+$/);
      expect(remote[`${op}: mm --remote … --json, p50 / p95`].value).toMatch(/^[\d.]+ \/ [\d.]+$/);
      expect(remote[`  ${op}: mm --remote over curl, p50 (floor: node:http get over curl)`].target).toBe("≤ 50 ms");
    }
  }, 420_000);
});
