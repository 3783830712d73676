import { entitiesNotFound, MmError, toMmError } from "../errors.js";
import type { MemoryRow } from "../storage/store.js";
import { embedChecked, type Context } from "./context.js";
import { applyPlan, planIncoming, type Settled } from "./validity.js";

/**
 * Group commit for memory creates. Every create pays for an embedding call and a LanceDB commit;
 * done one by one, concurrent requests (HTTP clients, MCP tools, a CLI batch in one process) queue
 * for the model and for the write lock, and the model runs at batch size 1. Here, creates that
 * arrive while the previous group is being embedded are gathered into the next group: one
 * embedding call, one commit. Under no load a group is one create and waits for nothing; under
 * load a group is whatever arrived meanwhile.
 *
 * Two stages run side by side: group N+1 is embedded while group N commits. Groups embedded while
 * a commit runs wait for it and then commit together, as one: a commit costs detection's reads and
 * a LanceDB write whatever its size, so when commits are the slower stage, fewer and larger ones
 * keep up (8 HTTP clients made groups of 1.5 creates on average, each paying a whole commit, when
 * only the embedding gathered them). Commits stay in arrival order, and each create resolves only
 * after the commit that holds it, so an acknowledged memory is stored. Each create is judged on its own: its input was validated before it joined,
 * and a link to a missing entity, or an account out of quota, fails that create alone. Only what no
 * create can cause alone (the model or the disk failing) fails a whole group. Each create is billed
 * by its own meter right after the commit that stores it; rate limits are taken per request by the
 * caller, so both stay exact.
 */

/** A create waiting for its group: the row (vector still to compute) and who is waiting. */
interface Pending {
  ctx: Context;
  row: Omit<MemoryRow, "vector">;
  options: CreateOptions;
  resolve: (done: Created) => void;
  reject: (err: MmError) => void;
}

/** What a create asks for beyond its row: replacements it names, detection and deduplication. */
export interface CreateOptions {
  supersedes?: string[];
  detect: boolean;
  dedupe: boolean;
}

/** A committed create: its row, and what it replaced or duplicates (core/validity.ts). */
export interface Created {
  row: MemoryRow;
  settled: Settled;
}

/** Most creates in one group: one model call of this many texts, one commit of this many rows. */
export const MAX_GROUP = 64;
/** Most creates in one commit of several embedded groups (as many as `mm memories add --batch-size` 256). */
export const MAX_COMMIT = 256;

class CreateQueue {
  private waiting: Pending[] = [];
  private embedding = false;
  /** Embedded groups waiting for the commit in progress, in arrival order. */
  private embedded: { group: Pending[]; rows: MemoryRow[] }[] = [];
  private committing = false;
  /** Groups embedded, commits made, and creates in them (for tests and `mm serve`'s figures). */
  readonly stats = { groups: 0, commits: 0, creates: 0 };

  submit(p: Pending): void {
    this.waiting.push(p);
    // A tick's grace: creates arriving in the same turn of the event loop share the first group.
    if (!this.embedding) setImmediate(() => void this.pump());
  }

  private async pump(): Promise<void> {
    if (this.embedding || !this.waiting.length) return;
    this.embedding = true;
    const group = this.waiting.splice(0, MAX_GROUP);
    let rows: MemoryRow[] | undefined;
    try {
      const vectors = await embedChecked(group[0].ctx, group.map((p) => p.row.content));
      rows = group.map((p, i) => ({ ...p.row, vector: vectors[i] }));
    } catch (err) {
      for (const p of group) p.reject(toMmError(err));
    }
    this.embedding = false;
    // The next group embeds while this one commits.
    if (this.waiting.length) setImmediate(() => void this.pump());
    if (!rows) return;
    this.stats.groups++;
    this.embedded.push({ group, rows });
    void this.drain();
  }

  /** Commits the embedded groups waiting together (up to MAX_COMMIT creates), then those embedded meanwhile, until none is left. */
  private async drain(): Promise<void> {
    if (this.committing) return;
    this.committing = true;
    try {
      while (this.embedded.length) {
        let take = 1;
        let size = this.embedded[0].rows.length;
        while (take < this.embedded.length && size + this.embedded[take].rows.length <= MAX_COMMIT) size += this.embedded[take++].rows.length;
        const ready = this.embedded.splice(0, take);
        await this.commit(
          ready.flatMap((r) => r.group),
          ready.flatMap((r) => r.rows),
        );
      }
    } finally {
      this.committing = false;
    }
  }

  private async commit(group: Pending[], rows: MemoryRow[]): Promise<void> {
    const store = group[0].ctx.store;
    const outcome: (MemoryRow | MmError)[] = [];
    let settled: Settled[] = [];
    try {
      await store.write(async (w) => {
        // Duplicates and replacements are decided under the lock, so concurrent creates see each other.
        const plan = await planIncoming(store, rows.map((row, i) => ({ row, ...group[i].options })));
        settled = plan.settled;
        // Links are checked under the lock, per create and per account: one bad link fails one create.
        const linked: number[] = [];
        const byAccount = new Map<string, number[]>();
        rows.forEach((r, i) => byAccount.set(r.accountId, [...(byAccount.get(r.accountId) ?? []), i]));
        for (const [accountId, indexes] of byAccount) {
          const live = await store.getEntities(accountId, indexes.flatMap((i) => rows[i].entityIds));
          for (const i of indexes) {
            const missing = rows[i].entityIds.filter((id) => !live.has(id));
            if (missing.length) outcome[i] = entitiesNotFound(missing);
            else if (plan.settled[i].error) outcome[i] = plan.settled[i].error!;
            else linked.push(i);
          }
        }
        // Each create is billed as it would be alone (core/context.ts billedCommit): checked before
        // this commit, charged right after it; one whose account has no quota left fails alone.
        const metered = linked.filter((i) => group[i].ctx.meter);
        const insert = async (admitted: boolean[]) => {
          const keep = linked.filter((i) => !group[i].ctx.meter || admitted[metered.indexOf(i)]);
          // The crash tests' points around a billed commit (core/context.ts billedCommit).
          await store.hooks?.("billed-commit:before");
          await applyPlan(w, plan, keep);
          await store.hooks?.("billed-commit:after");
        };
        if (!metered.length) return insert([]);
        const meters = metered.map((i) => group[i].ctx.meter!);
        const { refused } = await meters[0].commitGroup(meters, insert);
        metered.forEach((i, k) => refused[k] && (outcome[i] = refused[k]));
      });
    } catch (err) {
      for (const p of group) p.reject(toMmError(err));
      return;
    }
    this.stats.commits++;
    this.stats.creates += rows.length;
    group.forEach((p, i) => (outcome[i] instanceof MmError ? p.reject(outcome[i] as MmError) : p.resolve({ row: rows[i], settled: settled[i] })));
  }
}

const queues = new WeakMap<Context["store"], CreateQueue>();

function queueOf(ctx: Context): CreateQueue {
  let q = queues.get(ctx.store);
  if (!q) queues.set(ctx.store, (q = new CreateQueue()));
  return q;
}

/** Stores one new memory row (its vector still to compute) in the next group; resolves once committed. */
export function commitCreate(ctx: Context, row: Omit<MemoryRow, "vector">, options: CreateOptions = { detect: true, dedupe: true }): Promise<Created> {
  return new Promise((resolve, reject) => queueOf(ctx).submit({ ctx, row, options, resolve, reject }));
}

/** What the group commit has done on this store so far. */
export function groupCommitStats(ctx: Context): { groups: number; commits: number; creates: number } {
  return { ...queueOf(ctx).stats };
}
