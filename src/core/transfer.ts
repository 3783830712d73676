import { Accounts } from "./accounts.js";
import { MmError, toMmError, validationError } from "../errors.js";
import { parseCreateEntity } from "../schemas/entity.js";
import { parseCreateMemory } from "../schemas/memory.js";
import { parseCreateRelation } from "../schemas/relation.js";
import { requireObject } from "../schemas/validate.js";
import type { EntityRecord, MemoryRow, RelationRecord } from "../storage/store.js";
import { billedCommit, embedChecked, type Context, type Meter } from "./context.js";
import { entitiesNotFound } from "../errors.js";
import { entityRecord, toEntity } from "./entities.js";
import { derivedId } from "./ids.js";
import { findEntityByName } from "./mcp-memory.js";
import { memoryRow, toMemory } from "./memories.js";
import { readHistory } from "./validity.js";
import { toRelation } from "./relations.js";
import { normalize } from "../embedder/types.js";

/** The first line of every export names the format and its version; an import refuses other files and newer versions. */
export const EXPORT_FORMAT = "mm-export";
export const EXPORT_VERSION = 1;

export interface ExportHeader {
  format: typeof EXPORT_FORMAT;
  version: number;
  /** The one line that differs between two exports of the same data. */
  exportedAt: string;
  embedder: { provider: string; model: string; dims: number } | null;
  scope: { accountId?: string; allAccounts?: true; userId?: string };
  vectors: boolean;
}

export interface ExportOptions {
  /** Only this user's memories, and the entities they link to with the relations between those. */
  userId?: string;
  /** Every account, each record naming its `accountId`, after one `account` line per account. */
  allAccounts?: boolean;
  /** Include each memory's vector, so an import into a store with the same embedder needn't embed. */
  vectors?: boolean;
  /** Memories read per store query (keyset pages). */
  pageSize?: number;
}

export interface TransferCounts {
  accounts: number;
  entities: number;
  relations: number;
  memories: number;
}

/**
 * Writes the account's data (or a user's, or the whole store's) as JSON Lines: a header, then
 * accounts, entities, relations and memories, each in creation order (createdAt, then id), in the
 * API's own shapes plus `kind`. Memories stream in keyset pages, so an export of any size holds
 * one page in memory. Links travel as each memory's `entityIds`.
 */
export async function exportStore(ctx: Context, options: ExportOptions, write: (line: string) => void | Promise<void>): Promise<TransferCounts> {
  const counts: TransferCounts = { accounts: 0, entities: 0, relations: 0, memories: 0 };
  const header: ExportHeader = {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    exportedAt: ctx.clock().toISOString(),
    embedder: { provider: ctx.store.config.embedder.provider, model: ctx.store.config.embedder.model, dims: ctx.store.config.embedder.dims },
    scope: options.allAccounts ? { allAccounts: true } : { accountId: ctx.accountId, ...(options.userId !== undefined ? { userId: options.userId } : {}) },
    vectors: Boolean(options.vectors),
  };
  await write(JSON.stringify(header));
  let accountIds = [ctx.accountId];
  if (options.allAccounts) {
    const { items } = await new Accounts(ctx.store).list();
    for (const a of items) {
      await write(JSON.stringify({ kind: "account", id: a.id, name: a.name, plan: a.plan, createdAt: a.createdAt }));
      counts.accounts++;
    }
    accountIds = items.map((a) => a.id);
  }
  for (const accountId of accountIds) {
    const tag = options.allAccounts ? { accountId } : {};
    const scoped: Context = { ...ctx, accountId };
    const graph = await scopedGraph(scoped, options.userId);
    const entityIds = new Set(graph.entities.map((e) => e.id));
    for (const e of graph.entities) {
      await write(JSON.stringify({ kind: "entity", ...tag, ...toEntity(e) }));
      counts.entities++;
    }
    for (const r of graph.relations) {
      await write(JSON.stringify({ kind: "relation", ...tag, ...toRelation(r) }));
      counts.relations++;
    }
    const filter = { accountId, ...(options.userId !== undefined ? { userId: options.userId } : {}) };
    let after: { createdAt: string; id: string } | undefined;
    for (;;) {
      const page = await ctx.store.memoriesAfter(filter, after, options.pageSize ?? 1000, Boolean(options.vectors));
      for (const m of page) {
        // A link to an entity deleted a moment ago (see Store.deleteEntityCascade) is not exported.
        const record = { ...m, entityIds: m.entityIds.filter((id) => entityIds.has(id)) };
        const vector = options.vectors ? { vector: Array.from((m as MemoryRow).vector) } : {};
        // Earlier versions and replacement events travel with the memory; supersededBy/At come with toMemory.
        const history = readHistory((m as MemoryRow).history);
        await write(JSON.stringify({ kind: "memory", ...tag, ...toMemory(record), ...(history.length ? { history } : {}), ...vector }));
        counts.memories++;
      }
      if (page.length < (options.pageSize ?? 1000)) break;
      after = { createdAt: page[page.length - 1].createdAt, id: page[page.length - 1].id };
    }
  }
  return counts;
}

/** The account's graph, or the part a user's memories link to (those entities and the relations between them). */
async function scopedGraph(ctx: Context, userId: string | undefined): Promise<{ entities: EntityRecord[]; relations: RelationRecord[] }> {
  const all = await ctx.store.allGraph(ctx.accountId);
  if (userId === undefined) return all;
  const linked = new Set((await ctx.store.linkedMemories({ accountId: ctx.accountId, userId })).flatMap((m) => m.entityIds));
  return {
    entities: all.entities.filter((e) => linked.has(e.id)),
    relations: all.relations.filter((r) => linked.has(r.sourceId) && linked.has(r.targetId)),
  };
}

/** One input record: its line (or item) number, and its parsed value or why it couldn't be read. */
export interface InputRecord {
  line: number;
  value?: unknown;
  error?: MmError;
}

export interface ImportOptions {
  /** Give every record a new id (derived from the old one and the account, so a re-run finds them again). */
  remapIds?: boolean;
  /** Honour `account` lines and records' `accountId` (an --all-accounts export); otherwise everything goes to ctx's account. */
  allAccounts?: boolean;
  /** Records written per commit (memories embedded together). */
  batchSize?: number;
  /**
   * With `allAccounts`: the meter that bills records written into another account than ctx's
   * (each account pays for its own records, within its own quota). Without it they are not billed.
   */
  meterFor?(accountId: string): Promise<Meter | undefined>;
  /** Each record's outcome, in input order, after the commit that holds it. */
  onResult?(result: ImportResult): void;
  /** Something dropped from a record that was added (a replacement that isn't its account's), once the whole file is read. */
  onWarning?(line: number, message: string): void;
  signal?: AbortSignal;
}

export interface ImportResult {
  line: number;
  kind?: string;
  /** The id the record has in this store (new with --remap-ids). */
  id?: string;
  status: "added" | "skipped" | "failed";
  /** Why a record was skipped. */
  reason?: string;
  error?: MmError;
}

export interface ImportSummary {
  added: number;
  skipped: number;
  failed: number;
  stopped: boolean;
}

/** Reads JSON Lines into records; a line that isn't JSON is that line's error, never the file's. */
export async function* jsonLines(lines: AsyncIterable<string> | Iterable<string>): AsyncGenerator<InputRecord> {
  let line = 0;
  for await (const text of lines) {
    line++;
    if (text.trim() === "") continue;
    try {
      yield { line, value: JSON.parse(text) };
    } catch {
      yield { line, error: new MmError("VALIDATION_ERROR", "Line is not valid JSON.", { details: [{ field: "line", message: "not valid JSON" }] }) };
    }
  }
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ID = { memory: /^mem_[0-9A-Z]{24}$/, entity: /^ent_[0-9A-Z]{24}$/, relation: /^rel_[0-9A-Z]{24}$/ };

type Kind = "entity" | "relation" | "memory";
interface Pending {
  line: number;
  kind?: Kind | "account";
  value?: Record<string, unknown>;
  accountId: string;
  error?: MmError;
  skipped?: string;
  id?: string;
  entity?: EntityRecord;
  relation?: RelationRecord;
  memory?: MemoryRow;
  vector?: Float32Array;
}

/**
 * Imports an mm export (exportStore's lines, header first): ids are kept, and a record whose id
 * the account already holds is skipped, so running an import twice adds nothing the second time.
 * With `remapIds` each record gets an id derived from its old one and references follow. An
 * entity with the name and type of an existing one is not twinned: its references go to the
 * existing entity. Bad records are reported with their line and never stop the others; memories
 * without a usable vector are embedded, a batch at a time.
 */
export async function importExport(ctx: Context, records: AsyncIterable<InputRecord>, options: ImportOptions = {}): Promise<ImportSummary> {
  const summary: ImportSummary = { added: 0, skipped: 0, failed: 0, stopped: false };
  const batchSize = options.batchSize ?? 256;
  const idMap = new Map<string, string>();
  /** With remapIds: replacements to record once the replacing memory's new id is known (it comes later in the file). */
  const links: Link[] = [];
  const known = new Set<string>(); // accounts seen to exist
  let header: ExportHeader | undefined;
  let pending: Pending[] = [];
  const report = (p: Pending) => {
    const status = p.error ? "failed" : p.skipped ? "skipped" : "added";
    summary[status === "failed" ? "failed" : status === "skipped" ? "skipped" : "added"]++;
    options.onResult?.({ line: p.line, ...(p.kind ? { kind: p.kind } : {}), ...(p.id ? { id: p.id } : {}), status, ...(p.skipped ? { reason: p.skipped } : {}), ...(p.error ? { error: p.error } : {}) });
  };
  const flush = async () => {
    const batch = pending;
    pending = [];
    if (batch.length) await commit(ctx, batch, header!, idMap, options, links);
    batch.forEach(report);
  };
  for await (const record of records) {
    if (!header) {
      header = checkHeader(record);
      continue;
    }
    const p: Pending = { line: record.line, accountId: ctx.accountId, error: record.error };
    if (!p.error) {
      try {
        p.value = requireObject(record.value, "record");
        const type = p.value.kind;
        if (type !== "account" && type !== "entity" && type !== "relation" && type !== "memory") throw validationError("kind", "must be account, entity, relation or memory");
        p.kind = type;
        if (options.allAccounts && p.value.accountId !== undefined) p.accountId = String(p.value.accountId);
        if (type === "account") await importAccount(ctx, p, options, known);
        else if (options.allAccounts && p.accountId !== ctx.accountId && !known.has(p.accountId)) {
          await new Accounts(ctx.store).resolve(p.accountId);
          known.add(p.accountId);
        }
      } catch (err) {
        p.error = toMmError(err);
      }
    }
    if (p.error || p.kind === "account") {
      // Reported in order: after the records read before it.
      await flush();
      report(p);
    } else pending.push(p);
    if (pending.length >= batchSize) await flush();
    if (options.signal?.aborted) {
      summary.stopped = true;
      break;
    }
  }
  if (!header) throw new MmError("VALIDATION_ERROR", "The file is empty: an mm export starts with its header line.", { details: [{ field: "line 1", message: "missing" }] });
  await flush();
  for (const l of await relink(ctx, links, idMap, options)) {
    options.onWarning?.(l.record.line, `its supersededBy ${l.by} is not a memory of its account (another account's, or in neither the file nor the store): imported as current, without the link.`);
  }
  return summary;
}

/** A replacement waiting for its replacing memory: `id` (its id here) was replaced by `by` (its id in the file) at `at`. */
interface Link {
  accountId: string;
  id: string;
  by: string;
  at: string;
  record: Pending;
}

/**
 * Records the replacements that waited for their replacing memory (later in the file, or with
 * remapIds a new id), once every record is read: one commit, after the memories themselves. Until
 * then the replaced memories are current. A replacement by a memory of another account, or by one
 * that is nowhere, would hide its memory from its own account's searches for good: it is left out,
 * and returned so the import can say so.
 */
async function relink(ctx: Context, links: Link[], idMap: Map<string, string>, options: ImportOptions): Promise<Link[]> {
  const added = links.filter((l) => !l.record.error && !l.record.skipped);
  const target = new Map<Link, string>();
  for (const l of added) {
    const by = idMap.get(`${l.accountId}\u0000${l.by}`) ?? (!options.remapIds && (await ctx.store.getMemory(l.accountId, l.by)) ? l.by : undefined);
    if (by) target.set(l, by);
  }
  if (target.size) {
    await ctx.store.write(async (w) => {
      for (const accountId of new Set([...target.keys()].map((l) => l.accountId))) {
        const mine = [...target.keys()].filter((l) => l.accountId === accountId);
        const rows = await ctx.store.getMemoryRows(accountId, mine.map((l) => l.id));
        const byId = new Map(mine.map((l) => [l.id, l]));
        await w.replaceMemories(rows.map((r) => ({ ...r, supersededBy: target.get(byId.get(r.id)!)!, supersededAt: byId.get(r.id)!.at })));
      }
    });
  }
  return added.filter((l) => !target.has(l));
}

/** An mm export's first line, checked: for `importExport`, and for an import through `mm --remote` (cli/commands/import-remote.ts). */
export function checkHeader(record: InputRecord): ExportHeader {
  const h = record.value as Partial<ExportHeader> | undefined;
  if (record.error || !h || typeof h !== "object" || h.format !== EXPORT_FORMAT) {
    throw new MmError("VALIDATION_ERROR", `Line ${record.line} is not an mm export header ({"format":"${EXPORT_FORMAT}","version":…}); for other formats use --from.`, {
      details: [{ field: `line ${record.line}`, message: "not an mm export header" }],
    });
  }
  if (typeof h.version !== "number" || h.version > EXPORT_VERSION) {
    throw new MmError("VALIDATION_ERROR", `This export has format version ${String(h.version)}; this mm reads up to ${EXPORT_VERSION}. Upgrade mm.`, {
      details: [{ field: "version", message: `at most ${EXPORT_VERSION}` }],
    });
  }
  return h as ExportHeader;
}

async function importAccount(ctx: Context, p: Pending, options: ImportOptions, known: Set<string>): Promise<void> {
  const v = p.value!;
  p.id = String(v.id);
  if (!options.allAccounts) {
    p.skipped = "account lines apply only with --all-accounts";
    return;
  }
  const created = await new Accounts(ctx.store).ensure({ id: v.id, name: v.name, plan: v.plan, createdAt: v.createdAt });
  known.add(p.id);
  if (!created) p.skipped = "the account exists";
}

/** How far past the importing machine's clock a timestamp may be (another machine's clock may run ahead). */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;

/**
 * Each field is a real instant (no month 13, no 30 February) written as mm writes them, and not in
 * the future beyond MAX_CLOCK_SKEW_MS: a memory dated 9999 would sort above every other for good.
 */
function timestamps(v: Record<string, unknown>, fields: string[], now: Date): void {
  for (const f of fields) {
    const text = v[f];
    const t = typeof text === "string" && ISO.test(text) ? Date.parse(text) : NaN;
    if (!Number.isFinite(t) || new Date(t).toISOString() !== text) throw validationError(f, "must be an ISO 8601 UTC timestamp with milliseconds, of a real date and time");
    if (t > now.getTime() + MAX_CLOCK_SKEW_MS) throw validationError(f, `is in the future (${String(text)}); at most ${MAX_CLOCK_SKEW_MS / 60_000} minutes past this machine's clock`);
  }
}

function targetId(kind: Kind, v: Record<string, unknown>, accountId: string, options: ImportOptions): string {
  const id = v.id;
  if (typeof id !== "string" || !ID[kind].test(id)) throw validationError("id", `must be an mm ${kind} id (${ID[kind].source})`);
  if (!options.remapIds) return id;
  return derivedId(id.slice(0, 3) as "mem" | "ent" | "rel", `${accountId}\u0000${id}`, Date.parse(String(v.createdAt)) || 0);
}

const mapped = (idMap: Map<string, string>, accountId: string, id: unknown) => (typeof id === "string" ? (idMap.get(`${accountId}\u0000${id}`) ?? id) : id);

/** Validates, resolves and writes one batch: entities, then relations, then memories, in one commit. */
async function commit(ctx: Context, batch: Pending[], header: ExportHeader, idMap: Map<string, string>, options: ImportOptions, links: Link[]): Promise<void> {
  const fail = (p: Pending, err: unknown) => void (p.error = toMmError(err));
  const of = (kind: Kind) => batch.filter((p) => p.kind === kind && !p.error);
  const accountCtx = (accountId: string): Context => ({ ...ctx, accountId });
  const now = ctx.clock();

  for (const p of of("entity")) {
    try {
      const v = p.value!;
      timestamps(v, ["createdAt", "updatedAt"], now);
      const input = parseCreateEntity({ name: v.name, type: v.type, ...(v.description !== undefined ? { description: v.description } : {}), ...(v.metadata !== undefined ? { metadata: v.metadata } : {}) });
      p.id = targetId("entity", v, p.accountId, options);
      idMap.set(`${p.accountId}\u0000${String(v.id)}`, p.id);
      p.entity = entityRecord(input, { id: p.id, accountId: p.accountId, createdAt: String(v.createdAt), updatedAt: String(v.updatedAt) });
    } catch (err) {
      fail(p, err);
    }
  }
  await markExisting(ctx, of("entity"), "entity");
  for (const p of of("entity").filter((p) => !p.skipped)) {
    const twin = await findEntityByName(accountCtx(p.accountId), p.entity!.name);
    if (twin && twin.type === p.entity!.type && twin.nameKey === p.entity!.nameKey) {
      p.skipped = `the same entity exists as ${twin.id}`;
      idMap.set(`${p.accountId}\u0000${String(p.value!.id)}`, twin.id);
      p.id = twin.id;
    }
  }

  // References resolve within the record's own account only: an entity this batch creates in
  // another account is as unknown as any other account's.
  const newEntities = new Set(of("entity").filter((p) => !p.skipped).map((p) => `${p.accountId}\u0000${p.id!}`));
  const liveEntities = async (accountId: string, ids: string[]) => {
    const isNew = (id: string) => newEntities.has(`${accountId}\u0000${id}`);
    const found = await ctx.store.getEntities(accountId, ids.filter((id) => !isNew(id)));
    return (id: string) => isNew(id) || found.has(id);
  };

  for (const p of of("relation")) {
    try {
      const v = p.value!;
      timestamps(v, ["createdAt"], now);
      const input = parseCreateRelation({
        sourceId: mapped(idMap, p.accountId, v.sourceId),
        targetId: mapped(idMap, p.accountId, v.targetId),
        type: v.type,
        ...(v.metadata !== undefined ? { metadata: v.metadata } : {}),
      });
      const live = await liveEntities(p.accountId, [input.sourceId, input.targetId]);
      if (!live(input.sourceId)) throw new MmError("SOURCE_ENTITY_NOT_FOUND", `Source entity ${input.sourceId} does not exist.`);
      if (!live(input.targetId)) throw new MmError("TARGET_ENTITY_NOT_FOUND", `Target entity ${input.targetId} does not exist.`);
      p.id = targetId("relation", v, p.accountId, options);
      p.relation = {
        id: p.id,
        accountId: p.accountId,
        sourceId: input.sourceId,
        targetId: input.targetId,
        type: input.type,
        metadata: input.metadata === undefined ? null : JSON.stringify(input.metadata),
        createdAt: String(v.createdAt),
      };
    } catch (err) {
      fail(p, err);
    }
  }
  await markExisting(ctx, of("relation"), "relation");

  const sameEmbedder =
    header.embedder?.provider === ctx.store.config.embedder.provider &&
    header.embedder?.model === ctx.store.config.embedder.model &&
    header.embedder?.dims === ctx.store.config.embedder.dims;
  const replacements = links;
  for (const p of of("memory")) {
    try {
      const v = p.value!;
      timestamps(v, ["createdAt", "updatedAt"], now);
      const entityIds = Array.isArray(v.entityIds) ? v.entityIds.map((id) => mapped(idMap, p.accountId, id)) : v.entityIds;
      const input = parseCreateMemory({
        content: v.content,
        userId: v.userId,
        ...Object.fromEntries((["agentId", "tags", "metadata", "project"] as const).filter((k) => v[k] !== undefined).map((k) => [k, v[k]])),
        ...(entityIds !== undefined ? { entityIds } : {}),
      });
      const links = input.entityIds ?? [];
      const live = await liveEntities(p.accountId, links);
      const missing = links.filter((id) => !live(id));
      if (missing.length) throw entitiesNotFound(missing);
      p.id = targetId("memory", v, p.accountId, options);
      idMap.set(`${p.accountId}\u0000${String(v.id)}`, p.id);
      p.memory = memoryRow({ ...input, entityIds: links }, { id: p.id, accountId: p.accountId, createdAt: String(v.createdAt), updatedAt: String(v.updatedAt) }, new Float32Array(0));
      Object.assign(p.memory, importedValidity(v, p, options, replacements, idMap, now));
      if (sameEmbedder) p.vector = usableVector(v.vector, ctx.store.config.embedder.dims);
    } catch (err) {
      fail(p, err);
    }
  }
  await markExisting(ctx, of("memory"), "memory");

  const writes = batch.filter((p) => !p.error && !p.skipped && p.kind !== "account");
  // One commit per account in the batch, billed to that account within its own quota.
  const byAccount = new Map<string, Pending[]>();
  for (const p of writes) (byAccount.get(p.accountId) ?? byAccount.set(p.accountId, []).get(p.accountId)!).push(p);
  for (const [accountId, group] of byAccount) {
    try {
      const meter = accountId === ctx.accountId ? ctx.meter : await options.meterFor?.(accountId);
      const billed: Context = { ...ctx, accountId, meter };
      // Refused before embedding when the quota can't take the group; the commit checks again and bills.
      await meter?.check(group.length);
      const toEmbed = group.filter((p) => p.memory && !p.vector);
      const vectors = toEmbed.length ? await embedChecked(ctx, toEmbed.map((p) => p.memory!.content)) : [];
      toEmbed.forEach((p, i) => (p.vector = vectors[i]));
      await ctx.store.write((w) =>
        billedCommit(billed, group.length, async () => {
          await w.insertGraph(
            group.filter((p) => p.entity).map((p) => p.entity!),
            group.filter((p) => p.relation).map((p) => p.relation!),
          );
          await w.insertMemories(group.filter((p) => p.memory).map((p) => ({ ...p.memory!, vector: p.vector! })));
        }),
      );
    } catch (err) {
      for (const p of group) fail(p, err);
    }
  }
}

/** How far from 1 an imported vector's length may be and still be kept bit for bit. */
const UNIT_TOLERANCE = 1e-5;

/**
 * An imported vector as the store may keep it, or undefined when it can't be used (the memory is
 * then embedded again from its text): the right length, every value a number float32 holds
 * (1e39 would become Infinity, 1e-50 zero), not all zeros. Every embedder's vectors are unit
 * length, so one that isn't is normalised (one within UNIT_TOLERANCE of 1 is kept as it is, so an
 * export and its re-import stay byte-identical).
 */
function usableVector(vector: unknown, dims: number): Float32Array | undefined {
  if (!Array.isArray(vector) || vector.length !== dims) return undefined;
  let sum = 0;
  for (const x of vector) {
    if (typeof x !== "number" || !Number.isFinite(Math.fround(x)) || (x !== 0 && Math.fround(x) === 0)) return undefined;
    sum += x * x;
  }
  const norm = Math.sqrt(sum);
  if (!(norm > 0) || !Number.isFinite(norm)) return undefined;
  return Math.abs(norm - 1) <= UNIT_TOLERANCE ? Float32Array.from(vector as number[]) : normalize(vector as number[]);
}

/**
 * A memory record's replacement and history, checked: supersededBy a memory id with supersededAt a
 * timestamp, history an array of objects. A replacement by a memory not read yet waits for relink().
 */
function importedValidity(v: Record<string, unknown>, p: Pending, options: ImportOptions, links: Link[], idMap: Map<string, string>, now: Date): Pick<MemoryRow, "supersededBy" | "supersededAt" | "history"> {
  const out: Pick<MemoryRow, "supersededBy" | "supersededAt" | "history"> = { supersededBy: null, supersededAt: null, history: null };
  if (v.history !== undefined) {
    if (!Array.isArray(v.history) || !v.history.every((e) => e !== null && typeof e === "object" && ["version", "superseded", "restored"].includes((e as { type?: unknown }).type as string))) {
      throw validationError("history", "must be an array of history entries (as mm export writes them)");
    }
    if (v.history.length) out.history = JSON.stringify(v.history);
  }
  if (v.supersededBy === undefined) return out;
  if (typeof v.supersededBy !== "string" || !ID.memory.test(v.supersededBy)) throw validationError("supersededBy", "must be an mm memory id");
  timestamps(v, ["supersededAt"], now);
  // Read earlier in this account: linked now. Otherwise relink() decides, once the file is read.
  const mapped = idMap.get(`${p.accountId}\u0000${v.supersededBy}`);
  if (mapped) return { ...out, supersededBy: mapped, supersededAt: String(v.supersededAt) };
  links.push({ accountId: p.accountId, id: p.id!, by: v.supersededBy, at: String(v.supersededAt), record: p });
  return out;
}

/** Marks records whose target id exists: skipped in their own account, failed in another's (ids are unique store-wide). */
async function markExisting(ctx: Context, batch: Pending[], kind: Kind): Promise<void> {
  const existing = await ctx.store.existingIds(kind, batch.map((p) => p.id!));
  const seen = new Set<string>();
  for (const p of batch) {
    const owner = existing.get(p.id!);
    if (seen.has(p.id!)) p.skipped = "an earlier line has the same id";
    else if (owner === p.accountId) p.skipped = "the id exists";
    else if (owner !== undefined) {
      p.error = new MmError("VALIDATION_ERROR", `The id ${p.id} belongs to another account in this store; import with --remap-ids.`, {
        details: [{ field: "id", message: "belongs to another account" }],
      });
    }
    seen.add(p.id!);
  }
}
