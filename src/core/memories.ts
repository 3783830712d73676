import { entitiesNotFound, MmError, toMmError, validationError } from "../errors.js";
import {
  parseCreateMemory,
  parseListMemories,
  parseSupersede,
  parseUpdateMemory,
  type CreateMemoryInput,
} from "../schemas/memory.js";
import { KEYS_MARK, storedKeysOf } from "./supersede.js";
import { applyPlan, assertNoCycle, markReplaced, planIncoming, readHistory, withHistory, type HistoryEntry, type Settled } from "./validity.js";
import type { MemoryRecord, MemoryRow } from "../storage/store.js";
import { billedCommit, billedCommitUpTo, embedChecked, withSnapshot, type Context } from "./context.js";
import { assertEntitiesExist, resolveMentions, type CreateEntityResult } from "./entities.js";
import { newId } from "./ids.js";
import { commitCreate } from "./group-commit.js";

/** Create and get shape (spec §2.1): optional fields only when supplied; tags only when non-empty. */
export interface Memory {
  id: string;
  content: string;
  userId: string;
  agentId?: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  /** Linked entities (beyond the spec); present only when the memory has links. */
  entityIds?: string[];
  /** Beyond the spec (core/project.ts): the project it belongs to; absent for a global memory. */
  project?: string;
  createdAt: string;
  updatedAt: string;
  /** Beyond the spec, present only when set: the memories this one replaced (core/validity.ts). */
  supersedes?: string[];
  /** Beyond the spec, present only once replaced: the memory that replaced it, and when. */
  supersededBy?: string;
  supersededAt?: string;
  /** Present (true) only on a create that stored nothing: this existing memory already says the same. */
  deduplicated?: true;
}

export type MemoryListItem = Omit<Memory, "metadata" | "entityIds" | "supersedes" | "deduplicated">;


export { rankHits, searchCandidates, searchMemories, type MemorySearchHit } from "./search.js";

export interface Pagination {
  page: number;
  limit: number;
  total: number;
  totalPages: number;
}

export interface Page<T> {
  items: T[];
  pagination: Pagination;
}

/** A list response: the items of page `q.page` of size `q.limit` (the size used, after clamping), out of `total`. */
export function page<T>(items: T[], q: { page: number; limit: number }, total: number): Page<T> {
  return { items, pagination: { page: q.page, limit: q.limit, total, totalPages: Math.ceil(total / q.limit) } };
}

/**
 * Creates one memory. Concurrent creates on one open store are embedded and committed together
 * (core/group-commit.ts); this resolves once the memory's own commit is done.
 */
export async function createMemory(ctx: Context, raw: unknown): Promise<Memory> {
  const input = parseCreateMemory(raw);
  const { row, settled } = await commitCreate(ctx, newRow(ctx, input), createOptions(input));
  return createdMemory(row, settled);
}

/** What a create asks for beyond its row (core/validity.ts Incoming). */
export function createOptions(input: CreateMemoryInput): { supersedes?: string[]; detect: boolean; dedupe: boolean } {
  return { supersedes: input.supersedes, detect: input.autoSupersede !== false, dedupe: input.dedupe !== false };
}

/** A create's answer: the new memory with what it replaced, or the existing one it duplicates. */
export function createdMemory(row: MemoryRecord, settled: Settled): Memory {
  if (settled.duplicateOf) return { ...toMemory(settled.duplicateOf), deduplicated: true };
  return toMemory(row, settled.replaced);
}

export interface ExtractedMemory {
  memory: Memory;
  /** One per person, place or organisation found, with whether its entity was created or reused. */
  extracted: CreateEntityResult[];
}

/**
 * Creates a memory and links it to the people, places and organisations found in its content
 * (see core/extract.ts): each is matched to an existing entity by folded name and type, or
 * created, under the same write lock as the memory, so concurrent adds never create twins.
 */
export async function createMemoryWithExtraction(ctx: Context, raw: unknown): Promise<ExtractedMemory> {
  const input = parseCreateMemory(raw);
  const { extractMentions } = await import("./extract.js");
  const [mentions, [vector]] = await Promise.all([extractMentions(input.content), embedChecked(ctx, [input.content])]);
  const row = newRow(ctx, input, vector);
  const { extracted, settled } = await ctx.store.write(async (w) => {
    await assertEntitiesExist(ctx, row.entityIds);
    const plan = await planIncoming(ctx.store, [{ row, ...createOptions(input) }]);
    const [settled] = plan.settled;
    if (settled.error) throw settled.error;
    return billedCommit(ctx, 1, async () => {
      const found = settled.duplicateOf ? [] : await resolveMentions(ctx, w, mentions);
      row.entityIds = [...new Set([...row.entityIds, ...found.map((f) => f.entity.id)])];
      await applyPlan(w, plan, [0]);
      return { extracted: found, settled };
    });
  });
  return { memory: createdMemory(row, settled), extracted };
}

export async function getMemory(ctx: Context, id: string): Promise<Memory> {
  const record = await ctx.store.getMemory(ctx.accountId, id);
  if (!record) throw notFound(id);
  const replaced = await ctx.store.replacedBy(ctx.accountId, id);
  return toMemory(await withLiveLinks(ctx, record), replaced.map((r) => r.id));
}

/**
 * Drops links to entities that no longer exist. Entity deletion unlinks memories in a second
 * commit; if a crash falls between the two, readers still never see a dangling link.
 */
async function withLiveLinks(ctx: Context, record: MemoryRecord): Promise<MemoryRecord> {
  if (!record.entityIds.length) return record;
  const live = await ctx.store.getEntities(ctx.accountId, record.entityIds);
  return { ...record, entityIds: record.entityIds.filter((id) => live.has(id)) };
}

export async function listMemories(ctx: Context, rawQuery: unknown): Promise<Page<MemoryListItem>> {
  const q = parseListMemories(rawQuery);
  const { records, total } = await withSnapshot(ctx, (store) =>
    store.listMemories({ accountId: ctx.accountId, userId: q.userId, agentId: q.agentId, tags: q.tags, entityId: q.entityId, metadata: q.metadata, project: q.project, projectOnly: q.projectOnly }, { offset: (q.page - 1) * q.limit, limit: q.limit }),
  );
  return page(records.map(toListItem), q, total);
}

/**
 * PATCH semantics: absent fields stay, given fields replace (metadata and tags are replaced
 * whole, not merged), `null` clears an optional field. Changing content re-embeds it.
 * `updatedAt` moves; `createdAt`, `userId` and the id never do.
 */
export async function updateMemory(ctx: Context, id: string, raw: unknown): Promise<Memory> {
  const patch = parseUpdateMemory(raw);
  const vector = patch.content !== undefined ? (await embedChecked(ctx, [patch.content]))[0] : undefined;
  const updated = await ctx.store.write(async (w) => {
    const current = await w.getMemoryRow(ctx.accountId, id);
    if (!current) throw notFound(id);
    const replaces = await checkReplacements(ctx, current, patch.supersedes ?? []);
    const next: MemoryRow = { ...current };
    if (patch.content !== undefined && vector) {
      next.content = patch.content;
      next.vector = vector;
      next.matchKeys = storedKeysOf(patch.content);
    }
    if (patch.agentId !== undefined) next.agentId = patch.agentId;
    if (patch.project !== undefined) next.project = patch.project;
    if (patch.tags !== undefined) next.tags = patch.tags ?? [];
    if (patch.metadata !== undefined) next.metadata = patch.metadata === null ? null : JSON.stringify(patch.metadata);
    if (patch.entityIds !== undefined) {
      next.entityIds = patch.entityIds ?? [];
      await assertEntitiesExist(ctx, next.entityIds);
    }
    next.updatedAt = laterTimestamp(ctx.clock(), current.updatedAt);
    if (["content", "agentId", "tags", "metadata", "entityIds", "project"].some((k) => k in patch)) next.history = withHistory(current, versionOf(current, next.updatedAt));
    // The memory and the ones it now replaces: one commit when they share a segment (the usual case).
    const marked = replaces.map((r) => markReplaced(r, id, next.updatedAt, "explicit"));
    await billedCommit(ctx, 1, () => w.replaceMemories([next, ...marked]));
    return next;
  });
  return toMemory(await withLiveLinks(ctx, updated), (await ctx.store.replacedBy(ctx.accountId, id)).map((r) => r.id));
}

/**
 * Works out again the match keys of the current memories an older mm stored, with the rules of this
 * one (storage refreshMatchKeys, by KEYS_MARK), so a newer memory finds them by what detection reads
 * now ("Mobile: …" after round six). `mm store optimize` runs it; returns how many memories changed.
 */
export async function refreshMatchKeys(ctx: Context): Promise<number> {
  return ctx.store.write((w) => w.refreshMatchKeys(storedKeysOf, KEYS_MARK));
}

/** A version as kept in history: what the memory said until `until`. */
function versionOf(row: MemoryRow, until: string): HistoryEntry {
  return {
    type: "version",
    at: until,
    validFrom: row.updatedAt,
    content: row.content,
    agentId: row.agentId,
    tags: row.tags,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, unknown>),
    entityIds: row.entityIds,
    project: row.project,
  };
}

/**
 * The rows `newer` may replace: each id a memory of the same account (else MEMORY_NOT_FOUND, as
 * for any unknown id) and user, not `newer` itself, and not one that `newer` is replaced by,
 * directly or through others (a cycle). Under the write lock.
 */
async function checkReplacements(ctx: Context, newer: MemoryRecord, ids: string[]): Promise<MemoryRow[]> {
  if (!ids.length) return [];
  const rows = await ctx.store.getMemoryRows(ctx.accountId, ids);
  for (const id of ids) {
    const row = rows.find((r) => r.id === id);
    if (!row) throw notFound(id);
    if (row.userId !== newer.userId) throw validationError("supersedes", `memory ${id} belongs to another user; a memory can only replace one of its own user's`);
    await assertNoCycle(ctx.store, ctx.accountId, id, newer.id);
  }
  return rows;
}

/**
 * Marks `oldId` replaced by `newId` (mm memories supersede OLD NEW): both memories of this account
 * and of one user. One row is written, in one commit, so the replacement is recorded whole or not
 * at all. Refuses self-replacement and cycles.
 */
export async function supersedeMemory(ctx: Context, oldId: string, raw: unknown): Promise<Memory> {
  const { by } = parseSupersede(raw);
  const updated = await ctx.store.write(async (w) => {
    const newer = await ctx.store.getMemory(ctx.accountId, by);
    if (!newer) throw notFound(by);
    const [row] = await checkReplacements(ctx, newer, [oldId]);
    const marked = markReplaced(row, by, laterTimestamp(ctx.clock(), newer.createdAt), "explicit");
    await billedCommit(ctx, 1, () => w.replaceMemories([marked]));
    return marked;
  });
  return toMemory(await withLiveLinks(ctx, updated), (await ctx.store.replacedBy(ctx.accountId, oldId)).map((r) => r.id));
}

/**
 * Undoes a replacement (one that detection got wrong, say): the memory is current again, and its
 * history keeps both events. A memory that isn't replaced is returned unchanged and nothing is billed.
 */
export async function restoreMemory(ctx: Context, id: string): Promise<Memory> {
  const restored = await ctx.store.write(async (w) => {
    const [row] = await ctx.store.getMemoryRows(ctx.accountId, [id]);
    if (!row) throw notFound(id);
    if (row.supersededBy === null) return row;
    const at = laterTimestamp(ctx.clock(), row.supersededAt ?? row.updatedAt);
    const next: MemoryRow = { ...row, supersededBy: null, supersededAt: null, history: withHistory(row, { type: "restored", at, memoryId: row.supersededBy }) };
    await billedCommit(ctx, 1, () => w.replaceMemories([next]));
    return next;
  });
  return toMemory(await withLiveLinks(ctx, restored), (await ctx.store.replacedBy(ctx.accountId, id)).map((r) => r.id));
}

/** A memory's every version, its replacement chain both ways and the events of its life (GET /v1/memories/:id/history). */
export interface MemoryHistory {
  id: string;
  /** Oldest first; the last is the memory as it is now (validTo absent, or when another memory replaced it). */
  versions: { version: number; content: string; agentId?: string; tags?: string[]; metadata?: Record<string, unknown>; entityIds?: string[]; project?: string; validFrom: string; validTo?: string }[];
  /** The memories it replaced, and those they replaced, nearest first. */
  replaced: ChainLink[];
  /** The memory that replaced it, and the one that replaced that, nearest first. */
  replacedBy: ChainLink[];
  /** Replacements and restores, oldest first. */
  events: { type: "superseded" | "restored"; at: string; memoryId: string; reason?: string }[];
}

export interface ChainLink {
  id: string;
  content: string;
  createdAt: string;
  supersededAt?: string;
}

export async function memoryHistory(ctx: Context, id: string): Promise<MemoryHistory> {
  return withSnapshot(ctx, async (store) => {
    const row = await store.getMemoryFull(ctx.accountId, id);
    if (!row) throw notFound(id);
    const entries = readHistory(row.history);
    const kept = entries.filter((e) => e.type === "version");
    const versions: MemoryHistory["versions"] = kept.map((e, i) =>
      defined({
        version: i + 1,
        content: e.content ?? "",
        agentId: e.agentId ?? undefined,
        tags: e.tags?.length ? e.tags : undefined,
        metadata: e.metadata ?? undefined,
        entityIds: e.entityIds?.length ? e.entityIds : undefined,
        project: e.project ?? undefined,
        validFrom: e.validFrom ?? row.createdAt,
        validTo: e.at,
      }),
    );
    const now = toMemory(row);
    versions.push(
      defined({ version: kept.length + 1, content: now.content, agentId: now.agentId, tags: now.tags, metadata: now.metadata, entityIds: now.entityIds, project: now.project, validFrom: row.updatedAt, validTo: row.supersededAt ?? undefined }),
    );
    const link = (r: MemoryRecord): ChainLink => defined({ id: r.id, content: r.content, createdAt: r.createdAt, supersededAt: r.supersededAt ?? undefined });
    const replacedBy: ChainLink[] = [];
    const seen = new Set([id]);
    for (let next = row.supersededBy; next && !seen.has(next); ) {
      seen.add(next);
      const r = await store.getMemory(ctx.accountId, next);
      if (!r) break;
      replacedBy.push(link(r));
      next = r.supersededBy;
    }
    const replaced: ChainLink[] = [];
    for (let frontier = [id]; frontier.length; ) {
      const older = (await Promise.all(frontier.map((f) => store.replacedBy(ctx.accountId, f)))).flat().filter((r) => !seen.has(r.id));
      for (const r of older) seen.add(r.id);
      replaced.push(...older.map(link));
      frontier = older.map((r) => r.id);
    }
    const events = entries
      .filter((e) => e.type !== "version")
      .map((e) => defined({ type: e.type as "superseded" | "restored", at: e.at, memoryId: e.memoryId ?? "", reason: e.reason }));
    return { id, versions, replaced, replacedBy, events };
  });
}

/** The object without its undefined fields. */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export async function deleteMemory(ctx: Context, id: string): Promise<{ success: boolean; id: string }> {
  const deleted = await ctx.store.write((w) => billedCommit(ctx, 1, () => w.deleteMemory(ctx.accountId, id)));
  if (!deleted) throw notFound(id);
  return { success: true, id };
}

export interface BatchLineResult {
  line: number;
  memory?: Memory;
  /** With `extract`: the entities found in this line's content. */
  extracted?: CreateEntityResult[];
  error?: MmError;
}

export interface BatchOptions {
  /** Fields a line may leave out (from CLI flags): userId, agentId, tags, metadata. */
  defaults?: Record<string, unknown>;
  /** Lines embedded and committed together. Larger batches make fewer table versions. */
  batchSize?: number;
  /** Called once per input line, in line order, after its batch is committed (or it failed). */
  onResult?: (result: BatchLineResult) => void;
  /** Stop reading (Ctrl-C); lines already read, up to one batch beyond the current, are still committed. */
  signal?: AbortSignal;
  /** Find people, places and organisations in each line and link them (see createMemoryWithExtraction). */
  extract?: boolean;
}

/**
 * Adds memories from JSON lines: each line an object with the create fields, or a JSON string
 * (the content). Bad lines are reported with their line number and never block good ones. A line
 * is reported as added only after the commit holding it, so an acknowledged memory survives a
 * crash; a crash mid-batch loses only the unacknowledged batch. Each batch is billed (ctx.meter)
 * for the lines it stores, right after its commit: lines refused or never stored cost nothing.
 */
export async function addMemoriesFromLines(
  ctx: Context,
  lines: AsyncIterable<string> | Iterable<string>,
  options: BatchOptions = {},
): Promise<{ added: number; failed: number; stopped: boolean }> {
  const batchSize = options.batchSize ?? 64;
  const defaults = options.defaults ?? {};
  let pending: { line: number; input?: CreateMemoryInput; error?: MmError; row?: MemoryRow; settled?: Settled; extracted?: CreateEntityResult[] }[] = [];
  const extractMentions = options.extract ? (await import("./extract.js")).extractMentions : undefined;
  let added = 0;
  let failed = 0;
  let lineNo = 0;

  type Pending = (typeof pending)[number];

  /** Embeds a batch (and extracts); marks every line failed if that fails. */
  const prepare = async (batch: Pending[]) => {
    const valid = batch.filter((p) => p.input);
    if (!valid.length) return undefined;
    try {
      // Refused before embedding when the quota has no room left at all; the commit checks again
      // and stores as many of the batch's lines as fit.
      await ctx.meter?.check(1);
      const vectors = await embedChecked(ctx, valid.map((p) => p.input!.content));
      const rows = valid.map((p, i) => newRow(ctx, p.input!, vectors[i]));
      const mentions = extractMentions ? await Promise.all(valid.map((p) => extractMentions(p.input!.content))) : undefined;
      return { valid, rows, mentions };
    } catch (err) {
      const error = toMmError(err);
      for (const p of valid) p.error = error;
      return undefined;
    }
  };

  /** Commits a prepared batch, then reports each of its lines (in order, after the commit). */
  const commit = async (batch: Pending[], prepared: Awaited<ReturnType<typeof prepare>>) => {
    if (prepared) {
      const { valid, rows, mentions } = prepared;
      try {
        await ctx.store.write(async (w) => {
          // Links are checked under the lock, per line: a line naming a missing entity fails alone.
          const live = await ctx.store.getEntities(ctx.accountId, rows.flatMap((r) => r.entityIds));
          const plan = await planIncoming(ctx.store, rows.map((row, i) => ({ row, ...createOptions(valid[i].input!) })));
          const keep: number[] = [];
          for (const [i, r] of rows.entries()) {
            const missing = r.entityIds.filter((id) => !live.has(id));
            if (missing.length) valid[i].error = entitiesNotFound(missing);
            else if (plan.settled[i].error) valid[i].error = plan.settled[i].error;
            else keep.push(i);
          }
          if (!keep.length) return;
          // The quota may take only the first lines of this batch: exactly up to the limit.
          const { admitted, refusal } = await billedCommitUpTo(ctx, keep.length, async (n) => {
            const taken = keep.slice(0, n);
            for (const i of taken) {
              if (!mentions || plan.settled[i].duplicateOf) continue;
              valid[i].extracted = await resolveMentions(ctx, w, mentions[i]);
              rows[i].entityIds = [...new Set([...rows[i].entityIds, ...valid[i].extracted!.map((f) => f.entity.id)])];
            }
            await applyPlan(w, plan, taken);
          });
          for (const i of keep.slice(0, admitted)) {
            valid[i].row = rows[i];
            valid[i].settled = plan.settled[i];
          }
          for (const i of keep.slice(admitted)) valid[i].error = refusal;
        });
      } catch (err) {
        const error = toMmError(err);
        for (const p of valid) {
          p.error = error;
          p.row = undefined;
        }
      }
    }
    for (const p of batch) {
      if (p.row) {
        added++;
        options.onResult?.({ line: p.line, memory: createdMemory(p.row, p.settled ?? { replaced: [] }), ...(p.extracted ? { extracted: p.extracted } : {}) });
      } else {
        failed++;
        options.onResult?.({ line: p.line, error: p.error });
      }
    }
  };

  // Pipelined: batch N+1 starts embedding before batch N is done (its model calls queue behind
  // N's, so no worker thread waits for N's last call), and batch N is written while N+1 embeds.
  // While a batch is read, at most two others are unfinished: one embedding, one being written.
  // Commits stay in order, and a line is still reported only after the commit that holds it.
  let writing: Promise<void> = Promise.resolve();
  let embedding: Promise<unknown> = Promise.resolve();
  /** The commit of the batch before the previous one: the next batch is read only once it is done. */
  let written: Promise<void> = Promise.resolve();
  const flush = async () => {
    const batch = pending;
    pending = [];
    if (!batch.length) return;
    const prepared = prepare(batch);
    const previous = { embedding, writing, written };
    embedding = prepared;
    written = writing;
    writing = (async () => {
      const ready = await prepared;
      await previous.writing;
      await commit(batch, ready);
    })();
    await Promise.all([previous.embedding, previous.written]);
  };

  for await (const text of lines) {
    lineNo++;
    if (text.trim() === "") continue;
    try {
      pending.push({ line: lineNo, input: parseCreateMemory(batchLineInput(text, defaults)) });
    } catch (err) {
      pending.push({ line: lineNo, error: toMmError(err) });
    }
    if (pending.length >= batchSize) await flush();
    if (options.signal?.aborted) break;
  }
  await flush();
  await writing;
  return { added, failed, stopped: options.signal?.aborted ?? false };
}

/** A batch line as a create's raw input: a JSON object, or a JSON string (the content), with `defaults` for the fields it leaves out. */
export function batchLineInput(text: string, defaults: Record<string, unknown>): unknown {
  return withDefaults(parseLine(text), defaults);
}

function parseLine(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new MmError("VALIDATION_ERROR", "Line is not valid JSON.", { details: [{ field: "line", message: "is not valid JSON" }] });
  }
  return typeof value === "string" ? { content: value } : value;
}

function withDefaults(value: unknown, defaults: Record<string, unknown>): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const out: Record<string, unknown> = { ...value };
  for (const [k, v] of Object.entries(defaults)) if (v !== undefined && out[k] === undefined) out[k] = v;
  return out;
}

/** A new memory's row, stamped now; its vector comes with it, or later from the group commit. */
function newRow(ctx: Context, input: CreateMemoryInput): Omit<MemoryRow, "vector">;
function newRow(ctx: Context, input: CreateMemoryInput, vector: Float32Array): MemoryRow;
function newRow(ctx: Context, input: CreateMemoryInput, vector?: Float32Array): MemoryRow | Omit<MemoryRow, "vector"> {
  const now = ctx.clock();
  const at = now.toISOString();
  const row = memoryRow(input, { id: newId("mem", now.getTime()), accountId: ctx.accountId, createdAt: at, updatedAt: at });
  return vector ? { ...row, vector } : row;
}

/** A validated memory input as stored, with its identity and times (new, or carried over by an import). */
export function memoryRow(input: CreateMemoryInput, at: { id: string; accountId: string; createdAt: string; updatedAt: string }): Omit<MemoryRow, "vector">;
export function memoryRow(input: CreateMemoryInput, at: { id: string; accountId: string; createdAt: string; updatedAt: string }, vector: Float32Array): MemoryRow;
export function memoryRow(input: CreateMemoryInput, at: { id: string; accountId: string; createdAt: string; updatedAt: string }, vector?: Float32Array): MemoryRow | Omit<MemoryRow, "vector"> {
  return {
    id: at.id,
    accountId: at.accountId,
    content: input.content,
    userId: input.userId,
    agentId: input.agentId ?? null,
    tags: input.tags ?? [],
    metadata: input.metadata === undefined ? null : JSON.stringify(input.metadata),
    entityIds: input.entityIds ?? [],
    createdAt: at.createdAt,
    updatedAt: at.updatedAt,
    seq: 0,
    supersededBy: null,
    supersededAt: null,
    matchKeys: storedKeysOf(input.content),
    project: input.project ?? null,
    history: null,
    ...(vector ? { vector } : {}),
  };
}

/** The API's memory: `supersedes` (the memories it replaced) only when given and non-empty. */
export function toMemory(r: MemoryRecord, supersedes?: string[]): Memory {
  const m: Memory = { id: r.id, content: r.content, userId: r.userId } as Memory;
  if (r.agentId !== null) m.agentId = r.agentId;
  if (r.tags.length) m.tags = r.tags;
  if (r.metadata !== null) m.metadata = JSON.parse(r.metadata) as Record<string, unknown>;
  if (r.entityIds.length) m.entityIds = r.entityIds;
  if (r.project) m.project = r.project;
  m.createdAt = r.createdAt;
  m.updatedAt = r.updatedAt;
  if (supersedes?.length) m.supersedes = supersedes;
  if (r.supersededBy) {
    m.supersededBy = r.supersededBy;
    if (r.supersededAt) m.supersededAt = r.supersededAt;
  }
  return m;
}

export function toListItem(r: MemoryRecord): MemoryListItem {
  const { metadata: _m, entityIds: _e, supersedes: _s, deduplicated: _d, ...item } = toMemory(r);
  return item;
}


/** MEMORY_NOT_FOUND for `id`: what an unknown id, another account's, or (for a scoped MCP server) another user's answers. */
export function notFound(id: string): MmError {
  return new MmError("MEMORY_NOT_FOUND", `Memory ${id} does not exist.`);
}


/** A clock that went backwards must not make updatedAt precede the previous value. */
function laterTimestamp(now: Date, previous: string): string {
  const at = now.toISOString();
  return at > previous ? at : previous;
}
