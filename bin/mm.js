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
});
