import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * The project a hook works in, from the agent's working directory: the one place the hooks learn
 * it. Until core/project.ts (issue #55, item 1) is merged, hooks are global: no project is named
 * to the store, and every memory of the user is in scope.
 */
export function projectOf(_cwd: string): string | undefined {
  return undefined;
}

/** The folder `--scope project` writes into: the nearest above `cwd` with a `.mm-project` or a `.git`, else `cwd`. */
export function projectRootOf(cwd: string): string {
  for (let dir = cwd; ; dir = dirname(dir)) {
    if (existsSync(join(dir, ".mm-project")) || existsSync(join(dir, ".git"))) return dir;
    if (dirname(dir) === dir) return cwd;
  }
}
