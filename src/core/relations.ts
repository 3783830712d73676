import { MmError } from "../errors.js";
import { parseCreateRelation, parseListRelations, parseUpdateRelation } from "../schemas/relation.js";
import type { EntityRecord, RelationRecord } from "../storage/store.js";
import { billedCommit, withSnapshot, type Context } from "./context.js";
import { notAnIdHint } from "./entities.js";
import { newId } from "./ids.js";
import { page, type Page } from "./memories.js";

/** Create shape (spec §2.3): no endpoint summaries; metadata only when supplied. */
export interface Relation {
  id: string;
  sourceId: string;
  targetId: string;
  type: string;
  metadata?: Record<string, unknown>;
  createdAt: string;
}

export interface EntitySummary {
  id: string;
  name: string;
  type: string;
}

export interface RelationWithEnds extends Relation {
  source: EntitySummary;
  target: EntitySummary;
}

export type RelationListItem = Omit<RelationWithEnds, "metadata">;

/**
 * Creates a directed relation. Both endpoints must exist for this account; they are checked
 * under the write lock, so a concurrent entity delete can't leave the new relation dangling.
 * Self-loops are allowed. Duplicates (same source, target and type) are allowed too: two
 * relations can carry different metadata (say, two periods of employment).
 */
export async function createRelation(ctx: Context, raw: unknown): Promise<Relation> {
  const input = parseCreateRelation(raw);
  return ctx.store.write(async (w) => {
    const ends = await w.store.getEntities(ctx.accountId, [input.sourceId, input.targetId]);
    if (!ends.has(input.sourceId)) throw new MmError("SOURCE_ENTITY_NOT_FOUND", `Source entity ${input.sourceId} does not exist.${notAnIdHint("sourceId", input.sourceId)}`);
    if (!ends.has(input.targetId)) throw new MmError("TARGET_ENTITY_NOT_FOUND", `Target entity ${input.targetId} does not exist.${notAnIdHint("targetId", input.targetId)}`);
    const now = ctx.clock();
    const record: RelationRecord = {
      id: newId("rel", now.getTime()),
      accountId: ctx.accountId,
      sourceId: input.sourceId,
      targetId: input.targetId,
      type: input.type,
      metadata: input.metadata === undefined ? null : JSON.stringify(input.metadata),
      createdAt: now.toISOString(),
    };
    await billedCommit(ctx, 1, () => w.insertRelation(record));
    return toRelation(record);
  });
}

export async function getRelation(ctx: Context, id: string): Promise<RelationWithEnds> {
  const withEnds = await withSnapshot(ctx, async (store) => {
    const record = await store.getRelation(ctx.accountId, id);
    return record && attachEnds(record, await store.getEntities(ctx.accountId, [record.sourceId, record.targetId]));
  });
  if (!withEnds) throw relationNotFound(id);
  return withEnds;
}

export async function listRelations(ctx: Context, rawQuery: unknown): Promise<Page<RelationListItem>> {
  const q = parseListRelations(rawQuery);
  // One pinned version for the count, the page and the endpoints: the page always matches its total.
  const { records, total, ends } = await withSnapshot(ctx, async (store) => {
    const page = await store.listRelations(
      { accountId: ctx.accountId, sourceId: q.sourceId, targetId: q.targetId, type: q.type },
      { offset: (q.page - 1) * q.limit, limit: q.limit },
    );
    return { ...page, ends: await store.getEntities(ctx.accountId, page.records.flatMap((r) => [r.sourceId, r.targetId])) };
  });
  const items = records.map((r) => attachEnds(r, ends)).filter((r): r is RelationWithEnds => r !== undefined).map(({ metadata: _omit, ...item }) => item);
  return page(items, q, total);
}

/**
 * PATCH semantics like memories and entities: a new type, or new metadata (`null` removes it).
 * The ends never change: a relation between other entities is another relation.
 */
export async function updateRelation(ctx: Context, id: string, raw: unknown): Promise<RelationWithEnds> {
  const patch = parseUpdateRelation(raw);
  await ctx.store.write(async (w) => {
    const current = await w.store.getRelation(ctx.accountId, id);
    if (!current) throw relationNotFound(id);
    const next: RelationRecord = { ...current };
    if (patch.type !== undefined) next.type = patch.type;
    if (patch.metadata !== undefined) next.metadata = patch.metadata === null ? null : JSON.stringify(patch.metadata);
    await w.replaceRelation(next);
  });
  return getRelation(ctx, id);
}

export async function deleteRelation(ctx: Context, id: string): Promise<{ success: boolean; id: string }> {
  const deleted = await ctx.store.write((w) => billedCommit(ctx, 1, () => w.deleteRelation(ctx.accountId, id)));
  if (!deleted) throw relationNotFound(id);
  return { success: true, id };
}

export function toRelation(r: RelationRecord): Relation {
  const out = { id: r.id, sourceId: r.sourceId, targetId: r.targetId, type: r.type } as Relation;
  if (r.metadata !== null) out.metadata = JSON.parse(r.metadata) as Record<string, unknown>;
  out.createdAt = r.createdAt;
  return out;
}

export function summary(e: EntityRecord): EntitySummary {
  return { id: e.id, name: e.name, type: e.type };
}

/** Adds `source` and `target`; undefined when an endpoint is missing, so no reader sees a dangling relation. */
function attachEnds(r: RelationRecord, ends: Map<string, EntityRecord>): RelationWithEnds | undefined {
  const source = ends.get(r.sourceId);
  const target = ends.get(r.targetId);
  if (!source || !target) return undefined;
  const base = toRelation(r);
  const out = { id: base.id, sourceId: base.sourceId, targetId: base.targetId, type: base.type, source: summary(source), target: summary(target) } as RelationWithEnds;
  if (base.metadata !== undefined) out.metadata = base.metadata;
  out.createdAt = base.createdAt;
  return out;
}

function relationNotFound(id: string): MmError {
  return new MmError("RELATION_NOT_FOUND", `Relation ${id} does not exist.`);
}
