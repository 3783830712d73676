import { z } from "zod";
import { MmError } from "../errors.js";
import { charLength, clampedLimit, isWellFormed, metadataObject, parseWith, positiveInt, requireObject } from "./validate.js";
import { DEFAULT_LIST_LIMIT, MAX_PAGE_LIMIT } from "./memory.js";

export const ENTITY_TYPES = ["PERSON", "ORGANIZATION", "LOCATION", "PRODUCT", "EVENT", "CONCEPT", "OTHER"] as const;
export type EntityType = (typeof ENTITY_TYPES)[number];

export const MAX_NAME_LENGTH = 500;
export const MAX_DESCRIPTION_LENGTH = 10_000;

const name = z
  .string()
  .refine((s) => charLength(s) <= MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`)
  .refine(isWellFormed, "must be valid Unicode");
const description = z
  .string()
  .refine((s) => charLength(s) <= MAX_DESCRIPTION_LENGTH, `must be at most ${MAX_DESCRIPTION_LENGTH} characters`)
  .refine(isWellFormed, "must be valid Unicode");
const entityType = z.enum(ENTITY_TYPES);

export const CreateEntityInput = z.strictObject({
  name,
  type: entityType,
  description: description.optional(),
  metadata: metadataObject.optional(),
});
export type CreateEntityInput = z.output<typeof CreateEntityInput>;

export const UpdateEntityInput = z
  .strictObject({
    name: name.optional(),
    type: entityType.optional(),
    description: description.nullable().optional(),
    metadata: metadataObject.nullable().optional(),
  })
  .refine((v) => Object.keys(v).length > 0, "give at least one of name, type, description, metadata");
export type UpdateEntityInput = z.output<typeof UpdateEntityInput>;

export const ListEntitiesQuery = z.strictObject({
  type: entityType.optional(),
  search: z.string().refine(isWellFormed, "must be valid Unicode").optional(),
  page: positiveInt.default(1),
  limit: clampedLimit(MAX_PAGE_LIMIT).default(DEFAULT_LIST_LIMIT),
});
export type ListEntitiesQuery = z.output<typeof ListEntitiesQuery>;

/** Entity create: NAME_REQUIRED and INVALID_ENTITY_TYPE (with `allowed`) come before generic validation. */
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
