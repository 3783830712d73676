import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { builtSince } from "../scripts/build-stamp.mjs";

/**
 * Spawned-process tests run bin/mm.js, which runs dist/bundle/: build it once so they test the
 * current source. Not again when dist/ is already newer than everything the build reads (stamped
 * by `prepare`, as after `npm install`, or by this setup's last build) and its code cache is this
 * Node's: the build is 20-25 s of 2 cores before the first test starts.
 */
export default function setup(): void {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const dist = join(root, "dist");
  const ours = join(dist, ".built-for-tests");
  if ((builtSince(root, join(dist, ".built")) || builtSince(root, ours)) && codeCacheV8(dist) === process.versions.v8) return;
  const started = new Date();
  execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(root, "tsconfig.json")], {
    cwd: root,
    stdio: "inherit",
  });
  execFileSync(process.execPath, [join(root, "scripts", "bundle.mjs")], { cwd: root, stdio: "inherit" });
  // Dated when the build started, so that a source saved during it counts as newer.
  writeFileSync(ours, `${started.toISOString()}\n`);
  utimesSync(ours, started, started);
}

/** The V8 the bundle's code cache was recorded for (scripts/code-cache.mjs): another Node can't use it. */
function codeCacheV8(dist: string): string | undefined {
  const manifest = join(dist, "bundle", "code-cache", "manifest.json");
  return existsSync(manifest) ? (JSON.parse(readFileSync(manifest, "utf8")) as { v8?: string }).v8 : undefined;
}
