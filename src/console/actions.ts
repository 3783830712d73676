import type { Context } from "../core/context.js";
import { getEntity, listEntityMemories, type Entity } from "../core/entities.js";
import { exportGraph, neighbors } from "../core/graph.js";
import { memoryHistory, type Memory, type MemoryHistory, type MemorySearchHit } from "../core/memories.js";
import { ROUTES, type RouteInput } from "../http/routes.js";
import type { Bucket } from "../limits/ledger.js";
import type { EntityView } from "./pages.js";

/**
 * One console action that reads account data: the endpoint (or CLI command) it mirrors, whose
 * rate-limit bucket it takes and whose quota rule it follows (one operation per action), and the
 * core call it makes. Actions that are not API operations (keys, usage, signing in) aren't here
 * and count nothing. docs/console.md lists this table; test/console/actions.test.ts holds it to that.
 */
export interface ConsoleAction<T = unknown> {
  mirrors: string;
  bucket: Bucket;
  run(ctx: Context, input: RouteInput): Promise<T>;
}

/** An action that is exactly a /v1 endpoint: the route table's own bucket and handler. */
function endpoint<T>(key: string): ConsoleAction<T> {
  const route = ROUTES.find((r) => `${r.method} ${r.path}` === key);
  if (!route) throw new Error(`no route ${key}`);
  return { mirrors: key, bucket: route.bucket, run: (ctx, input) => route.run(ctx, input) as Promise<T> };
}

const getMemory = endpoint<Memory>("GET /v1/memories/:id");
const search = endpoint<{ results: MemorySearchHit[] }>("POST /v1/memories/search");

export const ACTIONS = {
  listMemories: endpoint("GET /v1/memories"),
  /**
   * A search, and when nothing passes the threshold, the closest miss (as `mm memories search`
   * shows it), so the owner knows what threshold would show it: one search, as the endpoint.
   */
  searchMemories: {
    mirrors: search.mirrors,
    bucket: search.bucket,
    async run(ctx, input): Promise<{ results: MemorySearchHit[]; closest?: MemorySearchHit }> {
      const found = await search.run(ctx, input);
      if (found.results.length) return found;
      const [closest] = (await search.run(ctx, { ...input, body: { ...(input.body as object), threshold: 0, limit: 1 } })).results;
      return { ...found, ...(closest ? { closest } : {}) };
    },
  } satisfies ConsoleAction<{ results: MemorySearchHit[]; closest?: MemorySearchHit }>,
  /** A memory, the names of the entities it links, and its history: one read, as GET /v1/memories/:id. */
  memory: {
    mirrors: getMemory.mirrors,
    bucket: getMemory.bucket,
    async run(ctx, input) {
      const memory = await getMemory.run(ctx, input);
      const [entities, history] = await Promise.all([
        Promise.all((memory.entityIds ?? []).map((id) => getEntity(ctx, id).catch(() => undefined))),
        memoryHistory(ctx, memory.id),
      ]);
      return { memory, entities: entities.filter((e): e is Entity => e !== undefined), history };
    },
  } satisfies ConsoleAction<{ memory: Memory; entities: Entity[]; history: MemoryHistory }>,
  /** The whole graph of the account, filtered by entity and relation type: one read, as `mm graph export`. */
  graph: { mirrors: "mm graph export", bucket: "read", run: (ctx, { query }) => exportGraph(ctx, query) },
  /** An entity, its relations and its first memories: one read, as `mm graph neighbors`. */
  entity: {
    mirrors: "mm graph neighbors",
    bucket: "read",
    async run(ctx, { params }) {
      const [entity, around, memories] = await Promise.all([
        getEntity(ctx, params.id),
        neighbors(ctx, params.id, { depth: 1 }),
        listEntityMemories(ctx, params.id, { limit: 20 }),
      ]);
      return { entity, neighbors: around, memories };
    },
  } satisfies ConsoleAction<EntityView>,
} satisfies Record<string, ConsoleAction<any>>;

export type ActionName = keyof typeof ACTIONS;
