import { MmError, toMmError, validationError } from "../errors.js";
import { parseCreateEntity } from "../schemas/entity.js";
import { parseCreateMemory } from "../schemas/memory.js";
import type { Context } from "./context.js";
import { createEntity } from "./entities.js";
import { derivedId } from "./ids.js";
import { addObservationMemories, entityInput, findEntityByName, findRelation, relationInput, type Scope } from "./mcp-memory.js";
import { createRelation } from "./relations.js";
import { EXPORT_FORMAT, EXPORT_VERSION, type ImportResult, type ImportSummary, type InputRecord } from "./transfer.js";

/**
 * Imports the reference MCP memory server's file (modelcontextprotocol/servers, src/memory: JSON
 * Lines of `{"type":"entity","name","entityType","observations"}` and
 * `{"type":"relation","from","to","relationType"}`) with the mapping its tools use (mcp-memory.ts).
 * Entities are matched by name, observations by text and relations by ends and type, so a second
 * run adds nothing. Observations are embedded in batches.
 */
export async function importMcpMemory(
  ctx: Context,
  scope: Scope,
  records: AsyncIterable<InputRecord>,
  options: { onResult?(r: ImportResult): void } = {},
): Promise<ImportSummary> {
  const summary: ImportSummary = { added: 0, skipped: 0, failed: 0, stopped: false };
  const results = new Map<number, ImportResult>();
  const observations: { entityId: string; content: string; line: number }[] = [];
  const relations: { line: number; from: string; to: string; relationType: string }[] = [];
  const ids = new Map<string, string>();
  for await (const record of records) {
    // mm's own export, given to the wrong reader: say so once, before anything is written.
    const header = record.value as { format?: unknown } | undefined;
    if (record.line === 1 && header && typeof header === "object" && header.format === EXPORT_FORMAT) {
      const message = "This file is an mm export (its first line is the mm-export header), not the reference MCP memory server's memory.jsonl: import it without --from mcp-memory (`mm import <file>`).";
      throw new MmError("VALIDATION_ERROR", message, { details: [{ field: "command", message }] });
    }
    const result: ImportResult = { line: record.line, status: "failed" };
    results.set(record.line, result);
    try {
      if (record.error) throw record.error;
      const v = record.value as Record<string, unknown>;
      if (!v || typeof v !== "object" || (v.type !== "entity" && v.type !== "relation")) throw validationError("type", 'must be "entity" or "relation"');
      result.kind = v.type;
      if (v.type === "relation") {
        for (const f of ["from", "to", "relationType"]) if (typeof v[f] !== "string") throw validationError(f, "must be a string");
        relations.push({ line: record.line, from: String(v.from), to: String(v.to), relationType: String(v.relationType) });
        continue;
      }
      if (typeof v.name !== "string" || typeof v.entityType !== "string") throw validationError(typeof v.name !== "string" ? "name" : "entityType", "must be a string");
      const obs = v.observations === undefined ? [] : v.observations;
      if (!Array.isArray(obs) || obs.some((o) => typeof o !== "string")) throw validationError("observations", "must be a list of strings");
      const input = entityInput({ name: v.name, entityType: v.entityType });
      parseCreateEntity(input);
      for (const content of obs as string[]) parseCreateMemory({ content, ...scope });
      const existing = await findEntityByName(ctx, v.name);
      let id = existing?.id;
      if (!existing) {
        await ctx.meter?.check(1);
        id = (await createEntity(ctx, input)).entity.id;
      }
      ids.set(v.name, id!);
      Object.assign(result, { id, status: existing ? "skipped" : "added", ...(existing ? { reason: "an entity of that name exists; new observations are added to it" } : {}) });
      observations.push(...(obs as string[]).map((content) => ({ entityId: id!, content, line: record.line })));
    } catch (err) {
      result.error = toMmError(err);
    }
  }
  // Observations: one line's failure fails that line (its entity stays, and a re-run retries them).
  if (observations.length) await ctx.meter?.check(observations.length);
  await addObservationMemories(ctx, scope, observations, (i, r) => {
    if ("error" in r && r.error) {
      const result = results.get(observations[i].line)!;
      result.status = "failed";
      result.error ??= r.error;
    }
  });
  for (const r of relations) {
    const result = results.get(r.line)!;
    try {
      const source = ids.get(r.from) ?? (await findEntityByName(ctx, r.from))?.id;
      const target = ids.get(r.to) ?? (await findEntityByName(ctx, r.to))?.id;
      if (!source) throw new MmError("SOURCE_ENTITY_NOT_FOUND", `Entity with name ${r.from} not found.`, { name: r.from });
      if (!target) throw new MmError("TARGET_ENTITY_NOT_FOUND", `Entity with name ${r.to} not found.`, { name: r.to });
      const existing = await findRelation(ctx, source, target, r.relationType);
      if (existing) Object.assign(result, { id: existing.id, status: "skipped", reason: "the relation exists" });
      else {
        await ctx.meter?.check(1);
        Object.assign(result, { id: (await createRelation(ctx, relationInput(source, target, r.relationType))).id, status: "added" });
      }
    } catch (err) {
      result.error = toMmError(err);
    }
  }
  for (const line of [...results.keys()].sort((a, b) => a - b)) {
    const r = results.get(line)!;
    if (r.error) r.status = "failed";
    summary[r.status === "failed" ? "failed" : r.status === "skipped" ? "skipped" : "added"]++;
    options.onResult?.(r);
  }
  return summary;
}

/**
 * mem0's memories as mm export records (header first), so `importExport` reads them. Accepted:
 * - the output of `Memory.get_all()` / `MemoryClient.get_all()`: `{"results": [...]}` or a list
 *   (mem0ai/mem0, mem0/memory/main.py: items `{id, memory, hash, metadata, created_at, updated_at,
 *   user_id, agent_id, run_id, actor_id, role}`);
 * - OpenMemory's backup (openmemory/api/app/routers/backup.py): `memories.json`
 *   (`{"user": {"user_id"}, "memories": [{id, content, metadata, state, created_at, …}]}`) or the
 *   lines of `memories.jsonl` (`{id, content, metadata, created_at, updated_at, state, app, categories}`).
 * The text becomes `content`, `user_id` and `agent_id` become userId and agentId (else the
 * defaults), `categories` become tags, and mem0's own fields are kept under `metadata.mem0`.
 * Each memory's mm id is derived from its mem0 id and the account, so a re-run skips it.
 */
export function* mem0Records(text: string, defaults: { userId?: string; agentId?: string }, accountId: string, now: Date): Generator<InputRecord> {
  yield { line: 0, value: { format: EXPORT_FORMAT, version: EXPORT_VERSION, embedder: null, scope: { accountId }, vectors: false } };
  let items: { line: number; value?: unknown; error?: MmError }[];
  let topUser: unknown;
  try {
    const doc = JSON.parse(text) as unknown;
    const list = Array.isArray(doc) ? doc : (doc as { results?: unknown; memories?: unknown })?.results ?? (doc as { memories?: unknown })?.memories;
    if (!Array.isArray(list)) throw new Error("no list");
    topUser = (doc as { user?: { user_id?: unknown } })?.user?.user_id;
    items = list.map((value, i) => ({ line: i + 1, value }));
  } catch {
    // JSON Lines (OpenMemory's memories.jsonl), one memory a line.
    items = text.split("\n").flatMap((l, i): InputRecord[] => {
      if (!l.trim()) return [];
      try {
        return [{ line: i + 1, value: JSON.parse(l) as unknown }];
      } catch {
        return [{ line: i + 1, error: new MmError("VALIDATION_ERROR", "Line is not valid JSON (expected mem0's export: a JSON document, or JSON Lines).", { details: [{ field: "line", message: "not valid JSON" }] }) }];
      }
    });
  }
  for (const item of items) {
    if (item.error) {
      yield item;
      continue;
    }
    try {
      yield { line: item.line, value: mem0Record(item.value, topUser, defaults, accountId, now) };
    } catch (err) {
      // One bad item fails alone, like a bad line of mm's own format.
      yield { line: item.line, error: toMmError(err) };
    }
  }
}

/** One mem0 memory as an mm export record. */
function mem0Record(value: unknown, topUser: unknown, defaults: { userId?: string; agentId?: string }, accountId: string, now: Date): Record<string, unknown> {
  const m = value as Record<string, unknown>;
  if (!m || typeof m !== "object" || Array.isArray(m)) throw validationError("memory", "must be a JSON object");
  const createdAt = isoOf(m.created_at, "created_at") ?? now.toISOString();
  const mem0 = Object.fromEntries(
    ["id", "hash", "run_id", "app_id", "app", "actor_id", "role", "state", "created_at", "updated_at"].filter((k) => m[k] !== undefined && m[k] !== null).map((k) => [k, m[k]]),
  );
  const tags = Array.isArray(m.categories) ? [...new Set(m.categories.filter((c): c is string => typeof c === "string" && c.trim() !== "" && !c.includes(",") && c.length <= 100))] : [];
  const metadata = m.metadata && typeof m.metadata === "object" && !Array.isArray(m.metadata) ? (m.metadata as Record<string, unknown>) : {};
  const userId = m.user_id ?? topUser ?? defaults.userId;
  const agentId = m.agent_id ?? defaults.agentId;
  return {
    kind: "memory",
    id: derivedId("mem", `mem0\u0000${accountId}\u0000${typeof m.id === "string" ? m.id : JSON.stringify(m)}`, Date.parse(createdAt)),
    content: m.memory ?? m.content ?? m.text ?? m.data,
    ...(userId !== undefined && userId !== null ? { userId } : {}),
    ...(agentId !== undefined && agentId !== null ? { agentId } : {}),
    ...(tags.length ? { tags } : {}),
    metadata: { ...metadata, mem0 },
    createdAt,
    updatedAt: isoOf(m.updated_at, "updated_at") ?? createdAt,
  };
}

/**
 * mem0 writes naive or offset ISO timestamps (and sometimes Unix seconds); mm keeps UTC with
 * milliseconds. Absent: undefined. Present but no date (`1e20`, `"soon"`): that item's
 * VALIDATION_ERROR, naming the field.
 */
function isoOf(v: unknown, field: string): string | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  let t = NaN;
  if (typeof v === "number" && Number.isFinite(v)) t = v < 1e12 ? v * 1000 : v;
  else if (typeof v === "string") t = Date.parse(/[zZ]|[+-]\d{2}:?\d{2}$/.test(v) ? v : `${v}Z`);
  const date = new Date(t);
  if (!Number.isFinite(date.getTime())) throw validationError(field, "must be a date and time (ISO 8601, or Unix seconds)");
  return date.toISOString();
}
