import { findProject } from "../../core/project.js";

/**
 * The project a hook works in, from the agent's working directory (core/project.ts): the one place
 * the hooks learn it. Its memories and the user's global ones are recalled, never another
 * project's; a capture is stored in it. Undefined outside any project: every memory of the user.
 */
export function projectOf(cwd: string): string | undefined {
  return findProject(cwd)?.name;
}

/** The folder `--scope project` writes into: the project's root, else `cwd` itself. */
export function projectRootOf(cwd: string): string {
  return findProject(cwd)?.root ?? cwd;
}
