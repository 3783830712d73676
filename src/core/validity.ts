import { MmError, validationError } from "../errors.js";
import { userKey } from "../storage/current-rows.js";
import type { MemoryRecord, MemoryRow, Store, StoreWriter } from "../storage/store.js";
import { dot } from "../embedder/types.js";
import { changedByModel, endedReason, lookupKeysOf, factsOf, isFactKey, replacementReason, saysChanged, saysEnded, textKey, TEXT_KEY, wordOfChange, type Fact } from "./supersede.js";

/**
 * Which memories are true now: replaced facts (supersededBy, supersededAt, supersedes), duplicates,
 * and each memory's history. The rules of detection are in core/supersede.ts; this module applies
 * them to the store, under the write lock.
 *
 * A replacement is recorded on the replaced memory only (its supersededBy and supersededAt, and
 * an event in its history), so it is one row written in one commit: whole or not at all, even
 * under `kill -9`. A memory's `supersedes` is read back from the rows that name it.
 */

/** One earlier version of a memory, or one event of its life, as kept in its `history` column. */
/** What detection keeps apart: memories of another agent, or of another project (or global beside a project's), neither replace nor duplicate each other. */
type Scoped = { agentId: string | null; project?: string | null };

function sameScope(a: Scoped, b: Scoped): boolean {
  return a.agentId === b.agentId && (a.project ?? null) === (b.project ?? null);
}

export interface HistoryEntry {
  /** "version": the content, tags and metadata before a PATCH; "superseded" / "restored": an event. */
  type: "version" | "superseded" | "restored";
  /** When this happened (the PATCH, the replacement, the restore). */
  at: string;
  content?: string;
  agentId?: string | null;
  tags?: string[];
  metadata?: Record<string, unknown> | null;
  entityIds?: string[];
  project?: string | null;
  /** For a version: when it became true (its updatedAt then). */
  validFrom?: string;
  /** For "superseded": the replacing memory; for "restored": the one that had replaced it. */
  memoryId?: string;
  /** "explicit", or what detection matched ("self.home: paris → berlin"). */
  reason?: string;
}

export function readHistory(text: string | null | undefined): HistoryEntry[] {
  if (!text) return [];
  try {
    const parsed = JSON.parse(text) as unknown;
    return Array.isArray(parsed) ? (parsed as HistoryEntry[]) : [];
  } catch {
    return [];
  }
}

export function withHistory(row: MemoryRow, entry: HistoryEntry): string {
  return JSON.stringify([...readHistory(row.history), entry]);
}

/** A memory row marked replaced by `by` at `at`, with the event in its history. */
export function markReplaced(row: MemoryRow, by: string, at: string, reason: string): MemoryRow {
  return { ...row, supersededBy: by, supersededAt: at, history: withHistory(row, { type: "superseded", at, memoryId: by, reason }) };
}

/** What a create asks for beyond the row: replacements it names, and whether to detect and deduplicate. */
export interface Incoming {
  row: MemoryRow;
  /** Ids the caller says this memory replaces (checked: same account, same user). */
  supersedes?: string[];
  /** Look for older memories this one replaces (default on). */
  detect: boolean;
  /** Store nothing when a current memory of the same user and agent already says the same (default on). */
  dedupe: boolean;
}

/** What became of one incoming memory. */
export interface Settled {
  /** The current memory that already said the same: nothing new was stored. */
  duplicateOf?: MemoryRecord;
  /** The memories it replaced (explicitly or detected). */
  replaced: string[];
  /** Why it can't be created (an id in `supersedes` that doesn't exist, or is another user's). */
  error?: MmError;
}

/** Replacements decided before the commit: existing rows to mark, and new rows marked by later new ones. */
export interface Plan {
  items: Incoming[];
  settled: Settled[];
  /** existing row id → [index of the incoming that replaces it, reason] */
  marks: Map<string, { by: number; reason: string }>;
  /** incoming index → [index of a later incoming that replaces it, reason] */
  inBatch: Map<number, { by: number; reason: string }>;
  /** Whole rows detection read (a user's every current memory, or candidates read whole): a replaced one among them is marked without reading it again. */
  read: Map<string, MemoryRow>;
}

/**
 * How many of a user's older memories sharing a fact key with a new one detection compares it
 * with: the latest stored (highest sequence numbers). Each comparison parses the older text, so a
 * user with thousands of notes of one shape (an agent storing "Bo said the tea plan for … is at …"
 * over and over) paid for all of them on every create: 5,000 such notes took a create from 51 to
 * 560 ms. A fact changes against what the user said of it lately; an older note beyond these keeps
 * its place, and search still ranks the newer one first (core/search.ts, newerFirst). Only these
 * are read from the store (Store.currentMemoriesMatching). Duplicates are looked for among all.
 */
export const DETECT_CANDIDATES = 200;

/** How many of a user's nearest current memories by the model a new memory that says something changed is compared with (supersede.ts SAID_CHANGED.near). */
export const NEAR_CANDIDATES = 5;
/**
 * Up to how many of a user's current memories detection reads whole to find the nearest of the
 * user's new memories that say something changed, instead of a vector search each: for a batch
 * with several of them, and for users with one each who have at most this many together
 * (Store.memoriesAtMost).
 */
export const NEAR_SCAN = 2000;
/**
 * Up to how many current memories (per account, in one group commit) of users none of whose new
 * memories says something changed detection reads whole, to keep them (planIncoming): their
 * vectors are read too, which only the nearest need, so fewer than NEAR_SCAN.
 */
export const KEEP_SCAN = 500;

/**
 * Decides, under the write lock and before the commit, what each incoming memory duplicates and
 * replaces. One filtered query per account in the batch finds the older current memories of its
 * users that share a match key with any of them (core/supersede.ts): no scan, no vector search.
 */
export async function planIncoming(store: Store, items: Incoming[]): Promise<Plan> {
  const settled: Settled[] = items.map(() => ({ replaced: [] }));
  const marks = new Map<string, { by: number; reason: string }>();
  const inBatch = new Map<number, { by: number; reason: string }>();
  const facts: Fact[][] = items.map((it) => (it.detect ? factsOf(it.row.content) : []));
  /** Each incoming memory's lookup keys, worked out once: the candidates query and the model's reading both use them. */
  const lookup: string[][] = [];
  const lookupOf = (i: number) => (lookup[i] ??= lookupKeysOf(items[i].row.content, facts[i]));

  // Explicit replacements: every id must be a memory of the same account and user.
  const byAccount = new Map<string, string[]>();
  for (const it of items) if (it.supersedes?.length) byAccount.set(it.row.accountId, [...(byAccount.get(it.row.accountId) ?? []), ...it.supersedes]);
  const found = new Map<string, MemoryRecord>();
  for (const [accountId, ids] of byAccount) for (const r of await store.memoriesByIds({ accountId }, ids)) found.set(`${accountId}\u0000${r.id}`, r);
  items.forEach((it, i) => {
    for (const id of it.supersedes ?? []) {
      const old = found.get(`${it.row.accountId}\u0000${id}`);
      if (!old) settled[i].error = new MmError("MEMORY_NOT_FOUND", `Memory ${id} does not exist.`, { field: "supersedes" });
      else if (old.userId !== it.row.userId) settled[i].error = validationError("supersedes", `memory ${id} belongs to another user; a memory can only replace one of its own user's`);
    }
  });

  // Older current memories sharing a key with the batch, per account and user.
  const groups = new Map<string, number[]>();
  items.forEach((it, i) => {
    if (settled[i].error || (!it.detect && !it.dedupe)) return;
    groups.set(userKey(it.row), [...(groups.get(userKey(it.row)) ?? []), i]);
  });
  const keysByAccount = new Map<string, Map<string, string[]>>();
  for (const [k, indexes] of groups) {
    const [accountId, userId] = k.split("\u0000");
    if (!keysByAccount.has(accountId)) keysByAccount.set(accountId, new Map());
    keysByAccount.get(accountId)!.set(userId, indexes.flatMap(lookupOf));
  }
  // The model's reading (supersede.ts changedByModel) for a new memory that says something changed:
  // its nearest older memories by the model that share no key with it ("Took Biscuit to Paws & Claws
  // Vet" after "Biscuit's vet is Oakwood Animal Hospital"), and the vectors of those that share one,
  // from the rows read whole below (the scan's, or those the words leave to the model).
  const changed = items.map((it) => it.detect && saysChanged(it.row.content));
  // A memory that says something it names ended ("Last day at Zalando was Friday") is compared with
  // its nearest older memories too: the words, not the model, decide (supersede.ts endedReason).
  const ends = items.map((it) => it.detect && saysEnded(it.row.content));
  /** endedReason of incoming `i` and an older memory's content, for one that says something ended. */
  const endedOf = (i: number, older: string) => (ends[i] ? endedReason(items[i].row.content, older) : undefined);
  const keys = items.map((_, i) => (changed[i] ? new Set(lookupOf(i).filter(isFactKey)) : new Set<string>()));
  const keyed = (i: number, matchKeys: string[]) => matchKeys.some((k) => keys[i].has(k));
  /** Per user, the incoming memories whose nearest are looked for. */
  const nearGroups = new Map<string, number[]>();
  items.forEach((it, i) => {
    if ((changed[i] || ends[i]) && !settled[i].error) nearGroups.set(userKey(it.row), [...(nearGroups.get(userKey(it.row)) ?? []), i]);
  });

  // Candidates come from one query per account (each a round of requests on an object store),
  // asked while the nearest are looked for. A user whose every current memory is read for the
  // nearest (scanning) has its candidates picked from those rows, and asked for only when there
  // were too many to read. A user whose every current memory the process keeps from its last reads
  // and writes (storage/current-rows.ts) is asked nothing: all come from those.
  const kept = await store.keptCurrentRows([...groups.values()].map((indexes) => items[indexes[0]].row));
  const scanning = await scannedUsers(store, items, nearGroups);
  // On a local store, the other users with few current memories are read whole as well, and
  // kept: their candidates come from the rows the process keeps until another commit moves the
  // table (storage/current-rows.ts), instead of a query in every commit. Conversation turns say
  // nothing changed, so their users were never kept, and each group commit of HTTP creates asked
  // the table for their twins: most of LanceDB's work in a commit (docs/performance.md,
  // "8 December"). Not on an object store, whose reads are rounds of requests planned to run side
  // by side (the last sequence numbers beside the candidates), nor where detection reads through
  // the process's recent writes (StoreTuning.recentWrites).
  if (store.place.kind === "local" && !store.tuning.recentWrites) {
    for (const [key, most] of await fewMemories(store, items, groups, (key) => scanning.has(key) || kept.has(key))) scanning.set(key, most);
  }
  const scans = (key: string) => scanning.has(key);
  const candidates = new Map<string, MemoryRecord[]>();
  /** Whole rows read (Plan.read). */
  const read = new Map<string, MemoryRow>();
  const ask = async (only: (key: string) => boolean) => {
    for (const [accountId, keysByUser] of keysByAccount) {
      const asked = new Map([...keysByUser].filter(([userId]) => only(userKey({ accountId, userId }))));
      if (!asked.size) continue;
      const exact = new Set([...asked.values()].flat().filter((k) => k.startsWith(TEXT_KEY)));
      for (const [userId, rows] of await store.currentMemoriesMatching(accountId, asked, { perUser: DETECT_CANDIDATES, exact })) candidates.set(userKey({ accountId, userId }), rows);
    }
  };
  // The insert numbers each new row after the user's last one: asked here, beside detection's reads,
  // for users this process doesn't know, instead of in a round of its own after them.
  const numbering = items.filter((_, i) => !settled[i].error).map((it) => it.row);
  const [{ near, scanned }] = await Promise.all([nearestOlder(store, items, groups, nearGroups, scanning, keyed, kept), ask((key) => !scans(key) && !kept.has(key)), store.learnLastSeqs(numbering)]);
  for (const rows of [...scanned.values(), ...kept.values()]) for (const r of rows) read.set(r.id, r);
  for (const [accountId, keysByUser] of keysByAccount) {
    for (const [userId, userKeys] of keysByUser) {
      const key = userKey({ accountId, userId });
      const rows = scanned.get(key) ?? kept.get(key);
      if (rows) candidates.set(key, matchingAmong(rows, userKeys));
    }
  }
  await ask((key) => scans(key) && !scanned.has(key));

  /** The older memories of the same user and agent that detection compares incoming `i` with. */
  const olderOf = (i: number) => (candidates.get(userKey(items[i].row)) ?? []).filter((r) => sameScope(r, items[i].row));
  /** Those of them that state a fact (a fact key): the ones a fact of `i` may replace. */
  const factful = (older: MemoryRecord[]) => older.filter((r) => r.matchKeys.some(isFactKey));
  /** replacementReason of incoming `i` and an older memory, worked out once. */
  const reasons = items.map(() => new Map<string, string | undefined>());
  const reasonOf = (i: number, old: MemoryRecord) => {
    if (!reasons[i].has(old.id)) reasons[i].set(old.id, replacementReason(items[i].row.content, old.content, facts[i]));
    return reasons[i].get(old.id);
  };
  // The model's reading of a memory that says something changed needs the vectors of the
  // candidates sharing a fact key with it whose words don't decide (no replacementReason), when it
  // says a word of change they don't (wordOfChange): only those are read whole, in one query per
  // account. All the candidates are looked at, not DETECT_CANDIDATES of them: the loop below skips
  // the ones already marked replaced, and so may reach further back. The candidates themselves are
  // read without vectors or history: reading 200 per user whole was more than half of what a
  // create read on Azurite at 100,000 memories (3.3 MB, 1.5 MB without:
  // docs/measurements/object-storage-rounds.md, eighth pass).
  const unread = new Map<string, Set<string>>();
  items.forEach((it, i) => {
    if (!changed[i] || settled[i].error || !facts[i].length) return;
    for (const old of factful(olderOf(i))) {
      if (read.has(old.id) || !keyed(i, old.matchKeys) || reasonOf(i, old) || !wordOfChange(it.row.content, old.content)) continue;
      unread.set(it.row.accountId, (unread.get(it.row.accountId) ?? new Set()).add(old.id));
    }
  });
  for (const rows of await Promise.all([...unread].map(([accountId, ids]) => store.getMemoryRows(accountId, [...ids], { recent: true })))) for (const r of rows) read.set(r.id, r);

  const superseded = new Set<string>();
  // Each incoming memory's text key, once: a batch compares each memory with every earlier one.
  const texts: (string | undefined)[] = [];
  const textOf = (i: number) => (i in texts ? texts[i] : (texts[i] = textKey(items[i].row.content)));
  items.forEach((it, i) => {
    if (settled[i].error) return;
    const row = it.row;
    const same = (r: Scoped) => sameScope(r, row);
    const older = olderOf(i).filter((r) => !superseded.has(r.id));
    const earlier = items.slice(0, i).map((e, j) => ({ e, j })).filter(({ e, j }) => !settled[j].error && !settled[j].duplicateOf && !inBatch.has(j) && e.row.accountId === row.accountId && e.row.userId === row.userId && same(e.row));
    if (it.dedupe && !it.supersedes?.length) {
      const key = textOf(i);
      if (key) {
        // The same words with other tags or metadata record another event (a turn said again in a
        // later session): not a duplicate.
        const sameRecord = (r: MemoryRecord) => sameList(r.tags, row.tags) && (r.metadata ?? "") === (row.metadata ?? "");
        const twin = older.find((r) => r.matchKeys.includes(key) && sameRecord(r)) ?? earlier.find(({ e, j }) => textOf(j) === key && sameRecord(e.row))?.e.row;
        if (twin) {
          settled[i].duplicateOf = twin;
          return;
        }
      }
    }
    for (const id of it.supersedes ?? []) {
      marks.set(id, { by: i, reason: "explicit" });
      settled[i].replaced.push(id);
      superseded.add(id);
    }
    // What only the model finds: stated facts (fact keys), not duplicates or talk. A note whose
    // named thing the new one says ended needs no fact key: "cancelled FitHub" ends "FitHub
    // membership, Aldgate branch", which states nothing the patterns read (round thirteen).
    for (const { record: old, cosine: c } of near[i]) {
      if (superseded.has(old.id)) continue;
      const states = old.matchKeys.some(isFactKey);
      const reason = (changed[i] && states ? changedByModel(row.content, old.content, c, false) : undefined) ?? endedOf(i, old.content);
      if (!reason) continue;
      marks.set(old.id, { by: i, reason });
      settled[i].replaced.push(old.id);
      superseded.add(old.id);
    }
    if (!it.detect || !facts[i].length) return;
    for (const old of factful(older).slice(-DETECT_CANDIDATES)) {
      if (superseded.has(old.id)) continue;
      // Read whole above, when the model's reading may decide.
      const vector = changed[i] && keyed(i, old.matchKeys) ? read.get(old.id)?.vector : undefined;
      const reason = reasonOf(i, old) ?? (vector && changedByModel(row.content, old.content, dot(row.vector, vector), true)) ?? endedOf(i, old.content);
      if (!reason) continue;
      marks.set(old.id, { by: i, reason });
      settled[i].replaced.push(old.id);
      superseded.add(old.id);
    }
    for (const { e, j } of earlier) {
      if (!facts[j].length && !it.detect) continue;
      const reason =
        replacementReason(row.content, e.row.content, facts[i], facts[j].length ? facts[j] : factsOf(e.row.content)) ??
        (changed[i] && e.row.matchKeys.some(isFactKey) ? changedByModel(row.content, e.row.content, dot(row.vector, e.row.vector), keyed(i, e.row.matchKeys)) : undefined) ??
        (e.row.matchKeys.some(isFactKey) ? endedOf(i, e.row.content) : undefined);
      if (!reason) continue;
      inBatch.set(j, { by: i, reason });
      settled[i].replaced.push(e.row.id);
    }
  });
  return { items, settled, marks, inBatch, read };
}

/**
 * Commits a plan for the incoming memories at `admitted` (the others failed or were refused by
 * quota): inserts the new rows (a new row replaced by a later one in the same batch goes in already
 * marked) and marks the older rows they replace in one commit, when the active segment holds those
 * (it takes every insert, so a store of one segment always does). Older rows a sealed segment holds
 * are marked after it, one commit per segment: a crash between leaves the new memories stored and
 * those older ones current. A replacement is recorded whole or not at all, never half.
 */
export async function applyPlan(w: StoreWriter, plan: Plan, admitted: number[]): Promise<void> {
  // A replaced memory stopped being true when the one replacing it was recorded.
  const at = (by: number) => plan.items[by].row.createdAt;
  const ok = new Set(admitted.filter((i) => !plan.settled[i].error && !plan.settled[i].duplicateOf));
  const rows = [...ok].sort((a, b) => a - b).map((i) => {
    const mark = plan.inBatch.get(i);
    const row = plan.items[i].row;
    return mark && ok.has(mark.by) ? markReplaced(row, plan.items[mark.by].row.id, at(mark.by), mark.reason) : row;
  });
  const marks = new Map([...plan.marks].filter(([, m]) => ok.has(m.by)));
  const byAccount = new Map<string, string[]>();
  for (const [id, m] of marks) {
    const acct = plan.items[m.by].row.accountId;
    byAccount.set(acct, [...(byAccount.get(acct) ?? []), id]);
  }
  const marked: MemoryRow[] = [];
  for (const [acct, ids] of byAccount) {
    // Under the same write lock as the plan: a row the plan read whole is still as it was.
    const unread = ids.filter((id) => !plan.read.has(id));
    const current = [...ids.flatMap((id) => plan.read.get(id) ?? []), ...(unread.length ? await w.store.getMemoryRows(acct, unread, { recent: true }) : [])];
    for (const r of current) {
      const { by, reason } = marks.get(r.id)!;
      marked.push(markReplaced(r, plan.items[by].row.id, at(by), reason));
    }
  }
  const left = await w.insertMemories(rows, marked);
  if (!left.length) return;
  await w.store.hooks?.("supersede:after-insert");
  await w.replaceMemories(left);
}

/** The memory `id` replaced, following supersededBy: refuses self-replacement and cycles. */
export async function assertNoCycle(store: Store, accountId: string, oldId: string, newId: string): Promise<void> {
  if (oldId === newId) throw validationError("supersedes", "a memory cannot replace itself");
  let at: string | null = newId;
  const seen = new Set<string>();
  while (at && !seen.has(at)) {
    seen.add(at);
    const r: MemoryRecord | undefined = await store.getMemory(accountId, at);
    at = r?.supersededBy ?? null;
    if (at === oldId) throw validationError("supersedes", `memory ${newId} is itself replaced, directly or through others, by ${oldId}; that would make a cycle`);
  }
}

/**
 * The search filter for what is true (Store.memoryWhere): by default only current memories;
 * `includeSuperseded` brings replaced ones back; `asOf` keeps what existed and was current then.
 */
export function validityFilter(input: { includeSuperseded?: boolean; asOf?: string }): { current?: true; asOf?: string } {
  if (input.asOf !== undefined) return { asOf: input.asOf };
  return input.includeSuperseded ? {} : { current: true };
}

/**
 * Ranked hits with every replaced memory moved just below the memory that replaced it, when both
 * are among them: with includeSuperseded, an old fact never ranks above its replacement.
 */
export function replacedAfterReplacing<T extends { record: MemoryRecord; score: number }>(hits: T[]): T[] {
  if (!hits.some((h) => h.record.supersededBy)) return hits;
  const ids = new Set(hits.map((h) => h.record.id));
  const waiting = new Map<string, T[]>();
  const out: T[] = [];
  const place = (h: T) => {
    out.push(h);
    // Its score is capped at its replacement's, so scores still descend.
    for (const w of waiting.get(h.record.id) ?? []) place({ ...w, score: Math.min(w.score, h.score) });
    waiting.delete(h.record.id);
  };
  for (const h of hits) {
    const by = h.record.supersededBy;
    if (by && ids.has(by) && !out.some((o) => o.record.id === by)) waiting.set(by, [...(waiting.get(by) ?? []), h]);
    else place(h);
  }
  for (const rest of waiting.values()) out.push(...rest);
  return out;
}

/**
 * The users of `groups` whose every current memory (up to NEAR_SCAN) detection reads to find the
 * nearest of their new memories, instead of a vector search each, with how many memories they have
 * at most when that is known: a user with several new memories in the batch (undefined: read with
 * a cap), and a user with one who has few (Store.memoriesAtMost: the user's last sequence number),
 * up to NEAR_SCAN for all such users of an account together. For such a user one query answers the
 * nearest, the candidates and their vectors: on an object store a create that says something
 * changed made three queries, two of them one after the other. The last sequence numbers this
 * process doesn't know are asked here, in a round the insert would have made after detection
 * anyway; a user with more than NEAR_SCAN memories is searched as before, and never pays for
 * reading them all.
 */
async function scannedUsers(store: Store, items: Incoming[], groups: Map<string, number[]>): Promise<Map<string, number | undefined>> {
  const scanning = new Map<string, number | undefined>();
  const single = new Map<string, string[]>();
  for (const [key, indexes] of groups) {
    const { accountId, userId } = items[indexes[0]].row;
    if (indexes.length > 1) scanning.set(key, undefined);
    else single.set(accountId, [...(single.get(accountId) ?? []), userId]);
  }
  // The known users' one query reads NEAR_SCAN rows at most, as for one user of a batch.
  for (const [key, most] of await fewOf(store, single, NEAR_SCAN)) scanning.set(key, most);
  return scanning;
}

/**
 * Users of `groups` not `skip`ped whose current memories are KEEP_SCAN at most, per account
 * together, with how many they may have (Store.memoriesAtMost): those detection reads whole.
 */
async function fewMemories(store: Store, items: Incoming[], groups: Map<string, number[]>, skip: (key: string) => boolean): Promise<Map<string, number>> {
  const byAccount = new Map<string, string[]>();
  for (const [key, indexes] of groups) {
    if (skip(key)) continue;
    const { accountId, userId } = items[indexes[0]].row;
    byAccount.set(accountId, [...(byAccount.get(accountId) ?? []), userId]);
  }
  return fewOf(store, byAccount, KEEP_SCAN);
}

/** Of each account's `userIds`, those who have `cap` current memories at most together, first come first, with how many each may have (Store.memoriesAtMost). */
async function fewOf(store: Store, byAccount: Map<string, string[]>, cap: number): Promise<Map<string, number>> {
  const few = new Map<string, number>();
  for (const [accountId, userIds] of byAccount) {
    let reading = 0;
    for (const [userId, most] of await store.memoriesAtMost(accountId, userIds)) {
      if (reading + most > cap) continue;
      few.set(userKey({ accountId, userId }), most);
      reading += most;
    }
  }
  return few;
}

/**
 * Each incoming memory of `groups` (per user) with its NEAR_CANDIDATES nearest current memories of
 * its user and agent that share no fact key with it (`keyed`), with their cosines. The users of
 * `scanning` have their every current memory read instead of a vector search each: those known to
 * have few in one query per account, the others one query each, capped at NEAR_SCAN + 1, and none
 * whose rows the process keeps (`kept`, storage/current-rows.ts); their rows are returned as
 * `scanned` (for the candidates, their vectors, and the rows to mark).
 */
async function nearestOlder(
  store: Store,
  items: Incoming[],
  users: Map<string, number[]>,
  groups: Map<string, number[]>,
  scanning: Map<string, number | undefined>,
  keyed: (i: number, matchKeys: string[]) => boolean,
  kept: Map<string, MemoryRow[]>,
): Promise<{ near: { record: MemoryRecord; cosine: number }[][]; scanned: Map<string, MemoryRow[]> }> {
  const near = items.map(() => [] as { record: MemoryRecord; cosine: number }[]);
  const who = (key: string) => items[users.get(key)![0]].row;
  const scanned = new Map<string, MemoryRow[]>();
  for (const key of scanning.keys()) if (kept.has(key)) scanned.set(key, kept.get(key)!);
  const known = new Map<string, { userIds: string[]; most: number }>();
  for (const [key, most] of scanning) {
    if (most === undefined || scanned.has(key)) continue;
    const { accountId, userId } = who(key);
    const account = known.get(accountId) ?? { userIds: [], most: 0 };
    account.userIds.push(userId);
    account.most += most;
    known.set(accountId, account);
  }
  const unkept = [...scanning].filter(([key, most]) => most === undefined && !scanned.has(key)).map(([key]) => key);
  const readWhole = async () => {
    const read = new Map<string, MemoryRow[]>();
    await Promise.all([
      ...[...known].map(async ([accountId, { userIds, most }]) => {
        const rows = await store.currentMemoriesOf(accountId, userIds, most + 1);
        // More than their last sequence numbers allow would mean those numbers were wrong: searched instead.
        if (rows.length > most) return;
        for (const userId of userIds) read.set(userKey({ accountId, userId }), []);
        for (const r of rows) read.get(userKey(r))!.push(r);
      }),
      ...unkept.map(async (key) => {
        const { accountId, userId } = who(key);
        const rows = (await store.memoriesAfter({ accountId, userId, current: true }, undefined, NEAR_SCAN + 1, true)) as MemoryRow[];
        if (rows.length <= NEAR_SCAN) read.set(key, rows);
      }),
    ]);
    return read;
  };
  if (known.size || unkept.length) for (const [key, rows] of await store.keepingCurrentRows(readWhole)) scanned.set(key, rows);
  await Promise.all(
    [...groups].map(async ([key, indexes]) => {
      const { accountId, userId } = who(key);
      const rows = scanned.get(key);
      for (const i of indexes) {
        const v = items[i].row.vector;
        const hits = rows
          ? nearestOf(v, rows, NEAR_CANDIDATES)
          : (await store.searchMemories(v, { accountId, userId, current: true }, NEAR_CANDIDATES, { approximateAbove: NEAR_SCAN, recent: true })).map((h) => ({ record: h.record, cosine: 1 - h.distance }));
        near[i] = hits.filter((h) => sameScope(h.record, items[i].row) && !keyed(i, h.record.matchKeys));
      }
    }),
  );
  return { near, scanned };
}

/**
 * What Store.currentMemoriesMatching answers, picked from a user's every current memory (oldest
 * first): those sharing a key with `keys`; past DETECT_CANDIDATES of them, the latest stored that
 * many (highest seq) and every one sharing an exact-text key.
 */
function matchingAmong(rows: MemoryRow[], keys: string[]): MemoryRecord[] {
  const wanted = new Set(keys);
  const matching = rows.filter((r) => r.matchKeys.some((k) => wanted.has(k)));
  if (matching.length <= DETECT_CANDIDATES) return matching;
  const latest = new Set([...matching].sort((a, b) => b.seq - a.seq).slice(0, DETECT_CANDIDATES));
  return matching.filter((r) => latest.has(r) || r.matchKeys.some((k) => k.startsWith(TEXT_KEY) && wanted.has(k)));
}

/**
 * The `k` rows nearest `v` by cosine (unit vectors: the dot product), nearest first, keeping the
 * best `k` as it goes instead of sorting every row. A batch compares each of its notes that says
 * something changed with up to NEAR_SCAN rows: those cosines, sorted whole, were a fifth of
 * detection's time in a batch add of notes.
 */
function nearestOf(v: Float32Array, rows: MemoryRow[], k: number): { record: MemoryRecord; cosine: number }[] {
  const best: { record: MemoryRecord; cosine: number }[] = [];
  for (const r of rows) {
    const cosine = dot(v, r.vector);
    if (best.length === k) {
      if (cosine <= best[k - 1].cosine) continue;
      best.pop();
    }
    let at = best.length;
    while (at > 0 && best[at - 1].cosine < cosine) at--;
    best.splice(at, 0, { record: r, cosine });
  }
  return best;
}

function sameList(a: string[], b: string[]): boolean {
  return a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);
}
