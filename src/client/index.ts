import type { operations } from "./api-types.js";

export type { operations, paths } from "./api-types.js";

type Json<T> = T extends { content: { "application/json": infer J } } ? J : never;
/** The body of an operation's success answer (200 or 201). */
export type Result<K extends keyof operations> = operations[K] extends { responses: infer R }
  ? Json<R[200 & keyof R]> | Json<R[201 & keyof R]>
  : never;
/** The JSON body an operation takes. */
export type Body<K extends keyof operations> = operations[K] extends { requestBody: { content: { "application/json": infer B } } } ? B : never;
/** The query parameters an operation takes. */
export type Query<K extends keyof operations> = NonNullable<operations[K]["parameters"]["query"]>;

type Method = "GET" | "POST" | "PATCH" | "DELETE";

/**
 * Every operation of the OpenAPI document, by its operationId. Typed over the generated
 * `operations`, so a route added to the server fails the build until the client knows it.
 * `retry` marks the requests that may be sent again after a 503 or a network error: reads, deletes
 * (deleting twice leaves the same store) and search (a POST that changes nothing).
 */
export const ENDPOINTS: { [K in keyof operations]: { method: Method; path: string; retry: boolean } } = {
  getV1Memories: { method: "GET", path: "/v1/memories", retry: true },
  postV1Memories: { method: "POST", path: "/v1/memories", retry: false },
  postV1MemoriesSearch: { method: "POST", path: "/v1/memories/search", retry: true },
  getV1MemoriesId: { method: "GET", path: "/v1/memories/{id}", retry: true },
  patchV1MemoriesId: { method: "PATCH", path: "/v1/memories/{id}", retry: false },
  deleteV1MemoriesId: { method: "DELETE", path: "/v1/memories/{id}", retry: true },
  getV1MemoriesIdHistory: { method: "GET", path: "/v1/memories/{id}/history", retry: true },
  postV1MemoriesIdSupersede: { method: "POST", path: "/v1/memories/{id}/supersede", retry: false },
  postV1MemoriesIdRestore: { method: "POST", path: "/v1/memories/{id}/restore", retry: false },
  getV1Entities: { method: "GET", path: "/v1/entities", retry: true },
  postV1Entities: { method: "POST", path: "/v1/entities", retry: false },
  getV1EntitiesId: { method: "GET", path: "/v1/entities/{id}", retry: true },
  patchV1EntitiesId: { method: "PATCH", path: "/v1/entities/{id}", retry: false },
  deleteV1EntitiesId: { method: "DELETE", path: "/v1/entities/{id}", retry: true },
  postV1EntitiesIdMerge: { method: "POST", path: "/v1/entities/{id}/merge", retry: false },
  getV1EntitiesIdMemories: { method: "GET", path: "/v1/entities/{id}/memories", retry: true },
  getV1EntitiesIdNeighbors: { method: "GET", path: "/v1/entities/{id}/neighbors", retry: true },
  getV1Relations: { method: "GET", path: "/v1/relations", retry: true },
  postV1Relations: { method: "POST", path: "/v1/relations", retry: false },
  getV1RelationsId: { method: "GET", path: "/v1/relations/{id}", retry: true },
  patchV1RelationsId: { method: "PATCH", path: "/v1/relations/{id}", retry: false },
  deleteV1RelationsId: { method: "DELETE", path: "/v1/relations/{id}", retry: true },
  getV1GraphPath: { method: "GET", path: "/v1/graph/path", retry: true },
  getV1GraphExport: { method: "GET", path: "/v1/graph/export", retry: true },
};

/**
 * An answer of the API that is not a success, or a request that got no answer. `code` is the
 * spec's error code (`MEMORY_NOT_FOUND`, `RATE_LIMIT_EXCEEDED`, …), or the client's own: with
 * `status` 0, `TIMEOUT` or `NETWORK_ERROR`; with the answer's status, `HTTP_ERROR` (an error
 * without the API's envelope) or `INVALID_RESPONSE` (a success whose body isn't JSON). `extra`
 * holds the envelope's other fields (`retryAfter`, `details`, `currentUsage`…).
 */
export class MmApiError extends Error {
  override readonly name = "MmApiError";
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly extra: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface ClientOptions {
  /** The server, e.g. `http://127.0.0.1:8787` (a path prefix is kept). */
  baseUrl: string;
  /** An API key (`mm_…`), sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Per HTTP request, retries included one by one; default 30 s. */
  timeoutMs?: number;
  /** Attempts after the first; default 3. */
  retries?: number;
  /** First backoff step; each retry doubles it, up to `maxDelayMs`, with full jitter. Default 250 ms. */
  baseDelayMs?: number;
  /** Default 8 s. A 429 whose `retryAfter` is longer than `maxRetryAfterMs` (default 60 s) is not retried. */
  maxDelayMs?: number;
  maxRetryAfterMs?: number;
  /** Another fetch (a proxy's, a test's); default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** How the client waits between attempts; tests pass one that moves a clock. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  headers?: Record<string, string>;
  /** Sees every answer before it is read: its status (an entity create's 200 or 201) and headers (rate limits, quota). */
  onResponse?: (response: Response) => void;
  /**
   * Read-your-writes across replicas (default true): every request carries the newest
   * `X-MM-Consistency` token this client's writes were answered with, so a replica answers a read
   * only once it has those writes. False: reads see other replicas' writes within the server's
   * read-consistency interval (1 s on an object store).
   */
  readYourWrites?: boolean;
}

export interface CallOptions {
  params?: Record<string, string>;
  query?: Record<string, unknown>;
  body?: unknown;
  signal?: AbortSignal;
  timeoutMs?: number;
}

type Call<K extends keyof operations> = (options?: CallOptions) => Promise<Result<K>>;

/**
 * A typed client of the /v1 API: fetch only, so it runs on Node 18+, Deno, Bun and in browsers.
 * A 429 is retried for every request after the wait the server names (`retryAfter`, or the
 * `Retry-After` header): the server refuses it before doing any work, so even a create is safe to
 * send again. A 503 or a network error is retried only for the requests in ENDPOINTS marked
 * `retry`, since a create that timed out may have been stored.
 */
export function createClient(options: ClientOptions) {
  const base = options.baseUrl.replace(/\/+$/, "");
  const retries = options.retries ?? 3;
  const baseDelay = options.baseDelayMs ?? 250;
  const maxDelay = options.maxDelayMs ?? 8000;
  const maxRetryAfter = options.maxRetryAfterMs ?? 60_000;
  const doFetch = options.fetch ?? ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args));
  const sleep = options.sleep ?? wait;
  /** The newest version of each table this client's writes were answered with (X-MM-Consistency). */
  const written = new Map<string, number>();

  async function call<K extends keyof operations>(operation: K, opts: CallOptions = {}): Promise<Result<K>> {
    const endpoint = ENDPOINTS[operation];
    const url = base + endpoint.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(opts.params?.[name] ?? ""));
    const headers: Record<string, string> = { Accept: "application/json", ...options.headers };
    if (options.apiKey) headers.Authorization = `Bearer ${options.apiKey}`;
    if (opts.body !== undefined) headers["Content-Type"] = "application/json";
    if (written.size) headers["X-MM-Consistency"] = [...written].map(([table, version]) => `${table}:${version}`).join(",");
    const init = { method: endpoint.method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) };
    const target = url + queryString(opts.query);
    for (let attempt = 0; ; attempt++) {
      let delay: number | undefined;
      try {
        return (await send(target, init, opts)) as Result<K>;
      } catch (err) {
        if (!(err instanceof MmApiError) || attempt >= retries) throw err;
        const backoff = Math.random() * Math.min(maxDelay, baseDelay * 2 ** attempt);
        if (err.code === "RATE_LIMIT_EXCEEDED") {
          const after = Number(err.extra.retryAfter ?? 0) * 1000;
          if (after > maxRetryAfter) throw err;
          delay = Math.max(after, 0) + backoff / 4;
        } else if (endpoint.retry && (err.status === 503 || err.status === 0)) delay = Math.max(backoff, Math.min(Number(err.extra.retryAfter ?? 0) * 1000, maxRetryAfter));
        else throw err;
      }
      await sleep(delay, opts.signal);
    }
  }

  async function send(url: string, init: RequestInit, opts: CallOptions): Promise<unknown> {
    opts.signal?.throwIfAborted();
    const controller = new AbortController();
    const timeoutMs = opts.timeoutMs ?? options.timeoutMs ?? 30_000;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort(opts.signal?.reason);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const res = await doFetch(url, { ...init, signal: controller.signal });
      options.onResponse?.(res);
      if (options.readYourWrites !== false) remember(res.headers.get("X-MM-Consistency"));
      const text = await res.text();
      let body: unknown;
      let json = true;
      try {
        body = JSON.parse(text);
      } catch {
        json = false;
      }
      // A success that isn't JSON is no answer of the API (a proxy's page, the wrong port): not `undefined`.
      if (res.ok && !json) throw new MmApiError("INVALID_RESPONSE", `HTTP ${res.status} from ${url} is ${notJson(text, res.headers.get("Content-Type"))}`, res.status);
      if (res.ok) return body;
      const error = (body as { error?: Record<string, unknown> } | undefined)?.error;
      if (!error || typeof error.code !== "string") {
        throw new MmApiError("HTTP_ERROR", `HTTP ${res.status} from ${url} without an error envelope`, res.status);
      }
      const { code, message, ...extra } = error;
      const header = Number(res.headers.get("Retry-After"));
      if (code === "RATE_LIMIT_EXCEEDED" && extra.retryAfter === undefined && Number.isFinite(header)) extra.retryAfter = header;
      throw new MmApiError(code, String(message), res.status, extra);
    } catch (err) {
      if (err instanceof MmApiError) throw err;
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (timedOut) throw new MmApiError("TIMEOUT", `No answer from ${url} within ${timeoutMs} ms`, 0, { timeoutMs }, { cause: err });
      throw new MmApiError("NETWORK_ERROR", `Could not reach ${url}: ${(err as Error)?.message ?? err}`, 0, {}, { cause: err });
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
    }
  }

  function remember(token: string | null): void {
    for (const pair of token?.split(",") ?? []) {
      const [table, version] = pair.split(":");
      if (table && Number(version) > (written.get(table) ?? -1)) written.set(table, Number(version));
    }
  }

  const op =
    <K extends keyof operations>(operation: K): Call<K> =>
    (opts) =>
      call(operation, opts);
  const byId =
    <K extends keyof operations>(operation: K) =>
    (id: string, extra: Omit<CallOptions, "params"> = {}) =>
      call(operation, { ...extra, params: { id } });
  type Extra = Pick<CallOptions, "signal" | "timeoutMs">;

  return {
    /** Any operation by its operationId, with path parameters, query and body. */
    call,
    /** The OpenAPI document the server serves. */
    openapi: (extra: Extra = {}) => send(`${base}/v1/openapi.json`, { method: "GET", headers: { Accept: "application/json" } }, extra) as Promise<Record<string, unknown>>,
    memories: {
      create: (body: Body<"postV1Memories">, extra: Extra = {}) => op("postV1Memories")({ ...extra, body }),
      search: (body: Body<"postV1MemoriesSearch">, extra: Extra = {}) => op("postV1MemoriesSearch")({ ...extra, body }),
      list: (query: Query<"getV1Memories"> = {}, extra: Extra = {}) => op("getV1Memories")({ ...extra, query }),
      /** Every memory that matches, page after page. */
      listAll: (query: Query<"getV1Memories"> = {}, extra: Extra = {}) => paginate((q) => op("getV1Memories")({ ...extra, query: q }), query),
      get: (id: string, extra: Extra = {}) => byId("getV1MemoriesId")(id, extra),
      update: (id: string, body: Body<"patchV1MemoriesId">, extra: Extra = {}) => byId("patchV1MemoriesId")(id, { ...extra, body }),
      delete: (id: string, extra: Extra = {}) => byId("deleteV1MemoriesId")(id, extra),
      history: (id: string, extra: Extra = {}) => byId("getV1MemoriesIdHistory")(id, extra),
      supersede: (id: string, body: Body<"postV1MemoriesIdSupersede">, extra: Extra = {}) => byId("postV1MemoriesIdSupersede")(id, { ...extra, body }),
      restore: (id: string, extra: Extra = {}) => byId("postV1MemoriesIdRestore")(id, extra),
    },
    entities: {
      /** Answers an existing entity with the same folded name and type instead of a second one. */
      create: (body: Body<"postV1Entities">, extra: Extra = {}) => op("postV1Entities")({ ...extra, body }),
      list: (query: Query<"getV1Entities"> = {}, extra: Extra = {}) => op("getV1Entities")({ ...extra, query }),
      listAll: (query: Query<"getV1Entities"> = {}, extra: Extra = {}) => paginate((q) => op("getV1Entities")({ ...extra, query: q }), query),
      get: (id: string, extra: Extra = {}) => byId("getV1EntitiesId")(id, extra),
      update: (id: string, body: Body<"patchV1EntitiesId">, extra: Extra = {}) => byId("patchV1EntitiesId")(id, { ...extra, body }),
      delete: (id: string, extra: Extra = {}) => byId("deleteV1EntitiesId")(id, extra),
      merge: (id: string, body: Body<"postV1EntitiesIdMerge">, extra: Extra = {}) => byId("postV1EntitiesIdMerge")(id, { ...extra, body }),
      memories: (id: string, query: Query<"getV1EntitiesIdMemories"> = {}, extra: Extra = {}) =>
        call("getV1EntitiesIdMemories", { ...extra, params: { id }, query }),
      memoriesAll: (id: string, query: Query<"getV1EntitiesIdMemories"> = {}, extra: Extra = {}) =>
        paginate((q) => call("getV1EntitiesIdMemories", { ...extra, params: { id }, query: q }), query),
      neighbors: (id: string, query: Query<"getV1EntitiesIdNeighbors"> = {}, extra: Extra = {}) =>
        call("getV1EntitiesIdNeighbors", { ...extra, params: { id }, query }),
    },
    relations: {
      create: (body: Body<"postV1Relations">, extra: Extra = {}) => op("postV1Relations")({ ...extra, body }),
      list: (query: Query<"getV1Relations"> = {}, extra: Extra = {}) => op("getV1Relations")({ ...extra, query }),
      listAll: (query: Query<"getV1Relations"> = {}, extra: Extra = {}) => paginate((q) => op("getV1Relations")({ ...extra, query: q }), query),
      get: (id: string, extra: Extra = {}) => byId("getV1RelationsId")(id, extra),
      update: (id: string, body: Body<"patchV1RelationsId">, extra: Extra = {}) => byId("patchV1RelationsId")(id, { ...extra, body }),
      delete: (id: string, extra: Extra = {}) => byId("deleteV1RelationsId")(id, extra),
    },
    graph: {
      path: (query: Query<"getV1GraphPath">, extra: Extra = {}) => op("getV1GraphPath")({ ...extra, query }),
      export: (query: Query<"getV1GraphExport"> = {}, extra: Extra = {}) => op("getV1GraphExport")({ ...extra, query }),
    },
  };
}

export type MmClient = ReturnType<typeof createClient>;

interface Page<T> {
  items: T[];
  pagination: { page: number; totalPages: number };
}

/**
 * The items of every page from `query.page` (default 1) on, 100 to a page unless `query.limit`
 * says otherwise. Pages are fetched one at a time as the loop asks for them; a list that changes
 * meanwhile can repeat or skip an item at a page boundary, as page-by-page reading always can.
 */
export async function* paginate<T, Q extends { page?: number | string; limit?: number | string }>(
  fetchPage: (query: Q) => Promise<Page<T>>,
  query: Q,
): AsyncGenerator<T, void, undefined> {
  let page = Number(query.page ?? 1);
  for (;;) {
    const body = await fetchPage({ ...query, page, limit: query.limit ?? 100 });
    yield* body.items;
    if (page >= body.pagination.totalPages || body.items.length === 0) return;
    page++;
  }
}

function queryString(query: Record<string, unknown> | undefined): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) search.append(key, String(item));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** What a body that should have been JSON was instead, in a few words and its first characters. */
function notJson(text: string, type: string | null): string {
  if (!text.trim()) return "empty, where JSON was expected";
  const start = text.trim().slice(0, 80).replace(/\s+/g, " ");
  return `not JSON (${type ? `Content-Type ${type}` : "no Content-Type"}): "${start}${text.trim().length > 80 ? "…" : ""}"`;
}

function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
