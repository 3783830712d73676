import { MmError } from "../errors.js";
import { createEmbedder, DEFAULT_EMBEDDER, type Embedder, type EmbedderConfig, type Env } from "../embedder/index.js";
import type { Shared } from "../storage/shared/types.js";
import { Store, type StoreTuning } from "../storage/store.js";

/** Runs a multi-query read against one pinned version of the store (see Store.snapshot). */
export async function withSnapshot<T>(ctx: Context, fn: (store: Store) => Promise<T>): Promise<T> {
  const view = await ctx.store.snapshot();
  try {
    return await fn(view);
  } finally {
    view.close();
  }
}

export const DEFAULT_ACCOUNT_ID = "acct_default";

/**
 * How an operation's writes are billed against its account's quota. The CLI and the HTTP server
 * give each operation one (limits/ledger.ts OperationMeter); core calls it through billedCommit.
 */
export interface Meter {
  /** Throws QUOTA_EXCEEDED if `count` operations can't fit now: an early refusal, before work such as embedding. */
  check(count: number): Promise<void>;
  /** Runs `commit`, which stores `count` operations, with the quota checked before it and charged right after it. */
  commit<T>(count: number, commit: () => Promise<T>): Promise<T>;
  /**
   * Runs `commit` with the number of the `count` operations that fit (at least one, else
   * QUOTA_EXCEEDED); it stores the first that many, which are charged right after it. `refusal`
   * is the QUOTA_EXCEEDED of the ones left out: a batch stores exactly up to the limit.
   */
  commitUpTo<T>(count: number, commit: (admitted: number) => Promise<T>): Promise<{ result: T; admitted: number; refusal?: MmError }>;
  /**
   * The same for one commit that stores several operations, one per meter (`meters`, this one
   * among them; group commit): `commit` is told which fit the quota, and those are charged right
   * after it; the others get their QUOTA_EXCEEDED in `refused`.
   */
  commitGroup<T>(meters: Meter[], commit: (admitted: boolean[]) => Promise<T>): Promise<{ result: T; refused: (MmError | undefined)[] }>;
}

/** Everything a service needs, passed explicitly: no module-level singletons. */
export interface Context {
  readonly store: Store;
  /** The account every read and write is scoped to. */
  readonly accountId: string;
  /** Bills this operation's commits; absent for library use, which bills nothing. */
  readonly meter?: Meter;
  readonly clock: () => Date;
  /** The store's embedder, created on first call so commands that never embed never load a model. */
  embedder(): Promise<Embedder>;
  close(): Promise<void>;
}

export interface ContextOptions {
  storeDir: string;
  env?: Env;
  /** Inject an embedder (tests, library use); it must match the store's recorded embedder. */
  embedder?: Embedder;
  clock?: () => Date;
  accountId?: string;
  /** The embedder a missing store is created with (default: use-lite, or the injected one's). */
  createWith?: EmbedderConfig;
  /** Create the store if missing (default true: first use creates it). */
  create?: boolean;
  /** Fault-injection points inside multi-step writes (crash tests only). */
  hooks?: (point: string) => void | Promise<void>;
  /** The store's embedder, already loading (see warmEmbedder). */
  warmed?: Embedder;
  /**
   * Store sizes at which strategy changes (storage/store.ts StoreTuning). Tests shrink them; so
   * does env MM_TEST_TUNING (JSON), for tests that spawn `mm`.
   */
  tuning?: Partial<StoreTuning>;
  /** What the store's processes agree through (default: local lock files; storage/shared). */
  shared?: Shared;
}

/**
 * Creates the embedder of the store at `storeDir` and starts loading its model, for a caller that
 * will embed and has other work to do first (open the store, check the account): a model load
 * waits on files and on compiling WebAssembly, and that work fills the waits. Undefined when
 * there is no store yet or the embedder can't be made; a failed load surfaces at the first
 * embed, which loads again and reports it.
 */
export async function warmEmbedder(storeDir: string, env: Env): Promise<Embedder | undefined> {
  const config = await Store.configAt(storeDir).catch(() => undefined);
  const made = config && (await createEmbedder(config.embedder, env).catch(() => undefined));
  made?.warm?.().catch(() => {});
  return made;
}

/**
 * Which account of the store at `storeDir` holds the memory, entity or relation `id`, if any. The
 * CLI's hint for an id it can't find in the account it acts as (every account of a local store is
 * its owner's); the API never asks.
 */
export async function findOwnerAccount(storeDir: string, id: string): Promise<{ id: string; name: string } | undefined> {
  const store = await Store.open(storeDir);
  try {
    const accountId = await store.ownerOf(id);
    if (!accountId) return undefined;
    const { Accounts } = await import("./accounts.js");
    const account = await new Accounts(store).resolve(accountId).catch(() => undefined);
    return { id: accountId, name: account?.name ?? accountId };
  } finally {
    store.close();
  }
}

export async function openContext(options: ContextOptions): Promise<Context> {
  const injected = options.embedder;
  const createWith =
    options.createWith ?? (injected ? { provider: injected.provider, model: injected.model, dims: injected.dims } : DEFAULT_EMBEDDER);
  let warmed = injected ? undefined : options.warmed;
  const tuning = options.tuning ?? (options.env?.MM_TEST_TUNING ? (JSON.parse(options.env.MM_TEST_TUNING) as Partial<StoreTuning>) : undefined);
  const store = await Store.open(options.storeDir, { create: options.create === false ? undefined : createWith, now: options.clock, tuning, env: options.env, shared: options.shared });
  if (injected) store.assertEmbedder(injected);
  store.hooks = options.hooks;
  let embedder: Promise<Embedder> | undefined = injected ? Promise.resolve(injected) : undefined;
  return {
    store,
    accountId: options.accountId ?? DEFAULT_ACCOUNT_ID,
    clock: options.clock ?? (() => new Date()),
    embedder() {
      embedder ??= (async () => {
        const e = warmed ?? (await createEmbedder(store.config.embedder, options.env ?? {}));
        warmed = undefined;
        store.assertEmbedder(e);
        return e;
      })();
      embedder.catch(() => (embedder = undefined));
      return embedder;
    },
    async close() {
      if (injected) return store.close();
      await (warmed ?? (await embedder?.catch(() => undefined)))?.close?.();
      store.close();
    },
  };
}

/**
 * Runs `commit`, the store commit that holds an operation's `count` billable operations (call it
 * inside `store.write`), and bills them through the context's meter: checked before the commit,
 * charged right after it, so an operation is billed iff it is stored or acknowledged. A crash
 * between the commit and the charge leaves this one commit unbilled; the store's write lock lets
 * only one commit be in that window at a time. The hooks are where crash tests kill the process.
 */
export async function billedCommit<T>(ctx: Context, count: number, commit: () => Promise<T>): Promise<T> {
  return ctx.meter ? ctx.meter.commit(count, hooked(ctx, commit)) : hooked(ctx, commit)();
}

/** billedCommit for a batch the quota may cut short: stores the first `admitted` of `count` (see Meter.commitUpTo). */
export async function billedCommitUpTo<T>(ctx: Context, count: number, commit: (admitted: number) => Promise<T>): Promise<{ result: T; admitted: number; refusal?: MmError }> {
  if (!ctx.meter) return { result: await hooked(ctx, () => commit(count))(), admitted: count };
  return ctx.meter.commitUpTo(count, (admitted) => hooked(ctx, () => commit(admitted))());
}

/** A commit between the crash tests' two hooks. */
function hooked<T>(ctx: Context, commit: () => Promise<T>): () => Promise<T> {
  return async () => {
    await ctx.store.hooks?.("billed-commit:before");
    const result = await commit();
    await ctx.store.hooks?.("billed-commit:after");
    return result;
  };
}

/**
 * MM_TEST_CRASH_AT=<point>[#n] makes the process SIGKILL itself the n-th time (default: the first)
 * it reaches that point: crash-safety tests use it to kill a CLI command or `mm serve` at an exact
 * instant.
 */
export function crashHooks(spec: string | undefined): ((at: string) => void) | undefined {
  if (!spec) return undefined;
  const [point, nth] = spec.split("#");
  let left = Number(nth ?? 1);
  return (at) => {
    if (at === point && --left === 0) process.kill(process.pid, "SIGKILL");
  };
}

const QUERY_CACHE_SIZE = 1024;
const queryCaches = new WeakMap<Context["store"], Map<string, Float32Array>>();

/**
 * A search query's embedding, from a small LRU cache (1,024 queries per open store) when the same
 * text was asked before: agents repeat queries, and embedding is most of a search's time. Entries
 * are the account's own: shared ones would let one account time whether another had just
 * searched an exact text. The 1,024 places are shared, so an account can learn at most how many
 * queries others asked, never which.
 */
export async function embedQuery(ctx: Context, query: string): Promise<Float32Array> {
  let cache = queryCaches.get(ctx.store);
  if (!cache) queryCaches.set(ctx.store, (cache = new Map()));
  const key = JSON.stringify([ctx.accountId, query]);
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const [vector] = await embedChecked(ctx, [query]);
  cache.set(key, vector);
  if (cache.size > QUERY_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  return vector;
}

/** Embeds and checks each vector: right length and not all zeros (a zero vector would vanish from search). */
export async function embedChecked(ctx: Context, texts: string[]): Promise<Float32Array[]> {
  const embedder = await ctx.embedder();
  const vectors = await embedder.embed(texts);
  if (vectors.length !== texts.length) {
    throw new MmError("INTERNAL_ERROR", `The embedder returned ${vectors.length} vectors for ${texts.length} texts.`);
  }
  const dims = ctx.store.config.embedder.dims;
  for (const v of vectors) {
    if (v.length !== dims) {
      throw new MmError("EMBEDDER_MISMATCH", `The embedder returned ${v.length}-dim vectors; the store holds ${dims}-dim vectors.`);
    }
    // Not the text's fault: the embedder answered something no store could use.
    if (!v.every(Number.isFinite)) throw new MmError("EMBEDDER_UNAVAILABLE", "The embedder returned a vector with values that are not finite numbers.");
    if (v.every((x) => x === 0)) {
      throw new MmError("VALIDATION_ERROR", "The text produced an all-zero embedding, which no search could ever find.", {
        details: [{ field: "content", message: "has nothing the embedding model can represent" }],
      });
    }
  }
  return vectors;
}
