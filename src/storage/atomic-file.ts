import { renameSync, statSync, writeFileSync } from "node:fs";
import { open, rename } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/**
 * Replaces `path` with `text` so that a crash leaves either the old file or the new one, never
 * half of either: write a temp file beside it (mode 600), fsync it, rename it over the target.
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  const fh = await open(tmp, "w", 0o600);
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
}

/**
 * Replaces a file a person keeps (an agent's settings, AGENTS.md, an exported note) whole: a temp
 * file beside it, renamed over it, so a crash leaves the old text or the new one. The file keeps
 * the mode it had (a new one gets the usual 644 less the umask); no fsync: these are the person's
 * files, not the store's.
 */
export function replaceFileSync(path: string, text: string): void {
  const mode = statSync(path, { throwIfNoEntry: false })?.mode;
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.mm-tmp`);
  writeFileSync(tmp, text, mode === undefined ? {} : { mode: mode & 0o777 });
  renameSync(tmp, path);
}
