import * as z from "zod/mini";
import { MmError } from "../errors.js";
import { projectNameProblem } from "../core/project.js";
import { charLength, clampedLimit, clampedLimitNumber, identifier, metadataObject, parseWith, positiveInt, reference, requireObject, tagList, text } from "./validate.js";

export const MAX_CONTENT_LENGTH = 10_000;
export const MAX_QUERY_LENGTH = 10_000;
export const MAX_PAGE_LIMIT = 100;
export const DEFAULT_LIST_LIMIT = 20;
export const DEFAULT_SEARCH_LIMIT = 10;
export const DEFAULT_THRESHOLD = 0.5;

const content = text(); // its length gets CONTENT_TOO_LONG, checked before the schema

/** A project's name (beyond the spec; core/project.ts): letters, digits, `.`, `_`, `-`. */
const projectName = z.string().check(z.refine((v) => projectNameProblem(v) === undefined, { error: (issue) => projectNameProblem(issue.input as string) }));

export const MAX_ENTITY_LINKS = 100;

/** Entities a memory mentions (beyond the spec): ids, deduplicated, checked to exist by the service. */
const entityIdList = z.pipe(
  z.array(reference).check(z.maxLength(MAX_ENTITY_LINKS, `at most ${MAX_ENTITY_LINKS} entity ids`)),
  z.transform((ids: string[]) => [...new Set(ids)]),
);

export const MAX_SUPERSEDES = 100;

/** Memories a memory replaces (beyond the spec): ids, deduplicated, checked by the service (same account and user). */
const supersedesList = z.pipe(
  z.array(reference).check(z.maxLength(MAX_SUPERSEDES, `at most ${MAX_SUPERSEDES} memory ids`)),
  z.transform((ids: string[]) => [...new Set(ids)]),
);

export const CreateMemoryInput = z.strictObject({
  content,
  userId: identifier,
  agentId: z.optional(identifier),
  tags: z.optional(tagList),
  metadata: z.optional(metadataObject),
  entityIds: z.optional(entityIdList),
  project: z.optional(projectName),
  supersedes: z.optional(supersedesList),
  dedupe: z.optional(z.boolean()),
  autoSupersede: z.optional(z.boolean()),
});
export type CreateMemoryInput = z.output<typeof CreateMemoryInput>;

export const UpdateMemoryInput = z
  .strictObject({
    content: z.optional(content),
    agentId: z.optional(z.nullable(identifier)),
    tags: z.optional(z.nullable(tagList)),
    metadata: z.optional(z.nullable(metadataObject)),
    entityIds: z.optional(z.nullable(entityIdList)),
    project: z.optional(z.nullable(projectName)),
    supersedes: z.optional(supersedesList),
  })
  .check(z.refine((v) => Object.keys(v).length > 0, "give at least one of content, agentId, tags, metadata, entityIds, project, supersedes"));
export type UpdateMemoryInput = z.output<typeof UpdateMemoryInput>;

/**
 * An ISO 8601 instant ("2026-03-01", "2026-03-01T12:00:00Z"), normalised to UTC with milliseconds.
 * A date alone is the end of that day (UTC). A time must name its zone: read in the server's own
 * zone, the same text would mean another instant on another machine.
 */
const isoInstant = z.pipe(
  z.string().check(z.refine((v) => instantProblem(v) === undefined, { error: (issue) => instantProblem(issue.input as string) })),
  z.transform((v: string) => new Date(/^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T23:59:59.999Z` : v).toISOString()),
);

const INSTANT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-](\d{2}):?(\d{2}))?)?$/;

/** What is wrong with `v` as an instant, in words, or undefined. Date.parse alone rolls 2026-02-30 over to 2 March. */
function instantProblem(v: string): string | undefined {
  const m = INSTANT.exec(v);
  if (!m) return "must be an ISO 8601 date or time, like 2026-03-01 or 2026-03-01T12:00:00Z";
  const [, year, month, day, hour, minute, second, , zoneHours, zoneMinutes] = m.map(Number);
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return `${v.slice(0, 10)} is not a day of the calendar`;
  if (m[4] === undefined) return undefined;
  if (hour > 23 || minute > 59 || (m[6] !== undefined && second > 59)) return `${v.slice(11)} is not a time of day (hours 00–23, minutes and seconds 00–59)`;
  if (m[7] === undefined) return "has no time zone: add Z for UTC, or an offset like +02:00";
  if (m[7] !== "Z" && (zoneHours > 23 || zoneMinutes > 59)) return `${m[7]} is not a time zone offset`;
  return undefined;
}

/** POST /v1/memories/:id/supersede and mm memories supersede: the memory that replaces this one. */
export const SupersedeInput = z.strictObject({ by: reference });
export type SupersedeInput = z.output<typeof SupersedeInput>;

export const SEARCH_MODES = ["semantic", "keyword", "hybrid"] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];
/** The default mode: the best measured on the LoCoMo development split (see README, "Search quality"). */
export const DEFAULT_SEARCH_MODE: SearchMode = "hybrid";

/**
 * A metadata filter: every key must hold its value, at any depth of the memory's metadata. A
 * value is compared as text: "1843" matches the number 1843 and the string "1843".
 */
const metadataFilter = z.pipe(
  z
    .record(z.string().check(z.minLength(1, "keys must not be empty")), z.union([z.string(), z.number(), z.boolean()], { error: "values must be strings, numbers or booleans" }))
    .check(z.refine((v) => Object.keys(v).length <= 20, "at most 20 keys")),
  z.transform((v: Record<string, string | number | boolean>) => Object.fromEntries(Object.entries(v).map(([k, x]) => [k, String(x)]))),
);

export const SearchMemoriesInput = z.strictObject({
  query: text({ max: MAX_QUERY_LENGTH }),
  userId: z.optional(identifier),
  agentId: z.optional(identifier),
  tags: z.optional(tagList),
  metadata: z.optional(metadataFilter),
  entityId: z.optional(reference),
  /** Beyond the spec: that project's memories and the user's global ones (core/project.ts). */
  project: z.optional(projectName),
  /** With `project`: that project's memories alone. */
  projectOnly: z.optional(z.boolean()),
  limit: z._default(clampedLimitNumber(MAX_PAGE_LIMIT), DEFAULT_SEARCH_LIMIT),
  threshold: z._default(z.number().check(z.gte(0, "must be between 0 and 1"), z.lte(1, "must be between 0 and 1")), DEFAULT_THRESHOLD),
  mode: z._default(z.enum(SEARCH_MODES, { error: "must be semantic, keyword or hybrid" }), DEFAULT_SEARCH_MODE),
  includeSuperseded: z.optional(z.boolean()),
  asOf: z.optional(isoInstant),
  /** Beyond the spec: each hit says how its score came about (its signals and what each added). */
  explain: z.optional(z.boolean()),
});
export type SearchMemoriesInput = z.output<typeof SearchMemoriesInput>;

/** `page` and `limit` of every list query: limits above the maximum are clamped. */
export const pageQuery = {
  page: z._default(positiveInt, 1),
  limit: z._default(clampedLimit(MAX_PAGE_LIMIT), DEFAULT_LIST_LIMIT),
};

/** A query-string flag: true or false, as a boolean or as the text a URL carries. */
const queryBoolean = z.pipe(
  z.union([z.boolean(), z.enum(["true", "false"])], { error: "must be true or false" }),
  z.transform((v: boolean | "true" | "false") => v === true || v === "true"),
);

/** GET /v1/memories query: tags arrive comma-separated; empty items are ignored. */
export const ListMemoriesQuery = z.strictObject({
  userId: z.optional(identifier),
  agentId: z.optional(identifier),
  tags: z.optional(
    z.pipe(
      z.union([z.string(), z.array(z.string())]),
      z.transform((v: string | string[]) => (Array.isArray(v) ? v : v.split(",")).map((t) => t.trim()).filter(Boolean)),
    ),
  ),
  metadata: z.optional(metadataFilter),
  entityId: z.optional(reference),
  project: z.optional(projectName),
  projectOnly: z.optional(queryBoolean),
  ...pageQuery,
});
export type ListMemoriesQuery = z.output<typeof ListMemoriesQuery>;

/**
 * Memory create follows the spec's codes before the generic ones: a missing or blank userId is
 * INVALID_USER_ID, content over 10,000 characters is CONTENT_TOO_LONG (counted in code points),
 * and any other problem is VALIDATION_ERROR with details.
 */
export function parseCreateMemory(raw: unknown): CreateMemoryInput {
  const body = requireObject(raw);
  const userId = body.userId;
  if (userId === undefined || userId === null || (typeof userId === "string" && userId.trim() === "")) {
    throw new MmError("INVALID_USER_ID", "userId is required and must not be empty.");
  }
  checkContentLength(body.content);
  return parseWith(CreateMemoryInput, body, "memory");
}

export function parseUpdateMemory(raw: unknown): UpdateMemoryInput {
  const body = requireObject(raw);
  if ("userId" in body) {
    throw new MmError("VALIDATION_ERROR", "Invalid memory update: userId cannot be changed.", {
      details: [{ field: "userId", message: "cannot be changed; create a new memory instead" }],
    });
  }
  checkContentLength(body.content);
  return parseWith(UpdateMemoryInput, body, "memory update");
}

export function parseSearchMemories(raw: unknown): SearchMemoriesInput {
  return withProject(parseWith(SearchMemoriesInput, requireObject(raw), "search"));
}

/** `projectOnly` means nothing without the project it keeps to. */
function withProject<T extends { project?: string; projectOnly?: boolean }>(input: T): T {
  if (input.projectOnly && input.project === undefined) {
    throw new MmError("VALIDATION_ERROR", "projectOnly needs project: which project's memories alone?", { details: [{ field: "projectOnly", message: "needs project" }] });
  }
  return input;
}

export function parseSupersede(raw: unknown): SupersedeInput {
  return parseWith(SupersedeInput, requireObject(raw), "supersede");
}

/** GET /v1/memories?metadata.source=notes&metadata.year=1843: `metadata.KEY` parameters become the metadata filter. */
export function parseListMemories(raw: unknown): ListMemoriesQuery {
  const query = { ...requireObject(raw, "query") };
  const metadata: Record<string, unknown> = typeof query.metadata === "object" && query.metadata !== null ? { ...(query.metadata as object) } : {};
  for (const key of Object.keys(query)) {
    if (!key.startsWith("metadata.")) continue;
    const value = query[key];
    metadata[key.slice("metadata.".length)] = Array.isArray(value) ? value[value.length - 1] : value;
    delete query[key];
  }
  if (Object.keys(metadata).length) query.metadata = metadata;
  return withProject(parseWith(ListMemoriesQuery, query, "list query"));
}

function checkContentLength(value: unknown): void {
  if (typeof value !== "string") return;
  const length = charLength(value);
  if (length > MAX_CONTENT_LENGTH) {
    throw new MmError("CONTENT_TOO_LONG", `content is ${length} characters; the maximum is ${MAX_CONTENT_LENGTH}.`, {
      maxLength: MAX_CONTENT_LENGTH,
      length,
    });
  }
}
