import type { core } from "zod/mini";
import type { Context } from "../core/context.js";
import { resolveEntityRef } from "../core/entities.js";
import * as ref from "../core/mcp-memory.js";
import { listEntityMemories } from "../core/entities.js";
import { notFound as memoryNotFound } from "../core/memories.js";
import { MmError, validationError } from "../errors.js";
import { ROUTES, type Route } from "../http/routes.js";
import type { Bucket } from "../limits/ledger.js";
import { jsonSchema } from "../schemas/json-schema.js";
import * as RefInput from "../schemas/mcp-memory.js";

/** Who a server acts for: fills (and fences) userId and agentId in memory tools, and owns observations. */
export interface ToolScope {
  userId?: string;
  agentId?: string;
  /** The project adds go to, and searches and lists see (with the global memories), when a call names none. Not a fence. */
  project?: string;
}

/**
 * One MCP tool: a name, what tools/list shows (title, description, the JSON Schema of its
 * arguments, made from the zod schema the service validates with), the rate bucket it counts in,
 * the REST endpoint it counts as, and the core call it maps to. Tools hold no logic of their own.
 */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: false };
  bucket: Bucket;
  /** The REST endpoint whose limits and quota a call shares, or "reference" for the reference server's tools. */
  countsAs: string;
  run(ctx: Context, args: Record<string, unknown>, scope: ToolScope): Promise<unknown>;
}

/**
 * mm's own tools, one per /v1 endpoint: path parameters become arguments beside the body (or the
 * query) fields, and the route's own handler runs, so a tool answers exactly what the endpoint
 * answers. `scoped` tools take userId and agentId from the server's scope when a call leaves them out.
 */
const MM_TOOLS: { name: string; route: string; title: string; hint?: string; scoped?: boolean; fenced?: boolean }[] = [
  {
    name: "memories_add",
    route: "POST /v1/memories",
    title: "Add a memory",
    scoped: true,
    fenced: true,
    hint: "content is free text (at most 10,000 characters); userId and agentId default to the server's --user and --agent. A newer fact (\"I moved to Berlin\") marks the older one it replaces; supersedes: [ids] names them yourself. The same text twice stores one memory (the answer has deduplicated: true); dedupe: false stores a copy.",
  },
  {
    name: "memories_search",
    route: "POST /v1/memories/search",
    title: "Search memories",
    scoped: true,
    hint: "Results are ranked by score (0 to 1). mode: hybrid (default: words and meaning), semantic or keyword. threshold (default 0.5) is the minimum score: in hybrid mode a score is the probability that the memory answers, so use 0.2 to see likely paraphrases. explain: true shows how each score came about. tags: every listed tag must match. Replaced memories are left out unless includeSuperseded is true; asOf (ISO 8601) answers as of that time.",
  },
  { name: "memories_list", route: "GET /v1/memories", title: "List memories", scoped: true, hint: "page and limit (at most 100) walk the pages." },
  { name: "memories_get", route: "GET /v1/memories/:id", title: "Get a memory", fenced: true },
  { name: "memories_update", route: "PATCH /v1/memories/:id", title: "Update a memory", fenced: true, hint: "Given fields replace the old ones; null clears an optional field." },
  { name: "memories_delete", route: "DELETE /v1/memories/:id", title: "Delete a memory", fenced: true },
  { name: "memories_history", route: "GET /v1/memories/:id/history", title: "A memory's history", fenced: true },
  { name: "memories_supersede", route: "POST /v1/memories/:id/supersede", title: "Mark a memory replaced", fenced: true, hint: "id is the memory that is no longer true; by is the one that replaces it (same user)." },
  { name: "memories_restore", route: "POST /v1/memories/:id/restore", title: "Undo a replacement", fenced: true },
  { name: "entities_create", route: "POST /v1/entities", title: "Create an entity", hint: "type: PERSON, ORGANIZATION, LOCATION, PRODUCT, EVENT, CONCEPT or OTHER." },
  { name: "entities_list", route: "GET /v1/entities", title: "List entities" },
  { name: "entities_get", route: "GET /v1/entities/:id", title: "Get an entity" },
  { name: "entities_update", route: "PATCH /v1/entities/:id", title: "Update an entity" },
  { name: "entities_delete", route: "DELETE /v1/entities/:id", title: "Delete an entity" },
  { name: "entities_memories", route: "GET /v1/entities/:id/memories", title: "An entity's memories" },
  { name: "entities_merge", route: "POST /v1/entities/:id/merge", title: "Merge two entities", hint: "id is the entity kept; other is merged into it and deleted." },
  { name: "relations_create", route: "POST /v1/relations", title: "Create a relation", hint: "type is upper snake case, e.g. WORKS_FOR, KNOWS, LOCATED_IN, PART_OF, CREATED, RELATED_TO." },
  { name: "relations_list", route: "GET /v1/relations", title: "List relations" },
  { name: "relations_get", route: "GET /v1/relations/:id", title: "Get a relation" },
  { name: "relations_update", route: "PATCH /v1/relations/:id", title: "Update a relation" },
  { name: "relations_delete", route: "DELETE /v1/relations/:id", title: "Delete a relation" },
  { name: "graph_neighbors", route: "GET /v1/entities/:id/neighbors", title: "Neighbours of an entity", hint: "direction: out (source→target), in, or both (default)." },
  { name: "graph_path", route: "GET /v1/graph/path", title: "Shortest path between two entities" },
  { name: "graph_export", route: "GET /v1/graph/export", title: "Export the graph" },
];

/** The reference memory server's tools, under its names and argument shapes (see core/mcp-memory.ts). */
const REF_TOOLS: {
  name: string;
  title: string;
  description: string;
  input: core.$ZodType;
  bucket: Bucket;
  run(ctx: Context, scope: ref.Scope, args: unknown): Promise<unknown>;
}[] = [
  { name: "create_entities", title: "Create Entities", description: "Create multiple new entities in the knowledge graph (their observations become linked memories)", input: RefInput.CreateEntitiesInput, bucket: "write", run: ref.createEntities },
  { name: "create_relations", title: "Create Relations", description: "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice", input: RefInput.CreateRelationsInput, bucket: "write", run: ref.createRelations },
  { name: "add_observations", title: "Add Observations", description: "Add new observations to existing entities in the knowledge graph", input: RefInput.AddObservationsInput, bucket: "write", run: ref.addObservations },
  { name: "delete_entities", title: "Delete Entities", description: "Delete multiple entities and their associated relations from the knowledge graph", input: RefInput.DeleteEntitiesInput, bucket: "write", run: ref.deleteEntities },
  { name: "delete_observations", title: "Delete Observations", description: "Delete specific observations from entities in the knowledge graph", input: RefInput.DeleteObservationsInput, bucket: "write", run: ref.deleteObservations },
  { name: "delete_relations", title: "Delete Relations", description: "Delete multiple relations from the knowledge graph", input: RefInput.DeleteRelationsInput, bucket: "write", run: ref.deleteRelations },
  { name: "read_graph", title: "Read Graph", description: "Read the entire knowledge graph", input: RefInput.ReadGraphInput, bucket: "read", run: (ctx, scope) => ref.readGraph(ctx, scope) },
  { name: "search_nodes", title: "Search Nodes", description: "Search for nodes in the knowledge graph by meaning: observations that match the query, and names that contain it", input: RefInput.SearchNodesInput, bucket: "search", run: ref.searchNodes },
  { name: "open_nodes", title: "Open Nodes", description: "Open specific nodes in the knowledge graph by their names", input: RefInput.OpenNodesInput, bucket: "read", run: ref.openNodes },
];

function fromRoute(spec: (typeof MM_TOOLS)[number]): McpTool {
  const [method, path] = spec.route.split(" ");
  const route = ROUTES.find((r) => r.method === method && r.path === path);
  if (!route) throw new Error(`MCP tool ${spec.name}: no route ${spec.route}`);
  const params = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]);
  const fields = route.body ?? route.query;
  const schema = fields ? jsonSchema(fields) : { type: "object", properties: {}, additionalProperties: false };
  const resource = { memories: "memory", entities: "entity", relations: "relation" }[path.split("/")[2]] ?? "resource";
  const properties = { ...Object.fromEntries(params.map((p) => [p, { type: "string", description: resource === "entity" ? "the entity's id (ent_…) or its name" : `the ${resource}'s id` }])), ...(schema.properties as object) };
  const required = [...params, ...((schema.required as string[]) ?? [])];
  return {
    name: spec.name,
    title: spec.title,
    description: `${route.summary}.${spec.hint ? ` ${spec.hint}` : ""} Same as ${spec.route}.`,
    inputSchema: { ...schema, type: "object", properties, ...(required.length ? { required } : {}) },
    annotations: {
      readOnlyHint: route.method === "GET" || route.bucket === "search",
      destructiveHint: route.method === "DELETE",
      idempotentHint: route.method !== "POST",
      openWorldHint: false,
    },
    bucket: route.bucket,
    countsAs: spec.route,
    run: async (ctx, args, scope) => {
      if (spec.fenced) await fenceMemory(ctx, args, scope);
      // A scoped server lists an entity's memories of its own user (and agent) only.
      if (spec.name === "entities_memories" && (scope.userId !== undefined || scope.agentId !== undefined)) {
        const { id, ...query } = args;
        if (typeof id !== "string" || id === "") throw validationError("id", "is required: an id");
        return listEntityMemories(ctx, id, query, scope);
      }
      return runRoute(route, params, spec.scoped ? withScope(args, scope) : args, ctx);
    },
  };
}

/** Arguments that name an entity: an agent may give its name wherever the CLI takes one. */
const ENTITY_FIELDS = ["sourceId", "targetId", "from", "to", "root"];

async function runRoute(route: Route, params: string[], args: Record<string, unknown>, ctx: Context): Promise<unknown> {
  const rest = { ...args };
  const values: Record<string, string> = {};
  const byName = (v: string) =>
    resolveEntityRef(ctx, v).catch((err: unknown) => {
      if (err instanceof MmError && err.code === "ENTITY_NOT_FOUND") throw new MmError("ENTITY_NOT_FOUND", `No entity is named "${v}". The entities_list tool with search "${v}" finds names that contain it.`);
      throw err;
    });
  for (const p of params) {
    const v = rest[p];
    if (typeof v !== "string" || v === "") throw validationError(p, "is required: an id");
    // /v1/entities/:id and its neighbours and memories: "Sam Rivera" works as well as ent_….
    values[p] = route.path.startsWith("/v1/entities/:id") ? await byName(v) : v;
    delete rest[p];
  }
  for (const field of ENTITY_FIELDS) if (typeof rest[field] === "string" && rest[field] !== "") rest[field] = await byName(rest[field] as string);
  if (Array.isArray(rest.entityIds)) rest.entityIds = await Promise.all(rest.entityIds.map((v) => (typeof v === "string" && v !== "" ? byName(v) : v)));
  const input = route.body ? { params: values, query: {}, body: rest } : { params: values, query: rest, body: undefined };
  const result = await route.run(ctx, input);
  return result && typeof result === "object" && "status" in result && "body" in result ? (result as { body: unknown }).body : result;
}

/** Fills userId and agentId from the scope; a call naming another user or agent than the scope's is refused. */
function withScope(args: Record<string, unknown>, scope: ToolScope): Record<string, unknown> {
  const out = { ...args };
  for (const field of ["userId", "agentId"] as const) {
    const fixed = scope[field];
    if (fixed === undefined) continue;
    refuseOtherThan(scope, field, out[field]);
    out[field] = fixed;
  }
  if (scope.project !== undefined && out.project === undefined) out.project = scope.project;
  return out;
}

function refuseOtherThan(scope: ToolScope, field: "userId" | "agentId", value: unknown): void {
  const fixed = scope[field];
  if (fixed !== undefined && value !== undefined && value !== fixed) {
    throw new MmError("FORBIDDEN", `This server is scoped to ${field} "${fixed}"; it cannot act for "${String(value)}".`, { field, scope: fixed });
  }
}

/**
 * A scoped server (`mm mcp --user alice`) acts on its user's (and agent's) memories only: a
 * memory id of another user or agent answers exactly as an unknown id does, and an update may not
 * move a memory to another agent. That holds for the ids a call names besides its own (`supersedes`,
 * `by`) too: the first of them that is unknown or out of scope is answered here, alike, so which
 * one the core would have named, and how, can't tell them apart.
 */
async function fenceMemory(ctx: Context, args: Record<string, unknown>, scope: ToolScope): Promise<void> {
  if (scope.userId === undefined && scope.agentId === undefined) return;
  refuseOtherThan(scope, "agentId", args.agentId);
  const where = async (id: unknown): Promise<"unknown" | "outside" | "inside" | undefined> => {
    if (typeof id !== "string" || id === "") return undefined; // runRoute and the core say what is wrong with it
    const record = await ctx.store.getMemory(ctx.accountId, id);
    if (!record) return "unknown";
    return (scope.userId !== undefined && record.userId !== scope.userId) || (scope.agentId !== undefined && record.agentId !== scope.agentId) ? "outside" : "inside";
  };
  if ((await where(args.id)) === "outside") throw memoryNotFound(args.id as string);
  if (["unknown", "outside"].includes((await where(args.by)) ?? "")) throw memoryNotFound(args.by as string);
  for (const id of Array.isArray(args.supersedes) ? args.supersedes : []) {
    if (["unknown", "outside"].includes((await where(id)) ?? "")) throw new MmError("MEMORY_NOT_FOUND", memoryNotFound(id).message, { field: "supersedes" });
  }
}

/** Reference tools that store many records in one call, each billed as one operation. */
const WRITES_RECORDS = new Set(["create_entities", "add_observations", "create_relations"]);

function fromReference(spec: (typeof REF_TOOLS)[number]): McpTool {
  const readOnly = spec.bucket !== "write";
  return {
    name: spec.name,
    title: spec.title,
    description: `${spec.description}. (The reference memory server's tool, on mm's store.)${WRITES_RECORDS.has(spec.name) ? " Each entity and each observation stored counts one operation against the monthly quota; a call that runs out of quota part-way says what it stored." : ""}`,
    inputSchema: jsonSchema(spec.input),
    annotations: { readOnlyHint: readOnly, destructiveHint: spec.name.startsWith("delete_"), idempotentHint: readOnly || spec.name.startsWith("delete_"), openWorldHint: false },
    bucket: spec.bucket,
    countsAs: "reference",
    run: (ctx, args, scope) => spec.run(ctx, { userId: scope.userId ?? ref.DEFAULT_OBSERVATION_USER, ...(scope.agentId ? { agentId: scope.agentId } : {}) }, args),
  };
}

/** Every tool `mm mcp` and `/mcp` offer: mm's own, then the reference server's. */
export const TOOLS: McpTool[] = [...MM_TOOLS.map(fromRoute), ...REF_TOOLS.map(fromReference)];
