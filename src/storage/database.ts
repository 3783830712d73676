import { join } from "node:path";
import { checkCoordination, detachCoordination, type Coordination } from "./coordination.js";
import { FileDocuments, TableDocuments, type DocumentDriver } from "./documents.js";
import { Freshness } from "./freshness.js";
import { lanceSession, loadLance, type Connection, type Session } from "./lance.js";
import { objectStorageOptions, objectStoreError, placeOf, type StorePlace } from "./location.js";
import { localShared, openShared } from "./shared/index.js";
import type { Shared } from "./shared/types.js";

type Env = Record<string, string | undefined>;

/**
 * How stale a read of an object store may be: a table's latest version is re-checked at most this
 * often per handle (each check is a LIST request; LanceDB does it for the `meta` table, mm for the
 * data tables: storage/freshness.ts). Writes always start from the latest
 * version (Store.write refreshes its handles under the write lock), so this bounds only how soon
 * another process's write becomes visible to reads. A local store checks on every read (0).
 * `$MM_STORE_READ_CONSISTENCY_S` overrides it (0: every read checks, one LIST request per table).
 */
export const OBJECT_READ_CONSISTENCY_S = 1;

/**
 * Connects LanceDB to a store's database: `<dir>/db` for a local store, the URI itself for an
 * object store (credentials from the environment, storage/location.ts). A connection failure on
 * an object store becomes a STORE_ERROR that says what is wrong (missing container, refused
 * credentials, unreachable endpoint).
 */
export async function connectDatabase(place: StorePlace, env: Env, metadataCacheBytes: number): Promise<{ db: Connection; session: Session }> {
  const { lancedb } = loadLance();
  const session = lanceSession(metadataCacheBytes);
  if (place.kind === "local") {
    // readConsistencyInterval 0: every read sees the latest commit, including other processes'.
    return { db: await lancedb.connect(join(place.dir, "db"), { readConsistencyInterval: 0, session }), session };
  }
  const storageOptions = objectStorageOptions(place, env);
  try {
    const db = await lancedb.connect(place.uri, { storageOptions, readConsistencyInterval: readConsistencySeconds(env), session });
    // connect() checks nothing by itself: a first listing proves the container and the credentials.
    await db.tableNames();
    return { db, session };
  } catch (err) {
    throw objectStoreError(err, place, storageOptions);
  }
}

/** An object store's read-consistency interval in seconds: `$MM_STORE_READ_CONSISTENCY_S`, or OBJECT_READ_CONSISTENCY_S. */
export function readConsistencySeconds(env: Env): number {
  const interval = Number(env.MM_STORE_READ_CONSISTENCY_S?.trim() || OBJECT_READ_CONSISTENCY_S);
  return Number.isFinite(interval) && interval >= 0 ? interval : OBJECT_READ_CONSISTENCY_S;
}

/**
 * The connection the store's data tables (memory segments, graph) are opened on. A local store:
 * `db` itself (every read checks the latest version, which costs a local directory listing). An
 * object store: a second connection to the same URI and session (so the same caches), without a
 * read-consistency interval, with `freshness` keeping the interval for reads instead
 * (storage/freshness.ts): the commits under the write lock then make four requests each instead
 * of seven. The `meta` table stays on `db`, with LanceDB's interval.
 */
export async function connectTables(place: StorePlace, env: Env, connected: { db: Connection; session: Session }): Promise<{ tables: Connection; freshness?: Freshness }> {
  if (place.kind === "local") return { tables: connected.db };
  const { lancedb } = loadLance();
  const tables = await lancedb.connect(place.uri, { storageOptions: objectStorageOptions(place, env), session: connected.session });
  return { tables, freshness: new Freshness(readConsistencySeconds(env) * 1000) };
}

/**
 * The store's Shared when the caller gives none. An object store with `$MM_REDIS_URL` agrees
 * through Redis, as `mm serve --redis` replicas of it do on any machine: a command then takes the
 * same write lock and touches the same change stamps (`mm keys revoke` reaches every replica).
 * Anything else: local files (localShared). A local store keeps its files even with Redis: all
 * its processes are on its one machine, and Redis only counts its quota and rate limits.
 * `owned`: a connection this call opened, for the caller to close.
 */
export async function sharedFor(place: StorePlace, env: Env): Promise<{ shared: Shared; owned: boolean }> {
  const redisUrl = env.MM_REDIS_URL?.trim();
  if (place.kind === "local" || !redisUrl) return { shared: localShared(place, env), owned: false };
  return { shared: await openShared({ store: place.uri, env, redisUrl, redisSource: "MM_REDIS_URL" }), owned: true };
}

/** A store's documents, given as an open store (which has them) or as its location. */
export type DocumentSource = string | { documents: DocumentDriver };

const objectDocuments = new Map<string, Promise<TableDocuments>>();
const coordinationChecked = new Map<string, Promise<TableDocuments>>();

/**
 * The documents of a store (storage/documents.ts) for a service that doesn't open the whole store
 * (Accounts, ConsoleAccess from the CLI): a local store's files, or an object store's `meta`
 * table, whose connection is opened once per process and URI. An object store coordinated by
 * Redis is refused without a Redis URL (storage/coordination.ts), once per process; `probe`
 * (whether a store is there, and its configuration: Store.configAt) reads without that check.
 */
export function documentsOf(source: DocumentSource, env: Env = process.env, options: { probe?: boolean } = {}): () => Promise<DocumentDriver> {
  if (typeof source !== "string") return () => Promise.resolve(source.documents);
  const place = placeOf(source);
  if (place.kind === "local") {
    const files = new FileDocuments(place.dir, localShared(place, env));
    return () => Promise.resolve(files);
  }
  const opened = () =>
    once(objectDocuments, place.uri, async () => {
      const { db } = await connectDatabase(place, env, 8 * 1024 * 1024);
      // Kept for the process's life, as the connection is; the CLI exits when its command ends.
      return TableDocuments.open(db, (await sharedFor(place, env)).shared, place.uri);
    });
  if (options.probe) return opened;
  return () =>
    once(coordinationChecked, place.uri, async () => {
      const documents = await opened();
      await checkCoordination(documents, documents.shared, place.uri);
      return documents;
    });
}

/** `make()` once per key, kept while it succeeds (a failure is tried again next time). */
function once<T>(cache: Map<string, Promise<T>>, key: string, make: () => Promise<T>): Promise<T> {
  let made = cache.get(key);
  if (!made) {
    made = make();
    made.catch(() => cache.delete(key));
    cache.set(key, made);
  }
  return made;
}

/**
 * The rule of storage/coordination.ts for a local store, where it is the quota ledger that Redis
 * holds: `mm serve --redis` or a command with `$MM_REDIS_URL` records Redis, and a later command or
 * server without it is refused instead of charging the store's own ledger beside the replicas'
 * (the quota would stop being exact). Called where a ledger is opened; `shared` is the ledger's. A
 * store not yet created records nothing (the command creating it records it next time).
 */
export async function checkLocalCoordination(dir: string, env: Env, shared: Shared): Promise<void> {
  const documents = await documentsOf(dir, env)();
  const exists = (await documents.stamp("config")) !== "none";
  await checkCoordination(documents, shared, dir, { record: exists });
}

/**
 * `mm store detach-redis`: clears an object store's record that Redis coordinates it
 * (storage/coordination.ts), so that processes without Redis may open it again. For a store no
 * replica serves any more; what they counted in Redis (this month's quota) stays there. Returns
 * what the record said: undefined for a store that never had Redis, null where there is no store.
 */
export async function detachRedis(location: string, env: Env): Promise<Coordination | undefined | null> {
  const place = placeOf(location);
  if (place.kind === "local") {
    const documents = await documentsOf(location, env)();
    return (await documents.load("config")) ? detachCoordination(documents) : null;
  }
  const { db } = await connectDatabase(place, env, 8 * 1024 * 1024);
  const documents = await TableDocuments.open(db, localShared(place, env), place.uri);
  try {
    if (!(await documents.load("config"))) return null;
    return await detachCoordination(documents);
  } finally {
    documents.close();
    db.close();
  }
}
