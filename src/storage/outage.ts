import { MmError } from "../errors.js";

type Log = (entry: Record<string, unknown>) => void;

/** What a client is told to wait, in seconds, while the store is down: about two of the health's tries. */
export const STORE_RETRY_AFTER_S = 2;
/** How often a store that failed is tried again (a new connection and every table reopened). */
const HEAL_EVERY_MS = 1_000;

/**
 * Whether `err` (or one of its causes) is LanceDB reporting the object store failing rather than mm: the service
 * can't be reached (refused, reset, timed out, DNS), answers 5xx, says the container is gone, or a
 * file a table's handle names is missing. The last is what a handle held across an outage meets
 * when the store came back older than the handle (an emulator that lost its last seconds), or
 * when a read's retry on the latest version (MemoryReads.afresh) failed too.
 */
export function isStoreFailure(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 6; e = (e as Error).cause, depth++) {
    if (e instanceof StoreTimeout) return true;
    if (e instanceof MmError) {
      // mm's own errors (a lock's timeout, Redis down) are not the store's; an unexpected one's cause may be.
      if (e.code === "STORE_UNAVAILABLE") return true;
      continue;
    }
    const message = e instanceof Error ? e.message : typeof e === "string" ? e : "";
    if (!/lance/i.test(message)) continue;
    if (
      /error sending request|Connection refused|connection reset|connection closed|broken pipe|tcp connect|dns error|operation timed out|timed out|Server returned non-2xx status code: 5\d\d|ContainerNotFound|NoSuchBucket/i.test(message) ||
      /Not found: \S*\.lance\/(?:_versions|data|_deletions|_indices|_transactions)\//.test(message)
    ) {
      return true;
    }
  }
  return false;
}

/**
 * How long one read of the store, or one write once it holds the write lock, may take on an object
 * store before it is answered STORE_UNAVAILABLE and the store marked down (`$MM_STORE_DEADLINE_S`;
 * 0: no bound). A store that hangs instead of refusing (a network cut, a stopped emulator) makes
 * LanceDB wait out its request timeouts and retries: 15 s for a table listing, 94 s for a version
 * check with a 5 s request timeout, 183 s with the default 30 s, measured against a stopped
 * Azurite. The operation itself goes on in the background until LanceDB gives up.
 */
export const STORE_DEADLINE_MS = 10_000;

/** The deadline (storage/store.ts) from the environment: `$MM_STORE_DEADLINE_S` seconds, else STORE_DEADLINE_MS. */
export function storeDeadlineMs(env: Record<string, string | undefined>): number {
  const seconds = Number(env.MM_STORE_DEADLINE_S?.trim() || NaN);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : STORE_DEADLINE_MS;
}

/** A store operation that outlived its deadline (withDeadline). */
export class StoreTimeout extends Error {
  constructor(ms: number) {
    super(`the object store did not answer within ${ms / 1000} s`);
    this.name = "StoreTimeout";
  }
}

/** `work`, or a StoreTimeout once `ms` have passed (0: no bound). `work` is not cancelled. */
export function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  if (!ms) return work;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new StoreTimeout(ms)), ms)));
  work.catch(() => undefined); // once late, its own failure has no one to hear it
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** The first line of `err`'s message and of each cause's, shortened: Lance repeats itself at length. */
export function failureSummary(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e && parts.length < 4; e = (e as Error).cause) {
    const line = (e instanceof Error ? e.message : String(e)).split("\n")[0].replace(/, \/(?:rustc|usr)\/\S+/g, "");
    const short = line.length > 400 ? `${line.slice(0, 400)}…` : line;
    if (!parts.includes(short)) parts.push(short);
  }
  return parts.join(" ← ");
}

/**
 * Whether an object store is answering, as one long-running process (`mm serve`) sees it. A read or
 * write that fails because of the store (isStoreFailure) marks it down: from then on the store's
 * reads and writes fail at once with 503 STORE_UNAVAILABLE (so no request waits on a store known
 * to be down, and writes queued behind the one that failed don't each wait out the retries), and
 * every HEAL_EVERY_MS the store is opened afresh (`heal`: a new connection, every table and cache
 * dropped, storage/store.ts Store.heal). Once that succeeds the store is up again. Handles held
 * across an outage may name versions and files the store no longer has (an emulator restarted
 * from its last save; a cleanup that ran meanwhile), so healing reopens rather than retries.
 */
export class StoreHealth {
  private down?: { since: number; cause: string; timer?: NodeJS.Timeout };
  private stopped = false;
  private readonly downListeners = new Set<() => void>();
  /** Where store-lost and store-back are logged (mm serve's log). */
  log?: Log;

  constructor(
    private readonly label: string,
    private readonly heal: () => Promise<void>,
    /** How long one try at healing may take (a hung store would hold it for minutes). */
    private readonly healDeadlineMs = STORE_DEADLINE_MS,
  ) {}

  /** Throws STORE_UNAVAILABLE while the store is down. */
  check(): void {
    if (this.down) throw this.unavailable(`The store at ${this.label} has been unavailable for ${Math.round((Date.now() - this.down.since) / 1000)} s (${this.down.cause}).`);
  }

  /**
   * A promise that rejects with STORE_UNAVAILABLE once the store is marked down (for what waits on
   * something else meanwhile: a writer waiting for the write lock), and `cancel` to stop listening.
   */
  whenDown(): { down: Promise<never>; cancel: () => void } {
    let listener!: () => void;
    const down = new Promise<never>((_, reject) => {
      listener = () => {
        try {
          this.check();
        } catch (err) {
          reject(err);
        }
      };
    });
    down.catch(() => undefined);
    this.downListeners.add(listener);
    return { down, cancel: () => this.downListeners.delete(listener) };
  }

  /**
   * `err` as it should be reported: when the store caused it, STORE_UNAVAILABLE (with `err` as its
   * cause), and the store is marked down until it can be opened again; anything else unchanged.
   */
  failed(err: unknown): unknown {
    if (err instanceof MmError && err.code === "STORE_UNAVAILABLE") return err;
    if (!isStoreFailure(err)) return err;
    const cause = failureSummary(err);
    this.markDown(cause);
    return this.unavailable(`The store at ${this.label} failed: ${cause}`, err);
  }

  /** Stops trying to heal (the process is closing the store). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.down?.timer);
  }

  private unavailable(message: string, cause?: unknown): MmError {
    return new MmError("STORE_UNAVAILABLE", message, { retryAfter: STORE_RETRY_AFTER_S }, { cause });
  }

  private markDown(cause: string): void {
    if (this.down) return;
    const down: { since: number; cause: string; timer?: NodeJS.Timeout } = { since: Date.now(), cause };
    this.down = down;
    for (const listener of [...this.downListeners]) listener();
    this.downListeners.clear();
    this.log?.({ time: new Date().toISOString(), level: "error", event: "store-lost", store: this.label, error: cause });
    const attempt = async () => {
      if (this.stopped) return;
      try {
        await withDeadline(this.heal(), this.healDeadlineMs);
      } catch (err) {
        down.cause = failureSummary(err);
        if (this.down === down && !this.stopped) down.timer = setTimeout(attempt, HEAL_EVERY_MS).unref();
        return;
      }
      if (this.down !== down) return;
      this.down = undefined;
      this.log?.({ time: new Date().toISOString(), event: "store-back", store: this.label, downMs: Date.now() - down.since });
    };
    // The first try at once: a store that answers again (handles that outlived a restart) heals in one round trip.
    down.timer = setTimeout(attempt, 0).unref();
  }
}
