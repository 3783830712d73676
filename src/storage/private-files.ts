import { isMainThread } from "node:worker_threads";
import { chmod, lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

/**
 * Makes every file and directory this process creates from now on private to its owner (600 and
 * 700), whatever umask it started with. A store holds private data, and LanceDB creates most of
 * its files itself, so explicit modes on mm's own files would not be enough. Process-wide on
 * purpose: a process that opens a store creates nothing another user should read. Worker threads
 * may not change the umask, and create no store files.
 */
export function restrictUmask(): void {
  if (!isMainThread) return;
  const current = process.umask(0o077);
  process.umask(current | 0o077);
}

/**
 * Tightens a store made by an older mm, or copied with loose modes: directories 700, files 600.
 * Costs one stat when the store's directory is already private. The directory itself is fixed
 * last, so a walk cut short is done again at the next open.
 */
export async function tightenStore(dir: string): Promise<void> {
  if (((await lstat(dir)).mode & 0o077) === 0) return;
  const walk = async (path: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(path, { withFileTypes: true });
    } catch {
      return; // vanished meanwhile (a lock released, a temp file renamed)
    }
    for (const entry of entries) {
      const child = join(path, entry.name);
      if (entry.isSymbolicLink()) continue;
      if (entry.isDirectory()) {
        await walk(child);
        await chmod(child, 0o700).catch(() => undefined);
      } else {
        await chmod(child, 0o600).catch(() => undefined);
      }
    }
  };
  await walk(dir);
  await chmod(dir, 0o700);
}
