// When dist/ is up to date with what the build reads: a stamp file written after a build, newer
// than every input. `prepare` (scripts/prepare.mjs) skips the build then, and so does the test
// suite's global setup (test/global-setup.ts).
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/** What the build reads: its sources, its scripts and its configuration. */
const INPUTS = ["src", "scripts", "package.json", "package-lock.json", "tsconfig.json", "tsconfig.client.json"];

/** The newest modification time among `path` and everything under it. */
function newest(path) {
  if (!existsSync(path)) return 0;
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(s.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

/** Whether the stamp at `stamp` is at least as new as every input of the build of `root`. */
export function builtSince(root, stamp) {
  return existsSync(stamp) && statSync(stamp).mtimeMs >= Math.max(...INPUTS.map((p) => newest(join(root, p))));
}
