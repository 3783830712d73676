import { access, constants } from "node:fs/promises";
import { MmError } from "../errors.js";

/** What a file-system error code means, in words a person reads (not ENOENT and a syscall). */
export const FS_REASONS: Record<string, string> = {
  ENOTDIR: "part of that path is a file, not a directory",
  EISDIR: "it is a directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EROFS: "the file system is read-only",
  ENOSPC: "no space left on the device",
  EDQUOT: "disk quota exceeded",
  ENAMETOOLONG: "the path is too long",
  ELOOP: "too many symbolic links",
};

/**
 * Checks that the file a command is to read can be read, before anything starts: "no file
 * nope.jsonl" rather than Node's "ENOENT: no such file or directory, access".
 */
export async function assertReadable(path: string): Promise<void> {
  await access(path, constants.R_OK).catch((err: NodeJS.ErrnoException) => {
    const code = err.code ?? "";
    const message = code === "ENOENT" ? `no file ${path}` : `${path} can't be read: ${FS_REASONS[code] ?? err.message}`;
    // No `cause`: main.ts would take the file-system error under it for a STORE_ERROR.
    throw new MmError("VALIDATION_ERROR", `${message}.`, { details: [{ field: "command", message }] });
  });
}
