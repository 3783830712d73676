import { open, rename } from "node:fs/promises";

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
