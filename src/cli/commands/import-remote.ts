import { MmError, toMmError, validationError } from "../../errors.js";
import type { InputRecord, ImportResult, ImportSummary } from "../../core/transfer.js";
import type { Memory } from "../../core/memories.js";
import { asMmError, type RemoteContext } from "../remote.js";

/** Answers that stop an import: every later record would fail the same way. */
const STOPS = ["REMOTE_UNAVAILABLE", "UNAUTHORIZED", "QUOTA_EXCEEDED"];

/**
 * `mm --remote URL import FILE`: an mm export sent record by record through the API's creates
 * (docs/import-export.md, "Through --remote"). The API assigns ids and timestamps, so every record
 * gets a new id and is dated now, and references (a relation's ends, a memory's links and
 * replacement) follow the new ids. What the server already holds is skipped: an entity of the
 * same name and type (the server's own rule), a relation of the same ends and type (one list
 * request to find it), a memory of the same user, words, tags and metadata (the server's
 * deduplication, which looks at current memories only: a second run adds the replaced ones
 * again). A memory's earlier versions and vectors can't be sent; `account` lines
 * are skipped (a key acts for one account). Each record is reported as it is answered; a server
 * that stops answering, refuses the key, or is out of quota stops the import.
 */
export async function importViaApi(
  ctx: RemoteContext,
  records: AsyncIterable<InputRecord>,
  options: { onResult?(result: ImportResult): void; signal?: AbortSignal },
): Promise<ImportSummary & { dropped?: string }> {
  const { checkHeader } = await import("../../core/transfer.js");
  const summary: ImportSummary = { added: 0, skipped: 0, failed: 0, stopped: false };
  /** Memories sent without what the API can't take: their earlier versions, their vectors. */
  const lost = { history: 0, vector: 0 };
  /** The id each record of the file has on the server. */
  const ids = new Map<string, string>();
  const mapped = (id: unknown) => (typeof id === "string" ? (ids.get(id) ?? id) : id);
  /** Memories replaced by one later in the file, by the id of their replacement in the file. */
  const replacedBy = new Map<string, string[]>();
  let header = false;
  for await (const record of records) {
    if (!header) {
      checkHeader(record);
      header = true;
      continue;
    }
    const result: ImportResult = { line: record.line, status: "added" };
    try {
      if (record.error) throw record.error;
      const v = record.value;
      if (v === null || typeof v !== "object" || Array.isArray(v)) throw validationError("record", "must be a JSON object");
      const r = v as Record<string, unknown>;
      if (!["account", "entity", "relation", "memory"].includes(r.kind as string)) throw validationError("kind", "must be account, entity, relation or memory");
      result.kind = r.kind as string;
      if (typeof r.id === "string") result.id = r.id;
      if (r.kind === "account") {
        result.status = "skipped";
        result.reason = "accounts can't be created through --remote: a key acts for one account";
      } else if (r.kind === "entity") {
        const entity = await ctx.remote.entities.create(pick(r, ["name", "type", "description", "metadata"]) as never);
        if (ctx.lastStatus() !== 201) [result.status, result.reason] = ["skipped", `the same entity exists as ${entity.id}`];
        result.id = remember(ids, r.id, entity.id);
      } else if (r.kind === "relation") {
        const ends = { sourceId: mapped(r.sourceId), targetId: mapped(r.targetId), type: r.type };
        const [twin] = typeof ends.sourceId === "string" && typeof ends.targetId === "string" && typeof ends.type === "string" ? (await ctx.remote.relations.list({ ...ends, limit: 1 } as never)).items : [];
        if (twin) [result.status, result.reason] = ["skipped", `the same relation exists as ${twin.id}`];
        result.id = remember(ids, r.id, twin?.id ?? (await ctx.remote.relations.create({ ...ends, ...pick(r, ["metadata"]) } as never)).id);
      } else {
        // The server detects no replacements of its own: the file says which memory replaced which.
        // They are marked after the create, which `supersedes` would exempt from deduplication.
        const body = { ...pick(r, ["content", "userId", "agentId", "tags", "metadata"]), ...(Array.isArray(r.entityIds) ? { entityIds: r.entityIds.map(mapped) } : {}), autoSupersede: false };
        const memory: Memory = await ctx.remote.memories.create(body as never);
        if (Array.isArray(r.history) && r.history.length) lost.history++;
        if (r.vector !== undefined) lost.vector++;
        if (memory.deduplicated) [result.status, result.reason] = ["skipped", `the same memory exists as ${memory.id}`];
        result.id = remember(ids, r.id, memory.id);
        const replaced = ((typeof r.id === "string" && replacedBy.get(r.id)) || []).filter((old) => ids.has(old));
        for (const old of replaced) await ctx.remote.memories.supersede(ids.get(old)!, { by: memory.id });
        if (typeof r.supersededBy === "string" && typeof r.id === "string") {
          // Replaced by a memory already sent (a file in another order): mark it now; else when that one comes.
          if (ids.has(r.supersededBy)) await ctx.remote.memories.supersede(memory.id, { by: ids.get(r.supersededBy)! });
          else replacedBy.set(r.supersededBy, [...(replacedBy.get(r.supersededBy) ?? []), r.id]);
        }
      }
    } catch (err) {
      const error = err instanceof MmError ? err : asMmError(err, ctx.url);
      if (!(error instanceof MmError)) throw toMmError(error);
      if (STOPS.includes(error.code)) throw error;
      Object.assign(result, { status: "failed", error });
    }
    summary[result.status]++;
    // Fields in the order a local import reports them.
    const { line, kind, id, status, reason, error } = result;
    options.onResult?.({ line, ...(kind ? { kind } : {}), ...(id ? { id } : {}), status, ...(reason ? { reason } : {}), ...(error ? { error } : {}) });
    if (options.signal?.aborted) {
      summary.stopped = true;
      break;
    }
  }
  if (!header) throw new MmError("VALIDATION_ERROR", "The file is empty: an mm export starts with its header line.", { details: [{ field: "line 1", message: "missing" }] });
  const memories = (n: number) => `${n} ${n === 1 ? "memory" : "memories"}`;
  const dropped = [lost.history && `the earlier versions (history) of ${memories(lost.history)}`, lost.vector && `the vectors of ${memories(lost.vector)} (the server embeds)`].filter(Boolean).join(", ");
  return dropped ? { ...summary, dropped } : summary;
}

function pick(r: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => r[k] !== undefined).map((k) => [k, r[k]]));
}

function remember(ids: Map<string, string>, old: unknown, now: string): string {
  if (typeof old === "string") ids.set(old, now);
  return now;
}
