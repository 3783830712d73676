import type { MemoryRow } from "../../src/storage/store.js";

/** A memory row for tests that write through the store directly: the given fields, defaults for the rest. */
export function memoryRow(fields: Pick<MemoryRow, "id" | "content" | "userId" | "vector"> & Partial<MemoryRow>): MemoryRow {
  const at = fields.createdAt ?? new Date().toISOString();
  return { accountId: "acct_default", agentId: null, tags: [], metadata: null, entityIds: [], createdAt: at, updatedAt: at, seq: 0, ...fields };
}
