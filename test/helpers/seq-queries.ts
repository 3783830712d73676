import { vi } from "vitest";
import { loadLance } from "../../src/storage/lance.js";

/** Counts the queries that ask a user's last sequence number (storage/memories.ts lastSeqIn), in this process. Restore with vi.restoreAllMocks(). */
export function countSeqQueries(): { count(): number } {
  const { Query } = loadLance().lancedb;
  const orderBy = Query.prototype.orderBy;
  let n = 0;
  vi.spyOn(Query.prototype, "orderBy").mockImplementation(function (this: InstanceType<typeof Query>, ordering) {
    if ((ordering as { columnName?: string }).columnName === "seq") n++;
    return orderBy.call(this, ordering);
  });
  return { count: () => n };
}
