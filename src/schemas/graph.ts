import * as z from "zod/mini";
import { MmError } from "../errors.js";
import { ENTITY_TYPES } from "./enums.js";
import { checkRelationType } from "./relation.js";
import { parseWith, positiveInt, reference, requireObject } from "./validate.js";

/** Which way relations are followed: `out` is source→target, `in` target→source, `both` either. */
export type Direction = "out" | "in" | "both";

/** Hard cap on hops: each hop is one store query, and past 10 a "neighbourhood" is most of the graph anyway. */
export const MAX_GRAPH_DEPTH = 10;
export const DEFAULT_PATH_MAX_DEPTH = 6;

const hops = z.pipe(positiveInt, z.number().check(z.lte(MAX_GRAPH_DEPTH, `must be at most ${MAX_GRAPH_DEPTH}`)));
const direction = z.enum(["out", "in", "both"], { error: "must be out, in or both" });

export const NeighborsQuery = z.strictObject({
  depth: z._default(hops, 1),
  type: z.optional(z.string()),
  direction: z._default(direction, "both"),
});

export const PathQuery = z.strictObject({
  type: z.optional(z.string()),
  direction: z._default(direction, "both"),
  maxDepth: z._default(hops, DEFAULT_PATH_MAX_DEPTH),
});

export const ExportQuery = z.strictObject({
  root: z.optional(reference),
  depth: z.optional(hops),
  type: z.optional(z.string()),
  /** Only entities of this type, and the relations between them (the console's graph filter). */
  entityType: z.optional(z.enum(ENTITY_TYPES)),
  direction: z.optional(direction),
});

/** GET /v1/graph/path: the two ends travel in the query beside the walk's options. */
export const PathBetweenQuery = z.extend(PathQuery, { from: reference, to: reference });

export function parseNeighborsQuery(raw: unknown): z.output<typeof NeighborsQuery> {
  return parseWith(NeighborsQuery, checkedType(raw), "neighbors query");
}

export function parsePathQuery(raw: unknown): z.output<typeof PathQuery> {
  return parseWith(PathQuery, checkedType(raw), "path query");
}

export function parseExportQuery(raw: unknown): z.output<typeof ExportQuery> {
  const body = checkedType(raw);
  if (body.entityType !== undefined && !(ENTITY_TYPES as readonly unknown[]).includes(body.entityType)) {
    throw new MmError("INVALID_ENTITY_TYPE", `entityType must be one of ${ENTITY_TYPES.join(", ")}.`, { allowed: [...ENTITY_TYPES] });
  }
  return parseWith(ExportQuery, body, "export query");
}

/** A relation-type filter gets INVALID_RELATION_TYPE, like everywhere else, before generic validation. */
function checkedType(raw: unknown): Record<string, unknown> {
  const body = requireObject(raw, "query");
  if (body.type !== undefined) checkRelationType(body.type);
  return body;
}
