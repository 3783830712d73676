#!/usr/bin/env node
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

// The CLI bundle is CommonJS, so that its big files compile from the V8 code caches `npm run build`
// recorded (see src/code-cache.ts); the cache must be in place before anything else loads.
const require = createRequire(import.meta.url);
const { useCodeCache } = require("../dist/bundle/code-cache.js");
useCodeCache(fileURLToPath(new URL("../dist/bundle/code-cache/", import.meta.url)), { record: process.env.MM_CODE_CACHE_RECORD === "1" });
const { run } = require("../dist/bundle/main.js");

let finished = false;
// If the event loop ever empties while a command is still pending, never exit 0 as if it worked.
process.on("exit", (code) => {
  if (!finished && code === 0) {
    process.stderr.write("mm: internal error: the command stopped before it finished\n");
    process.exitCode = 1;
  }
});
run(process.argv.slice(2)).then((code) => {
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
