import { JsonFile } from "./json-file.js";

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
 * Accounts and API key hashes in `<store>/auth.json` (see JsonFile): a key revoked by
 * `mm keys revoke` is refused by a running server on its very next request.
 */
export class AuthFile extends JsonFile<AuthData> {
  constructor(storeDir: string) {
    super(storeDir, "auth.json", (data) => withDefault(data ?? { version: 1, accounts: [], keys: [] }));
  }
}

function withDefault(data: AuthData): AuthData {
  if (!data.accounts.some((a) => a.id === DEFAULT_ACCOUNT.id)) data.accounts.unshift({ ...DEFAULT_ACCOUNT });
  return data;
}
