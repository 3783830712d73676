#!/usr/bin/env node
// `npm run bench:locomo [-- --mode hybrid|semantic|keyword] [--threshold 0.5] [--out file]`:
// the LoCoMo retrieval benchmark (../shared/bench/locomo-recall.mjs) against a real `mm serve`
// on a fresh temporary store. The data is read from ../shared at run time, never copied.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startMmServe } from "./mm-serve.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const shared = resolve(root, "..", "shared");
const bench = join(shared, "bench", "locomo-recall.mjs");
const data = join(shared, "data", "locomo-dev", "locomo-dev.json");
if (!existsSync(bench) || !existsSync(data)) {
  console.error(`needs ${bench} and ${data}`);
  process.exit(2);
}
const passThrough = process.argv.slice(2);
const store = mkdtempSync(join(tmpdir(), "mm-locomo-"));
const env = { ...process.env, MM_STORE: store, LANCEDB_LOG: "error" };
const BIN = join(root, "bin", "mm.js");
try {
  const key = JSON.parse(spawnSync(process.execPath, [BIN, "keys", "create", "--name", "locomo", "--json"], { env, encoding: "utf8" }).stdout).key;
  const server = await startMmServe(BIN, env);
  const r = spawnSync(process.execPath, [bench, "--data", data, "--base", server.url, "--key", key, "--k", "10", ...passThrough], { stdio: "inherit" });
  await server.stop();
  process.exitCode = r.status ?? 1;
} finally {
  rmSync(store, { recursive: true, force: true });
}
