import { createRequire, Module } from "node:module";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type * as LanceDB from "@lancedb/lancedb";
import type * as Arrow from "apache-arrow";

/**
 * Inside the CLI bundle (dist/bundle/), LanceDB's JavaScript layer loads from one pre-bundled file
 * beside this code (scripts/bundle.mjs makes it): same code, ~75 fewer files to load per command.
 * Elsewhere (tests on the sources, library use of dist/) it loads from node_modules.
 *
 * LanceDB is CommonJS and loads arrow's CJS build; an ESM `import "apache-arrow"` would load a
 * second copy (≈280 ms slower, and `instanceof` checks across the two fail). Requiring both
 * through one `createRequire` keeps a single arrow, and keeps these imports off the paths that
 * never touch the store.
 */
const require = createRequire(import.meta.url);

let cached: { lancedb: typeof LanceDB; arrow: typeof Arrow } | undefined;

export function loadLance(): { lancedb: typeof LanceDB; arrow: typeof Arrow } {
  if (!cached) {
    process.env.LANCEDB_LOG ??= "error";
    preloadArrowBundle();
    const bundled = join(dirname(fileURLToPath(import.meta.url)), "lancedb.cjs");
    cached = { lancedb: require(existsSync(bundled) ? bundled : "@lancedb/lancedb"), arrow: require("apache-arrow") };
  }
  return cached;
}

/**
 * Arrow's CommonJS build is about 200 files; resolving and compiling them one by one is most of
 * the cost of opening a store from a cold process (≈150 ms of a 300 ms budget). The package also
 * ships the same library as one minified file (`Arrow.es2015.min.js`, the UMD build). Registering
 * that file under the path `require("apache-arrow")` resolves to makes LanceDB and mm share one
 * copy that loads in a fraction of the time. The single-file build lacks only the Node stream
 * adapters (`toNodeStream`, `throughNode`), which neither LanceDB nor mm uses. If the bundle is
 * missing (another arrow release), the regular build loads as before.
 */
function preloadArrowBundle(): void {
  try {
    const main = require.resolve("apache-arrow", { paths: [dirname(require.resolve("@lancedb/lancedb"))] });
    if (require.cache[main] || main !== require.resolve("apache-arrow")) return;
    const bundle = join(dirname(main), "Arrow.es2015.min.js");
    const exports = require(bundle) as typeof Arrow;
    if (typeof exports.tableFromIPC !== "function" || typeof exports.RecordBatchFileReader !== "function") return;
    const entry = new Module(main);
    entry.filename = main;
    entry.loaded = true;
    entry.exports = exports;
    require.cache[main] = entry;
  } catch {
    // Fall back to the regular build.
  }
}

/**
 * A LanceDB session (its caches) whose metadata cache holds at most `metadataCacheBytes`. LanceDB
 * caches each table version's manifest and file metadata, up to 1 GiB by default, and every write
 * makes a version: under mixed traffic `mm serve` grew by ~13 MB per 1,000 requests, most of it
 * this cache (docs/safety.md, "Memory under load"). Reads only ever want the latest versions, so a
 * small cache holds the working set. The index cache keeps LanceDB's default (6 GiB): it holds
 * vector and text index data, and search speed at 1M memories depends on it; the stale indexes of
 * old versions it gathers go when a long-running process renews its handles (Store.renew).
 */
export function lanceSession(metadataCacheBytes: number): LanceDB.Session {
  return new (loadLance().lancedb.Session)(undefined, BigInt(metadataCacheBytes));
}

export type Table = LanceDB.Table;
export type VectorQuery = LanceDB.VectorQuery;
export type Connection = LanceDB.Connection;
export type Session = LanceDB.Session;

/** A SQL string literal for LanceDB `where` clauses: single quotes doubled, nothing else changes. */
export function sqlString(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

export function sqlStringList(values: string[]): string {
  return `[${values.map(sqlString).join(", ")}]`;
}


/** LanceDB's "Retryable commit conflict for version N: This Rewrite transaction was preempted by concurrent transaction Delete…" */
export function isCommitConflict(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return /commit conflict|preempted by concurrent|incompatible with concurrent/i.test(message);
}

/**
 * LanceDB's "Not found: PREFIX/memories.lance/_versions/5.manifest" (or a data, deletion or index
 * file of the table): the version a handle read was removed by a cleanup (`optimize` with
 * `cleanupOlderThan`) since the handle last looked for the latest.
 */
export function isVersionGone(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return /Not found: \S*\.lance\/(?:_versions|data|_deletions|_indices|_transactions)\//.test(message);
}
