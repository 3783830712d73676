import { statSync } from "node:fs";
import { open, readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { MmError } from "../errors.js";
import { withLock } from "./lock.js";

export type Plan = "free" | "hobby" | "enterprise";

export interface AccountRecord {
  id: string;
  name: string;
  plan: Plan;
  createdAt: string;
}

export interface KeyRecord {
  id: string;
  accountId: string;
  name: string;
  /** The key's first 8 characters, for recognising it in listings. */
  prefix: string;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  hash: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface AuthData {
  version: 1;
  accounts: AccountRecord[];
  keys: KeyRecord[];
}

export const DEFAULT_ACCOUNT: AccountRecord = { id: "acct_default", name: "default", plan: "enterprise", createdAt: "1970-01-01T00:00:00.000Z" };

/**
 * Accounts and API key hashes in `<store>/auth.json`. Small, rarely written, read on every request:
 * reads are cached and re-read only when the file's mtime or size changes, so a key revoked by
 * `mm keys revoke` is refused by a running server on its very next request. Writes hold their own
 * lock and replace the file atomically.
 */
export class AuthFile {
  private cache: { stamp: string; data: AuthData } | undefined;

  constructor(private readonly storeDir: string) {}

  private get path(): string {
    return join(this.storeDir, "auth.json");
  }

  async read(): Promise<AuthData> {
    let stamp: string;
    try {
      // Synchronous on purpose: a stat of a local file takes ~7 µs, the promise version ~300 µs
      // (a thread-pool round trip), and this runs on every request.
      const s = statSync(this.path);
      stamp = `${s.mtimeMs}:${s.size}:${s.ino}`;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return withDefault({ version: 1, accounts: [], keys: [] });
      throw err;
    }
    if (this.cache?.stamp === stamp) return this.cache.data;
    let data: AuthData;
    try {
      data = withDefault(JSON.parse(await readFile(this.path, "utf8")) as AuthData);
    } catch (err) {
      throw new MmError("STORE_ERROR", `${this.path} is not valid JSON.`, {}, { cause: err });
    }
    this.cache = { stamp, data };
    return data;
  }

  /** Read-modify-write under the auth lock; `fn` mutates a fresh copy and returns a result. */
  async update<T>(fn: (data: AuthData) => T): Promise<T> {
    return withLock(join(this.storeDir, ".auth-lock"), async () => {
      this.cache = undefined;
      const data = structuredClone(await this.read());
      const result = fn(data);
      const tmp = `${this.path}.${process.pid}.tmp`;
      const fh = await open(tmp, "w", 0o600);
      try {
        await fh.writeFile(JSON.stringify(data, null, 2) + "\n");
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, this.path);
      this.cache = undefined;
      return result;
    });
  }
}

function withDefault(data: AuthData): AuthData {
  if (!data.accounts.some((a) => a.id === DEFAULT_ACCOUNT.id)) data.accounts.unshift({ ...DEFAULT_ACCOUNT });
  return data;
}
