import * as z from "zod/mini";
import { MmError, validationError } from "../errors.js";
import { metadataObject, parseWith, reference, requireObject } from "./validate.js";
import { pageQuery } from "./memory.js";

export const RELATION_TYPE_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;
export const SUGGESTED_RELATION_TYPES = ["WORKS_FOR", "KNOWS", "LOCATED_IN", "PART_OF", "CREATED", "RELATED_TO"] as const;

const entityId = reference;

export const CreateRelationInput = z.strictObject({
  sourceId: entityId,
  targetId: entityId,
  type: z.string(),
  metadata: z.optional(metadataObject),
});
export type CreateRelationInput = z.output<typeof CreateRelationInput>;

export const UpdateRelationInput = z
  .strictObject({
    type: z.optional(z.string()),
    metadata: z.optional(z.nullable(metadataObject)),
  })
  .check(z.refine((v) => Object.keys(v).length > 0, "give at least one of type, metadata"));
export type UpdateRelationInput = z.output<typeof UpdateRelationInput>;

export const ListRelationsQuery = z.strictObject({
  sourceId: z.optional(entityId),
  targetId: z.optional(entityId),
  type: z.optional(z.string()),
  ...pageQuery,
});
export type ListRelationsQuery = z.output<typeof ListRelationsQuery>;

export function parseCreateRelation(raw: unknown): CreateRelationInput {
  const body = requireObject(raw);
  for (const field of ["sourceId", "targetId"] as const) {
    if (body[field] === undefined || body[field] === null || body[field] === "") throw validationError(field, "is required");
  }
  checkRelationType(body.type);
  return parseWith(CreateRelationInput, body, "relation");
}

export function parseUpdateRelation(raw: unknown): UpdateRelationInput {
  const body = requireObject(raw);
  for (const field of ["sourceId", "targetId"] as const) {
    if (field in body) throw validationError(field, "cannot be changed; create a new relation instead");
  }
  if ("type" in body) checkRelationType(body.type);
  return parseWith(UpdateRelationInput, body, "relation update");
}

export function parseListRelations(raw: unknown): ListRelationsQuery {
  const body = requireObject(raw, "query");
  if (body.type !== undefined) checkRelationType(body.type);
  return parseWith(ListRelationsQuery, body, "relation list query");
}

/**
 * Relation types are upper snake case. Nothing is normalised: `works_for` is refused, and the
 * message suggests `WORKS_FOR`, so the stored type is always exactly what the caller sent.
 */
export function checkRelationType(value: unknown): asserts value is string {
  if (typeof value === "string" && RELATION_TYPE_PATTERN.test(value)) return;
  const text = typeof value === "string" ? value : "";
  const suggestion = text
    .trim()
    .replace(/[^A-Za-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .toUpperCase();
  const hint = suggestion && RELATION_TYPE_PATTERN.test(suggestion) && suggestion !== text ? ` Did you mean ${suggestion}?` : "";
  throw new MmError(
    "INVALID_RELATION_TYPE",
    `type must be upper snake case (${RELATION_TYPE_PATTERN.source}), e.g. ${SUGGESTED_RELATION_TYPES.join(", ")}.${hint}`,
    hint ? { suggestion } : {},
  );
}
