import type { core } from "zod/mini";
import type { Context } from "../core/context.js";
import type { Bucket } from "../limits/ledger.js";
import * as memories from "../core/memories.js";
import * as entities from "../core/entities.js";
import * as relations from "../core/relations.js";
import * as graph from "../core/graph.js";
import { CreateMemoryInput, ListMemoriesQuery, SearchMemoriesInput, SupersedeInput, UpdateMemoryInput } from "../schemas/memory.js";
import { CreateEntityInput, EntityMemoriesQuery, ListEntitiesQuery, MergeEntitiesInput, UpdateEntityInput } from "../schemas/entity.js";
import { CreateRelationInput, ListRelationsQuery, UpdateRelationInput } from "../schemas/relation.js";
import { ExportQuery, NeighborsQuery, PathBetweenQuery } from "../schemas/graph.js";
import * as R from "../schemas/responses.js";

export interface RouteInput {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
}

/**
 * One endpoint: its method and path, rate-limit bucket, the zod schemas it validates with (also
 * the source of the OpenAPI document), and the core call it maps to. Routes hold no logic.
 */
export interface Route {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  bucket: Bucket;
  summary: string;
  body?: core.$ZodType;
  query?: core.$ZodType;
  response: core.$ZodType;
  /** Success status; a handler may override it (entity create returns 200 for an existing entity). */
  status: 200 | 201;
  /** Beyond the spec (documented as an extension). */
  extension?: boolean;
  /** The `mm` command that does the same (test/cli/route-parity.test.ts checks each exists, in the same bucket). */
  cli: string;
  run(ctx: Context, input: RouteInput): Promise<unknown | { status: number; body: unknown }>;
}

export const ROUTES: Route[] = [
  {
    method: "POST", path: "/v1/memories", cli: "memories add", bucket: "write", status: 201, summary: "Create a memory (embedded on creation)",
    body: CreateMemoryInput, response: R.Memory,
    // A create that stored nothing (the same as a current memory) answers 200 with that memory, marked `deduplicated`.
    run: async (ctx, { body }) => {
      const memory = await memories.createMemory(ctx, body);
      return memory.deduplicated ? { status: 200, body: memory } : memory;
    },
  },
  {
    method: "POST", path: "/v1/memories/search", cli: "memories search", bucket: "search", status: 200, summary: "Search memories by meaning",
    body: SearchMemoriesInput, response: R.SearchResults,
    run: (ctx, { body }) => memories.searchMemories(ctx, body),
  },
  {
    method: "GET", path: "/v1/memories", cli: "memories list", bucket: "read", status: 200, summary: "List memories, newest first",
    query: ListMemoriesQuery, response: R.page(R.MemoryListItem),
    run: (ctx, { query }) => memories.listMemories(ctx, query),
  },
  {
    method: "GET", path: "/v1/memories/:id", cli: "memories get", bucket: "read", status: 200, summary: "Get a memory", response: R.Memory,
    run: (ctx, { params }) => memories.getMemory(ctx, params.id),
  },
  {
    method: "PATCH", path: "/v1/memories/:id", cli: "memories update", bucket: "write", status: 200, summary: "Update a memory (re-embeds when content changes)",
    body: UpdateMemoryInput, response: R.Memory, extension: true,
    run: (ctx, { params, body }) => memories.updateMemory(ctx, params.id, body),
  },
  {
    method: "DELETE", path: "/v1/memories/:id", cli: "memories delete", bucket: "write", status: 200, summary: "Delete a memory permanently", response: R.Deleted,
    run: (ctx, { params }) => memories.deleteMemory(ctx, params.id),
  },
  {
    method: "GET", path: "/v1/memories/:id/history", cli: "memories history", bucket: "read", status: 200,
    summary: "Every version of a memory, its replacement chain both ways, and its replacements and restores", response: R.MemoryHistory, extension: true,
    run: (ctx, { params }) => memories.memoryHistory(ctx, params.id),
  },
  {
    method: "POST", path: "/v1/memories/:id/supersede", cli: "memories supersede", bucket: "write", status: 200,
    summary: "Mark a memory replaced by another (`by`) of the same user", body: SupersedeInput, response: R.Memory, extension: true,
    run: (ctx, { params, body }) => memories.supersedeMemory(ctx, params.id, body),
  },
  {
    method: "POST", path: "/v1/memories/:id/restore", cli: "memories restore", bucket: "write", status: 200,
    summary: "Undo a replacement: the memory is current again", response: R.Memory, extension: true,
    run: (ctx, { params }) => memories.restoreMemory(ctx, params.id),
  },
  {
    method: "POST", path: "/v1/entities", cli: "entities create", bucket: "write", status: 201,
    summary: "Create an entity; an existing one with the same folded name and type is returned with 200 instead",
    body: CreateEntityInput, response: R.Entity,
    run: async (ctx, { body }) => {
      const { entity, created } = await entities.createEntity(ctx, body);
      return { status: created ? 201 : 200, body: entity };
    },
  },
  {
    method: "GET", path: "/v1/entities", cli: "entities list", bucket: "read", status: 200, summary: "List entities; `search` matches names ignoring case and accents",
    query: ListEntitiesQuery, response: R.page(R.EntityListItem),
    run: (ctx, { query }) => entities.listEntities(ctx, query),
  },
  {
    method: "GET", path: "/v1/entities/:id", cli: "entities get", bucket: "read", status: 200, summary: "Get an entity", response: R.Entity,
    run: (ctx, { params }) => entities.getEntity(ctx, params.id),
  },
  {
    method: "PATCH", path: "/v1/entities/:id", cli: "entities update", bucket: "write", status: 200, summary: "Update an entity", body: UpdateEntityInput,
    response: R.Entity, extension: true,
    run: (ctx, { params, body }) => entities.updateEntity(ctx, params.id, body),
  },
  {
    method: "DELETE", path: "/v1/entities/:id", cli: "entities delete", bucket: "write", status: 200, summary: "Delete an entity and, in the same operation, its relations",
    response: R.EntityDeleted,
    run: (ctx, { params }) => entities.deleteEntity(ctx, params.id),
  },
  {
    method: "POST", path: "/v1/entities/:id/merge", cli: "entities merge", bucket: "write", status: 200,
    summary: "Merge another entity (`other`) into this one: its relations and memory links move here, then it is deleted",
    body: MergeEntitiesInput, response: R.EntityMerged, extension: true,
    run: (ctx, { params, body }) => entities.mergeEntities(ctx, params.id, body),
  },
  {
    method: "GET", path: "/v1/entities/:id/memories", cli: "entities memories", bucket: "read", status: 200, summary: "List the memories linked to an entity",
    query: EntityMemoriesQuery, response: R.page(R.MemoryListItem), extension: true,
    run: (ctx, { params, query }) => entities.listEntityMemories(ctx, params.id, query),
  },
  {
    method: "POST", path: "/v1/relations", cli: "relations create", bucket: "write", status: 201, summary: "Create a relation between two existing entities",
    body: CreateRelationInput, response: R.Relation,
    run: (ctx, { body }) => relations.createRelation(ctx, body),
  },
  {
    method: "GET", path: "/v1/relations", cli: "relations list", bucket: "read", status: 200, summary: "List relations with source and target summaries",
    query: ListRelationsQuery, response: R.page(R.RelationListItem),
    run: (ctx, { query }) => relations.listRelations(ctx, query),
  },
  {
    method: "GET", path: "/v1/relations/:id", cli: "relations get", bucket: "read", status: 200, summary: "Get a relation with its endpoints and metadata",
    response: R.RelationWithEnds,
    run: (ctx, { params }) => relations.getRelation(ctx, params.id),
  },
  {
    method: "PATCH", path: "/v1/relations/:id", cli: "relations update", bucket: "write", status: 200, summary: "Update a relation's type or metadata",
    body: UpdateRelationInput, response: R.RelationWithEnds, extension: true,
    run: (ctx, { params, body }) => relations.updateRelation(ctx, params.id, body),
  },
  {
    method: "DELETE", path: "/v1/relations/:id", cli: "relations delete", bucket: "write", status: 200, summary: "Delete a relation permanently", response: R.Deleted,
    run: (ctx, { params }) => relations.deleteRelation(ctx, params.id),
  },
  {
    method: "GET", path: "/v1/entities/:id/neighbors", cli: "graph neighbors", bucket: "read", status: 200,
    summary: "Entities within `depth` hops of an entity, with the relations crossed", query: NeighborsQuery, response: R.Neighbors, extension: true,
    run: (ctx, { params, query }) => graph.neighbors(ctx, params.id, query),
  },
  {
    method: "GET", path: "/v1/graph/path", cli: "graph path", bucket: "read", status: 200,
    summary: "The shortest chain of relations between two entities (`from`, `to`)", query: PathBetweenQuery, response: R.Path, extension: true,
    run: (ctx, { query }) => graph.pathBetween(ctx, query),
  },
  {
    method: "GET", path: "/v1/graph/export", cli: "graph export", bucket: "read", status: 200,
    summary: "The whole graph, or the part within `depth` hops of `root`, as JSON", query: ExportQuery, response: R.GraphExport, extension: true,
    run: (ctx, { query }) => graph.exportGraph(ctx, query),
  },
];
