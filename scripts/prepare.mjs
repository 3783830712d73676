#!/usr/bin/env node
// `prepare` (run by `npm install`, in this clone and when another project installs it from a
// path): builds dist/ from src/, unless dist/ is already up to date with everything the build
// reads. Installing the clone into another project used to rebuild it every time (76-169 s), even
// while `mm serve` ran from it. Says what it does, since the build prints nothing for a minute.
// A package installed from the registry has no src/ (dist/ ships built): nothing to do.
//
//   node scripts/prepare.mjs [--root dir]   (--root: the tree to build; tests use a tree of their own)
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { builtSince } from "./build-stamp.mjs";

const args = process.argv.slice(2);
const root = args.includes("--root") ? resolve(args[args.indexOf("--root") + 1]) : resolve(dirname(fileURLToPath(import.meta.url)), "..");
if (!existsSync(join(root, "src"))) process.exit(0);

const stamp = join(root, "dist", ".built");
if (builtSince(root, stamp)) {
  console.log("mm: dist/ is up to date with src/: not rebuilt");
  process.exit(0);
}
console.log("mm: building dist/ from src/ (about a minute on 2 cores)…");
const started = Date.now();
const r = spawnSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: "inherit" });
if (r.status !== 0) process.exit(r.status ?? 1);
mkdirSync(dirname(stamp), { recursive: true });
writeFileSync(stamp, `${new Date().toISOString()}\n`); // written last: its time is after every file the build wrote
console.log(`mm: built in ${Math.round((Date.now() - started) / 1000)} s`);
