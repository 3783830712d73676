// What the scripts that generate a checked-in file share: write it, or with --check exit 1 when the
// file in the tree is not what the script generates (a test runs each with --check).
import { readFileSync, writeFileSync } from "node:fs";
import { relative } from "node:path";

/** Writes `text` to `target`, or with --check on the command line compares them; `script` is named in the error. */
export function writeOrCheck(target, text, script) {
  if (process.argv.includes("--check")) {
    if (readFileSync(target, "utf8") !== text) {
      console.error(`${relative(process.cwd(), target)} is out of date: run node ${script} and commit the result`);
      process.exit(1);
    }
  } else {
    writeFileSync(target, text);
    console.log(`wrote ${target} (${text.length} bytes)`);
  }
}
