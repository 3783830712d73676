import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { MmError, validationError } from "../errors.js";
import { documentsOf, type DocumentSource } from "../storage/database.js";
import { Document } from "../storage/documents.js";
import { Store } from "../storage/store.js";
import { Accounts, type Account } from "./accounts.js";
import { coordinationDirOf } from "./store-location.js";

type Env = Record<string, string | undefined>;

/** A sign-in link works once, for this long (the issue's 15 minutes). */
export const LINK_TTL_MS = 15 * 60_000;
/** A console session lasts this long from sign-in, then the owner asks for a new link. */
export const SESSION_TTL_MS = 12 * 60 * 60_000;
/** Used and expired links are kept this long, so a second try says "already used" or "expired". */
const SPENT_LINK_KEPT_MS = 24 * 60 * 60_000;

interface LinkRecord {
  /** SHA-256 of the token, hex; the token itself is never stored. */
  hash: string;
  accountId: string;
  createdAt: string;
  expiresAt: string;
  usedAt: string | null;
}

interface SessionRecord {
  id: string;
  hash: string;
  accountId: string;
  createdAt: string;
  expiresAt: string;
}

interface ConsoleData {
  version: 1;
  links: LinkRecord[];
  sessions: SessionRecord[];
}

export interface ConsoleLink {
  token: string;
  account: Account;
  expiresAt: string;
}

export interface ConsoleSession {
  /** The session's id (not its secret): for logs. */
  id: string;
  account: Account;
  expiresAt: string;
  /** The per-session CSRF token every state-changing form carries. */
  csrf: string;
}

/**
 * Who may use the management console: one-time sign-in links made by the operator
 * (`mm console link`), and the sessions they open. Both are random 256-bit tokens of which only
 * the SHA-256 is stored, in `<store>/console.json` (mode 600), compared in constant time against
 * every record, so timing tells nothing about which exist. A session acts as exactly one account.
 * `revoke` ends an account's sessions and unused links at once, even on a running server, which
 * re-reads the file whenever it changes.
 */
export class ConsoleAccess {
  private readonly file: Document<ConsoleData>;
  private readonly accounts: Accounts;

  /** `store`: an open store, or a store's location (a directory or an object-store URI). */
  constructor(
    store: DocumentSource,
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.file = new Document<ConsoleData>(documentsOf(store), "console", { parse: (data) => (data as ConsoleData | undefined) ?? { version: 1, links: [], sessions: [] } });
    this.accounts = new Accounts(store, clock);
  }

  /** A one-time sign-in token for the account (id or name), valid for `ttlMs`. */
  async createLink(accountRef: string, ttlMs = LINK_TTL_MS): Promise<ConsoleLink> {
    const account = await this.accounts.resolve(accountRef);
    const token = newToken();
    const now = this.clock();
    const expiresAt = new Date(now.getTime() + ttlMs).toISOString();
    await this.file.update((data) => {
      prune(data, now);
      data.links.push({ hash: sha256(token), accountId: account.id, createdAt: now.toISOString(), expiresAt, usedAt: null });
    });
    return { token, account, expiresAt };
  }

  /** The account a sign-in link is for, without using it up; refuses used, expired and unknown links. */
  async checkLink(token: string): Promise<Account> {
    const link = usable(find((await this.file.read()).links, token), this.clock());
    return this.accounts.resolve(link.accountId);
  }

  /** Uses up a sign-in link and opens a session; returns the session's secret (the cookie's value). */
  async redeem(token: string): Promise<{ secret: string; session: ConsoleSession }> {
    const secret = newToken();
    const now = this.clock();
    const record = await this.file.update((data) => {
      const link = usable(find(data.links, token), now);
      link.usedAt = now.toISOString();
      prune(data, now);
      const session: SessionRecord = {
        id: sha256(secret).slice(0, 16),
        hash: sha256(secret),
        accountId: link.accountId,
        createdAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + SESSION_TTL_MS).toISOString(),
      };
      data.sessions.push(session);
      return session;
    });
    return { secret, session: await this.toSession(record, secret) };
  }

  /** The session a cookie's secret opens; UNAUTHORIZED when unknown, expired, signed out or revoked. */
  async authenticate(secret: string | undefined): Promise<ConsoleSession> {
    if (!secret) throw unauthorized("You are not signed in.");
    const record = find((await this.file.read()).sessions, secret);
    if (!record) throw unauthorized("Your session has ended (signed out, or revoked by the operator).");
    if (Date.parse(record.expiresAt) <= this.clock().getTime()) throw unauthorized("Your session has expired.");
    return this.toSession(record, secret);
  }

  async signOut(secret: string): Promise<void> {
    const hash = sha256(secret);
    await this.file.update((data) => {
      data.sessions = data.sessions.filter((s) => s.hash !== hash);
      prune(data, this.clock());
    });
  }

  /** Ends every session of the account and voids its unused links; a new link grants access again. */
  async revoke(accountRef: string): Promise<{ account: Account; sessions: number; links: number }> {
    const account = await this.accounts.resolve(accountRef);
    const now = this.clock();
    return this.file.update((data) => {
      prune(data, now);
      const sessions = data.sessions.filter((s) => s.accountId === account.id).length;
      const links = data.links.filter((l) => l.accountId === account.id && l.usedAt === null && Date.parse(l.expiresAt) > now.getTime()).length;
      data.sessions = data.sessions.filter((s) => s.accountId !== account.id);
      data.links = data.links.filter((l) => l.accountId !== account.id);
      return { account, sessions, links };
    });
  }

  /** Whether `token` is the CSRF token of the session `secret` opens (constant time). */
  static csrfMatches(secret: string, token: unknown): boolean {
    if (typeof token !== "string") return false;
    const want = Buffer.from(csrfOf(secret));
    const got = Buffer.from(token);
    return got.length === want.length && timingSafeEqual(got, want);
  }

  private async toSession(record: SessionRecord, secret: string): Promise<ConsoleSession> {
    const account = await this.accounts.resolve(record.accountId).catch(() => {
      throw unauthorized("This session's account no longer exists.");
    });
    return { id: record.id, account, expiresAt: record.expiresAt, csrf: csrfOf(secret) };
  }
}

/** The CSRF token is derived from the session's secret, so it needs no storage of its own and dies with the session. */
function csrfOf(secret: string): string {
  return createHash("sha256").update(`csrf\u0000${secret}`).digest("base64url");
}

function newToken(): string {
  return randomBytes(32).toString("base64url");
}

function sha256(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

/** Every record is compared, so the time taken doesn't depend on which one (if any) matches. */
function find<T extends { hash: string }>(records: T[], token: string): T | undefined {
  const wanted = Buffer.from(sha256(token), "hex");
  let found: T | undefined;
  for (const r of records) if (timingSafeEqual(Buffer.from(r.hash, "hex"), wanted)) found = r;
  return found;
}

function usable(link: LinkRecord | undefined, now: Date): LinkRecord {
  if (!link) throw unauthorized("This sign-in link is not valid. Ask for a new one: mm console link --account NAME.");
  if (link.usedAt) throw unauthorized("This sign-in link has already been used. Each link works once: ask for a new one.");
  if (Date.parse(link.expiresAt) <= now.getTime()) throw unauthorized("This sign-in link has expired. Ask for a new one: mm console link --account NAME.");
  return link;
}

function prune(data: ConsoleData, now: Date): void {
  const t = now.getTime();
  data.links = data.links.filter((l) => Date.parse(l.expiresAt) + SPENT_LINK_KEPT_MS > t);
  data.sessions = data.sessions.filter((s) => Date.parse(s.expiresAt) > t);
}

function unauthorized(message: string): MmError {
  return new MmError("UNAUTHORIZED", message);
}

/** Where a running `mm serve` records its address in the store, for `mm console` to find. */
const RUNNING_SERVER = "serve.json";

/**
 * Records that a server listens at `url` on this store (process `pid`), until the returned
 * function removes the record (on shutdown; only if it is still this server's). Synchronous, so
 * that it is written before the server answers its first request. (Written whole, then renamed.)
 */
export function recordRunningServer(storeDir: string, url: string, pid: number, env: Env = {}): () => Promise<void> {
  const dir = coordinationDirOf(storeDir, env);
  // An object store's coordination directory exists only once something of this machine used it.
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, RUNNING_SERVER);
  writeFileSync(`${path}.${pid}.tmp`, JSON.stringify({ url, pid, startedAt: new Date().toISOString() }) + "\n", { mode: 0o600 });
  renameSync(`${path}.${pid}.tmp`, path);
  return async () => {
    const now = await readRunning(storeDir, env);
    if (now?.pid === pid) await rm(path, { force: true });
  };
}

/** Where the record is: the store's directory, or an object store's coordination directory (which `env` places). */
async function readRunning(storeDir: string, env: Env): Promise<{ url: string; pid: number } | undefined> {
  try {
    const r = JSON.parse(await readFile(join(coordinationDirOf(storeDir, env), RUNNING_SERVER), "utf8")) as { url?: unknown; pid?: unknown };
    return typeof r.url === "string" && typeof r.pid === "number" ? { url: r.url, pid: r.pid } : undefined;
  } catch {
    return undefined;
  }
}

/** The address of the `mm serve` running on this store, if its process is alive. */
export async function runningServerOrigin(storeDir: string, env: Env = {}): Promise<string | undefined> {
  const r = await readRunning(storeDir, env);
  if (!r) return undefined;
  try {
    process.kill(r.pid, 0);
  } catch (err) {
    // EPERM: alive, but another user's; ESRCH: gone (a killed server leaves its record behind).
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return undefined;
  }
  const url = new URL(r.url);
  if (url.hostname === "0.0.0.0" || url.hostname === "[::]") url.hostname = "127.0.0.1";
  return url.origin;
}

/**
 * The console's address for a sign-in link: `url` when given (its origin), else the address of
 * the `mm serve` running on this store (it records it while it runs), else the host and port of
 * the store's `server` settings (config.json, what `mm serve` listens on by default), else
 * http://127.0.0.1:8080. A wildcard host (0.0.0.0, ::) becomes 127.0.0.1: pass a URL to link to
 * an address other people can reach.
 */
export async function consoleOrigin(storeDir: string, url?: string, env: Env = {}): Promise<string> {
  if (url !== undefined) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (!parsed || !/^https?:$/.test(parsed.protocol)) throw validationError("url", "must be an http:// or https:// URL, such as http://127.0.0.1:8080");
    return parsed.origin;
  }
  const running = await runningServerOrigin(storeDir, env);
  if (running) return running;
  const server = (await Store.configAt(storeDir, env))?.server ?? {};
  const host = !server.host || server.host === "0.0.0.0" || server.host === "::" ? "127.0.0.1" : server.host;
  return `http://${host.includes(":") ? `[${host}]` : host}:${server.port ?? 8080}`;
}

/** The URL that signs in with a link's token. */
export function signInUrl(origin: string, token: string): string {
  return `${origin}/console/signin?token=${encodeURIComponent(token)}`;
}
