#!/usr/bin/env node
// `npm start`: a first run of mm on the default store (or $MM_STORE / --store). It adds three
// memories for the user "quickstart" (once; re-running reuses them) and searches them by meaning.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const bin = fileURLToPath(new URL("../bin/mm.js", import.meta.url));
const extra = process.argv.slice(2);
const mm = (args, opts = {}) => {
  const r = spawnSync(process.execPath, [bin, ...args, ...extra], { encoding: "utf8", ...opts });
  if (r.status !== 0) {
    process.stderr.write(r.stderr);
    process.exit(r.status ?? 1);
  }
  return r.stdout;
};
/** An argument as a shell needs it: quoted when it holds spaces or special characters. */
const quote = (a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);
const show = (title, args) => {
  console.log(`\n$ mm ${args.map(quote).join(" ")}`);
  spawnSync(process.execPath, [bin, ...args, ...extra, "--format", "table"], { stdio: "inherit" });
};

// `mm init` creates the store with the default model if there is none, and otherwise only reports it.
const store = JSON.parse(mm(["init", "--json"]));
console.log(`Store: ${store.store}${store.created ? " (created now)" : ""}`);
const existing = JSON.parse(mm(["memories", "list", "--user", "quickstart", "--json"]));
if (existing.pagination.total === 0) {
  for (const text of [
    "I drink green tea in the mornings now, not coffee",
    "My sister Maya moved to Lisbon last spring",
    "The car needs new winter tyres before December",
  ]) {
    mm(["memories", "add", text, "--user", "quickstart", "--tag", "quickstart", "--json"]);
  }
}
show("list", ["memories", "list", "--user", "quickstart"]);
show("search", ["memories", "search", "what do I drink in the morning?", "--user", "quickstart"]);
show("search by meaning alone", ["memories", "search", "where does my sibling live", "--user", "quickstart", "--mode", "semantic", "--threshold", "0.3"]);
console.log("\nNext: `npm link` puts `mm` on your PATH; `mm --help` lists every command.");
