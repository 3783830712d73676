import type { Entity } from "../../core/entities.js";
import type { Memory } from "../../core/memories.js";
import type { Relation } from "../../core/relations.js";
import type { ExportHeader, TransferCounts } from "../../core/transfer.js";
import { asMmError, type RemoteContext } from "../remote.js";

/** Reads in flight at once: enough to hide a request's round trip, few enough for a server's read limit. */
const PARALLEL = 8;

/**
 * `mm --remote URL export`: the account the key acts for, read through the API into the format of
 * `mm export` (docs/import-export.md, "Through --remote"). List items carry no metadata or links,
 * so every record is read again by id: one operation per record, plus one per page of 100, each
 * counted against the key's quota and read limit (the client waits out a 429 and goes on).
 * What the API does not give is left out and said so in the header: each memory's earlier versions
 * (`history`), vectors, and the account's id. Records come oldest first, as locally, so that
 * references point backwards; with `userId`, the user's memories are read before anything is
 * written, to know which entities they link to.
 */
export async function exportViaApi(ctx: RemoteContext, options: { userId?: string }, write: (line: string) => void | Promise<void>): Promise<TransferCounts> {
  const { EXPORT_FORMAT, EXPORT_VERSION } = await import("../../core/transfer.js");
  const api = ctx.remote;
  const counts: TransferCounts = { accounts: 0, entities: 0, relations: 0, memories: 0 };
  try {
    const memoryIds = oldestFirst(await collect(api.memories.listAll(options.userId === undefined ? {} : { userId: options.userId }))).map((m) => m.id);
    // With --user, the entities are the ones the user's memories link to: known once they are read.
    const read = options.userId === undefined ? undefined : await inOrder(memoryIds, (id) => api.memories.get(id));
    const linked = read && new Set(read.flatMap((m) => m.entityIds ?? []));
    const header: ExportHeader & { omitted: string[] } = {
      format: EXPORT_FORMAT,
      version: EXPORT_VERSION,
      exportedAt: new Date().toISOString(),
      embedder: null,
      scope: { ...(options.userId !== undefined ? { userId: options.userId } : {}) },
      vectors: false,
      omitted: ["history", "vectors", "accountId"],
    };
    await write(JSON.stringify({ ...header, server: ctx.url }));
    const entityIds = oldestFirst(await collect(api.entities.listAll()))
      .map((e) => e.id)
      .filter((id) => !linked || linked.has(id));
    const exported = new Set(entityIds);
    for (const entity of await inOrder(entityIds, (id) => api.entities.get(id))) {
      await write(JSON.stringify({ kind: "entity", ...(entity as Entity) }));
      counts.entities++;
    }
    const relationIds = oldestFirst(await collect(api.relations.listAll()))
      .filter((r) => exported.has(r.sourceId) && exported.has(r.targetId))
      .map((r) => r.id);
    for (const { source: _s, target: _t, ...relation } of await inOrder(relationIds, (id) => api.relations.get(id))) {
      await write(JSON.stringify({ kind: "relation", ...(relation as Relation) }));
      counts.relations++;
    }
    // The fields of a local export's line, in its order: links only to exported entities, and not
    // the replaced ids a get adds (`supersedes`: each replaced memory names its replacement).
    const memoryLine = (m: Memory) =>
      JSON.stringify({
        kind: "memory",
        ...Object.fromEntries(
          Object.entries(m).flatMap(([k, v]): [string, unknown][] => {
            if (k === "supersedes" || k === "deduplicated") return [];
            if (k !== "entityIds") return [[k, v]];
            const links = (v as string[]).filter((id) => exported.has(id));
            return links.length ? [[k, links]] : [];
          }),
        ),
      });
    // Without --user, memories are read a few at a time as they are written: the export holds one
    // batch, not the account.
    for (let i = 0; i < memoryIds.length; i += PARALLEL) {
      const batch = read ? read.slice(i, i + PARALLEL) : await inOrder(memoryIds.slice(i, i + PARALLEL), (id) => api.memories.get(id));
      for (const m of batch) {
        await write(memoryLine(m as Memory));
        counts.memories++;
      }
    }
  } catch (err) {
    throw asMmError(err, ctx.url);
  }
  return counts;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** Oldest first, each once: a record created while the pages are read can move one onto the next page. */
function oldestFirst<T extends { id: string; createdAt: string }>(items: T[]): T[] {
  return [...new Map(items.map((i) => [i.id, i])).values()].sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** `get` of each id, PARALLEL at a time, in the ids' order. */
async function inOrder<T>(ids: string[], get: (id: string) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < ids.length; i += PARALLEL) out.push(...(await Promise.all(ids.slice(i, i + PARALLEL).map(get))));
  return out;
}
