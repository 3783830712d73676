import { z } from "zod";

/**
 * Response shapes, for the OpenAPI document and for tests that check bodies field for field.
 * The services build these shapes; these schemas describe them.
 */
const iso = z.string().describe("ISO 8601 UTC timestamp with milliseconds");
const metadata = z.record(z.string(), z.unknown());

export const Memory = z.strictObject({
  id: z.string().regex(/^mem_[0-9A-Z]{24}$/),
  content: z.string(),
  userId: z.string(),
  agentId: z.string().optional(),
  tags: z.array(z.string()).optional(),
  metadata: metadata.optional(),
  entityIds: z.array(z.string()).optional().describe("extension: linked entities, present only when the memory has links"),
  createdAt: iso,
  updatedAt: iso,
});
export const MemoryListItem = Memory.omit({ metadata: true, entityIds: true });
export const SearchHit = z.strictObject({
  id: z.string(),
  content: z.string(),
  score: z.number().min(0).max(1),
  userId: z.string(),
  agentId: z.string().optional(),
  tags: z.array(z.string()).optional(),
  createdAt: iso,
});
export const SearchResults = z.strictObject({ results: z.array(SearchHit) });

export const Entity = z.strictObject({
  id: z.string().regex(/^ent_[0-9A-Z]{24}$/),
  name: z.string(),
  type: z.enum(["PERSON", "ORGANIZATION", "LOCATION", "PRODUCT", "EVENT", "CONCEPT", "OTHER"]),
  description: z.string().optional(),
  metadata: metadata.optional(),
  createdAt: iso,
  updatedAt: iso,
});
export const EntityListItem = Entity.omit({ metadata: true });
export const EntitySummary = z.strictObject({ id: z.string(), name: z.string(), type: Entity.shape.type });

export const Relation = z.strictObject({
  id: z.string().regex(/^rel_[0-9A-Z]{24}$/),
  sourceId: z.string(),
  targetId: z.string(),
  type: z.string(),
  metadata: metadata.optional(),
  createdAt: iso,
});
export const RelationWithEnds = Relation.extend({ source: EntitySummary, target: EntitySummary });
export const RelationListItem = RelationWithEnds.omit({ metadata: true });

export const Deleted = z.strictObject({ success: z.boolean(), id: z.string() });
export const EntityDeleted = Deleted.extend({ deletedRelations: z.number().int().describe("relations deleted with the entity") });

export function page<T extends z.ZodType>(item: T) {
  return z.strictObject({
    items: z.array(item),
    pagination: z.strictObject({ page: z.number().int(), limit: z.number().int(), total: z.number().int(), totalPages: z.number().int() }),
  });
}

export const ErrorEnvelope = z.object({
  error: z.looseObject({ code: z.string(), message: z.string() }),
});
