import { createHash } from "node:crypto";
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { MmError } from "../errors.js";

/**
 * Projects (docs/projects.md): a memory may belong to one, and a search inside a project sees that
 * project's memories and the user's global ones (no project), never another project's. A project
 * is found from a folder, without spawning git: the nearest folder at or above it holding a
 * `.mm-project` file (its first non-empty line is the name) or a `.git` (a repository's root).
 */

export interface Project {
  name: string;
  /** The folder the project was found at. */
  root: string;
  from: ".mm-project" | "git";
}

/** A project name: letters, digits, `.`, `_`, `-`, not starting with `.`, at most this long. */
export const MAX_PROJECT_NAME = 100;
const PROJECT_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/** What is wrong with `name` as a project name, in words, or undefined. */
export function projectNameProblem(name: string): string | undefined {
  if (name.length === 0) return "must not be empty";
  if (name.length > MAX_PROJECT_NAME) return `must be at most ${MAX_PROJECT_NAME} characters`;
  if (!PROJECT_NAME.test(name)) return "may hold only letters, digits, '.', '_' and '-', and must not start with '.'";
  return undefined;
}

/** `name` when it is a valid project name; VALIDATION_ERROR naming `flag` (the field or flag the user gave) otherwise. */
export function checkProjectName(name: string, flag = "project"): string {
  const problem = projectNameProblem(name);
  if (problem) throw new MmError("VALIDATION_ERROR", `${flag} ${problem} (got ${JSON.stringify(name.slice(0, 120))}).`, { details: [{ field: flag, message: problem }] });
  return name;
}

/**
 * The project `dir` is in, or null when it is in none. `.mm-project` beats `.git` in the same
 * folder. A repository's name is its folder's name and 8 hex digits of its real path, so two
 * repositories with the same folder name are two projects; moving a repository makes it another
 * project, unless a `.mm-project` file pins the name.
 */
export function findProject(dir: string): Project | null {
  let at: string;
  try {
    at = realpathSync(resolve(dir));
  } catch {
    return null;
  }
  for (;;) {
    const named = join(at, ".mm-project");
    if (isFile(named)) return { name: nameInFile(named), root: at, from: ".mm-project" };
    if (existsSync(join(at, ".git"))) return { name: repositoryName(at), root: at, from: "git" };
    const up = dirname(at);
    if (up === at) return null;
    at = up;
  }
}

/**
 * The CLI's `--project <name|path>`: a value with a `/` (or `\`), or `.`, `..` or `~…`, is a folder,
 * read as the project it is in; anything else is a name. `flag` names the flag in errors.
 */
export function projectFromArg(value: string, cwd: string, flag = "--project"): string {
  const isPath = /[/\\]/.test(value) || value === "." || value === ".." || value.startsWith("~");
  if (!isPath) return checkProjectName(value, flag);
  const path = value.startsWith("~") ? join(homedir(), value.slice(1)) : isAbsolute(value) ? value : resolve(cwd, value);
  if (!isDirectory(path)) throw new MmError("VALIDATION_ERROR", `${flag} ${value}: no such folder.`, { details: [{ field: flag, message: "no such folder" }] });
  const project = findProject(path);
  if (!project) {
    throw new MmError("VALIDATION_ERROR", `${flag} ${value}: that folder is in no project (no git repository or .mm-project file at or above it). Give a project name, or add a .mm-project file naming one.`, {
      details: [{ field: flag, message: "folder is in no project" }],
    });
  }
  return project.name;
}

function repositoryName(root: string): string {
  const hash = createHash("sha256").update(root).digest("hex").slice(0, 8);
  const folder = basename(root).replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[.-]+/, "").slice(0, MAX_PROJECT_NAME - 9) || "repo";
  return `${folder}-${hash}`;
}

/** The first non-empty line of a `.mm-project` file, checked as a project name (the error names the file). */
function nameInFile(path: string): string {
  const text = readFileSync(path, "utf8").slice(0, 4096);
  const name = text.split(/\r?\n/).map((l) => l.trim()).find((l) => l.length > 0) ?? "";
  const problem = projectNameProblem(name);
  if (problem) throw new MmError("VALIDATION_ERROR", `${path}: the project name ${problem} (got ${JSON.stringify(name.slice(0, 120))}).`, { details: [{ field: ".mm-project", message: problem }] });
  return name;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
