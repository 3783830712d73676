import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { isStoreUri } from "./location.js";

type Env = Record<string, string | undefined>;

/**
 * Where the store lives: `--store`, then `MM_STORE`, then the XDG data dir
 * (`$XDG_DATA_HOME/mm`, else `~/.local/share/mm`). A path is resolved to an absolute one so the
 * messages that name it are unambiguous; an object-store URI (`az://…`) is kept as written
 * (storage/location.ts reads it), never turned into a local directory.
 */
export function resolveStorePath(flag: string | undefined, env: Env): string {
  const given = flag?.trim() ? flag : env.MM_STORE?.trim() ? env.MM_STORE : undefined;
  if (given) return isStoreUri(given) ? given.trim() : resolve(given);
  const dataHome = env.XDG_DATA_HOME && env.XDG_DATA_HOME.trim() ? env.XDG_DATA_HOME : join(env.HOME || homedir(), ".local", "share");
  return resolve(dataHome, "mm");
}
