import { createRequire } from "node:module";
import type * as LanceDB from "@lancedb/lancedb";
import type * as Arrow from "apache-arrow";

/**
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
    cached = { lancedb: require("@lancedb/lancedb"), arrow: require("apache-arrow") };
  }
  return cached;
}

export type Table = LanceDB.Table;
export type Connection = LanceDB.Connection;

/** A SQL string literal for LanceDB `where` clauses: single quotes doubled, nothing else changes. */
export function sqlString(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

export function sqlStringList(values: string[]): string {
  return `[${values.map(sqlString).join(", ")}]`;
}

/** Arrow list cells come back as arrow Vectors; callers want plain arrays. */
export function toStringArray(cell: unknown): string[] {
  if (cell == null) return [];
  if (Array.isArray(cell)) return cell.map(String);
  const maybe = cell as { toArray?: () => unknown[] };
  if (typeof maybe.toArray === "function") return Array.from(maybe.toArray(), String);
  return [];
}
