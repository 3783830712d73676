import * as z from "zod/mini";
import { ENTITY_TYPES } from "./enums.js";

/**
 * Response shapes, for the OpenAPI document and for tests that check bodies field for field.
 * The services build these shapes; these schemas describe them.
 */
const iso = z.string().check(z.describe("ISO 8601 UTC timestamp with milliseconds"));
const metadata = z.record(z.string(), z.unknown());

export const Memory = z.strictObject({
  id: z.string().check(z.regex(/^mem_[0-9A-Z]{24}$/)),
  content: z.string(),
  userId: z.string(),
  agentId: z.optional(z.string()),
  tags: z.optional(z.array(z.string())),
  metadata: z.optional(metadata),
  entityIds: z.optional(z.array(z.string())).check(z.describe("extension: linked entities, present only when the memory has links")),
  project: z.optional(z.string()).check(z.describe("extension: the project the memory belongs to; absent for a global memory")),
  createdAt: iso,
  updatedAt: iso,
  supersedes: z.optional(z.array(z.string())).check(z.describe("extension: the memories this one replaced, present only when there are some")),
  supersededBy: z.optional(z.string()).check(z.describe("extension: the memory that replaced this one, present only once replaced")),
  supersededAt: z.optional(iso).check(z.describe("extension: when this memory stopped being current")),
  deduplicated: z.optional(z.literal(true)).check(z.describe("extension: present on a create that stored nothing, because this current memory of the same user and agent already says the same (status 200)")),
});
export const MemoryListItem = z.omit(Memory, { metadata: true, entityIds: true, supersedes: true, deduplicated: true });
const ChainLink = z.strictObject({ id: z.string(), content: z.string(), createdAt: iso, supersededAt: z.optional(iso) });
export const MemoryHistory = z.strictObject({
  id: z.string(),
  versions: z.array(
    z.strictObject({
      version: z.int(),
      content: z.string(),
      agentId: z.optional(z.string()),
      tags: z.optional(z.array(z.string())),
      metadata: z.optional(metadata),
      entityIds: z.optional(z.array(z.string())),
      project: z.optional(z.string()),
      validFrom: iso,
      validTo: z.optional(iso).check(z.describe("when this version ended: the next version's start, or when another memory replaced it; absent while it holds")),
    }),
  ),
  replaced: z.array(ChainLink).check(z.describe("the memories it replaced, and those they replaced, nearest first")),
  replacedBy: z.array(ChainLink).check(z.describe("the memory that replaced it, and the one that replaced that, nearest first")),
  events: z.array(z.strictObject({ type: z.enum(["superseded", "restored"]), at: iso, memoryId: z.string(), reason: z.optional(z.string()) })),
});
export const SearchHit = z.strictObject({
  id: z.string(),
  content: z.string(),
  score: z.number().check(z.gte(0), z.lte(1)),
  userId: z.string(),
  agentId: z.optional(z.string()),
  tags: z.optional(z.array(z.string())),
  project: z.optional(z.string()).check(z.describe("extension: the project the memory belongs to; absent for a global memory")),
  createdAt: iso,
  supersededBy: z.optional(z.string()).check(z.describe("extension, only with includeSuperseded or asOf: the memory that replaced this one")),
  supersededAt: z.optional(iso),
  explanation: z.optional(
    z
      .strictObject({
        mode: z.enum(["hybrid", "semantic", "keyword"]),
        score: z.number(),
        signals: z.record(z.string(), z.number()).check(z.describe("the signals of the query and this memory: cosine, keyword (share of the query's word weight held), turn (1 for a conversation turn, whose constants differ) and, for a turn, speaker (1 when the query names the turn's speaker; those words are then not in keyword) and length (0..1, ln(1 + words) / ln(81))")),
        contributions: z.optional(z.record(z.string(), z.number()).check(z.describe("hybrid: what each signal added to the logit; score = 1 / (1 + e^-(sum))"))),
        model: z.optional(z.string().check(z.describe("hybrid: the embedder the scorer's constants were fitted for, or fallback"))),
      })
      .check(z.describe("extension, only with explain: how the score came about")),
  ),
});
export const SearchResults = z.strictObject({ results: z.array(SearchHit) });

const entityType = z.enum(ENTITY_TYPES);

export const Entity = z.strictObject({
  id: z.string().check(z.regex(/^ent_[0-9A-Z]{24}$/)),
  name: z.string(),
  type: entityType,
  description: z.optional(z.string()),
  metadata: z.optional(metadata),
  createdAt: iso,
  updatedAt: iso,
});
export const EntityListItem = z.omit(Entity, { metadata: true });
export const EntityMerged = z.strictObject({
  entity: Entity,
  merged: z.strictObject({ id: z.string(), name: z.string() }).check(z.describe("the entity merged in, now deleted")),
  movedRelations: z.int(),
  droppedRelations: z.int().check(z.describe("relations of the merged entity that this one already had (same ends and type)")),
  movedLinks: z.int().check(z.describe("memories whose link moved to this entity")),
});
export const EntitySummary = z.strictObject({ id: z.string(), name: z.string(), type: entityType });

export const Relation = z.strictObject({
  id: z.string().check(z.regex(/^rel_[0-9A-Z]{24}$/)),
  sourceId: z.string(),
  targetId: z.string(),
  type: z.string(),
  metadata: z.optional(metadata),
  createdAt: iso,
});
export const RelationWithEnds = z.extend(Relation, { source: EntitySummary, target: EntitySummary });
export const RelationListItem = z.omit(RelationWithEnds, { metadata: true });

export const Deleted = z.strictObject({ success: z.boolean(), id: z.string() });
export const EntityDeleted = z.extend(Deleted, { deletedRelations: z.int().check(z.describe("relations deleted with the entity")) });

export function page<T extends z.ZodMiniType>(item: T) {
  return z.strictObject({
    items: z.array(item),
    pagination: z.strictObject({ page: z.int(), limit: z.int(), total: z.int(), totalPages: z.int() }),
  });
}

export const ErrorEnvelope = z.object({
  error: z.looseObject({ code: z.string(), message: z.string() }),
});

const GraphEdge = z.strictObject({ id: z.string(), sourceId: z.string(), targetId: z.string(), type: z.string() });
const direction = z.enum(["out", "in", "both"]);

/** GET /v1/entities/:id/neighbors (extension). */
export const Neighbors = z.strictObject({
  root: EntitySummary,
  depth: z.int(),
  direction,
  nodes: z.array(z.extend(EntitySummary, { depth: z.int().check(z.describe("hops from the root")) })),
  edges: z.array(GraphEdge),
});

/** GET /v1/graph/path (extension). */
export const Path = z.strictObject({
  from: EntitySummary,
  to: EntitySummary,
  found: z.boolean(),
  length: z.nullable(z.int()).check(z.describe("hops; null when no path was found within maxDepth")),
  nodes: z.array(EntitySummary),
  edges: z.array(GraphEdge),
});

/** GET /v1/graph/export (extension). */
export const GraphExport = z.strictObject({
  entities: z.array(z.strictObject({ id: z.string(), name: z.string(), type: entityType, description: z.optional(z.string()) })),
  relations: z.array(GraphEdge),
});
