// Inputs of the reference MCP memory server's tools (modelcontextprotocol/servers, src/memory),
// under its names and argument shapes, so that an agent written against it works unchanged.
// Objects are not strict: the reference server's own schemas drop unknown fields, and so do these.
import * as z from "zod/mini";
import { MAX_NAME_LENGTH } from "./entity.js";
import { SEARCH_MODES } from "./memory.js";
import { parseWith, requireObject, text } from "./validate.js";

// Plain strings: the services give a blank or over-long name its own code (NAME_REQUIRED, …).
const name = z.string().check(z.describe(`an entity's name (at most ${MAX_NAME_LENGTH} characters; compared ignoring case, accents and extra spaces)`));
const entityType = z.string().check(z.describe("any type, e.g. person; stored as the nearest mm type, and given back as written"));
const relationType = z.string().check(z.describe("any type, e.g. works_at; stored as upper snake case (WORKS_AT), and given back as written"));
const observation = z.string().check(z.describe("a fact about the entity: stored as a memory linked to it"));

export const RefEntity = z.object({ name, entityType, observations: z._default(z.array(observation), []) });
export const RefRelation = z.object({
  from: name.check(z.describe("the name of the entity where the relation starts")),
  to: name.check(z.describe("the name of the entity where the relation ends")),
  relationType,
});

export const CreateEntitiesInput = z.object({ entities: z.array(RefEntity) });
export const CreateRelationsInput = z.object({ relations: z.array(RefRelation) });
export const AddObservationsInput = z.object({
  observations: z.array(z.object({ entityName: name, contents: z.array(observation) })),
});
export const DeleteEntitiesInput = z.object({ entityNames: z.array(name) });
export const DeleteObservationsInput = z.object({
  deletions: z.array(z.object({ entityName: name, observations: z.array(z.string()) })),
});
export const DeleteRelationsInput = z.object({ relations: z.array(RefRelation) });
export const ReadGraphInput = z.object({});
export const SearchNodesInput = z.object({
  query: text({ max: 2048 }).check(z.describe("what to look for, in natural language: matched by meaning against observations, and against entity names")),
  limit: z.optional(z.int().check(z.gte(1), z.lte(100), z.describe("extension: at most this many matching observations (default 20)"))),
  threshold: z.optional(z.number().check(z.gte(0), z.lte(1), z.describe("extension: minimum score of a matching observation (default 0.05: a 1 in 20 chance of answering)"))),
  mode: z.optional(z.enum(SEARCH_MODES).check(z.describe("extension: hybrid (default: words and meaning), semantic or keyword"))),
});
export const OpenNodesInput = z.object({ names: z.array(name) });

/** Parses one tool's arguments; failures are VALIDATION_ERROR with details, like every mm input. */
export function parseRef<S extends z.ZodMiniType>(schema: S, raw: unknown, tool: string): z.output<S> {
  return parseWith(schema, requireObject(raw ?? {}, "arguments"), `${tool} arguments`);
}
