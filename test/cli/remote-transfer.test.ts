import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../src/client/index.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestServer, type TestAccount, type TestServer } from "../helpers/http-server.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * `mm --remote export` and `mm --remote import`: an account read through the API into the format of
 * `mm export`, and an export sent back through the API's creates into another server's account.
 * Two real servers on real ports; the CLI runs in-process.
 */
const tempDir = useTempDirs();
let source: TestServer;
let target: TestServer;
let from: TestAccount;
let to: TestAccount;

type Line = Record<string, any>;

beforeAll(async () => {
  [source, target] = await Promise.all([startTestServer(), startTestServer()]);
  [from, to] = await Promise.all([source.account("from"), target.account("to")]);
  const mm = createClient({ baseUrl: source.url, apiKey: from.key });
  const ada = await mm.entities.create({ name: "Ada Lovelace", type: "PERSON", description: "mathematician", metadata: { born: 1815, tags: ["math", null] } });
  const babbage = await mm.entities.create({ name: "Charles Babbage", type: "PERSON" });
  const london = await mm.entities.create({ name: "London", type: "LOCATION" });
  await mm.relations.create({ sourceId: ada.id, targetId: babbage.id, type: "KNOWS", metadata: { since: 1833 } });
  await mm.relations.create({ sourceId: babbage.id, targetId: london.id, type: "LOCATED_IN" });
  await mm.memories.create({ content: "Ada wrote the first program 🧮 — «Note G»", userId: "ada", agentId: "historian", tags: ["history", "math"], metadata: { year: 1843, nested: { ok: true, ratio: 0.25 } }, entityIds: [ada.id, babbage.id] });
  const old = await mm.memories.create({ content: "Ada lives in Marylebone", userId: "ada", entityIds: [london.id] });
  const next = await mm.memories.create({ content: "Ada moved to Ockham Park", userId: "ada", autoSupersede: false });
  await mm.memories.supersede(old.id, { by: next.id });
  await mm.memories.create({ content: "Babbage designed the Analytical Engine\tin 1837", userId: "charles", tags: ["engines"] });
});
afterAll(() => Promise.all([source?.close(), target?.close()]));

const remote = (server: TestServer, account: TestAccount, args: string[], input?: string) =>
  runCli(join(server.storeDir, "not-used"), ["--remote", server.url, "--key", account.key, ...args], { input });
const lines = (text: string): Line[] =>
  text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Line);

/** What a record says once ids and times are the server's own: references as the position of what they name. */
function content(records: Line[]): Line[] {
  const order = new Map(records.map((r, i) => [r.id, `#${i}`]));
  const ref = (id: unknown) => order.get(id) ?? id;
  return records.map(({ id: _i, createdAt: _c, updatedAt: _u, supersededAt, ...r }) => ({
    ...r,
    ...(r.sourceId ? { sourceId: ref(r.sourceId), targetId: ref(r.targetId) } : {}),
    ...(r.entityIds ? { entityIds: r.entityIds.map(ref) } : {}),
    ...(r.supersededBy ? { supersededBy: ref(r.supersededBy), replaced: typeof supersededAt === "string" } : {}),
  }));
}

describe("mm --remote export", () => {
  it("writes what a local export of the same account writes, but for what the API doesn't give (history, vectors, the account's id)", async () => {
    const file = join(await tempDir(), "remote.jsonl");
    const r = await remote(source, from, ["export", "-o", file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("Exported 4 memories, 3 entities, 2 relations to");
    expect(r.stderr).toContain("Through the API: without each memory's earlier versions (history)");
    const [header, ...records] = lines(await readFile(file, "utf8"));
    expect(header).toMatchObject({ format: "mm-export", version: 1, embedder: null, scope: {}, vectors: false, omitted: ["history", "vectors", "accountId"], server: source.url });

    const local = await runCli(source.storeDir, ["--account", from.id, "export"], { clock: source.clock });
    expect(local.code, local.stderr).toBe(0);
    const [, ...expected] = lines(local.stdout);
    // The replaced memory's history holds the replacement event; the API answers it in its own shape.
    expect(expected.some((m) => m.history)).toBe(true);
    expect(records).toEqual(expected.map(({ history: _h, ...m }) => m));
    expect(records.map((m) => m.kind)).toEqual(["entity", "entity", "entity", "relation", "relation", "memory", "memory", "memory", "memory"]);
  });

  it("with --user: that user's memories, the entities they link to and the relations between those", async () => {
    const r = await remote(source, from, ["export", "--user", "ada"]);
    expect(r.code, r.stderr).toBe(0);
    const [header, ...records] = lines(r.stdout);
    expect(header.scope).toEqual({ userId: "ada" });
    const local = await runCli(source.storeDir, ["--account", from.id, "export", "--user", "ada"], { clock: source.clock });
    expect(records).toEqual(lines(local.stdout).slice(1).map(({ history: _h, ...m }) => m));
    expect(records.filter((m) => m.kind === "memory").every((m) => m.userId === "ada")).toBe(true);
  });

  it("refuses what the API can't give, before writing anything", async () => {
    const dir = await tempDir();
    for (const [flag, why] of [
      ["--vectors", "the API gives no vectors"],
      ["--all-accounts", "an API key acts for one account"],
    ]) {
      const r = await remote(source, from, ["export", flag, "-o", join(dir, "x.jsonl")]);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stderr).error.message).toContain(`\`mm export ${flag}\` works on a local store, not through --remote (or MM_URL), because ${why}`);
      await expect(readFile(join(dir, "x.jsonl"))).rejects.toThrow();
    }
  });
});

describe("mm --remote import", () => {
  it("sends an export to another server's account: the same records under new ids and times, references following; a second run adds nothing new", async () => {
    const file = join(await tempDir(), "remote.jsonl");
    expect((await remote(source, from, ["export", "-o", file])).code).toBe(0);
    const exported = lines(await readFile(file, "utf8")).slice(1);

    const first = await remote(target, to, ["import", file]);
    expect(first.code, first.stderr).toBe(0);
    const report = lines(first.stdout);
    expect(report.map((l) => [l.line, l.kind, l.status])).toEqual(exported.map((r, i) => [i + 2, r.kind, "added"]));
    expect(Object.keys(report[0])).toEqual(["line", "kind", "id", "status"]);
    expect(first.stderr).toContain("Imported 9 records; 0 skipped (already there); 0 failed.");
    expect(first.stderr).toContain("Through the API every record has a new id and the time of the import.");

    const again = await remote(target, to, ["export"]);
    const copied = lines(again.stdout).slice(1);
    expect(copied.map((r) => r.id)).toEqual(report.map((l) => l.id));
    expect(copied.map((r) => r.id)).not.toContain(exported[0].id);
    expect(content(copied)).toEqual(content(exported));

    // Entities, relations and current memories are found again; the replaced memory isn't (the
    // server's deduplication looks at current memories only), so it comes again, replaced again.
    const second = lines((await remote(target, to, ["import", file])).stdout);
    expect(second.filter((l) => l.status === "added").map((l) => exported[l.line - 2].content)).toEqual(["Ada lives in Marylebone"]);
    expect(second.filter((l) => l.status === "skipped").length).toBe(8);
    expect(second.find((l) => l.kind === "relation")!.reason).toMatch(/^the same relation exists as rel_/);
  });

  it("says what it couldn't send: a local export's history and vectors", async () => {
    const file = join(await tempDir(), "local.jsonl");
    expect((await runCli(source.storeDir, ["--account", from.id, "export", "--vectors", "-o", file], { clock: source.clock })).code).toBe(0);
    const r = await remote(target, to, ["import", file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("not sent: the earlier versions (history) of 1 memory, the vectors of 4 memories (the server embeds).");
  });

  it("brings the ids and times back to a local store: the remote export imports there like a local one", async () => {
    const file = join(await tempDir(), "remote.jsonl");
    expect((await remote(source, from, ["export", "-o", file])).code).toBe(0);
    const store = join(await tempDir(), "copy");
    const imported = await runCli(store, ["import", file], { clock: source.clock });
    expect(imported.code, imported.stderr).toBe(0);
    const local = await runCli(store, ["export"], { clock: source.clock });
    expect(lines(local.stdout).slice(1)).toEqual(lines(await readFile(file, "utf8")).slice(1));
  });

  it("reports a bad line and goes on; skips account lines; refuses the formats and flags it can't send", async () => {
    const file = join(await tempDir(), "bad.jsonl");
    const header = JSON.stringify({ format: "mm-export", version: 1, exportedAt: "2026-03-01T00:00:00.000Z", embedder: null, scope: {}, vectors: false });
    await writeFile(
      file,
      [
        header,
        "not json",
        JSON.stringify({ kind: "account", id: "acct_x", name: "x", plan: "free", createdAt: "2026-03-01T00:00:00.000Z" }),
        JSON.stringify({ kind: "memory", id: "mem_01M84XNDXSW9RGHNP206V79Z", content: "x".repeat(10_001), userId: "u" }),
        JSON.stringify({ kind: "relation", sourceId: "ent_00000000000000000000000000", targetId: "ent_00000000000000000000000001", type: "KNOWS" }),
        JSON.stringify({ kind: "widget" }),
        JSON.stringify({ kind: "memory", content: "a memory after the bad lines", userId: "u" }),
      ].join("\n"),
    );
    const r = await remote(target, to, ["import", file]);
    expect(r.code).toBe(2);
    const report = lines(r.stdout);
    expect(report.map((l) => [l.line, l.status, l.error?.code ?? l.reason])).toEqual([
      [2, "failed", "VALIDATION_ERROR"],
      [3, "skipped", "accounts can't be created through --remote: a key acts for one account"],
      [4, "failed", "CONTENT_TOO_LONG"],
      [5, "failed", "SOURCE_ENTITY_NOT_FOUND"],
      [6, "failed", "VALIDATION_ERROR"],
      [7, "added", undefined],
    ]);
    expect(JSON.parse(r.stderr.trim().split("\n").at(-1)!).error.message).toContain("4 records failed (the others were imported)");

    for (const [args, why] of [
      [["--from", "mem0"], "its records are converted on the store"],
      [["--all-accounts"], "an API key acts for one account"],
    ] as const) {
      const refused = await remote(target, to, ["import", file, ...args]);
      expect(refused.code).toBe(2);
      expect(JSON.parse(refused.stderr).error.message).toContain(`\`mm import ${args.join(" ")}\` works on a local store, not through --remote (or MM_URL), because ${why}`);
    }
    const notExport = join(await tempDir(), "plain.jsonl");
    await writeFile(notExport, '{"content":"x"}\n');
    expect(JSON.parse((await remote(target, to, ["import", notExport])).stderr).error.message).toContain("is not an mm export header");
  });
});
