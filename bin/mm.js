#!/usr/bin/env node
import { run } from "../dist/bundle/main.js";

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
