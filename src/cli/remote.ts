// Synchronous: a remote command reads one small file, and node:fs/promises (with libuv's thread
// pool, which its first call starts) cost ~1.5 ms of CPU at p50 of a remote command's start.
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { ERROR_TABLE, MmError, type ErrorCode } from "../errors.js";
import type { Env } from "../embedder/index.js";
import type { MmClient } from "../client/index.js";
import type { BatchOptions } from "../core/memories.js";

/**
 * `mm --remote`: the commands that are API operations run against a server through the typed
 * client instead of on a local store. Each command file loads its core module through `service()`:
 * on a remote context the same function names are answered by the client, so a command's flags,
 * validation messages and rendering are the very ones it has locally, and its `--json` is the
 * server's body, as it always was.
 */

export interface Remote {
  url: string;
  key?: string;
}

/** A context that acts through a server; core functions are never called with it. */
export interface RemoteContext {
  remote: MmClient;
  url: string;
  /** The status of the last answer (entity create: 200 for an existing entity, 201 for a new one). */
  lastStatus(): number;
}

/**
 * Whether a command runs through a server (`--remote`, MM_URL), from its flags alone: for what a
 * command does only locally before it opens anything (a local check that would load zod, ~5 ms of
 * CPU for a remote command, to warm a model the server has).
 */
export function viaRemote(cmd: { optsWithGlobals(): { remote?: unknown } }, env: Env): boolean {
  return cmd.optsWithGlobals().remote !== undefined || Boolean(env.MM_URL);
}

export function isRemote(ctx: unknown): ctx is RemoteContext {
  return Boolean(ctx && typeof ctx === "object" && "remote" in ctx);
}

/** Where `mm login` keeps the server and key: `$XDG_CONFIG_HOME/mm/remote.json`, else `~/.config/mm/remote.json`. */
export function loginFile(env: Env): string {
  const configHome = env.XDG_CONFIG_HOME?.trim() ? env.XDG_CONFIG_HOME : join(env.HOME || homedir(), ".config");
  return join(configHome, "mm", "remote.json");
}

export async function readLogin(env: Env): Promise<Remote | undefined> {
  try {
    const saved = JSON.parse(readFileSync(loginFile(env), "utf8")) as Partial<Remote>;
    return typeof saved.url === "string" ? { url: saved.url, key: typeof saved.key === "string" ? saved.key : undefined } : undefined;
  } catch {
    return undefined;
  }
}

/** Writes the login file readable by its owner only (600, in a 700 directory), replaced whole. */
export async function saveLogin(env: Env, remote: Remote): Promise<string> {
  const file = loginFile(env);
  const dir = join(file, "..");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify(remote) + "\n", { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, file);
  return file;
}

/**
 * The server a command runs against, if any: `--remote <url>` or MM_URL, and `--remote` alone for
 * the server `mm login` saved. The key: `--key`, else MM_API_KEY, else the one saved for that server.
 */
export async function resolveRemote(globals: { remote?: string | boolean; key?: string }, env: Env): Promise<Remote | undefined> {
  // `--remote` alone (true, or "" once main.ts rewrote it) names the server `mm login` saved.
  const bare = globals.remote === true || globals.remote === "";
  const named = bare ? undefined : typeof globals.remote === "string" ? globals.remote : env.MM_URL || undefined;
  if (named === undefined && !bare) return undefined;
  const saved = await readLogin(env);
  const url = named ?? saved?.url;
  if (!url) {
    throw new MmError("VALIDATION_ERROR", "--remote needs a server: give its URL (--remote https://…), set MM_URL, or save one with `mm login <url>`.", {
      details: [{ field: "--remote", message: "no server URL" }],
    });
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    parsed = new URL("invalid:");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new MmError("VALIDATION_ERROR", `--remote must be an http:// or https:// URL, not "${url}".`, { details: [{ field: "--remote", message: "not an http(s) URL" }] });
  }
  const sameServer = saved && saved.url.replace(/\/+$/, "") === url.replace(/\/+$/, "");
  return { url, key: globals.key ?? (env.MM_API_KEY || undefined) ?? (sameServer ? saved.key : undefined) };
}

export async function remoteContext(remote: Remote): Promise<RemoteContext> {
  const [{ createClient }, { nodeFetch }] = await Promise.all([import("../client/index.js"), import("./http-fetch.js")]);
  let status = 0;
  const client = createClient({ baseUrl: remote.url, apiKey: remote.key, fetch: nodeFetch, onResponse: (res) => void (status = res.status) });
  return { remote: client, url: remote.url, lastStatus: () => status };
}

/**
 * The client's error as the CLI's: the server's code, message and extra fields, and so its exit
 * code, with every text made printable. An answer that isn't the API's is REMOTE_UNAVAILABLE.
 */
export function asMmError(err: unknown, url: string): unknown {
  if (!(err instanceof Error) || err.name !== "MmApiError") return err;
  const e = err as Error & { code: string; status: number; extra: Record<string, unknown> };
  const message = printable(e.message);
  if (e.code in ERROR_TABLE) return new MmError(e.code as ErrorCode, message, printable(e.extra), { cause: err });
  const what = e.status === 0 ? "could not be reached" : "did not answer as an mm server does";
  return new MmError("REMOTE_UNAVAILABLE", `The server at ${url} ${what}: ${message.replace(/\.$/, "")}.`, {}, { cause: err });
}

// Escape sequences (CSI, OSC, and two-character ones), then any control, line-breaking or bidi character left.
const ESCAPES = /\u001b\[[0-?]*[ -/]*[@-~]|\u009b[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b\u009c]*(\u0007|\u001b\\|\u009c)?|\u001b[@-_]?/g;
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]+/g;

/**
 * A server's text as it may reach a terminal: without escape sequences (which could clear the
 * screen, retitle the window or fake mm's own lines) and with each run of control characters a
 * single space. Strings inside objects and arrays (an error's `details`) too.
 */
function printable<T>(value: T): T {
  if (typeof value === "string") return value.replace(ESCAPES, "").replace(CONTROLS, " ").trim() as T;
  if (Array.isArray(value)) return value.map(printable) as T;
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [printable(k), printable(v)])) as T;
  return value;
}

type Remoted = Record<string, unknown>;

/** What each core module's functions do over the API, by name, with the same arguments after the context. */
const REMOTE: Record<string, (ctx: RemoteContext) => Remoted> = {
  memories: (ctx) => ({
    createMemory: (raw: never) => ctx.remote.memories.create(raw),
    searchMemories: (raw: never) => ctx.remote.memories.search(raw),
    listMemories: (query: never) => ctx.remote.memories.list(query),
    getMemory: (id: string) => ctx.remote.memories.get(id),
    updateMemory: (id: string, patch: never) => ctx.remote.memories.update(id, patch),
    deleteMemory: (id: string) => ctx.remote.memories.delete(id),
    memoryHistory: (id: string) => ctx.remote.memories.history(id),
    supersedeMemory: (id: string, body: never) => ctx.remote.memories.supersede(id, body),
    restoreMemory: (id: string) => ctx.remote.memories.restore(id),
    createMemoryWithExtraction: () => Promise.reject(localOnly("`mm memories add --extract`")),
    addMemoriesFromLines: (lines: AsyncIterable<string> | Iterable<string>, options: BatchOptions = {}) => addLines(ctx, lines, options),
  }),
  entities: (ctx) => ({
    createEntity: async (raw: never) => {
      const entity = await ctx.remote.entities.create(raw);
      return { entity, created: ctx.lastStatus() === 201 };
    },
    listEntities: (query: never) => ctx.remote.entities.list(query),
    getEntity: (id: string) => ctx.remote.entities.get(id),
    updateEntity: (id: string, patch: never) => ctx.remote.entities.update(id, patch),
    deleteEntity: (id: string) => ctx.remote.entities.delete(id),
    listEntityMemories: (id: string, query: never) => ctx.remote.entities.memories(id, query),
    mergeEntities: (id: string, body: never) => ctx.remote.entities.merge(id, body),
  }),
  relations: ({ remote }) => ({
    createRelation: (raw: never) => remote.relations.create(raw),
    listRelations: (query: never) => remote.relations.list(query),
    getRelation: (id: string) => remote.relations.get(id),
    updateRelation: (id: string, patch: never) => remote.relations.update(id, patch),
    deleteRelation: (id: string) => remote.relations.delete(id),
  }),
  graph: ({ remote }) => ({
    neighbors: (id: string, query: never) => remote.entities.neighbors(id, query),
    shortestPath: (from: string, to: string, query: Record<string, unknown> = {}) => remote.graph.path({ ...query, from, to } as never),
    exportGraph: (query: never) => remote.graph.export(query),
  }),
};

/**
 * `mm --remote memories add --batch`: one create per line, in order, each reported once the server
 * has stored it, as a local batch reports a line once its commit is done. A line the server refuses
 * fails alone; a server that stops answering, or refuses the key, stops the batch.
 */
async function addLines(ctx: RemoteContext, lines: AsyncIterable<string> | Iterable<string>, options: BatchOptions) {
  if (options.extract) throw localOnly("`mm memories add --batch --extract`");
  const { batchLineInput } = await import("../core/memories.js");
  let [added, failed, line] = [0, 0, 0];
  for await (const text of lines) {
    line++;
    if (text.trim() === "") continue;
    try {
      const memory = await ctx.remote.memories.create(batchLineInput(text, options.defaults ?? {}) as never);
      added++;
      options.onResult?.({ line, memory });
    } catch (err) {
      // A line that isn't JSON fails here, as it does locally; the server's refusals come as the client's errors.
      const error = err instanceof MmError ? err : asMmError(err, ctx.url);
      if (!(error instanceof MmError) || ["REMOTE_UNAVAILABLE", "UNAUTHORIZED"].includes(error.code)) throw error;
      failed++;
      options.onResult?.({ line, error });
    }
    if (options.signal?.aborted) break;
  }
  return { added, failed, stopped: options.signal?.aborted ?? false };
}

/** Values a command reads from a core module besides its functions, loaded with the command (not with the CLI: zod). */
const CONSTANTS: Record<string, () => Promise<Record<string, unknown>>> = {
  graph: async () => ({ DEFAULT_PATH_MAX_DEPTH: (await import("../schemas/graph.js")).DEFAULT_PATH_MAX_DEPTH }),
};

/**
 * A core module as a command uses it: `(await core()).searchMemories(ctx, raw)`. On a local
 * context each call goes to the module itself, loaded on first use; on a remote one, to the client,
 * and the module (with LanceDB behind it) is never loaded. A function with no endpoint says which
 * part of the command needs a local store.
 */
export function service<T extends object>(name: keyof typeof REMOTE, load: () => Promise<T>): () => Promise<T> {
  let constants: Record<string, unknown> = {};
  const proxy = new Proxy({} as T, {
    get(_target, prop: string) {
      if (prop === "then") return undefined;
      if (prop in constants) return constants[prop];
      return async (ctx: unknown, ...args: unknown[]) => {
        if (!isRemote(ctx)) return ((await load()) as Record<string, (...a: unknown[]) => unknown>)[prop](ctx, ...args);
        const fn = REMOTE[name](ctx)[prop] as ((...a: unknown[]) => Promise<unknown>) | undefined;
        if (!fn) throw localOnly(`this ${name} command, with these flags,`);
        try {
          return await fn(...args);
        } catch (err) {
          throw asMmError(err, ctx.url);
        }
      };
    },
  });
  return async () => {
    if (CONSTANTS[name]) constants = await CONSTANTS[name]();
    return proxy;
  };
}

/** An entity named by the person, id or name, resolved on the server as `resolveEntityRef` does locally. */
export async function remoteEntityRef(ctx: RemoteContext, ref: string): Promise<string> {
  if (/^ent_[0-9A-Z]{24}$/.test(ref)) return ref;
  const [{ foldName }, { onlyNamed }] = await Promise.all([import("../schemas/entity.js"), import("../core/entity-ref.js")]);
  const named = [];
  try {
    for await (const e of ctx.remote.entities.listAll({ search: ref })) if (foldName(e.name) === foldName(ref)) named.push(e);
  } catch (err) {
    throw asMmError(err, ctx.url);
  }
  return onlyNamed(ref, named);
}

/** The refusal for a command (or flag) that needs a local store, and why, when the reason isn't plain. */
export function localOnly(what: string, why?: string): MmError {
  return new MmError("VALIDATION_ERROR", `${what} works on a local store, not through --remote (or MM_URL)${why ? `, because ${why}` : ""}: run it where the store is, without --remote.`, {
    details: [{ field: "--remote", message: `${what} needs a local store` }],
  });
}
