import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Spawned-process tests run bin/mm.js, which runs dist/bundle/: build it once so they test the current source. */
export default function setup(): void {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(root, "tsconfig.json")], {
    cwd: root,
    stdio: "inherit",
  });
  execFileSync(process.execPath, [join(root, "scripts", "bundle.mjs")], { cwd: root, stdio: "inherit" });
}
