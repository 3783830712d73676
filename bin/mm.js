#!/usr/bin/env node
"use strict";
// CommonJS (bin/package.json says so): an ES module as the entry starts Node's ES module loader,
// ~3 ms of every command (docs/client.md, "Measured").
const { join } = require("node:path");

const bundle = join(__dirname, "..", "dist", "bundle");
const argv = process.argv.slice(2);
// The CLI bundle is CommonJS, so that its big files compile from the V8 code caches `npm run build`
// recorded (see src/code-cache.ts); the cache must be in place before anything else loads. Not for
// `mm --remote` (or MM_URL): the one cached file it loads saves less than loading the cache costs
// (node:crypto and node:vm, a hash of each file), ~2 ms at p50 (docs/client.md, "Measured").
// main.ts makes the same test before choosing which commands to load.
const remote = Boolean(process.env.MM_URL) || argv.some((a) => a === "--remote" || a.startsWith("--remote="));
if (!remote || process.env.MM_CODE_CACHE_RECORD === "1") {
  const { useCodeCache } = require(join(bundle, "code-cache.js"));
  useCodeCache(join(bundle, "code-cache", "/"), { record: process.env.MM_CODE_CACHE_RECORD === "1" });
}
const { run } = require(join(bundle, "main.js"));

let finished = false;
// If the event loop ever empties while a command is still pending, never exit 0 as if it worked.
process.on("exit", (code) => {
  if (!finished && code === 0) {
    process.stderr.write("mm: internal error: the command stopped before it finished\n");
    process.exitCode = 1;
  }
});
run(argv).then((code) => {
  finished = true;
  process.exitCode = code;
  // The command is done: exit once the output is written, instead of waiting for whatever is
  // still winding down (a model load started early, a closing native handle). If a stream never
  // confirms, the process still ends on its own, with the same code.
  flushed(process.stdout, () => flushed(process.stderr, () => process.exit(code)));
});

function flushed(stream, then) {
  if (stream.destroyed || !stream.writable) return then();
  stream.write("", () => then());
}
