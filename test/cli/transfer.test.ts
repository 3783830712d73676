import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openContext } from "../../src/core/context.js";
import { addMemoriesFromLines } from "../../src/core/memories.js";
import { runCli } from "../helpers/run-cli.js";
import { runMm } from "../helpers/spawn-mm.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * mm export and mm import, in-process with the test embedder (meaning doesn't matter here; the
 * round trip of bytes does): 10,000 memories with unicode, metadata and links come back
 * byte-identical but for the header's exportedAt, a second import adds nothing, and bad lines are
 * reported without stopping the good ones.
 */

const tempDir = useTempDirs();
const json = (s: string) => s.trim().split("\n").map((l) => JSON.parse(l));

async function fill(store: string, count = 10_000): Promise<{ ada: string; bob: string }> {
  const ent = async (args: string[]) => JSON.parse((await runCli(store, ["entities", "create", ...args])).stdout).id as string;
  const ada = await ent(["Zoë Ada Lövelace 🧮", "--type", "PERSON", "--description", "line one\nline two \"quoted\"", "--metadata", '{"born":1815,"tags":["a","b"],"nested":{"x":null}}']);
  const bob = await ent(["Bob", "--type", "PERSON"]);
  const rel = await runCli(store, ["relations", "create", "--source", ada, "--target", bob, "--type", "KNOWS", "--metadata", '{"since":"1833"}']);
  expect(rel.code, rel.stderr).toBe(0);
  const ctx = await openContext({ storeDir: store, embedder: createTestEmbedder() });
  const lines = function* () {
    for (let i = 0; i < count; i++) {
      yield JSON.stringify({
        content: i % 3 === 0 ? `mémoire ${i}: 日本語のテキスト, emoji 🎉, tab\there, "quotes" and \\ backslash` : `memory number ${i} about topic ${i % 17}`,
        userId: `user-${i % 5}`,
        ...(i % 2 ? { agentId: "agent-1" } : {}),
        ...(i % 4 === 0 ? { tags: ["t1", `t${i % 7}`] } : {}),
        ...(i % 5 === 0 ? { metadata: { i, float: i / 7, unicode: "ü→🚀", list: [1, "two", null] } } : {}),
        ...(i % 10 === 0 ? { entityIds: i % 20 === 0 ? [ada, bob] : [ada] } : {}),
      });
    }
  };
  const result = await addMemoriesFromLines(ctx, lines(), { batchSize: 2000 });
  await ctx.close();
  expect(result).toMatchObject({ added: count, failed: 0 });
  return { ada, bob };
}

describe("mm export and mm import", () => {
  it("round-trips 10,000 memories with unicode, metadata and links byte for byte, apart from exportedAt; a re-run adds nothing", async () => {
    const dir = await tempDir();
    const [a, b] = [join(dir, "a"), join(dir, "b")];
    await fill(a);
    const first = join(dir, "first.jsonl");
    let t = performance.now();
    const exported = await runCli(a, ["export", "--output", first]);
    const exportMs = performance.now() - t;
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toMatch(/Exported 10,000 memories, 2 entities, 1 relation/);
    const text = await readFile(first, "utf8");
    const lines = text.trimEnd().split("\n");
    expect(lines).toHaveLength(1 + 2 + 1 + 10_000);
    expect(JSON.parse(lines[0])).toMatchObject({ format: "mm-export", version: 1, vectors: false, scope: { accountId: "acct_default" } });

    t = performance.now();
    const imported = await runCli(b, ["import", first, "--batch-size", "2000"]);
    console.log(`10,000 memories: export ${Math.round(exportMs)} ms, import ${Math.round(performance.now() - t)} ms`);
    expect(imported.code, imported.stderr).toBe(0);
    const results = json(imported.stdout);
    expect(results).toHaveLength(10_003);
    expect(results.every((r) => r.status === "added")).toBe(true);
    expect(imported.stderr).toMatch(/Imported 10,003 records; 0 skipped/);

    const again = await runCli(b, ["export"]);
    expect(again.code, again.stderr).toBe(0);
    const [h1, ...rest1] = lines;
    const [h2, ...rest2] = again.stdout.trimEnd().split("\n");
    expect(rest2.join("\n")).toBe(rest1.join("\n"));
    const { exportedAt: _1, ...header1 } = JSON.parse(h1);
    const { exportedAt: _2, ...header2 } = JSON.parse(h2);
    expect(header2).toEqual(header1);

    const rerun = await runCli(b, ["import", first, "--batch-size", "2000"]);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(json(rerun.stdout).every((r) => r.status === "skipped")).toBe(true);
    expect(JSON.parse((await runCli(b, ["memories", "list", "--limit", "1"])).stdout).pagination.total).toBe(10_000);
  }, 240_000); // 10,000 memories out and in twice: about 40 s on a quiet 2-core machine, far more on a busy one

  it("carries vectors when asked and uses them when the models match; --remap-ids gives new ids, references follow, and a re-run finds them", async () => {
    const dir = await tempDir();
    const [a, b] = [join(dir, "a"), join(dir, "b")];
    const { ada } = await fill(a, 1000);
    const file = join(dir, "v.jsonl");
    expect((await runCli(a, ["export", "--vectors", "--user", "user-0", "-o", file])).code).toBe(0);
    const records = json(await readFile(file, "utf8"));
    expect(records[0].vectors).toBe(true);
    const memories = records.filter((r) => r.kind === "memory");
    expect(memories).toHaveLength(200);
    expect(memories.every((m) => m.userId === "user-0" && m.vector.length === 64)).toBe(true);
    expect(records.filter((r) => r.kind === "entity").map((e) => e.id)).toContain(ada);

    const remapped = await runCli(b, ["import", file, "--remap-ids"]);
    expect(remapped.code, remapped.stderr).toBe(0);
    const back = json((await runCli(b, ["export", "--vectors"])).stdout);
    const newEntity = back.find((r) => r.kind === "entity" && r.name === "Zoë Ada Lövelace 🧮");
    expect(newEntity.id).not.toBe(ada);
    const linked = back.filter((r) => r.kind === "memory" && r.entityIds);
    expect(linked.length).toBeGreaterThan(0);
    expect(linked.every((m) => m.entityIds.every((id: string) => back.some((e) => e.kind === "entity" && e.id === id)))).toBe(true);
    const byContent = new Map(memories.map((m) => [m.content, m]));
    for (const m of back.filter((r) => r.kind === "memory")) {
      expect(m.id).not.toBe(byContent.get(m.content)!.id);
      expect(m.vector).toEqual(byContent.get(m.content)!.vector);
      expect(m.createdAt).toBe(byContent.get(m.content)!.createdAt);
    }
    const rerun = await runCli(b, ["import", file, "--remap-ids"]);
    expect(json(rerun.stdout).every((r) => r.status === "skipped")).toBe(true);
  });

  it("never stores a vector float32 can't hold or one that isn't unit length: such vectors are re-embedded or normalised, and each memory is found by its text", async () => {
    const dir = await tempDir();
    const [a, b] = [join(dir, "a"), join(dir, "b")];
    for (const text of ["the lighthouse keeper paints boats", "a quiet violin lesson on tuesday", "seven green parrots argue loudly"]) {
      expect((await runCli(a, ["memories", "add", text, "--user", "u"])).code).toBe(0);
    }
    const records = json((await runCli(a, ["export", "--vectors"])).stdout);
    const memories = records.filter((r) => r.kind === "memory");
    memories[0].vector = memories[0].vector.map((x: number) => (x === 0 ? 0 : Math.sign(x) * 1e39));
    memories[1].vector = memories[1].vector.map((x: number) => (x === 0 ? 0 : Math.sign(x) * 1e-50));
    memories[2].vector = memories[2].vector.map((x: number) => x * 5);
    const file = join(dir, "tampered.jsonl");
    await writeFile(file, records.map((r) => JSON.stringify(r)).join("\n") + "\n");
    const imported = await runCli(b, ["import", file]);
    expect(imported.code, imported.stderr).toBe(0);
    for (const m of memories) {
      const found = JSON.parse((await runCli(b, ["memories", "search", m.content, "--mode", "semantic", "--json"])).stdout);
      expect(found.results[0]?.id, m.content).toBe(m.id);
      expect(found.results[0].score).toBeGreaterThan(0.9);
    }
    for (const m of json((await runCli(b, ["export", "--vectors"])).stdout).filter((r) => r.kind === "memory")) {
      expect(Math.hypot(...m.vector)).toBeCloseTo(1, 4);
    }
  });

  it("reports each bad line with its code and line number, imports the good ones, and refuses a file that isn't an export", async () => {
    const dir = await tempDir();
    const store = join(dir, "s");
    const header = JSON.stringify({ format: "mm-export", version: 1, exportedAt: "2026-01-01T00:00:00.000Z", embedder: null, scope: {}, vectors: false });
    const ent = { kind: "entity", id: "ent_01HZZZZZZZZZZZZZZZZZZZZZ", name: "Ada", type: "PERSON", createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z" };
    const mem = (id: string, extra: object) => ({ kind: "memory", id, content: "ok", userId: "u", createdAt: "2026-01-01T00:00:01.000Z", updatedAt: "2026-01-01T00:00:01.000Z", ...extra });
    const file = join(dir, "bad.jsonl");
    await writeFile(
      file,
      [
        header,
        JSON.stringify(ent),
        "{not json",
        JSON.stringify({ kind: "spaceship" }),
        JSON.stringify(mem("mem_01HZZZZZZZZZZZZZZZZZZZZ1", { content: "x".repeat(10_001) })),
        JSON.stringify(mem("mem_01HZZZZZZZZZZZZZZZZZZZZ2", { userId: "" })),
        JSON.stringify(mem("mem_01HZZZZZZZZZZZZZZZZZZZZ3", { entityIds: ["ent_01HMISSINGMISSINGMISSIN0"] })),
        JSON.stringify({ kind: "relation", id: "rel_01HZZZZZZZZZZZZZZZZZZZZZ", sourceId: ent.id, targetId: "ent_01HMISSINGMISSINGMISSIN0", type: "KNOWS", createdAt: ent.createdAt }),
        JSON.stringify(mem("bad-id", {})),
        JSON.stringify(mem("mem_01HZZZZZZZZZZZZZZZZZZZZ4", { createdAt: "yesterday" })),
        JSON.stringify(mem("mem_01HZZZZZZZZZZZZZZZZZZZZ5", { entityIds: [ent.id], metadata: { ok: true } })),
      ].join("\n") + "\n",
    );
    const r = await runCli(store, ["import", file]);
    expect(r.code).toBe(2);
    const byLine = Object.fromEntries(json(r.stdout).map((x) => [x.line, x]));
    expect(byLine[2].status).toBe("added");
    expect(byLine[3].error.code).toBe("VALIDATION_ERROR");
    expect(byLine[4].error.code).toBe("VALIDATION_ERROR");
    expect(byLine[5].error.code).toBe("CONTENT_TOO_LONG");
    expect(byLine[6].error.code).toBe("INVALID_USER_ID");
    expect(byLine[7].error.code).toBe("ENTITY_NOT_FOUND");
    expect(byLine[8].error.code).toBe("TARGET_ENTITY_NOT_FOUND");
    expect(byLine[9].error.code).toBe("VALIDATION_ERROR");
    expect(byLine[10].error.code).toBe("VALIDATION_ERROR");
    expect(byLine[11]).toMatchObject({ status: "added", id: "mem_01HZZZZZZZZZZZZZZZZZZZZ5" });
    expect(r.stderr).toMatch(/Imported 2 records; 0 skipped \(already there\); 8 failed/);
    const got = JSON.parse((await runCli(store, ["memories", "get", "mem_01HZZZZZZZZZZZZZZZZZZZZ5"])).stdout);
    expect(got).toMatchObject({ entityIds: [ent.id], metadata: { ok: true }, createdAt: "2026-01-01T00:00:01.000Z" });

    await writeFile(join(dir, "not.jsonl"), '{"type":"entity","name":"x","entityType":"y","observations":[]}\n');
    const refused = await runCli(store, ["import", join(dir, "not.jsonl")]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/not an mm export header/);
    expect((await runCli(store, ["import", join(dir, "missing.jsonl")])).code).toBe(2);
    expect((await runCli(store, ["import", file, "--from", "zip"])).code).toBe(2);
  });

  it("imports mem0's get_all output and OpenMemory's backup, keeping mem0's fields, and skips them on a re-run", async () => {
    const dir = await tempDir();
    const store = join(dir, "s");
    const getAll = {
      results: [
        { id: "9f1c2d3e-0000-4000-8000-000000000001", memory: "Prefers vegetarian food", hash: "abc", metadata: { category: "food" }, created_at: "2024-07-20T10:15:30.123456-07:00", updated_at: null, user_id: "alex", agent_id: "chef", run_id: "r1" },
        { id: "9f1c2d3e-0000-4000-8000-000000000002", memory: "Allergic to nuts", hash: "def", metadata: null, created_at: "2024-07-21T08:00:00", updated_at: "2024-07-22T08:00:00", user_id: "alex", categories: ["health", "food"] },
        { id: "9f1c2d3e-0000-4000-8000-000000000003", memory: "", user_id: "alex" },
      ],
    };
    await writeFile(join(dir, "mem0.json"), JSON.stringify(getAll));
    const r = await runCli(store, ["import", "--from", "mem0", join(dir, "mem0.json")]);
    expect(r.code).toBe(2);
    const results = json(r.stdout);
    expect(results.map((x) => x.status)).toEqual(["added", "added", "failed"]);
    expect(results[2].error.code).toBe("VALIDATION_ERROR");
    const first = JSON.parse((await runCli(store, ["memories", "get", results[0].id])).stdout);
    expect(first).toMatchObject({
      content: "Prefers vegetarian food",
      userId: "alex",
      agentId: "chef",
      createdAt: "2024-07-20T17:15:30.123Z",
      metadata: { category: "food", mem0: { id: "9f1c2d3e-0000-4000-8000-000000000001", hash: "abc", run_id: "r1" } },
    });
    const second = JSON.parse((await runCli(store, ["memories", "get", results[1].id])).stdout);
    expect(second).toMatchObject({ tags: ["health", "food"], createdAt: "2024-07-21T08:00:00.000Z", updatedAt: "2024-07-22T08:00:00.000Z" });
    const rerun = await runCli(store, ["import", "--from", "mem0", join(dir, "mem0.json")]);
    expect(json(rerun.stdout).map((x) => x.status)).toEqual(["skipped", "skipped", "failed"]);

    const backup = { user: { id: "u-uuid", user_id: "sam" }, memories: [{ id: "11111111-2222-4333-8444-555555555555", content: "Sam runs marathons", metadata: {}, state: "active", created_at: "2025-01-02T03:04:05+00:00", categories: ["sport"] }] };
    await writeFile(join(dir, "memories.json"), JSON.stringify(backup));
    const om = await runCli(store, ["import", "--from", "mem0", join(dir, "memories.json")]);
    expect(om.code, om.stderr).toBe(0);
    const sam = JSON.parse((await runCli(store, ["memories", "get", json(om.stdout)[0].id])).stdout);
    expect(sam).toMatchObject({ content: "Sam runs marathons", userId: "sam", tags: ["sport"], createdAt: "2025-01-02T03:04:05.000Z", metadata: { mem0: { state: "active" } } });
  });
});

/** A whole-store export (--all-accounts) recreates every account and puts each record back in its own. */
describe("mm export --all-accounts", () => {
  it("round-trips several accounts, each record into its own account", async () => {
    const dir = await tempDir();
    const [a, b] = [join(dir, "a"), join(dir, "b")];
    await runCli(a, ["memories", "add", "default account's note", "--user", "u"]);
    const created = await runCli(a, ["accounts", "create", "acme", "--plan", "hobby"]);
    expect(created.code, created.stderr).toBe(0);
    await runCli(a, ["--account", "acme", "memories", "add", "acme's note", "--user", "u"]);
    await runCli(a, ["--account", "acme", "entities", "create", "Acme", "--type", "ORGANIZATION"]);
    const file = join(dir, "all.jsonl");
    expect((await runCli(a, ["export", "--all-accounts", "-o", file])).code).toBe(0);
    const lines = (await readFile(file, "utf8")).trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(lines[0].scope).toEqual({ allAccounts: true });
    expect(lines.filter((l) => l.kind === "account").map((l) => l.name)).toEqual(["default", "acme"]);
    const acme = lines.find((l) => l.kind === "account" && l.name === "acme");

    const imported = await runCli(b, ["import", "--all-accounts", file]);
    expect(imported.code, imported.stderr).toBe(0);
    const accounts = JSON.parse((await runCli(b, ["accounts", "list"])).stdout).items;
    expect(accounts.find((x: { name: string }) => x.name === "acme")).toMatchObject({ id: acme.id, plan: "hobby" });
    const inAcme = JSON.parse((await runCli(b, ["--account", "acme", "memories", "list"])).stdout).items;
    expect(inAcme.map((m: { content: string }) => m.content)).toEqual(["acme's note"]);
    const inDefault = JSON.parse((await runCli(b, ["memories", "list"])).stdout).items;
    expect(inDefault.map((m: { content: string }) => m.content)).toEqual(["default account's note"]);

    const again = await runCli(b, ["export", "--all-accounts"]);
    expect(again.stdout.trimEnd().split("\n").slice(1)).toEqual((await readFile(file, "utf8")).trimEnd().split("\n").slice(1));
    // Without --all-accounts, account lines are skipped and everything lands in one account.
    const single = await runCli(join(dir, "c"), ["import", file]);
    expect(JSON.parse((await runCli(join(dir, "c"), ["memories", "list"])).stdout).pagination.total).toBe(2);
    expect(single.stdout).toContain('"reason":"account lines apply only with --all-accounts"');
  });
});

/** An --all-accounts import bills and fences each record by the account it is written into. */
describe("mm import --all-accounts: billing and references per account", () => {
  const T = "2026-03-01T10:00:00.000Z";
  const header = { format: "mm-export", version: 1, exportedAt: T, embedder: null, scope: { allAccounts: true }, vectors: false };
  const account = (id: string, name: string, plan: string) => ({ kind: "account", id, name, plan, createdAt: T });
  const memory = (accountId: string, n: number, extra: Record<string, unknown> = {}) => ({
    kind: "memory",
    accountId,
    id: `mem_${String(n).padStart(24, "0")}`,
    content: `note ${n} of ${accountId}`,
    userId: "u",
    createdAt: T,
    updatedAt: T,
    ...extra,
  });
  const write = async (file: string, records: unknown[]) => writeFile(file, [header, ...records].map((r) => JSON.stringify(r)).join("\n") + "\n");
  const usedBy = async (store: string, accountId: string) => {
    const { QuotaLedger } = await import("../../src/limits/ledger.js");
    return (await new QuotaLedger(join(store, "ledger")).usage(accountId, null)).used;
  };

  it("bills each record to the account it is written into, and refuses what that account's quota can't take", async () => {
    const dir = await tempDir();
    const store = join(dir, "store");
    const file = join(dir, "all.jsonl");
    await write(file, [account("acct_alpha", "alpha", "free"), ...[1, 2, 3].map((n) => memory("acct_alpha", n))]);
    const first = await runCli(store, ["import", "--all-accounts", file]);
    expect(first.code, first.stderr).toBe(0);
    expect(await usedBy(store, "acct_alpha")).toBe(3);
    expect(await usedBy(store, "acct_default")).toBe(0);

    // alpha has one operation left this month: its next three records don't fit.
    const { QuotaLedger } = await import("../../src/limits/ledger.js");
    await new QuotaLedger(join(store, "ledger")).charge("acct_alpha", 1000, "write", 1000 - 3 - 1);
    await write(file, [account("acct_alpha", "alpha", "free"), ...[4, 5, 6].map((n) => memory("acct_alpha", n)), memory("acct_default", 7)]);
    const second = await runCli(store, ["import", "--all-accounts", file]);
    expect(second.code).not.toBe(0);
    const results = json(second.stdout);
    expect(results.filter((r) => r.status === "failed").map((r) => r.error.code)).toEqual(["QUOTA_EXCEEDED", "QUOTA_EXCEEDED", "QUOTA_EXCEEDED"]);
    expect(results.find((r) => r.line === 6)).toMatchObject({ status: "added" });
    expect(await usedBy(store, "acct_alpha")).toBe(999);
    expect(await usedBy(store, "acct_default")).toBe(1);
    const listed = JSON.parse((await runCli(store, ["--account", "alpha", "memories", "list"])).stdout);
    expect(listed.pagination.total).toBe(3);
  });

  it("resolves a relation's ends and a memory's links only within the record's own account", async () => {
    const dir = await tempDir();
    const store = join(dir, "store");
    const file = join(dir, "all.jsonl");
    const entity = { kind: "entity", accountId: "acct_alpha", id: `ent_${"A".repeat(24)}`, name: "Alpha Only", type: "PERSON", createdAt: T, updatedAt: T };
    const other = { kind: "entity", accountId: "acct_beta", id: `ent_${"B".repeat(24)}`, name: "Beta Person", type: "PERSON", createdAt: T, updatedAt: T };
    const relation = { kind: "relation", accountId: "acct_beta", id: `rel_${"C".repeat(24)}`, sourceId: other.id, targetId: entity.id, type: "KNOWS", createdAt: T };
    await write(file, [account("acct_alpha", "alpha", "hobby"), account("acct_beta", "beta", "hobby"), entity, other, relation, memory("acct_beta", 1, { entityIds: [entity.id] })]);
    const imported = await runCli(store, ["import", "--all-accounts", file]);
    const results = json(imported.stdout);
    expect(results.find((r) => r.kind === "relation")).toMatchObject({ status: "failed", error: { code: "TARGET_ENTITY_NOT_FOUND" } });
    expect(results.find((r) => r.kind === "memory")).toMatchObject({ status: "failed", error: { code: "ENTITY_NOT_FOUND" } });
    const relations = JSON.parse((await runCli(store, ["--account", "beta", "relations", "list"])).stdout);
    expect(relations.pagination.total).toBe(0);
  });
});

/** Files and dates an import must refuse clearly, line by line or as a whole, never with a stack. */
describe("mm import: bad files and dates", () => {
  const T = "2026-01-01T00:00:00.000Z";
  const header = JSON.stringify({ format: "mm-export", version: 1, exportedAt: T, embedder: null, scope: {}, vectors: false });
  const mem = (n: number, extra: object = {}) => JSON.stringify({ kind: "memory", id: `mem_01HZZZZZZZZZZZZZZZZZZZZ${n}`, content: `note ${n}`, userId: "u", createdAt: T, updatedAt: T, ...extra });

  it("refuses impossible timestamps and ones far in the future, line by line", async () => {
    const dir = await tempDir();
    const file = join(dir, "dates.jsonl");
    await writeFile(file, [header, mem(1), mem(2, { createdAt: "2026-13-45T99:99:99.999Z" }), mem(3, { updatedAt: "2026-02-30T00:00:00.000Z" }), mem(4, { createdAt: "9999-12-31T23:59:59.999Z", updatedAt: "9999-12-31T23:59:59.999Z" }), mem(5)].join("\n") + "\n");
    const r = await runCli(join(dir, "s"), ["import", file]);
    expect(r.code).toBe(2);
    const results = json(r.stdout);
    expect(results.map((x) => x.status)).toEqual(["added", "failed", "failed", "failed", "added"]);
    expect(results[1].error.details[0]).toMatchObject({ field: "createdAt" });
    expect(results[2].error.details[0]).toMatchObject({ field: "updatedAt" });
    expect(results[3].error.message).toMatch(/future/);
  });

  it("fails only the mem0 item whose created_at can't be a date, importing the others", async () => {
    const dir = await tempDir();
    const file = join(dir, "mem0.json");
    await writeFile(file, JSON.stringify({ results: [{ id: "a", memory: "first good one", user_id: "u" }, { id: "b", memory: "bad date", user_id: "u", created_at: 1e20 }, { id: "c", memory: "second good one", user_id: "u" }] }));
    const r = await runCli(join(dir, "s"), ["import", "--from", "mem0", file]);
    expect(r.stderr).not.toMatch(/INTERNAL_ERROR|RangeError/);
    const results = json(r.stdout);
    expect(results.map((x) => [x.line, x.status])).toEqual([[1, "added"], [2, "failed"], [3, "added"]]);
    expect(results[1].error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "created_at" }] });
  });

  it("refuses a directory, and stops at a line-length bound on an endless file, in every format, with a clear error", async () => {
    const dir = await tempDir();
    const store = join(dir, "s");
    const isDir = await runMm(["import", dir], { store });
    expect(isDir.code).toBe(2);
    expect(isDir.stderr).toMatch(/is a directory/);
    expect(isDir.stderr).not.toMatch(/EISDIR|INTERNAL_ERROR/);
    for (const from of ["mm", "mcp-memory", "mem0"]) {
      const r = await runMm(["import", "--from", from, "/dev/zero"], { store });
      expect(r.code, `${from}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/VALIDATION_ERROR|longer than|larger than/);
      expect(r.stderr).not.toMatch(/RangeError|\n\s+at /);
    }
  }, 120_000);
});

/** A replacement that isn't the record's own account's must not hide the memory from that account. */
describe("mm import: supersededBy stays within its account", () => {
  const T = "2026-03-01T10:00:00.000Z";
  const header = { format: "mm-export", version: 1, exportedAt: T, embedder: null, scope: { allAccounts: true }, vectors: false };
  const account = (id: string, name: string) => ({ kind: "account", id, name, plan: "hobby", createdAt: T });
  const memory = (accountId: string, n: number, extra: Record<string, unknown> = {}) => ({
    kind: "memory",
    accountId,
    id: `mem_${String(n).padStart(24, "0")}`,
    content: `the garden shed key ${n} of ${accountId}`,
    userId: "u",
    createdAt: T,
    updatedAt: T,
    ...extra,
  });
  const by = (n: number) => ({ supersededBy: `mem_${String(n).padStart(24, "0")}`, supersededAt: T });

  it("drops a link to another account's memory, or to one that is nowhere, with a warning; keeps one within the account, earlier or later in the file", async () => {
    const dir = await tempDir();
    const store = join(dir, "store");
    const file = join(dir, "all.jsonl");
    const records = [
      account("acct_alpha", "alpha"),
      account("acct_beta", "beta"),
      memory("acct_beta", 1),
      memory("acct_alpha", 2, by(1)), // beta's memory, earlier in the file
      memory("acct_alpha", 3, by(9)), // nowhere
      memory("acct_alpha", 4, by(5)), // alpha's, later in the file
      memory("acct_alpha", 5),
      memory("acct_alpha", 6, by(5)), // alpha's, earlier in the file
    ];
    await writeFile(file, [header, ...records].map((r) => JSON.stringify(r)).join("\n") + "\n");
    const imported = await runMm(["import", "--all-accounts", file], { store });
    expect(imported.code, imported.stderr).toBe(0);
    expect(json(imported.stdout).map((r) => r.status)).toEqual(Array(8).fill("added"));
    expect(imported.stderr).toMatch(/warning: line 5: its supersededBy mem_0+1 is not a memory of its account/);
    expect(imported.stderr).toMatch(/warning: line 6: its supersededBy mem_0+9 is not a memory of its account/);
    expect(imported.stderr).not.toMatch(/line [2-47-9]:/);

    const alpha = async (id: number) => JSON.parse((await runMm(["--account", "alpha", "memories", "get", `mem_${String(id).padStart(24, "0")}`], { store })).stdout);
    expect((await alpha(2)).supersededBy).toBeUndefined();
    expect((await alpha(3)).supersededBy).toBeUndefined();
    expect((await alpha(4)).supersededBy).toBe(`mem_${"5".padStart(24, "0")}`);
    expect((await alpha(6)).supersededBy).toBe(`mem_${"5".padStart(24, "0")}`);
    const found = JSON.parse((await runMm(["--account", "alpha", "memories", "search", "garden shed key", "--user", "u", "--mode", "keyword", "--threshold", "0"], { store })).stdout);
    expect(found.results.map((r: { id: string }) => r.id).sort()).toEqual([2, 3, 5].map((n) => `mem_${String(n).padStart(24, "0")}`));

    // Into a store that already holds beta's memory: the same.
    const again = join(dir, "again.jsonl");
    await writeFile(again, [header, account("acct_alpha", "alpha"), memory("acct_alpha", 7, by(1))].map((r) => JSON.stringify(r)).join("\n") + "\n");
    const second = await runMm(["import", "--all-accounts", again], { store });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/warning: line 3: its supersededBy mem_0+1 is not a memory of its account/);
    expect((await alpha(7)).supersededBy).toBeUndefined();
  }, 60_000);
});
