#!/usr/bin/env node
// `npm run bench:locomo [-- --mode hybrid|semantic|keyword] [--threshold 0.5] [--out file]`:
// the LoCoMo retrieval benchmark (../shared/bench/locomo-recall.mjs) against a real `mm serve`
// on a fresh temporary store. The data is read from ../shared at run time, never copied.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

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
  const server = spawn(process.execPath, [BIN, "serve", "--port", "0", "--rate-read", "1000000", "--rate-write", "1000000", "--rate-search", "1000000"], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const url = await new Promise((ok, fail) => {
    server.once("exit", (c) => fail(new Error(`mm serve exited ${c}`)));
    createInterface({ input: server.stderr }).on("line", (l) => {
      try {
        const e = JSON.parse(l);
        if (e.event === "listening") ok(e.url);
      } catch {}
    });
  });
  const r = spawnSync(process.execPath, [bench, "--data", data, "--base", url, "--key", key, "--k", "10", ...passThrough], { stdio: "inherit" });
  server.kill("SIGTERM");
  await new Promise((ok) => server.once("exit", ok));
  process.exitCode = r.status ?? 1;
} finally {
  rmSync(store, { recursive: true, force: true });
}
