import type { Table } from "./lance.js";

/** Paging and ordering shared by the memory segments and the graph: newest first, or oldest first, by (createdAt, id). */
export const NEWEST_FIRST = [
  { columnName: "createdAt", ascending: false },
  { columnName: "id", ascending: false },
];
export const OLDEST_FIRST = [
  { columnName: "createdAt", ascending: true },
  { columnName: "id", ascending: true },
];

export type PageWindow = { offset: number; limit: number };
type PagedQuery = ReturnType<Table["query"]>;

/** One page of `table` rows matching `where`, newest first (createdAt, then id), and the total. */
export async function newestFirstPage<T>(
  table: Table,
  where: string,
  columns: string[],
  page: PageWindow,
  read: (query: PagedQuery) => Promise<T[]>,
): Promise<{ records: T[]; total: number }> {
  const total = await table.countRows(where);
  if (page.offset >= total) return { records: [], total };
  return { records: await read(table.query().where(where).orderBy(NEWEST_FIRST).offset(page.offset).limit(page.limit).select(columns)), total };
}

/** Ascending order of two strings by code unit (as LanceDB orders text). */
export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
