import { Document, type DocumentDriver } from "./documents.js";

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

/**
 * The account every store has. Its `createdAt` here is a placeholder (kept as written in older
 * auth.json files): the account is as old as its store, so readers take the store's own creation
 * time instead ({@link storeCreatedAt}).
 */
export const DEFAULT_ACCOUNT: AccountRecord = { id: "acct_default", name: "default", plan: "enterprise", createdAt: "1970-01-01T00:00:00.000Z" };

/** When the store was made, as its `config` document records it (undefined if it doesn't). */
export function storeCreatedAt(driver: () => Promise<DocumentDriver>): () => Promise<string | undefined> {
  const config = new Document<{ createdAt?: unknown } | undefined>(driver, "config", { parse: (data) => data as { createdAt?: unknown } | undefined });
  return async () => {
    const at = (await config.read())?.createdAt;
    return typeof at === "string" ? at : undefined;
  };
}

/**
 * Where keys live: accounts and API key hashes are the store's `auth` document
 * (storage/documents.ts): `<store>/auth.json` in a local store, the `auth` row of the `meta`
 * table in object storage. It is changed only under the `auth` lock, and a key revoked by
 * `mm keys revoke` is refused by a running server on its next request (the document's stamp
 * changed). When each key was last used is kept apart (storage/key-use.ts), so that recording
 * a use doesn't rewrite this document.
 */
export function authDocument(driver: () => Promise<DocumentDriver>): Document<AuthData> {
  return new Document<AuthData>(driver, "auth", { parse: (data) => withDefault((data as AuthData | undefined) ?? { version: 1, accounts: [], keys: [] }) });
}

function withDefault(data: AuthData): AuthData {
  if (!data.accounts.some((a) => a.id === DEFAULT_ACCOUNT.id)) data.accounts.unshift({ ...DEFAULT_ACCOUNT });
  return data;
}
