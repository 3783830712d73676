import { SUBJECT, observationSubject } from "./observation.js";
import { MmError, toMmError } from "../errors.js";
import { ENTITY_TYPES, type EntityType } from "../schemas/enums.js";
import { foldName, parseCreateEntity } from "../schemas/entity.js";
import {
  AddObservationsInput,
  CreateEntitiesInput,
  CreateRelationsInput,
  DeleteEntitiesInput,
  DeleteObservationsInput,
  DeleteRelationsInput,
  OpenNodesInput,
  SearchNodesInput,
  parseRef,
} from "../schemas/mcp-memory.js";
import { parseCreateMemory } from "../schemas/memory.js";
import { RELATION_TYPE_PATTERN } from "../schemas/relation.js";
import type { EntityRecord, MemoryFilter, MemoryRecord, RelationRecord } from "../storage/store.js";
import type { Context } from "./context.js";
import { createEntity, deleteEntity } from "./entities.js";
import { addMemoriesFromLines, deleteMemory, searchMemories, updateMemory, type BatchLineResult } from "./memories.js";
import { createRelation, deleteRelation } from "./relations.js";

/**
 * The reference MCP memory server's model (modelcontextprotocol/servers, src/memory) mapped onto
 * mm's, for its tools (src/mcp/tools.ts) and for `mm import --from mcp-memory`:
 * - an entity is an mm entity; its free-form `entityType` becomes the nearest of mm's seven types,
 *   and the original is kept in `metadata.entityType` and given back;
 * - an observation is a memory linked to its entity (`entityIds`), of the scope's user and agent;
 * - a relation's free-form `relationType` becomes upper snake case (`works at` → `WORKS_AT`), and
 *   the original is kept in `metadata.relationType` when it differs;
 * - names identify entities as they do there, compared the way mm compares names (case, accents
 *   and extra spaces ignored);
 * - `search_nodes` searches observations by meaning (mm's search), and names by substring.
 */

/** Who observations belong to: the MCP server's (or the import's) user and agent. */
export interface Scope {
  userId: string;
  agentId?: string;
}

/** The user observations belong to when nobody said which. */
export const DEFAULT_OBSERVATION_USER = "default";

export interface RefEntity {
  name: string;
  entityType: string;
  observations: string[];
}

export interface RefRelation {
  from: string;
  to: string;
  relationType: string;
}

export interface RefGraph {
  entities: RefEntity[];
  relations: RefRelation[];
}

/** Words that pick each type, checked in this order; anything else is OTHER. */
const TYPE_WORDS: [EntityType, RegExp][] = [
  ["PERSON", /\b(person|people|human|individual|user|customer|client|employee|member|contact|friend|family|author|character|man|woman|child|developer|engineer)s?\b/],
  ["ORGANIZATION", /\b(organi[sz]ation|org|company|companies|business|corporation|corp|institution|agency|team|group|firm|startup|university|school|nonprofit|government|department|club|band)s?\b/],
  ["LOCATION", /\b(location|place|city|cities|country|countries|town|region|address|state|province|continent|building|venue|site|area|room|street)s?\b/],
  ["PRODUCT", /\b(product|service|tool|software|app|application|device|library|framework|package|model|vehicle|book|game|platform|item)s?\b/],
  ["EVENT", /\b(event|meeting|conference|occurrence|incident|appointment|trip|holiday|party|deadline|release|milestone|session)s?\b/],
  ["CONCEPT", /\b(concept|idea|topic|theory|skill|subject|preference|interest|belief|goal|project|technology|language|field|principle|habit|hobby)s?\b/],
];

/** The nearest of mm's entity types to a free-form one (`person` → PERSON, `Tech company` → ORGANIZATION). */
export function entityTypeFor(free: string): EntityType {
  const upper = free.trim().toUpperCase();
  if ((ENTITY_TYPES as readonly string[]).includes(upper)) return upper as EntityType;
  const words = free.toLowerCase().replace(/[_\-./]+/g, " ");
  for (const [type, pattern] of TYPE_WORDS) if (pattern.test(words)) return type;
  return "OTHER";
}

/** A free-form relation type as mm stores it: upper snake case (`works at` → WORKS_AT), else RELATED_TO. */
export function relationTypeFor(free: string): string {
  const snake = free
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .trim()
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/[^A-Za-z0-9]+/g, "_")
    .replace(/^[_0-9]+|_+$/g, "")
    .toUpperCase()
    .slice(0, 64);
  return RELATION_TYPE_PATTERN.test(snake) ? snake : "RELATED_TO";
}

/** The entity an agent means by `name`: same folded name; the oldest when several types share it. */
export async function findEntityByName(ctx: Context, name: string): Promise<EntityRecord | undefined> {
  const folded = foldName(name);
  if (!folded) return undefined;
  const matches = (await ctx.store.searchEntities(ctx.accountId, {}, folded)).filter((e) => e.nameKey === folded);
  return matches.sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id))[0];
}

/** An entity's input for `createEntity` from the reference shape (type mapped, original kept). */
export function entityInput(e: { name: string; entityType: string }): { name: string; type: EntityType; metadata: { entityType: string } } {
  return { name: e.name, type: entityTypeFor(e.entityType), metadata: { entityType: e.entityType } };
}

/** A relation's input for `createRelation` from the reference shape. */
export function relationInput(sourceId: string, targetId: string, relationType: string): Record<string, unknown> {
  const type = relationTypeFor(relationType);
  return { sourceId, targetId, type, ...(type !== relationType ? { metadata: { relationType } } : {}) };
}

function originalEntityType(e: EntityRecord): string {
  const meta = e.metadata ? (JSON.parse(e.metadata) as { entityType?: unknown }) : {};
  return typeof meta.entityType === "string" ? meta.entityType : e.type;
}

function originalRelationType(r: RelationRecord): string {
  const meta = r.metadata ? (JSON.parse(r.metadata) as { relationType?: unknown }) : {};
  return typeof meta.relationType === "string" ? meta.relationType : r.type;
}

function scopeFilter(ctx: Context, scope: Scope): MemoryFilter {
  return { accountId: ctx.accountId, userId: scope.userId, ...(scope.agentId ? { agentId: scope.agentId } : {}) };
}

/**
 * Adds observations as memories linked to their entities, embedded in batches, skipping any whose
 * exact text the entity already has (so repeating a call, or an import, adds nothing twice).
 * `onResult` gets each item's outcome, by index; without it the first failure is thrown.
 */
export async function addObservationMemories(
  ctx: Context,
  scope: Scope,
  items: { entityId: string; content: string }[],
  onResult?: (index: number, result: BatchLineResult | { skipped: true }) => void,
): Promise<MemoryRecord[] | void> {
  const existing = new Map<string, Set<string>>();
  const entityIds = [...new Set(items.map((i) => i.entityId))];
  for (const m of await ctx.store.linkedMemories(scopeFilter(ctx, scope), entityIds)) {
    for (const id of m.entityIds) (existing.get(id) ?? existing.set(id, new Set()).get(id)!).add(observationText(m));
  }
  const names = await ctx.store.getEntities(ctx.accountId, entityIds);
  const fresh: number[] = [];
  for (const [i, item] of items.entries()) {
    const seen = existing.get(item.entityId) ?? existing.set(item.entityId, new Set()).get(item.entityId)!;
    if (seen.has(item.content)) onResult?.(i, { skipped: true });
    else {
      seen.add(item.content);
      fresh.push(i);
    }
  }
  let failure: MmError | undefined;
  await addMemoriesFromLines(
    ctx,
    fresh.map((i) => JSON.stringify({ ...withSubject(items[i].content, names.get(items[i].entityId)?.name), ...scope, entityIds: [items[i].entityId] })),
    {
      batchSize: 64,
      onResult: (r) => {
        if (r.error) failure ??= r.error;
        onResult?.(fresh[r.line - 1], r);
      },
    },
  );
  if (failure && !onResult) throw failure;
}

/**
 * An observation as a memory: "HQ is in Phoenix" under Acme says nothing of Acme, so a search
 * for "where is Acme headquartered?" would miss it. The memory's text names its subject
 * ("Acme: HQ is in Phoenix"), marked in its metadata so the observation reads back as written.
 * An observation that already names its entity, or would grow past the content limit, stays as is.
 */
function withSubject(content: string, name: string | undefined): { content: string; metadata?: Record<string, string> } {
  if (!name || content.toLowerCase().includes(name.toLowerCase())) return { content };
  const named = `${name}: ${content}`;
  return named.length > 10_000 ? { content } : { content: named, metadata: { [SUBJECT]: name } };
}

/** The observation a memory holds: its text, without the subject withSubject put in front. */
function observationText(m: MemoryRecord): string {
  const subject = observationSubject(m.metadata);
  return subject !== undefined && m.content.startsWith(`${subject}: `) ? m.content.slice(subject.length + 2) : m.content;
}

/** Observations (linked memories' contents, oldest first) of each entity, within the scope. */
async function observationsOf(ctx: Context, scope: Scope, entityIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(entityIds.map((id) => [id, []]));
  if (!entityIds.length) return out;
  for (const m of await ctx.store.linkedMemories(scopeFilter(ctx, scope), entityIds)) {
    for (const id of m.entityIds) out.get(id)?.push(observationText(m));
  }
  return out;
}

/** Entities and the relations touching them, in the reference shape. */
async function refGraph(ctx: Context, scope: Scope, entities: EntityRecord[], allRelations?: RelationRecord[]): Promise<RefGraph> {
  const ids = entities.map((e) => e.id);
  const observations = await observationsOf(ctx, scope, ids);
  const relations = allRelations ?? (await ctx.store.relationsOf(ctx.accountId, ids, "both"));
  const ends = await ctx.store.getEntities(ctx.accountId, relations.flatMap((r) => [r.sourceId, r.targetId]));
  return {
    entities: entities.map((e) => ({ name: e.name, entityType: originalEntityType(e), observations: observations.get(e.id) ?? [] })),
    relations: relations
      .filter((r) => ends.has(r.sourceId) && ends.has(r.targetId))
      .sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id))
      .map((r) => ({ from: ends.get(r.sourceId)!.name, to: ends.get(r.targetId)!.name, relationType: originalRelationType(r) })),
  };
}

/** `create_entities`: creates the entities whose names are new, with their observations; returns those. */
export async function createEntities(ctx: Context, scope: Scope, raw: unknown): Promise<{ entities: RefEntity[] }> {
  const input = parseRef(CreateEntitiesInput, raw, "create_entities");
  // Everything is checked before anything is written, so a bad item fails the call whole.
  for (const e of input.entities) {
    parseCreateEntity(entityInput(e));
    for (const content of e.observations) parseCreateMemory({ content, ...scope });
  }
  const seen = new Set<string>();
  const created: RefEntity[] = [];
  const observations: { entityId: string; content: string }[] = [];
  // Each entity and each observation is one operation, billed by the commit that stores it; when
  // the quota runs out on the way, the answer says what was stored.
  let stored = 0;
  try {
    for (const e of input.entities) {
      const key = foldName(e.name);
      if (seen.has(key) || (await findEntityByName(ctx, e.name))) continue;
      seen.add(key);
      const { entity } = await createEntity(ctx, entityInput(e));
      const unique = [...new Set(e.observations)];
      created.push({ name: entity.name, entityType: e.entityType, observations: unique });
      observations.push(...unique.map((content) => ({ entityId: entity.id, content })));
    }
    let failure: MmError | undefined;
    await addObservationMemories(ctx, scope, observations, (_, r) => {
      if ("memory" in r && r.memory) stored++;
      if ("error" in r && r.error) failure ??= r.error;
    });
    if (failure) throw failure;
  } catch (err) {
    throw partlyStored(err, { entities: created.length, observations: stored });
  }
  return { entities: created };
}

/**
 * The error that stopped a call part-way, saying what it had stored (each stored record is
 * billed): `stored: {entities, observations}` beside the error's own fields.
 */
function partlyStored(err: unknown, stored: { entities?: number; observations?: number; relations?: number }): MmError {
  const mm = toMmError(err);
  const counted = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  const what = [
    stored.entities !== undefined ? counted(stored.entities, "entity", "entities") : undefined,
    stored.observations !== undefined ? counted(stored.observations, "observation", "observations") : undefined,
    stored.relations !== undefined ? counted(stored.relations, "relation", "relations") : undefined,
  ].filter(Boolean);
  return new MmError(mm.code, `${mm.message} Stored ${what.join(" and ")} before that; nothing else was written.`, { ...mm.extra, stored }, { cause: err });
}

async function entityNamed(ctx: Context, name: string, code: "ENTITY_NOT_FOUND" | "SOURCE_ENTITY_NOT_FOUND" | "TARGET_ENTITY_NOT_FOUND" = "ENTITY_NOT_FOUND"): Promise<EntityRecord> {
  const found = await findEntityByName(ctx, name);
  if (!found) throw new MmError(code, `Entity with name ${name} not found.`, { name });
  return found;
}

/** `create_relations`: creates the relations not already there (same ends and type); both ends must exist. */
export async function createRelations(ctx: Context, scope: Scope, raw: unknown): Promise<{ relations: RefRelation[] }> {
  const input = parseRef(CreateRelationsInput, raw, "create_relations");
  const resolved = [];
  for (const r of input.relations) {
    resolved.push({ r, source: await entityNamed(ctx, r.from, "SOURCE_ENTITY_NOT_FOUND"), target: await entityNamed(ctx, r.to, "TARGET_ENTITY_NOT_FOUND") });
  }
  const created: RefRelation[] = [];
  try {
    for (const { r, source, target } of resolved) {
      if (await findRelation(ctx, source.id, target.id, r.relationType)) continue;
      await createRelation(ctx, relationInput(source.id, target.id, r.relationType));
      created.push({ from: source.name, to: target.name, relationType: r.relationType });
    }
  } catch (err) {
    throw partlyStored(err, { relations: created.length });
  }
  return { relations: created };
}

/** The relation from `sourceId` to `targetId` whose original type is `relationType`, if any. */
export async function findRelation(ctx: Context, sourceId: string, targetId: string, relationType: string): Promise<RelationRecord | undefined> {
  const candidates = await ctx.store.relationsOf(ctx.accountId, [sourceId], "out", relationTypeFor(relationType));
  return candidates.find((c) => c.targetId === targetId && originalRelationType(c) === relationType);
}

/** `add_observations`: adds each entity's new observations; returns what was added. */
export async function addObservations(
  ctx: Context,
  scope: Scope,
  raw: unknown,
): Promise<{ results: { entityName: string; addedObservations: string[] }[] }> {
  const input = parseRef(AddObservationsInput, raw, "add_observations");
  const targets = [];
  for (const o of input.observations) {
    targets.push({ o, entity: await entityNamed(ctx, o.entityName) });
    for (const content of o.contents) parseCreateMemory({ content, ...scope });
  }
  const items = targets.flatMap(({ entity, o }, t) => o.contents.map((content) => ({ entityId: entity.id, content, t })));
  const added: string[][] = targets.map(() => []);
  let failure: MmError | undefined;
  await addObservationMemories(ctx, scope, items, (i, r) => {
    if ("memory" in r && r.memory) added[items[i].t].push(items[i].content);
    if ("error" in r && r.error) failure ??= r.error;
  });
  if (failure) throw partlyStored(failure, { observations: added.reduce((n, a) => n + a.length, 0) });
  return { results: targets.map(({ o }, t) => ({ entityName: o.entityName, addedObservations: added[t] })) };
}

/**
 * `delete_entities`: deletes each named entity with its relations and its observations (the
 * memories linked to it alone; a memory linked to other entities too only loses the link).
 */
export async function deleteEntities(ctx: Context, scope: Scope, raw: unknown): Promise<{ success: boolean; message: string }> {
  const input = parseRef(DeleteEntitiesInput, raw, "delete_entities");
  const notFound: string[] = [];
  let deleted = 0;
  for (const name of input.entityNames) {
    const entity = await findEntityByName(ctx, name);
    if (!entity) {
      notFound.push(name);
      continue;
    }
    await dropObservations(ctx, scope, entity.id, () => true);
    await deleteEntity(ctx, entity.id);
    deleted++;
  }
  const message = notFound.length ? `Deleted ${deleted} of ${input.entityNames.length} entities. Not found: ${notFound.join(", ")}` : "Entities deleted successfully";
  return { success: true, message };
}

/** Deletes the entity's observations that `pick` selects; returns how many. */
async function dropObservations(ctx: Context, scope: Scope, entityId: string, pick: (content: string) => boolean): Promise<number> {
  let n = 0;
  for (const m of await ctx.store.linkedMemories(scopeFilter(ctx, scope), [entityId])) {
    if (!pick(observationText(m))) continue;
    if (m.entityIds.length === 1) await deleteMemory(ctx, m.id);
    else await updateMemory(ctx, m.id, { entityIds: m.entityIds.filter((id) => id !== entityId) });
    n++;
  }
  return n;
}

/** `delete_observations`: deletes the listed observations of each entity. */
export async function deleteObservations(ctx: Context, scope: Scope, raw: unknown): Promise<{ success: boolean; message: string }> {
  const input = parseRef(DeleteObservationsInput, raw, "delete_observations");
  let deletedCount = 0;
  const missing: string[] = [];
  for (const d of input.deletions) {
    const entity = await findEntityByName(ctx, d.entityName);
    if (!entity) {
      missing.push(d.entityName);
      continue;
    }
    const wanted = new Set(d.observations);
    deletedCount += await dropObservations(ctx, scope, entity.id, (c) => wanted.has(c));
  }
  const requested = input.deletions.reduce((n, d) => n + d.observations.length, 0);
  const message =
    deletedCount === requested
      ? "Observations deleted successfully"
      : `Deleted ${deletedCount} of ${requested} observations.${missing.length ? ` Entities not found: ${missing.join(", ")}` : ""}`;
  return { success: true, message };
}

/** `delete_relations`: deletes the relations matching each (from, to, relationType). */
export async function deleteRelations(ctx: Context, _scope: Scope, raw: unknown): Promise<{ success: boolean; message: string }> {
  const input = parseRef(DeleteRelationsInput, raw, "delete_relations");
  let deletedCount = 0;
  for (const r of input.relations) {
    const [source, target] = [await findEntityByName(ctx, r.from), await findEntityByName(ctx, r.to)];
    if (!source || !target) continue;
    const candidates = await ctx.store.relationsOf(ctx.accountId, [source.id], "out", relationTypeFor(r.relationType));
    for (const c of candidates.filter((c) => c.targetId === target.id && originalRelationType(c) === r.relationType)) {
      await deleteRelation(ctx, c.id);
      deletedCount++;
    }
  }
  const message =
    deletedCount >= input.relations.length ? "Relations deleted successfully" : `Deleted ${deletedCount} of ${input.relations.length} relations. The rest matched nothing.`;
  return { success: true, message };
}

/** `read_graph`: every entity with its observations, and every relation. */
export async function readGraph(ctx: Context, scope: Scope): Promise<RefGraph> {
  const all = await ctx.store.allGraph(ctx.accountId);
  return refGraph(ctx, scope, all.entities, all.relations);
}

/**
 * `search_nodes`: the entities whose observations match the query by meaning (mm's search, best
 * first), then those whose name contains it, with the relations touching them.
 */
export async function searchNodes(ctx: Context, scope: Scope, raw: unknown): Promise<RefGraph> {
  const input = parseRef(SearchNodesInput, raw, "search_nodes");
  const filter = scopeFilter(ctx, scope);
  const { results } = await searchMemories(ctx, {
    query: input.query,
    userId: scope.userId,
    ...(scope.agentId ? { agentId: scope.agentId } : {}),
    limit: input.limit ?? 20,
    // A node lookup, not an answer: the entities whose observations have at least a 1 in 20 chance of
    // answering (hybrid scores are probabilities, docs/search-quality.md), best first. A paraphrase
    // sharing no word scores 0.05-0.4 ("who owns a dog?" against "Priya adopted a rescue greyhound
    // last winter", 0.06); unrelated text stays under 0.01 ("best pizza in town?").
    threshold: input.threshold ?? 0.05,
    mode: input.mode ?? "hybrid",
  });
  const records = new Map((await ctx.store.memoriesByIds(filter, results.map((h) => h.id))).map((r) => [r.id, r]));
  const order: string[] = [];
  for (const hit of results) for (const id of records.get(hit.id)?.entityIds ?? []) if (!order.includes(id)) order.push(id);
  const byName = await ctx.store.searchEntities(ctx.accountId, {}, foldName(input.query));
  for (const e of byName.sort((a, b) => cmp(a.createdAt, b.createdAt))) if (!order.includes(e.id)) order.push(e.id);
  const found = await ctx.store.getEntities(ctx.accountId, order);
  return refGraph(ctx, scope, order.filter((id) => found.has(id)).map((id) => found.get(id)!));
}

/** `open_nodes`: the named entities with their observations, and the relations touching them. */
export async function openNodes(ctx: Context, scope: Scope, raw: unknown): Promise<RefGraph> {
  const input = parseRef(OpenNodesInput, raw, "open_nodes");
  const entities: EntityRecord[] = [];
  for (const name of input.names) {
    const e = await findEntityByName(ctx, name);
    if (e && !entities.some((x) => x.id === e.id)) entities.push(e);
  }
  return refGraph(ctx, scope, entities);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
