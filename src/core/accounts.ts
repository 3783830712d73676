import { createHash, randomInt, timingSafeEqual } from "node:crypto";
import { MmError, validationError } from "../errors.js";
import { PLAN_QUOTAS } from "../schemas/enums.js";
import { authDocument, DEFAULT_ACCOUNT, storeCreatedAt, type AccountRecord, type AuthData, type KeyRecord, type Plan } from "../storage/auth-file.js";
import { documentsOf, type DocumentSource } from "../storage/database.js";
import type { Document } from "../storage/documents.js";
import { keyUseOf, type KeyUse } from "../storage/key-use.js";
import { newId } from "./ids.js";

export { DEFAULT_ACCOUNT };
export type { AccountRecord, Plan };

export interface Account {
  id: string;
  name: string;
  plan: Plan;
  /** Monthly operations; null is unlimited. */
  quota: number | null;
  createdAt: string;
}

export interface KeyInfo {
  id: string;
  accountId: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revoked: boolean;
  revokedAt: string | null;
}

export interface Principal {
  account: Account;
  keyId: string;
}

/** The warning that comes with a new key wherever it is shown (CLI and console). */
export const KEY_SHOWN_ONCE = "store it now, it can't be shown again.";

/** Input schemas load on first use: resolving the account is on every command's path, zod is not. */
const schemas = () => import("../schemas/account.js");

const KEY_RANDOM_CHARS = 40; // base62: ≈238 bits
/** What a key can look like (decisions.md): `mm_` and at least 32 base62 characters. Longer is allowed, not absurdly so. */
const KEY_FORM = /^mm_[0-9A-Za-z]{32,200}$/;
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** A key's last use is recorded at most this often per key and process. */
const TOUCH_EVERY_MS = 60_000;
/**
 * Keys an account may have that aren't revoked. Rate limits are per key, so each key adds a
 * minute's allowance: the cap bounds how far keys multiply it (and how large auth.json grows).
 */
export const MAX_ACTIVE_KEYS = 50;
/** Revoked keys an account keeps listed; the longest-revoked are forgotten as new keys are made. */
const MAX_REVOKED_KEYS = 50;

/**
 * Accounts and API keys (the spec's management console, as a service the CLI calls). Every
 * resource belongs to an account; a key acts as its account and sees nothing of any other.
 */
export class Accounts {
  private readonly file: Document<AuthData>;
  /** Last uses are kept apart from auth.json (storage/key-use.ts). */
  private readonly keyUse: KeyUse;
  /** When this process last recorded each key's use. */
  private readonly touched = new Map<string, number>();
  private readonly storeCreatedAt: () => Promise<string | undefined>;

  /** `store`: an open store, or a store's location (a directory or an object-store URI). */
  constructor(
    store: DocumentSource,
    private readonly clock: () => Date = () => new Date(),
  ) {
    const documents = documentsOf(store);
    this.file = authDocument(documents);
    this.keyUse = keyUseOf(documents);
    this.storeCreatedAt = storeCreatedAt(documents);
  }

  /** The default account dated as its store is (auth.json holds only a placeholder for it). */
  private async dated(account: Account): Promise<Account> {
    if (account.id !== DEFAULT_ACCOUNT.id || account.createdAt !== DEFAULT_ACCOUNT.createdAt) return account;
    const createdAt = await this.storeCreatedAt();
    return createdAt ? { ...account, createdAt } : account;
  }

  async create(raw: unknown): Promise<Account> {
    const input = (await schemas()).parseCreateAccount(raw);
    return this.file.update((data) => {
      if (data.accounts.some((a) => a.name.toLowerCase() === input.name.toLowerCase())) {
        throw new MmError("VALIDATION_ERROR", `An account named "${input.name}" already exists.`, { details: [{ field: "name", message: "already exists" }] });
      }
      const record: AccountRecord = { id: newId("acct"), name: input.name, plan: input.plan, createdAt: this.clock().toISOString() };
      data.accounts.push(record);
      return toAccount(record);
    });
  }

  /**
   * Makes an account with exactly this id, name and plan unless it exists (imports of a whole
   * store); true when it was created. An account of another id with the same name is refused.
   */
  async ensure(raw: { id: unknown; name: unknown; plan: unknown; createdAt: unknown }): Promise<boolean> {
    const { name, plan } = (await schemas()).parseCreateAccount({ name: raw.name, plan: raw.plan });
    if (typeof raw.id !== "string" || !/^acct_[A-Za-z0-9_]{1,64}$/.test(raw.id)) throw validationError("id", "must be an account id (acct_…)");
    const id = raw.id;
    return this.file.update((data) => {
      const existing = data.accounts.find((a) => a.id === id);
      if (existing) {
        // A whole store's default account, restored: it keeps the date it had there.
        if (existing.id === DEFAULT_ACCOUNT.id && existing.createdAt === DEFAULT_ACCOUNT.createdAt && typeof raw.createdAt === "string") existing.createdAt = raw.createdAt;
        return false;
      }
      if (data.accounts.some((a) => a.name.toLowerCase() === name.toLowerCase())) throw validationError("name", `another account is named "${name}"`);
      data.accounts.push({ id, name, plan, createdAt: typeof raw.createdAt === "string" ? raw.createdAt : this.clock().toISOString() });
      return true;
    });
  }

  async list(): Promise<{ items: Account[] }> {
    return { items: await Promise.all((await this.file.read()).accounts.map((a) => this.dated(toAccount(a)))) };
  }

  /** Finds an account by id or by name (case-insensitive). */
  async resolve(idOrName: string): Promise<Account> {
    // Not dated: this is on every command's path, and no caller shows the default account's date.
    return toAccount(findAccount(await this.file.read(), idOrName));
  }

  async setPlan(idOrName: string, raw: unknown): Promise<Account> {
    const { plan } = (await schemas()).parseSetPlan(raw);
    return this.dated(
      await this.file.update((data) => {
        const account = findAccount(data, idOrName);
        account.plan = plan;
        return toAccount(account);
      }),
    );
  }

  /** Creates a key and returns it in full, the only time it is ever shown; only its SHA-256 is kept. */
  async createKey(raw: unknown): Promise<KeyInfo & { key: string }> {
    const input = (await schemas()).parseCreateKey(raw);
    const key = `mm_${Array.from({ length: KEY_RANDOM_CHARS }, () => BASE62[randomInt(62)]).join("")}`;
    return this.file.update((data) => {
      const account = findAccount(data, input.account);
      const own = data.keys.filter((k) => k.accountId === account.id);
      if (own.filter((k) => !k.revokedAt).length >= MAX_ACTIVE_KEYS) {
        throw new MmError("VALIDATION_ERROR", `Account ${account.name} has ${MAX_ACTIVE_KEYS} active keys, the most an account may have; revoke one first.`, {
          details: [{ field: "account", message: `has ${MAX_ACTIVE_KEYS} active keys` }],
        });
      }
      const revoked = own.filter((k) => k.revokedAt).sort((a, b) => (a.revokedAt! < b.revokedAt! ? -1 : 1));
      const forget = new Set(revoked.slice(0, Math.max(0, revoked.length - MAX_REVOKED_KEYS + 1)).map((k) => k.id));
      if (forget.size) data.keys = data.keys.filter((k) => !forget.has(k.id));
      const record: KeyRecord = {
        id: newId("key"),
        accountId: account.id,
        name: input.name,
        prefix: key.slice(0, 8),
        hash: sha256(key),
        createdAt: this.clock().toISOString(),
        lastUsedAt: null,
        revokedAt: null,
      };
      data.keys.push(record);
      return { key, ...toKeyInfo(record) };
    });
  }

  async listKeys(accountIdOrName?: string): Promise<{ items: KeyInfo[] }> {
    const data = await this.file.read();
    const accountId = accountIdOrName === undefined ? undefined : findAccount(data, accountIdOrName).id;
    const keys = data.keys.filter((k) => accountId === undefined || k.accountId === accountId);
    return { items: await Promise.all(keys.map(async (k) => toKeyInfo({ ...k, lastUsedAt: await this.lastUse(k) }))) };
  }

  /**
   * Revokes at once: servers re-read the key file when it changes, so the next request is refused.
   * With `accountId` (the console), another account's key is NOT_FOUND, exactly like an unknown one.
   * With `byPrefix` (`mm keys revoke`, whose list shows ids shortened), `id` may be the start of
   * one key's id; a start that several ids share is refused, never guessed.
   */
  async revokeKey(id: string, accountId?: string, options: { byPrefix?: boolean } = {}): Promise<KeyInfo> {
    const revoked = await this.file.update((data) => {
      const own = data.keys.filter((k) => accountId === undefined || k.accountId === accountId);
      let key = own.find((k) => k.id === id);
      if (!key && options.byPrefix && id.length > "key_".length) {
        const starting = own.filter((k) => k.id.startsWith(id));
        if (starting.length > 1) {
          const message = `begins ${starting.length} keys' ids; give more of it`;
          throw new MmError("VALIDATION_ERROR", `Invalid request: id: ${id} ${message}.`, { details: [{ field: "id", message: `${id} ${message}` }] });
        }
        key = starting[0];
      }
      if (!key) throw new MmError("NOT_FOUND", `Key ${id} does not exist.`);
      key.revokedAt ??= this.clock().toISOString();
      return key;
    });
    return toKeyInfo({ ...revoked, lastUsedAt: await this.lastUse(revoked) });
  }

  /**
   * Resolves an `Authorization` header to its account. Every failure is UNAUTHORIZED, with a
   * message saying which (missing, malformed, unknown, revoked). Hashes are compared in constant
   * time against every key, so timing reveals nothing about which keys exist.
   */
  async authenticate(header: string | undefined | null): Promise<Principal> {
    if (header === undefined || header === null || header === "") throw unauthorized("Missing Authorization header; send `Authorization: Bearer mm_…`.");
    const match = /^Bearer +(\S+)\s*$/i.exec(header);
    if (!match) throw unauthorized("Malformed Authorization header; expected `Bearer mm_…`.");
    const token = match[1];
    if (!token.startsWith("mm_")) throw unauthorized("Malformed API key; keys begin with mm_.");
    if (!KEY_FORM.test(token)) throw unauthorized("Malformed API key; a key is mm_ followed by at least 32 letters and digits.");
    const data = await this.file.read();
    const wanted = Buffer.from(sha256(token), "hex");
    let found: KeyRecord | undefined;
    for (const k of data.keys) {
      if (timingSafeEqual(Buffer.from(k.hash, "hex"), wanted)) found = k;
    }
    if (!found) throw unauthorized("Unknown API key.");
    if (found.revokedAt) throw unauthorized("This API key has been revoked.");
    const account = data.accounts.find((a) => a.id === found!.accountId);
    if (!account) throw unauthorized("This API key's account no longer exists.");
    this.touch(found.id);
    return { account: toAccount(account), keyId: found.id };
  }

  /** Records the key's use now (at most once per TOUCH_EVERY_MS in this process); never fails a request. */
  private touch(keyId: string): void {
    const now = this.clock();
    const last = this.touched.get(keyId);
    if (last !== undefined && now.getTime() - last < TOUCH_EVERY_MS) return;
    if (this.touched.size >= 10_000) this.touched.clear();
    this.touched.set(keyId, now.getTime());
    // Not awaited: in object storage a use is a commit, and the request shouldn't wait for it.
    void this.keyUse.touch(keyId, now);
  }

  /** A key's last use: its key-use file's mtime, or what auth.json recorded (stores from before key-use/). */
  private async lastUse(k: KeyRecord): Promise<string | null> {
    const touched = await this.keyUse.lastUse(k.id);
    if (!touched) return k.lastUsedAt;
    return k.lastUsedAt && k.lastUsedAt > touched ? k.lastUsedAt : touched;
  }
}

function findAccount(data: AuthData, idOrName: string): AccountRecord {
  const account = data.accounts.find((a) => a.id === idOrName) ?? data.accounts.find((a) => a.name.toLowerCase() === idOrName.toLowerCase());
  if (!account) throw new MmError("NOT_FOUND", `Account ${idOrName} does not exist.`);
  return account;
}

function toAccount(r: AccountRecord): Account {
  return { id: r.id, name: r.name, plan: r.plan, quota: PLAN_QUOTAS[r.plan], createdAt: r.createdAt };
}

function toKeyInfo(k: KeyRecord): KeyInfo {
  return { id: k.id, accountId: k.accountId, name: k.name, prefix: k.prefix, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt, revoked: k.revokedAt !== null, revokedAt: k.revokedAt };
}

function sha256(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

function unauthorized(message: string): MmError {
  return new MmError("UNAUTHORIZED", message);
}
