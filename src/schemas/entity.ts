import * as z from "zod/mini";
import { MmError } from "../errors.js";
import { metadataObject, parseWith, reference, requireObject, text } from "./validate.js";
import { ENTITY_TYPES } from "./enums.js";
import { pageQuery } from "./memory.js";

export const MAX_NAME_LENGTH = 500;
export const MAX_DESCRIPTION_LENGTH = 10_000;

// Blank names get NAME_REQUIRED before the schema runs.
const name = text({ max: MAX_NAME_LENGTH, blank: true });
const description = text({ max: MAX_DESCRIPTION_LENGTH, blank: true });
const entityType = z.enum(ENTITY_TYPES);

export const CreateEntityInput = z.strictObject({
  name,
  type: entityType,
  description: z.optional(description),
  metadata: z.optional(metadataObject),
});
export type CreateEntityInput = z.output<typeof CreateEntityInput>;

export const UpdateEntityInput = z
  .strictObject({
    name: z.optional(name),
    type: z.optional(entityType),
    description: z.optional(z.nullable(description)),
    metadata: z.optional(z.nullable(metadataObject)),
  })
  .check(z.refine((v) => Object.keys(v).length > 0, "give at least one of name, type, description, metadata"));
export type UpdateEntityInput = z.output<typeof UpdateEntityInput>;

export const ListEntitiesQuery = z.strictObject({
  type: z.optional(entityType),
  search: z.optional(text({ blank: true })),
  ...pageQuery,
});
export type ListEntitiesQuery = z.output<typeof ListEntitiesQuery>;

/** GET /v1/entities/:id/memories query. */
export const EntityMemoriesQuery = z.strictObject(pageQuery);

/** Entity create: NAME_REQUIRED and INVALID_ENTITY_TYPE (with `allowed`) come before generic validation. */
/** POST /v1/entities/:id/merge: the entity merged into this one, then deleted. */
export const MergeEntitiesInput = z.strictObject({ other: reference });

export function parseMergeEntities(raw: unknown): z.output<typeof MergeEntitiesInput> {
  return parseWith(MergeEntitiesInput, requireObject(raw), "merge");
}

export function parseCreateEntity(raw: unknown): CreateEntityInput {
  const body = requireObject(raw);
  checkName(body.name, true);
  checkType(body.type, true);
  return parseWith(CreateEntityInput, body, "entity");
}

export function parseUpdateEntity(raw: unknown): UpdateEntityInput {
  const body = requireObject(raw);
  if ("name" in body) checkName(body.name, false);
  if ("type" in body) checkType(body.type, false);
  return parseWith(UpdateEntityInput, body, "entity update");
}

export function parseListEntities(raw: unknown): ListEntitiesQuery {
  const body = requireObject(raw, "query");
  if (body.type !== undefined) checkType(body.type, false);
  return parseWith(ListEntitiesQuery, body, "entity list query");
}

export function parseEntityMemoriesQuery(raw: unknown): z.output<typeof EntityMemoriesQuery> {
  return parseWith(EntityMemoriesQuery, raw, "list query");
}

function checkName(value: unknown, required: boolean): void {
  if ((required && (value === undefined || value === null)) || (typeof value === "string" && value.trim() === "") || (!required && value === null)) {
    throw new MmError("NAME_REQUIRED", "name is required and must not be empty.");
  }
}

function checkType(value: unknown, required: boolean): void {
  if (!required && value === undefined) return;
  if (typeof value !== "string" || !(ENTITY_TYPES as readonly string[]).includes(value)) {
    const hint = typeof value === "string" && (ENTITY_TYPES as readonly string[]).includes(value.toUpperCase()) ? ` Did you mean ${value.toUpperCase()}?` : "";
    throw new MmError("INVALID_ENTITY_TYPE", `type must be one of ${ENTITY_TYPES.join(", ")}.${hint}`, { allowed: [...ENTITY_TYPES] });
  }
}

/**
 * The form names are compared in: Unicode-decomposed without accents, case-folded, inner
 * whitespace collapsed. "Zoë  Saldaña" and "zoe saldana" fold alike.
 */
export function foldName(s: string): string {
  return s.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase().replace(/\s+/g, " ").trim();
}
