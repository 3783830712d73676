import { entitiesNotFound, MmError, validationError } from "../errors.js";
import { foldName, parseCreateEntity, parseEntityMemoriesQuery, parseListEntities, parseMergeEntities, parseUpdateEntity } from "../schemas/entity.js";
import type { EntityType } from "../schemas/enums.js";
import type { EntityRecord, StoreWriter } from "../storage/store.js";
import { billedCommit, withSnapshot, type Context } from "./context.js";
import { onlyNamed } from "./entity-ref.js";
import { newId } from "./ids.js";
import { page, toListItem as toMemoryListItem, type MemoryListItem, type Page } from "./memories.js";

/** Create and get shape (spec §2.2): description and metadata only when supplied. */
export interface Entity {
  id: string;
  name: string;
  type: string;
  description?: string;
  metadata?: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export type EntityListItem = Omit<Entity, "metadata">;

export interface CreateEntityResult {
  entity: Entity;
  /** False when an entity with the same folded name and type existed and was returned instead. */
  created: boolean;
}

/**
 * Creates an entity, unless one with the same name (compared case- and accent-insensitively) and
 * type exists: then that one is returned unchanged with `created: false` (HTTP 200 instead of 201,
 * a warning on the CLI). Creating is therefore idempotent, and the graph never grows silent twins.
 */
export async function createEntity(ctx: Context, raw: unknown): Promise<CreateEntityResult> {
  const input = parseCreateEntity(raw);
  return ctx.store.write((w) =>
    billedCommit(ctx, 1, async () => {
      const existing = (await w.store.findEntityByName(ctx.accountId, foldName(input.name), input.type)) ?? (await findVariant(ctx, w, input.name, input.type, false));
      if (existing) return { entity: toEntity(existing), created: false };
      const record = newEntityRecord(ctx, input);
      await w.insertEntity(record);
      return { entity: toEntity(record), created: true };
    }),
  );
}

export async function getEntity(ctx: Context, id: string): Promise<Entity> {
  const record = await ctx.store.getEntity(ctx.accountId, id);
  if (!record) throw entityNotFound(id);
  return toEntity(record);
}

/**
 * Lists entities. Without `search`: newest first. With `search`: names containing it, compared
 * case- and accent-insensitively, ranked exact match, then prefix, then word prefix, then any
 * substring; ties newest first.
 */
export async function listEntities(ctx: Context, rawQuery: unknown): Promise<Page<EntityListItem>> {
  const q = parseListEntities(rawQuery);
  const offset = (q.page - 1) * q.limit;
  const folded = q.search === undefined ? "" : foldName(q.search);
  let records: EntityRecord[];
  let total: number;
  if (folded === "") {
    ({ records, total } = await withSnapshot(ctx, (store) => store.listEntities(ctx.accountId, { type: q.type }, { offset, limit: q.limit })));
  } else {
    const matches = await ctx.store.searchEntities(ctx.accountId, { type: q.type }, folded);
    matches.sort((a, b) => rank(a.nameKey, folded) - rank(b.nameKey, folded) || cmp(b.createdAt, a.createdAt) || cmp(b.id, a.id));
    total = matches.length;
    records = matches.slice(offset, offset + q.limit);
  }
  return page(records.map(toEntityListItem), q, total);
}

/** PATCH semantics like memories; a rename onto another entity's name and type is refused. */
export async function updateEntity(ctx: Context, id: string, raw: unknown): Promise<Entity> {
  const patch = parseUpdateEntity(raw);
  return ctx.store.write(async (w) => {
    const current = await w.store.getEntity(ctx.accountId, id);
    if (!current) throw entityNotFound(id);
    const next: EntityRecord = { ...current };
    if (patch.name !== undefined) {
      next.name = patch.name;
      next.nameKey = foldName(patch.name);
    }
    if (patch.type !== undefined) next.type = patch.type;
    if (patch.description !== undefined) next.description = patch.description;
    if (patch.metadata !== undefined) next.metadata = patch.metadata === null ? null : JSON.stringify(patch.metadata);
    if (next.nameKey !== current.nameKey || next.type !== current.type) {
      const twin = await w.store.findEntityByName(ctx.accountId, next.nameKey, next.type);
      if (twin && twin.id !== id) {
        throw new MmError("VALIDATION_ERROR", `Another ${next.type} named "${twin.name}" exists (${twin.id}); merge into it instead of renaming.`, {
          details: [{ field: "name", message: `duplicates ${twin.id}` }],
          existingId: twin.id,
        });
      }
    }
    const at = ctx.clock().toISOString();
    next.updatedAt = at > current.updatedAt ? at : current.updatedAt;
    await billedCommit(ctx, 1, () => w.replaceEntity(next));
    return toEntity(next);
  });
}

/** Deletes an entity and, in the same commit, every relation whose source or target it is. */
export async function deleteEntity(ctx: Context, id: string): Promise<{ success: boolean; id: string; deletedRelations: number }> {
  const { deleted, deletedRelations } = await ctx.store.write((w) => billedCommit(ctx, 1, () => w.deleteEntityCascade(ctx.accountId, id)));
  if (!deleted) throw entityNotFound(id);
  return { success: true, id, deletedRelations };
}

export interface MergeResult {
  entity: Entity;
  /** The entity merged in, now deleted. */
  merged: { id: string; name: string };
  movedRelations: number;
  /** Relations of the merged entity that `keep` already had (same ends and type). */
  droppedRelations: number;
  movedLinks: number;
}

/**
 * Merges `other` into `keep` (mm entities merge KEEP OTHER): its relations and memory links move
 * to `keep`, `keep` gains its description if it had none, its metadata under its own, and its name
 * among `metadata.aliases`; then `other` is deleted. Both must be entities of this account
 * (ENTITY_NOT_FOUND otherwise, as for any unknown id) and differ. One billed operation.
 */
export async function mergeEntities(ctx: Context, keepId: string, raw: unknown): Promise<MergeResult> {
  const { other: otherId } = parseMergeEntities(raw);
  if (otherId === keepId) throw validationError("other", "an entity cannot be merged into itself");
  return ctx.store.write(async (w) => {
    const [keep, other] = [await w.store.getEntity(ctx.accountId, keepId), await w.store.getEntity(ctx.accountId, otherId)];
    if (!keep) throw entityNotFound(keepId);
    if (!other) throw entityNotFound(otherId);
    const keptMeta = keep.metadata === null ? {} : (JSON.parse(keep.metadata) as Record<string, unknown>);
    const otherMeta = other.metadata === null ? {} : (JSON.parse(other.metadata) as Record<string, unknown>);
    const aliases = [...new Set([...asStrings(keptMeta.aliases), ...asStrings(otherMeta.aliases), ...(other.nameKey !== keep.nameKey ? [other.name] : [])])];
    const metadata = { ...otherMeta, ...keptMeta, ...(aliases.length ? { aliases } : {}) };
    const at = ctx.clock().toISOString();
    const next: EntityRecord = {
      ...keep,
      description: keep.description ?? other.description,
      metadata: Object.keys(metadata).length ? JSON.stringify(metadata) : null,
      updatedAt: at > keep.updatedAt ? at : keep.updatedAt,
    };
    const moved = await billedCommit(ctx, 1, () => w.mergeEntities(next, other));
    return { entity: toEntity(next), merged: { id: other.id, name: other.name }, ...moved };
  });
}

function asStrings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

/**
 * The memories linked to an entity (via `entityIds`), newest first, in the memory list shape;
 * with `only`, those of that user (and agent) alone (a user-scoped MCP server).
 */
export async function listEntityMemories(ctx: Context, id: string, rawQuery: unknown = {}, only: { userId?: string; agentId?: string } = {}): Promise<Page<MemoryListItem>> {
  const q = parseEntityMemoriesQuery(rawQuery);
  if (!(await ctx.store.getEntity(ctx.accountId, id))) throw entityNotFound(id);
  const filter = { accountId: ctx.accountId, entityId: id, ...(only.userId !== undefined ? { userId: only.userId } : {}), ...(only.agentId !== undefined ? { agentId: only.agentId } : {}) };
  const { records, total } = await withSnapshot(ctx, (store) => store.listMemories(filter, { offset: (q.page - 1) * q.limit, limit: q.limit }));
  return page(records.map(toMemoryListItem), q, total);
}

export interface Mention {
  name: string;
  type: EntityType;
}

/**
 * Finds or creates one entity per mention (by folded name and type), inside a write the caller
 * already holds. Used by extraction, so repeated names never create duplicates.
 */
export async function resolveMentions(ctx: Context, w: StoreWriter, mentions: Mention[]): Promise<CreateEntityResult[]> {
  const out: CreateEntityResult[] = [];
  for (const m of mentions) {
    const existing = (await w.store.findEntityByName(ctx.accountId, foldName(m.name), m.type)) ?? (await findVariant(ctx, w, m.name, m.type, true));
    if (existing) {
      out.push({ entity: toEntity(existing), created: false });
      continue;
    }
    const record = newEntityRecord(ctx, { name: m.name, type: m.type });
    await w.insertEntity(record);
    out.push({ entity: toEntity(record), created: true });
  }
  return out;
}

/** Legal forms an organisation's name may carry or not: "Acme Robotics" and "Acme Robotics Inc." are one. */
const LEGAL_FORM = /[\s,]+(?:inc|incorporated|ltd|limited|llc|llp|plc|corp|corporation|co|company|gmbh|ag|sa|sas|sarl|bv|nv|oy|ab|as|pty|srl|spa|kk)\.?$/;

/** A name without its legal form and punctuation, folded: what two variants of one organisation share. */
export function variantKey(name: string): string {
  let key = foldName(name).replace(/[.,]+$/, "");
  for (let again = key.replace(LEGAL_FORM, ""); again !== key; again = key.replace(LEGAL_FORM, "")) key = again;
  return key.replace(/^the /, "").replace(/[^\p{L}\p{N}&+ ]/gu, "").replace(/\s+/g, " ").trim();
}

/**
 * An existing entity that is another form of this name, of the same type: an organisation with or
 * without its legal form ("Acme Robotics Inc."). With `context` (extraction, where a text names
 * someone it has named before), also a person named by first name alone ("Marcus") when exactly
 * one person has that first name ("Marcus Weber"), or by full name when exactly one person is
 * named by that first name alone. Never a guess between several.
 */
async function findVariant(ctx: Context, w: StoreWriter, name: string, type: string, context: boolean): Promise<EntityRecord | undefined> {
  const key = variantKey(name);
  if (!key) return undefined;
  if (type === "ORGANIZATION") {
    const near = await w.store.searchEntities(ctx.accountId, { type }, key);
    return near.filter((e) => variantKey(e.name) === key).sort((a, b) => cmp(a.createdAt, b.createdAt))[0];
  }
  if (type !== "PERSON" || !context) return undefined;
  const [first, ...rest] = key.split(" ");
  const near = (await w.store.searchEntities(ctx.accountId, { type }, first)).filter((e) => e.nameKey.split(" ")[0] === first);
  const match = rest.length ? near.filter((e) => !e.nameKey.includes(" ")) : near.filter((e) => e.nameKey.includes(" "));
  return match.length === 1 ? match[0] : undefined;
}

/** Throws ENTITY_NOT_FOUND naming every id in `ids` that doesn't exist for this account. */
export async function assertEntitiesExist(ctx: Context, ids: string[]): Promise<void> {
  if (!ids.length) return;
  const found = await ctx.store.getEntities(ctx.accountId, ids);
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length) throw entitiesNotFound(missing);
}

function newEntityRecord(ctx: Context, input: EntityInput): EntityRecord {
  const now = ctx.clock();
  const at = now.toISOString();
  return entityRecord(input, { id: newId("ent", now.getTime()), accountId: ctx.accountId, createdAt: at, updatedAt: at });
}

type EntityInput = { name: string; type: string; description?: string; metadata?: Record<string, unknown> };

/** A validated entity input as stored, with its identity and times (new, or carried over by an import). */
export function entityRecord(input: EntityInput, at: { id: string; accountId: string; createdAt: string; updatedAt: string }): EntityRecord {
  return {
    id: at.id,
    accountId: at.accountId,
    name: input.name,
    nameKey: foldName(input.name),
    type: input.type,
    description: input.description ?? null,
    metadata: input.metadata === undefined ? null : JSON.stringify(input.metadata),
    createdAt: at.createdAt,
    updatedAt: at.updatedAt,
  };
}

export function toEntity(r: EntityRecord): Entity {
  const e = { id: r.id, name: r.name, type: r.type } as Entity;
  if (r.description !== null) e.description = r.description;
  if (r.metadata !== null) e.metadata = JSON.parse(r.metadata) as Record<string, unknown>;
  e.createdAt = r.createdAt;
  e.updatedAt = r.updatedAt;
  return e;
}

function toEntityListItem(r: EntityRecord): EntityListItem {
  const { metadata: _omit, ...item } = toEntity(r);
  return item;
}

/** Anything shaped like an id is taken as one (an unknown one then gets the same ENTITY_NOT_FOUND as over HTTP). */
const ENTITY_ID = /^ent_/;

/**
 * An entity given by id or by name, as the CLI accepts them: an id as it is; a name when exactly
 * one entity of the account bears it (compared as duplicates are: case, accents and spaces
 * folded). No such name is ENTITY_NOT_FOUND; a name several entities share is VALIDATION_ERROR
 * listing them, so the person can pick an id.
 */
export async function resolveEntityRef(ctx: Context, ref: string): Promise<string> {
  if (ENTITY_ID.test(ref)) return ref;
  return onlyNamed(ref, await ctx.store.findEntitiesByName(ctx.accountId, foldName(ref)));
}

export function entityNotFound(id: string): MmError {
  return new MmError("ENTITY_NOT_FOUND", `Entity ${id} does not exist.${notAnIdHint("this", id)}`);
}

/**
 * For a value that isn't an entity id at all (an HTTP client sent a name): say an id was
 * expected and how to look one up by name. Empty for a well-formed id.
 */
export function notAnIdHint(field: string, value: string): string {
  if (ENTITY_ID.test(value)) return "";
  return ` ${field === "this" ? "It" : field} takes an entity id (ent_…), not a name: GET /v1/entities?search=${encodeURIComponent(value)} finds "${value}" by name, and its id is in the answer.`;
}

function rank(nameKey: string, q: string): number {
  if (nameKey === q) return 0;
  if (nameKey.startsWith(q)) return 1;
  if (nameKey.split(/[\s\-_.,/]+/).some((w) => w.startsWith(q))) return 2;
  return 3;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
