import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNormaliser, runCli, type CliResult } from "../helpers/http-cli.js";
import { client, type ApiResponse, type Client, type TestAccount, type TestServer, startTestServer } from "../helpers/http-server.js";

/**
 * CLI ↔ HTTP parity on one store: account H does every step over HTTP, account C does the same
 * step with the CLI (`--json`, in-process, same embedder and clock). The CLI's stdout must be the
 * HTTP body, key for key and in the same order, once ids and timestamps are normalised; errors
 * must print the same envelope. Reads of one account's data must match exactly, unnormalised.
 */

let server: TestServer;
let H: TestAccount;
let C: TestAccount;
let http: Client;
const hNorm = createNormaliser();
const cNorm = createNormaliser();
/** Raw ids per side, by step label, to address the same resource on each side. */
const hIds: Record<string, string> = {};
const cIds: Record<string, string> = {};

beforeAll(async () => {
  server = await startTestServer();
  H = await server.account("http-side");
  C = await server.account("cli-side");
  http = client(server.url, H.key);
});
afterAll(async () => server?.close());

const cli = (args: string[], account = C.id): Promise<CliResult> => runCli(server.storeDir, account, args, server.clock);

/** Exit codes by error class (src/errors.ts EXIT): 0 ok, 2 usage/validation, 3 not found. */
const exitFor = (status: number) => (status < 300 ? 0 : status === 404 ? 3 : 2);

/**
 * Runs one step on both sides and compares. `cliArgs` may refer to ids of earlier steps as
 * `{label}`, replaced with that side's raw id. Returns both bodies.
 */
async function both(
  label: string,
  send: (id: (l: string) => string) => Promise<ApiResponse>,
  cliArgs: string[],
  status: number,
): Promise<{ h: any; c: any }> {
  const h = await send((l) => hIds[l] ?? l);
  const c = await cli(cliArgs.map((a) => a.replace(/\{(\w+)\}/g, (_, l: string) => cIds[l] ?? l)));
  expect(h.status, `${label} HTTP: ${h.text.slice(0, 300)}`).toBe(status);
  expect(c.code, `${label} CLI exit: ${c.stderr.slice(0, 300)}`).toBe(exitFor(status));
  let cBody: unknown;
  if (status < 300) {
    expect(c.stdout.trim().split("\n"), `${label}: one JSON document on stdout`).toHaveLength(1);
    cBody = JSON.parse(c.stdout);
  } else {
    expect(c.stdout, `${label}: nothing on stdout for an error`).toBe("");
    cBody = JSON.parse(c.stderr.trim().split("\n").at(-1)!);
  }
  const hn = hNorm.normalise(h.body);
  const cn = cNorm.normalise(cBody);
  expect(cn.value, label).toEqual(hn.value);
  // Same keys in the same order, at every depth.
  expect(JSON.stringify(cn.value), label).toBe(JSON.stringify(hn.value));
  expect(cn.scores.length, `${label} scores`).toBe(hn.scores.length);
  cn.scores.forEach((s, i) => expect(s, `${label} score ${i}`).toBeCloseTo(hn.scores[i], 6));
  if (status < 300 && typeof (h.body as any)?.id === "string") {
    hIds[label] = (h.body as any).id;
    cIds[label] = (cBody as any).id;
  }
  return { h: h.body, c: cBody };
}

describe("success parity, every endpoint", () => {
  it("memories add (POST /v1/memories)", async () => {
    await both(
      "m1",
      () => http.post("/v1/memories", { body: { content: "Alice likes green tea", userId: "u1", agentId: "bot", tags: ["t1", "t2"], metadata: { k: 1, nested: { a: [1, null] } } } }),
      ["memories", "add", "Alice likes green tea", "--user", "u1", "--agent", "bot", "--tag", "t1", "--tag", "t2", "--metadata", '{"k":1,"nested":{"a":[1,null]}}'],
      201,
    );
    await both("m2", () => http.post("/v1/memories", { body: { content: "Bob drinks coffee daily", userId: "u2" } }), ["memories", "add", "Bob drinks coffee daily", "--user", "u2"], 201);
    await both("m3", () => http.post("/v1/memories", { body: { content: "green tea is calming", userId: "u1", tags: ["t1"] } }), ["memories", "add", "green tea is calming", "-u", "u1", "-t", "t1"], 201);
  });

  it("entities create (POST /v1/entities), including the existing-entity answer", async () => {
    await both(
      "e1",
      () => http.post("/v1/entities", { body: { name: "Zoë Saldaña", type: "PERSON", description: "actor", metadata: { x: 1 } } }),
      ["entities", "create", "Zoë Saldaña", "--type", "PERSON", "--description", "actor", "--metadata", '{"x":1}'],
      201,
    );
    // HTTP says 200; the CLI exits 0 and warns on stderr; both print the existing entity.
    const again = await both("e1again", () => http.post("/v1/entities", { body: { name: "zoe saldana", type: "PERSON" } }), ["entities", "create", "zoe saldana", "--type", "PERSON"], 200);
    expect(again.h.id).toBe(hIds.e1);
    expect(again.c.id).toBe(cIds.e1);
    const warned = await cli(["entities", "create", "ZOE SALDANA", "--type", "PERSON"]);
    expect(warned.stderr).toMatch(/already exists/);
    await both("e2", () => http.post("/v1/entities", { body: { name: "Acme", type: "ORGANIZATION" } }), ["entities", "create", "Acme", "--type", "ORGANIZATION"], 201);
    await both("e3", () => http.post("/v1/entities", { body: { name: "Lisbon", type: "LOCATION" } }), ["entities", "create", "Lisbon", "--type", "LOCATION"], 201);
  });

  it("memories add with linked entities (entityIds / --entity)", async () => {
    const r = await both(
      "m4",
      (id) => http.post("/v1/memories", { body: { content: "Zoe works at Acme", userId: "u1", entityIds: [id("e1"), id("e2")] } }),
      ["memories", "add", "Zoe works at Acme", "--user", "u1", "--entity", "{e1}", "--entity", "{e2}"],
      201,
    );
    expect(r.h.entityIds).toHaveLength(2);
  });

  it("relations create (POST /v1/relations)", async () => {
    await both(
      "r1",
      (id) => http.post("/v1/relations", { body: { sourceId: id("e1"), targetId: id("e2"), type: "WORKS_FOR", metadata: { since: 2020 } } }),
      ["relations", "create", "--source", "{e1}", "--target", "{e2}", "--type", "WORKS_FOR", "--metadata", '{"since":2020}'],
      201,
    );
    await both("r2", (id) => http.post("/v1/relations", { body: { sourceId: id("e2"), targetId: id("e3"), type: "LOCATED_IN" } }), ["relations", "create", "--source", "{e2}", "--target", "{e3}", "--type", "LOCATED_IN"], 201);
    await both("r3", (id) => http.post("/v1/relations", { body: { sourceId: id("e3"), targetId: id("e1"), type: "RELATED_TO" } }), ["relations", "create", "--source", "{e3}", "--target", "{e1}", "--type", "RELATED_TO"], 201);
  });

  it("memories get / list / search", async () => {
    await both("get m1", (id) => http.get(`/v1/memories/${id("m1")}`), ["memories", "get", "{m1}"], 200);
    await both("get m4", (id) => http.get(`/v1/memories/${id("m4")}`), ["memories", "get", "{m4}"], 200);
    await both("list", () => http.get("/v1/memories"), ["memories", "list"], 200);
    await both("list filtered", () => http.get("/v1/memories", { query: { userId: "u1", tags: "t1", limit: 1, page: 2 } }), ["memories", "list", "--user", "u1", "--tag", "t1", "--limit", "1", "--page", "2"], 200);
    await both("list tags AND", () => http.get("/v1/memories", { query: { tags: "t1,t2", agentId: "bot" } }), ["memories", "list", "--tag", "t1", "--tag", "t2", "--agent", "bot"], 200);
    await both("list clamped", () => http.get("/v1/memories", { query: { limit: 500 } }), ["memories", "list", "--limit", "500"], 200);
    await both("list past end", () => http.get("/v1/memories", { query: { page: 7, limit: 2 } }), ["memories", "list", "--page", "7", "--limit", "2"], 200);
    const s = await both("search", () => http.post("/v1/memories/search", { body: { query: "green tea", userId: "u1" } }), ["memories", "search", "green tea", "--user", "u1"], 200);
    expect(s.h.results.length).toBeGreaterThan(0);
    await both(
      "search all",
      () => http.post("/v1/memories/search", { body: { query: "green tea", threshold: 0, limit: 3, tags: ["t1"] } }),
      ["memories", "search", "green tea", "--threshold", "0", "--limit", "3", "--tag", "t1"],
      200,
    );
    await both("search agent", () => http.post("/v1/memories/search", { body: { query: "tea", agentId: "bot", threshold: 0.1 } }), ["memories", "search", "tea", "--agent", "bot", "--threshold", "0.1"], 200);
  });

  it("memories update (PATCH /v1/memories/:id)", async () => {
    await both(
      "update m1",
      (id) => http.patch(`/v1/memories/${id("m1")}`, { body: { content: "Alice now likes black tea", tags: ["x"], metadata: { k: 2 }, agentId: null } }),
      ["memories", "update", "{m1}", "Alice now likes black tea", "--tag", "x", "--metadata", '{"k":2}', "--clear-agent"],
      200,
    );
    await both("update m4 links", (id) => http.patch(`/v1/memories/${id("m4")}`, { body: { entityIds: [id("e2")], tags: null } }), ["memories", "update", "{m4}", "--entity", "{e2}", "--clear-tags"], 200);
    await both("get m1 after", (id) => http.get(`/v1/memories/${id("m1")}`), ["memories", "get", "{m1}"], 200);
  });

  it("entities list / get / update / memories", async () => {
    await both("entities list", () => http.get("/v1/entities"), ["entities", "list"], 200);
    await both("entities list filtered", () => http.get("/v1/entities", { query: { type: "PERSON", search: "ZOE" } }), ["entities", "list", "--type", "PERSON", "--search", "ZOE"], 200);
    await both("entities list paged", () => http.get("/v1/entities", { query: { page: 2, limit: 2 } }), ["entities", "list", "--page", "2", "--limit", "2"], 200);
    await both("entities get", (id) => http.get(`/v1/entities/${id("e1")}`), ["entities", "get", "{e1}"], 200);
    await both(
      "entities update",
      (id) => http.patch(`/v1/entities/${id("e1")}`, { body: { name: "Zoe S.", description: null, metadata: { y: 2 } } }),
      ["entities", "update", "{e1}", "--name", "Zoe S.", "--clear-description", "--metadata", '{"y":2}'],
      200,
    );
    await both("entities update type", (id) => http.patch(`/v1/entities/${id("e3")}`, { body: { type: "OTHER", description: "city" } }), ["entities", "update", "{e3}", "--type", "OTHER", "--description", "city"], 200);
    await both("entities memories", (id) => http.get(`/v1/entities/${id("e2")}/memories`), ["entities", "memories", "{e2}"], 200);
    await both("entities memories paged", (id) => http.get(`/v1/entities/${id("e2")}/memories`, { query: { page: 1, limit: 1 } }), ["entities", "memories", "{e2}", "--page", "1", "--limit", "1"], 200);
  });

  it("relations list / get", async () => {
    await both("relations list", () => http.get("/v1/relations"), ["relations", "list"], 200);
    await both("relations list filtered", (id) => http.get("/v1/relations", { query: { sourceId: id("e1"), type: "WORKS_FOR" } }), ["relations", "list", "--source", "{e1}", "--type", "WORKS_FOR"], 200);
    await both("relations list target", (id) => http.get("/v1/relations", { query: { targetId: id("e1"), limit: 1 } }), ["relations", "list", "--target", "{e1}", "--limit", "1"], 200);
    await both("relations get", (id) => http.get(`/v1/relations/${id("r1")}`), ["relations", "get", "{r1}"], 200);
    await both("relations get bare", (id) => http.get(`/v1/relations/${id("r2")}`), ["relations", "get", "{r2}"], 200);
  });

  it("deletes: relations delete, memories delete, entities delete (cascade)", async () => {
    await both("relations delete", (id) => http.delete(`/v1/relations/${id("r3")}`), ["relations", "delete", "{r3}", "--yes"], 200);
    await both("memories delete", (id) => http.delete(`/v1/memories/${id("m2")}`), ["memories", "delete", "{m2}", "--yes"], 200);
    const del = await both("entities delete", (id) => http.delete(`/v1/entities/${id("e2")}`), ["entities", "delete", "{e2}", "--yes"], 200);
    expect(del.h.deletedRelations).toBe(2);
    await both("list after deletes", () => http.get("/v1/relations"), ["relations", "list"], 200);
    await both("m4 after cascade", (id) => http.get(`/v1/memories/${id("m4")}`), ["memories", "get", "{m4}"], 200);
  });

  it("the CLI reads the HTTP side's data exactly as the API serves it (same account, no normalisation)", async () => {
    const rel = (await http.post("/v1/relations", { body: { sourceId: hIds.e1, targetId: hIds.e3, type: "KNOWS", metadata: { m: true } } })).body;
    const pairs: [string, string[]][] = [
      [`/v1/memories/${hIds.m1}`, ["memories", "get", hIds.m1]],
      ["/v1/memories", ["memories", "list"]],
      [`/v1/entities/${hIds.e1}`, ["entities", "get", hIds.e1]],
      ["/v1/entities", ["entities", "list"]],
      [`/v1/relations/${rel.id}`, ["relations", "get", rel.id]],
      ["/v1/relations", ["relations", "list"]],
    ];
    for (const [path, args] of pairs) {
      const h = await http.get(path);
      const c = await cli(args, H.id);
      expect(c.code, c.stderr).toBe(0);
      expect(c.stdout.trim(), path).toBe(JSON.stringify(h.body));
    }
    const search = await http.post("/v1/memories/search", { body: { query: "black tea" } });
    const c = await cli(["memories", "search", "black tea"], H.id);
    expect(JSON.parse(c.stdout)).toEqual(search.body);
    // And the API serves what the CLI wrote, for the account the CLI acted as.
    const cKey = await server.accounts.createKey({ account: C.id, name: "cli-side-key" });
    const viaApi = await client(server.url, cKey.key).get(`/v1/memories/${cIds.m1}`);
    expect(viaApi.status).toBe(200);
    expect(JSON.stringify(viaApi.body)).toBe((await cli(["memories", "get", cIds.m1])).stdout.trim());
  });

  it("the CLI's operations count against its account's quota, as the API reports it", async () => {
    const D = await server.account("cli-quota", "hobby");
    for (const args of [["memories", "add", "one", "--user", "u"], ["memories", "list"], ["entities", "list"], ["memories", "get", "mem_missing"]]) {
      await cli(args, D.id);
    }
    const res = await client(server.url, D.key).get("/v1/relations");
    expect(res.headers.get("x-quota-used")).toBe("5");
    expect(res.headers.get("x-quota-limit")).toBe("50000");
  });
});

describe("error parity: the same bad input gives the same envelope", () => {
  const long = "x".repeat(10_001);
  const cases: [string, (id: (l: string) => string) => Promise<ApiResponse>, string[], number][] = [
    ["empty user", () => http.post("/v1/memories", { body: { content: "x", userId: "" } }), ["memories", "add", "x", "--user", ""], 400],
    ["too long", () => http.post("/v1/memories", { body: { content: long, userId: "u" } }), ["memories", "add", long, "--user", "u"], 400],
    ["empty content", () => http.post("/v1/memories", { body: { content: "", userId: "u" } }), ["memories", "add", "", "--user", "u"], 400],
    ["comma tag", () => http.post("/v1/memories", { body: { content: "x", userId: "u", tags: ["a,b"] } }), ["memories", "add", "x", "--user", "u", "--tag", "a,b"], 400],
    ["array metadata", () => http.post("/v1/memories", { body: { content: "x", userId: "u", metadata: [1, 2] } }), ["memories", "add", "x", "--user", "u", "--metadata", "[1,2]"], 400],
    ["unknown link", () => http.post("/v1/memories", { body: { content: "x", userId: "u", entityIds: ["ent_missing"] } }), ["memories", "add", "x", "--user", "u", "--entity", "ent_missing"], 404],
    ["entity type", () => http.post("/v1/entities", { body: { name: "X", type: "person" } }), ["entities", "create", "X", "--type", "person"], 400],
    ["entity no type", () => http.post("/v1/entities", { body: { name: "X" } }), ["entities", "create", "X"], 400],
    ["entity name", () => http.post("/v1/entities", { body: { name: "  ", type: "PERSON" } }), ["entities", "create", "  ", "--type", "PERSON"], 400],
    ["relation type", (id) => http.post("/v1/relations", { body: { sourceId: id("e1"), targetId: id("e3"), type: "works_for" } }), ["relations", "create", "--source", "{e1}", "--target", "{e3}", "--type", "works_for"], 400],
    ["relation source", (id) => http.post("/v1/relations", { body: { sourceId: "ent_missing", targetId: id("e3"), type: "KNOWS" } }), ["relations", "create", "--source", "ent_missing", "--target", "{e3}", "--type", "KNOWS"], 404],
    ["relation target", (id) => http.post("/v1/relations", { body: { sourceId: id("e1"), targetId: "ent_missing", type: "KNOWS" } }), ["relations", "create", "--source", "{e1}", "--target", "ent_missing", "--type", "KNOWS"], 404],
    ["memory get", () => http.get("/v1/memories/mem_missing"), ["memories", "get", "mem_missing"], 404],
    ["memory update", () => http.patch("/v1/memories/mem_missing", { body: { content: "x" } }), ["memories", "update", "mem_missing", "x"], 404],
    ["memory delete", () => http.delete("/v1/memories/mem_missing"), ["memories", "delete", "mem_missing", "--yes"], 404],
    ["memory update empty", (id) => http.patch(`/v1/memories/${id("m1")}`, { body: {} }), ["memories", "update", "{m1}"], 400],
    ["memory update metadata", (id) => http.patch(`/v1/memories/${id("m1")}`, { body: { metadata: [1] } }), ["memories", "update", "{m1}", "--metadata", "[1]"], 400],
    ["entity get", () => http.get("/v1/entities/ent_missing"), ["entities", "get", "ent_missing"], 404],
    ["entity update", () => http.patch("/v1/entities/ent_missing", { body: { name: "n" } }), ["entities", "update", "ent_missing", "--name", "n"], 404],
    ["entity update type", (id) => http.patch(`/v1/entities/${id("e1")}`, { body: { type: "robot" } }), ["entities", "update", "{e1}", "--type", "robot"], 400],
    ["entity delete", () => http.delete("/v1/entities/ent_missing"), ["entities", "delete", "ent_missing", "--yes"], 404],
    ["entity memories", () => http.get("/v1/entities/ent_missing/memories"), ["entities", "memories", "ent_missing"], 404],
    ["relation get", () => http.get("/v1/relations/rel_missing"), ["relations", "get", "rel_missing"], 404],
    ["relation delete", () => http.delete("/v1/relations/rel_missing"), ["relations", "delete", "rel_missing", "--yes"], 404],
    ["search limit 0", () => http.post("/v1/memories/search", { body: { query: "x", limit: 0 } }), ["memories", "search", "x", "--limit", "0"], 400],
    ["search limit 1.5", () => http.post("/v1/memories/search", { body: { query: "x", limit: 1.5 } }), ["memories", "search", "x", "--limit", "1.5"], 400],
    ["search limit word", () => http.post("/v1/memories/search", { body: { query: "x", limit: "ten" } }), ["memories", "search", "x", "--limit", "ten"], 400],
    ["search threshold", () => http.post("/v1/memories/search", { body: { query: "x", threshold: 1.5 } }), ["memories", "search", "x", "--threshold", "1.5"], 400],
    ["search threshold word", () => http.post("/v1/memories/search", { body: { query: "x", threshold: "high" } }), ["memories", "search", "x", "--threshold", "high"], 400],
    ["search empty", () => http.post("/v1/memories/search", { body: { query: "" } }), ["memories", "search", ""], 400],
    ["list page 0", () => http.get("/v1/memories", { query: { page: 0 } }), ["memories", "list", "--page", "0"], 400],
    ["list limit abc", () => http.get("/v1/memories", { query: { limit: "abc" } }), ["memories", "list", "--limit", "abc"], 400],
    ["list limit 2.5", () => http.get("/v1/memories", { query: { limit: "2.5" } }), ["memories", "list", "--limit", "2.5"], 400],
    ["entities list type", () => http.get("/v1/entities", { query: { type: "person" } }), ["entities", "list", "--type", "person"], 400],
    ["entities list page", () => http.get("/v1/entities", { query: { page: "-1" } }), ["entities", "list", "--page", "-1"], 400],
    ["relations list type", () => http.get("/v1/relations", { query: { type: "knows" } }), ["relations", "list", "--type", "knows"], 400],
    ["relations list limit", () => http.get("/v1/relations", { query: { limit: "0" } }), ["relations", "list", "--limit", "0"], 400],
    ["entity memories limit", (id) => http.get(`/v1/entities/${id("e1")}/memories`, { query: { limit: "x" } }), ["entities", "memories", "{e1}", "--limit", "x"], 400],
  ];

  for (const [label, send, args, status] of cases) {
    it(`${label} → ${status}`, async () => {
      const { h } = await both(`error: ${label}`, send, args, status);
      expect(h.error.code).toMatch(/^[A-Z_]+$/);
    });
  }
});
