import { sqlString, loadLance, type Table } from "./lance.js";
import { cmp, newestFirstPage, OLDEST_FIRST, type PageWindow } from "./pages.js";
import type { Segment } from "./segments.js";

/**
 * The knowledge graph: entities and relations, in one LanceDB table. Reads (GraphReads) need no
 * lock; writes (GraphWrites) are reachable only inside Store.write, which holds the store's write lock.
 */

export interface EntityRecord {
  id: string;
  accountId: string;
  name: string;
  /** `foldName(name)`: what search and duplicate detection compare. */
  nameKey: string;
  type: string;
  description: string | null;
  metadata: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface RelationRecord {
  id: string;
  accountId: string;
  sourceId: string;
  targetId: string;
  type: string;
  metadata: string | null;
  createdAt: string;
}

export interface RelationFilter {
  accountId: string;
  sourceId?: string;
  targetId?: string;
  type?: string;
}

/**
 * Entities and relations share one table (`kind` tells them apart) so that deleting an entity
 * and every relation touching it is one LanceDB commit: atomic, with no moment, even after a
 * crash, where a reader could see a relation whose endpoint is gone.
 */
export const GRAPH = "graph";
const ENTITY_COLUMNS = ["id", "accountId", "name", "nameKey", "type", "description", "metadata", "createdAt", "updatedAt"];
const RELATION_COLUMNS = ["id", "accountId", "sourceId", "targetId", "type", "metadata", "createdAt"];

/** Reads of the graph table (Store exposes each as its own method). */
export class GraphReads {
  constructor(readonly table: Table) {}

  async getEntity(accountId: string, id: string): Promise<EntityRecord | undefined> {
    const row = await this.graphRowById("entity", ENTITY_COLUMNS, accountId, id);
    return row && toEntity(row);
  }

  /** One row of the graph table (an entity or a relation) by id, or undefined. */
  private async graphRowById(kind: "entity" | "relation", columns: string[], accountId: string, id: string): Promise<Record<string, unknown> | undefined> {
    const rows = await this.table
      .query()
      .where(`kind = '${kind}' AND accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`)
      .select(columns)
      .limit(1)
      .toArray();
    return rows[0];
  }

  /** The entities among `ids` that exist for this account, by id. */
  async getEntities(accountId: string, ids: string[]): Promise<Map<string, EntityRecord>> {
    const out = new Map<string, EntityRecord>();
    const unique = [...new Set(ids)];
    for (let i = 0; i < unique.length; i += 500) {
      const chunk = unique.slice(i, i + 500);
      const rows = await this.table
        .query()
        .where(`kind = 'entity' AND accountId = ${sqlString(accountId)} AND id IN (${chunk.map(sqlString).join(", ")})`)
        .select(ENTITY_COLUMNS)
        .toArray();
      for (const r of rows) out.set(String(r.id), toEntity(r));
    }
    return out;
  }
  async findEntityByName(accountId: string, nameKey: string, type: string): Promise<EntityRecord | undefined> {
    const rows = await this.table
      .query()
      .where(`kind = 'entity' AND accountId = ${sqlString(accountId)} AND nameKey = ${sqlString(nameKey)} AND type = ${sqlString(type)}`)
      .select(ENTITY_COLUMNS)
      .toArray();
    return rows.map(toEntity).sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id))[0];
  }

  /** Every entity of the account with this folded name, of any type. */
  async findEntitiesByName(accountId: string, nameKey: string): Promise<EntityRecord[]> {
    const rows = await this.table
      .query()
      .where(`kind = 'entity' AND accountId = ${sqlString(accountId)} AND nameKey = ${sqlString(nameKey)}`)
      .select(ENTITY_COLUMNS)
      .toArray();
    return rows.map(toEntity).sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id));
  }

  /** Newest first, stable across pages. */
  async listEntities(accountId: string, filter: { type?: string }, page: PageWindow): Promise<{ records: EntityRecord[]; total: number }> {
    return newestFirstPage(this.table, entityWhere(accountId, filter), ENTITY_COLUMNS, page, async (q) => (await q.toArray()).map(toEntity));
  }

  /** Every entity whose folded name contains `foldedQuery` (the caller ranks and pages them). */
  async searchEntities(accountId: string, filter: { type?: string }, foldedQuery: string): Promise<EntityRecord[]> {
    const rows = await this.table
      .query()
      .where(`${entityWhere(accountId, filter)} AND strpos(nameKey, ${sqlString(foldedQuery)}) > 0`)
      .select(ENTITY_COLUMNS)
      .toArray();
    return rows.map(toEntity);
  }

  async getRelation(accountId: string, id: string): Promise<RelationRecord | undefined> {
    const row = await this.graphRowById("relation", RELATION_COLUMNS, accountId, id);
    return row && toRelation(row);
  }

  async listRelations(filter: RelationFilter, page: PageWindow): Promise<{ records: RelationRecord[]; total: number }> {
    return newestFirstPage(this.table, relationWhere(filter), RELATION_COLUMNS, page, async (q) => (await q.toArray()).map(toRelation));
  }

  /** Relations touching any of `entityIds` in the given direction (for traversal), optionally of one type. */
  async relationsOf(accountId: string, entityIds: string[], direction: "out" | "in" | "both", type?: string): Promise<RelationRecord[]> {
    const out: RelationRecord[] = [];
    const unique = [...new Set(entityIds)];
    for (let i = 0; i < unique.length; i += 500) {
      const list = unique.slice(i, i + 500).map(sqlString).join(", ");
      const ends = [direction !== "in" ? `sourceId IN (${list})` : "", direction !== "out" ? `targetId IN (${list})` : ""].filter(Boolean).join(" OR ");
      const rows = await this.table
        .query()
        .where(`${relationWhere({ accountId, type })} AND (${ends})`)
        .select(RELATION_COLUMNS)
        .toArray();
      out.push(...rows.map(toRelation));
    }
    return [...new Map(out.map((r) => [r.id, r])).values()];
  }

  /** The whole graph of an account, for export. */
  async allGraph(accountId: string): Promise<{ entities: EntityRecord[]; relations: RelationRecord[] }> {
    const [entities, relations] = await Promise.all([
      this.table.query().where(entityWhere(accountId, {})).orderBy(OLDEST_FIRST).select(ENTITY_COLUMNS).toArray(),
      this.table.query().where(relationWhere({ accountId })).orderBy(OLDEST_FIRST).select(RELATION_COLUMNS).toArray(),
    ]);
    return { entities: entities.map(toEntity), relations: relations.map(toRelation) };
  }
}

/** Writes to the graph; memory links to entities are kept in step, segment by segment. */
export class GraphWrites {
  constructor(
    private readonly table: Table,
    /** The memory segments as the write lock was taken. */
    private readonly segments: Segment[],
    private readonly hooks?: (point: string) => void | Promise<void>,
  ) {}

  /** Entities and relations in one commit (imports). */
  async insertGraph(entities: EntityRecord[], relations: RelationRecord[]): Promise<void> {
    const rows = [
      ...entities.map((e) => ({ ...emptyGraphRow(), kind: "entity", ...e })),
      ...relations.map((r) => ({ ...emptyGraphRow(), kind: "relation", ...r, updatedAt: r.createdAt })),
    ];
    if (rows.length) await this.table.add(rows);
  }

  async insertEntity(e: EntityRecord): Promise<void> {
    await this.table.add([{ ...emptyGraphRow(), kind: "entity", ...e }]);
  }

  async replaceEntity(e: EntityRecord): Promise<void> {
    await this.table
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute([{ ...emptyGraphRow(), kind: "entity", ...e }]);
  }

  /**
   * Deletes an entity and every relation touching it in one commit (one `delete` predicate), so the
   * cascade is atomic. Memory links to it are dropped afterwards, segment by segment; until then
   * (or if a crash comes between the commits) readers filter links to missing entities out.
   */
  async deleteEntityCascade(accountId: string, id: string): Promise<{ deleted: boolean; deletedRelations: number }> {
    const acct = `accountId = ${sqlString(accountId)}`;
    if ((await this.table.countRows(`kind = 'entity' AND ${acct} AND id = ${sqlString(id)}`)) === 0) return { deleted: false, deletedRelations: 0 };
    const touching = `kind = 'relation' AND ${acct} AND (sourceId = ${sqlString(id)} OR targetId = ${sqlString(id)})`;
    const deletedRelations = await this.table.countRows(touching);
    await this.table.delete(`(kind = 'entity' AND ${acct} AND id = ${sqlString(id)}) OR (${touching})`);
    await this.hooks?.("entity-delete:after-graph-commit");
    const linked = `${acct} AND array_has(entityIds, ${sqlString(id)})`;
    for (const { table } of this.segments) {
      if ((await table.countRows(linked)) === 0) continue;
      await table.update({ where: linked, valuesSql: { entityIds: `array_remove(entityIds, ${sqlString(id)})` } });
    }
    return { deleted: true, deletedRelations };
  }

  /**
   * Merges entity `other` into `keep` (both of the account, checked by the caller). In three steps,
   * each a commit, in an order where every reference points at an existing entity at every moment,
   * crash or not: (1) `keep` takes its new description and metadata and every relation of `other`
   * is re-pointed to `keep`, in one graph commit (a relation `keep` already has is dropped instead);
   * (2) memory links move, segment by segment; (3) `other` is deleted.
   */
  async mergeEntities(keep: EntityRecord, other: EntityRecord): Promise<{ movedRelations: number; droppedRelations: number; movedLinks: number }> {
    const acct = `accountId = ${sqlString(keep.accountId)}`;
    const touching = (id: string) => `kind = 'relation' AND ${acct} AND (sourceId = ${sqlString(id)} OR targetId = ${sqlString(id)})`;
    const mine = (await this.table.query().where(touching(keep.id)).select(RELATION_COLUMNS).toArray()).map(toRelation);
    const theirs = (await this.table.query().where(touching(other.id)).select(RELATION_COLUMNS).toArray()).map(toRelation);
    const swap = (id: string) => (id === other.id ? keep.id : id);
    const seen = new Set(mine.map((r) => `${swap(r.sourceId)}\u0000${swap(r.targetId)}\u0000${r.type}`));
    const moved: RelationRecord[] = [];
    const dropped: string[] = [];
    for (const r of theirs.sort((a, b) => cmp(a.createdAt, b.createdAt) || cmp(a.id, b.id))) {
      if (mine.some((m) => m.id === r.id)) continue; // between the two: re-pointed below with the rest
      const k = `${swap(r.sourceId)}\u0000${swap(r.targetId)}\u0000${r.type}`;
      if (seen.has(k)) dropped.push(r.id);
      else {
        seen.add(k);
        moved.push({ ...r, sourceId: swap(r.sourceId), targetId: swap(r.targetId) });
      }
    }
    for (const r of mine) if (r.sourceId === other.id || r.targetId === other.id) moved.push({ ...r, sourceId: swap(r.sourceId), targetId: swap(r.targetId) });
    const rows = [{ ...emptyGraphRow(), kind: "entity", ...keep }, ...moved.map((r) => ({ ...emptyGraphRow(), kind: "relation", ...r, updatedAt: r.createdAt }))];
    await this.table.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(rows);
    if (dropped.length) await this.table.delete(`kind = 'relation' AND ${acct} AND id IN (${dropped.map(sqlString).join(", ")})`);
    await this.hooks?.("entity-merge:after-relations");
    let movedLinks = 0;
    const linked = `${acct} AND array_has(entityIds, ${sqlString(other.id)})`;
    for (const { table } of this.segments) {
      const n = await table.countRows(linked);
      if (!n) continue;
      movedLinks += n;
      await table.update({ where: linked, valuesSql: { entityIds: `array_distinct(array_replace(entityIds, ${sqlString(other.id)}, ${sqlString(keep.id)}))` } });
    }
    await this.table.delete(`kind = 'entity' AND ${acct} AND id = ${sqlString(other.id)}`);
    return { movedRelations: moved.length, droppedRelations: dropped.length, movedLinks };
  }

  async insertRelation(r: RelationRecord): Promise<void> {
    await this.table.add([{ ...emptyGraphRow(), kind: "relation", ...r, updatedAt: r.createdAt }]);
  }

  /** Replaces a relation in one commit (merge-insert on id). */
  async replaceRelation(r: RelationRecord): Promise<void> {
    await this.table
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute([{ ...emptyGraphRow(), kind: "relation", ...r, updatedAt: r.createdAt }]);
  }

  async deleteRelation(accountId: string, id: string): Promise<boolean> {
    const where = `kind = 'relation' AND accountId = ${sqlString(accountId)} AND id = ${sqlString(id)}`;
    if ((await this.table.countRows(where)) === 0) return false;
    await this.table.delete(where);
    return true;
  }
}

function entityWhere(accountId: string, filter: { type?: string }): string {
  const parts = [`kind = 'entity'`, `accountId = ${sqlString(accountId)}`];
  if (filter.type !== undefined) parts.push(`type = ${sqlString(filter.type)}`);
  return parts.join(" AND ");
}

function relationWhere(filter: RelationFilter): string {
  const parts = [`kind = 'relation'`, `accountId = ${sqlString(filter.accountId)}`];
  if (filter.sourceId !== undefined) parts.push(`sourceId = ${sqlString(filter.sourceId)}`);
  if (filter.targetId !== undefined) parts.push(`targetId = ${sqlString(filter.targetId)}`);
  if (filter.type !== undefined) parts.push(`type = ${sqlString(filter.type)}`);
  return parts.join(" AND ");
}

/** Entity and relation rows share these columns; each kind leaves the other's null. */
export function graphSchema() {
  const { arrow } = loadLance();
  const text = (name: string, nullable: boolean) => new arrow.Field(name, new arrow.Utf8(), nullable);
  return new arrow.Schema([
    text("kind", false),
    text("id", false),
    text("accountId", false),
    text("type", false),
    text("name", true),
    text("nameKey", true),
    text("description", true),
    text("sourceId", true),
    text("targetId", true),
    text("metadata", true),
    text("createdAt", false),
    text("updatedAt", false),
  ]);
}

function emptyGraphRow(): Record<string, string | null> {
  return { name: null, nameKey: null, description: null, sourceId: null, targetId: null, metadata: null };
}

function toEntity(r: Record<string, unknown>): EntityRecord {
  return {
    id: String(r.id),
    accountId: String(r.accountId),
    name: String(r.name),
    nameKey: String(r.nameKey),
    type: String(r.type),
    description: r.description == null ? null : String(r.description),
    metadata: r.metadata == null ? null : String(r.metadata),
    createdAt: String(r.createdAt),
    updatedAt: String(r.updatedAt),
  };
}

function toRelation(r: Record<string, unknown>): RelationRecord {
  return {
    id: String(r.id),
    accountId: String(r.accountId),
    sourceId: String(r.sourceId),
    targetId: String(r.targetId),
    type: String(r.type),
    metadata: r.metadata == null ? null : String(r.metadata),
    createdAt: String(r.createdAt),
  };
}
