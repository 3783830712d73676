import { homedir } from "node:os";
import { join, resolve } from "node:path";

type Env = Record<string, string | undefined>;

/**
 * Where the store lives: `--store`, then `MM_STORE`, then the XDG data dir
 * (`$XDG_DATA_HOME/mm`, else `~/.local/share/mm`). Resolved to an absolute path so the
 * messages that name it are unambiguous.
 */
export function resolveStorePath(flag: string | undefined, env: Env): string {
  if (flag && flag.trim()) return resolve(flag);
  if (env.MM_STORE && env.MM_STORE.trim()) return resolve(env.MM_STORE);
  const dataHome = env.XDG_DATA_HOME && env.XDG_DATA_HOME.trim() ? env.XDG_DATA_HOME : join(env.HOME || homedir(), ".local", "share");
  return resolve(dataHome, "mm");
}
