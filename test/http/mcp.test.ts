import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TOOLS } from "../../src/mcp/tools.js";
import { Store } from "../../src/storage/store.js";
import { client, expectError, startTestServer, type TestServer } from "../helpers/http-server.js";
import { call, fails, httpClient, ok } from "../helpers/mcp-client.js";
import { json, runMm, spawnMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * `/mcp` on a real server over real HTTP, driven by the SDK's Streamable HTTP client: the same
 * keys as /v1, account isolation, and each tool call counted in its REST endpoint's rate bucket
 * and against the quota.
 */

const tempDir = useTempDirs();
const servers: TestServer[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const c of children.splice(0)) c.kill("SIGKILL");
});
async function serve(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const s = await startTestServer(options);
  servers.push(s);
  return s;
}

describe("/mcp over Streamable HTTP", () => {
  it("refuses a missing, malformed or unknown key with the API's 401 envelope, and any method but POST with 405", async () => {
    const server = await serve();
    await expect(httpClient(server.url)).rejects.toThrow(/401|UNAUTHORIZED/);
    await expect(httpClient(server.url, "mm_notakey")).rejects.toThrow(/401|UNAUTHORIZED/);
    const body = { jsonrpc: "2.0", id: 1, method: "tools/list" };
    for (const key of [undefined, "mm_0000000000000000000000000000000000000000", "bad"]) {
      const res = await client(server.url, key).post("/mcp", { body, headers: { Accept: "application/json, text/event-stream" } });
      expectError(res, 401, "UNAUTHORIZED");
    }
    const { key } = await server.account("acme");
    const res = await client(server.url, key).get("/mcp");
    expectError(res, 405, "METHOD_NOT_ALLOWED");
    expect(res.headers.get("allow")).toBe("POST");
    const mcp = await httpClient(server.url, key);
    expect((await mcp.listTools()).tools.map((t) => t.name)).toEqual(TOOLS.map((t) => t.name));
    await mcp.close();
  });

  it("keeps accounts apart: another account's ids answer like unknown ones, and its data is never listed or found", async () => {
    const server = await serve();
    const a = await httpClient(server.url, (await server.account("alpha")).key);
    const b = await httpClient(server.url, (await server.account("beta")).key);
    const memory = await ok(a, "memories_add", { content: "alpha's secret plan for the launch", userId: "shared" });
    const person = await ok(a, "entities_create", { name: "Alpha Person", type: "PERSON" });
    await ok(a, "create_entities", { entities: [{ name: "Alpha Corp", entityType: "company", observations: ["alpha launches in May"] }] });

    await fails(b, "memories_get", { id: memory.id }, "MEMORY_NOT_FOUND");
    await fails(b, "memories_delete", { id: memory.id }, "MEMORY_NOT_FOUND");
    await fails(b, "entities_get", { id: person.id }, "ENTITY_NOT_FOUND");
    await fails(b, "graph_neighbors", { id: person.id }, "ENTITY_NOT_FOUND");
    expect((await ok(b, "memories_search", { query: "secret plan for the launch", userId: "shared", threshold: 0 })).results).toEqual([]);
    expect((await ok(b, "memories_list", {})).pagination.total).toBe(0);
    expect(await ok(b, "read_graph", {})).toEqual({ entities: [], relations: [] });
    expect((await ok(b, "search_nodes", { query: "alpha launches" })).entities).toEqual([]);
    await fails(b, "add_observations", { observations: [{ entityName: "Alpha Corp", contents: ["b was here"] }] }, "ENTITY_NOT_FOUND");

    expect(await ok(a, "memories_get", { id: memory.id })).toEqual(memory);
    expect((await ok(a, "read_graph", {})).entities).toEqual([
      { name: "Alpha Person", entityType: "PERSON", observations: [] },
      { name: "Alpha Corp", entityType: "company", observations: ["alpha launches in May"] },
    ]);
    await Promise.all([a.close(), b.close()]);
  });

  it("takes each call from its REST endpoint's rate bucket, shared with /v1, per key", async () => {
    const server = await serve({ rateLimits: { read: 100, write: 100, search: 2 } });
    const { key } = await server.account("acme");
    const mcp = await httpClient(server.url, key);
    await ok(mcp, "memories_search", { query: "anything", userId: "u" });
    await ok(mcp, "search_nodes", { query: "anything" });
    const refused = await fails(mcp, "memories_search", { query: "anything", userId: "u" }, "RATE_LIMIT_EXCEEDED");
    expect(refused.retryAfter).toBeGreaterThanOrEqual(1);
    // The REST search shares the bucket; reads are another bucket and still pass.
    expectError(await client(server.url, key).post("/v1/memories/search", { body: { query: "x" } }), 429, "RATE_LIMIT_EXCEEDED");
    await ok(mcp, "memories_list", {});
    server.clock.advance(60_000);
    await ok(mcp, "memories_search", { query: "anything", userId: "u" });
    await mcp.close();
  });

  it("counts one quota operation per tool call (none for initialize or tools/list), and refuses calls over the quota", async () => {
    const server = await serve();
    const acct = await server.account("small", "free");
    const used = async () => (await server.ledger.usage(acct.id, 1000)).used;
    const mcp = await httpClient(server.url, acct.key);
    await mcp.listTools();
    expect(await used()).toBe(0);
    await ok(mcp, "memories_add", { content: "one", userId: "u" });
    await fails(mcp, "memories_get", { id: "mem_missing" }, "MEMORY_NOT_FOUND");
    await ok(mcp, "read_graph", {});
    expect(await used()).toBe(3);
    await server.ledger.charge(acct.id, 1000, "write", 1000 - 3);
    const refused = await fails(mcp, "memories_list", {}, "QUOTA_EXCEEDED");
    expect(refused).toMatchObject({ currentUsage: 1000, limit: 1000 });
    expect(await used()).toBe(1000);
    expectError(await client(server.url, acct.key).get("/v1/memories"), 403, "QUOTA_EXCEEDED");
    await mcp.close();
  });

  it("bills the reference tools per record stored, like /v1 and import; a call that runs out of quota stores only what it billed and says what it stored", async () => {
    const server = await serve();
    const acct = await server.account("free-one", "free");
    const used = async () => (await server.ledger.usage(acct.id, 1000)).used;
    const memories = async () => {
      const store = await Store.open(server.storeDir);
      try {
        return await store.countMemories({ accountId: acct.id });
      } finally {
        store.close();
      }
    };
    const mcp = await httpClient(server.url, acct.key);
    const entities = (n: number, obs: number, tag: string) =>
      Array.from({ length: n }, (_, i) => ({ name: `${tag} ${i}`, entityType: "person", observations: Array.from({ length: obs }, (_, j) => `${tag} ${i} fact ${j}`) }));
    await ok(mcp, "create_entities", { entities: entities(3, 4, "small") });
    expect(await used()).toBe(3 + 12);
    const added = await ok(mcp, "add_observations", { observations: [{ entityName: "small 0", contents: ["one more", "and another"] }] });
    expect(added.results[0].addedObservations).toHaveLength(2);
    expect(await used()).toBe(15 + 2);

    // 20 entities x 50 observations: 1,020 records, more than the 983 left.
    const refused = await fails(mcp, "create_entities", { entities: entities(20, 50, "big") }, "QUOTA_EXCEEDED");
    const after = await used();
    expect(after).toBeLessThanOrEqual(1000);
    expect(refused.stored).toBeDefined();
    expect(refused.stored.entities + refused.stored.observations).toBe(after - 17);
    expect(refused.stored.observations).toBeLessThan(1000);
    expect(refused.message).toMatch(/stored \d+ entit(y|ies) and \d+ observations?/i);
    expect(await memories()).toBe(14 + refused.stored.observations);
    await mcp.close();
  });

  it("counts every message of a JSON-RPC batch against the key's rate limit, in its bucket, and refuses batches over 16 messages", async () => {
    const server = await serve({ rateLimits: { read: 5, write: 100, search: 100 } });
    const { key } = await server.account("acme");
    const api = client(server.url, key);
    const headers = { Accept: "application/json, text/event-stream" };
    const list = (n: number, from = 1) => Array.from({ length: n }, (_, i) => ({ jsonrpc: "2.0", id: from + i, method: "tools/list" }));
    const answered = await api.post("/mcp", { body: list(3), headers });
    expect(answered.status).toBe(200);
    expect(answered.body.map((m: { result: { tools: unknown[] } }) => m.result.tools.length)).toEqual([TOOLS.length, TOOLS.length, TOOLS.length]);
    // Three reads taken by the batch, one by this request: one left.
    expect((await api.get("/v1/memories")).headers.get("x-ratelimit-remaining")).toBe("1");
    const limited = await api.post("/mcp", { body: list(3, 10), headers });
    expectError(limited, 429, "RATE_LIMIT_EXCEEDED");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    server.clock.advance(60_000);
    expectError(await api.post("/mcp", { body: list(100), headers }), 400, "VALIDATION_ERROR");
    // The refused batch took nothing: the whole minute's reads are left.
    expect((await api.get("/v1/memories")).headers.get("x-ratelimit-remaining")).toBe("4");
  });

  it("reads a body one way for the batch cap, the rate count and the SDK: a byte-order mark doesn't slip a 100-message batch past either", async () => {
    const server = await serve({ rateLimits: { read: 5, write: 100, search: 100 } });
    const { key } = await server.account("acme");
    const api = client(server.url, key);
    const headers = { Accept: "application/json, text/event-stream", "Content-Type": "application/json" };
    const list = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "tools/list" })));
    for (const raw of [`\uFEFF${list(100)}`, `\uFEFF${list(2)}`, `\uFEFF${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })}`]) {
      const res = await api.post("/mcp", { raw, headers });
      expect(res.status, res.text.slice(0, 200)).toBe(400);
      expect(res.body, res.text.slice(0, 200)).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    }
    // Nothing ran, so nothing was counted: the whole minute's reads are left but this request's.
    expect((await api.get("/v1/memories")).headers.get("x-ratelimit-remaining")).toBe("4");
  });

  it("answers arguments that aren't an object as a tool error (VALIDATION_ERROR), not a JSON-RPC error with a schema dump", async () => {
    const server = await serve();
    const { key } = await server.account("acme");
    const headers = { Accept: "application/json, text/event-stream" };
    for (const bad of ["str", 42, ["a"], null]) {
      const res = await client(server.url, key).post("/mcp", { body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "memories_list", arguments: bad } }, headers });
      expect(res.status).toBe(200);
      expect(res.body.error, res.text).toBeUndefined();
      expect(res.body.result.isError).toBe(true);
      expect(res.body.result.structuredContent.error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "arguments" }] });
      expect(res.body.result.content[0].text).toMatch(/^VALIDATION_ERROR: .*arguments.*must be an object/);
      expect(res.text).not.toMatch(/expected|invalid_type|zod/i);
    }
    for (const params of [{ name: 42, arguments: {} }, { arguments: {} }, undefined]) {
      const res = await client(server.url, key).post("/mcp", { body: { jsonrpc: "2.0", id: 2, method: "tools/call", ...(params === undefined ? {} : { params }) }, headers });
      expect(res.body.error, res.text).toBeUndefined();
      expect(res.body.result.structuredContent.error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "name" }] });
    }
  });

  it("takes no rate allowance for a call refused for quota, as /v1 doesn't", async () => {
    const server = await serve({ rateLimits: { read: 2, write: 100, search: 100 } });
    const acct = await server.account("small", "free");
    await server.ledger.charge(acct.id, 1000, "write", 1000);
    const api = client(server.url, acct.key);
    const headers = { Accept: "application/json, text/event-stream" };
    for (let i = 0; i < 4; i++) {
      const res = await api.post("/mcp", { body: { jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "memories_list", arguments: {} } }, headers });
      expect(res.body.result.structuredContent.error.code).toBe("QUOTA_EXCEEDED");
    }
    const refused = await client(server.url, acct.key).get("/v1/memories");
    expectError(refused, 403, "QUOTA_EXCEEDED");
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("2");
  });

  it("serves /mcp from a spawned mm serve with the real model", async () => {
    const store = join(await tempDir(), "store");
    await runMm(["accounts", "create", "acme", "--plan", "hobby"], { store });
    const { key } = json(await runMm(["keys", "create", "--account", "acme", "--name", "agent"], { store }));
    const child = spawnMm(["serve", "--port", "0"], { store });
    children.push(child);
    const url = await new Promise<string>((resolve, reject) => {
      let buf = "";
      child.stderr!.setEncoding("utf8").on("data", (d: string) => {
        buf += d;
        for (const line of buf.split("\n")) if (line.includes('"listening"')) resolve(JSON.parse(line).url);
      });
      child.on("exit", (code) => reject(new Error(`mm serve exited ${code}: ${buf}`)));
    });
    const mcp = await httpClient(url, key);
    await ok(mcp, "create_entities", { entities: [{ name: "Maya", entityType: "person", observations: ["moved from Lisbon to Berlin for a job at Siemens"] }] });
    const found = await ok(mcp, "search_nodes", { query: "relocated to Germany for work" });
    expect(found.entities.map((e: { name: string }) => e.name)).toEqual(["Maya"]);
    await call(mcp, "memories_list", {});
    await mcp.close();
    const usage = json(await runMm(["usage", "--account", "acme", "--json"], { store }));
    expect(usage.used).toBe(4); // the entity and its observation, the search, the list
  });
});

describe("entity names in mm's own tools (issue 26)", () => {
  it("take a name wherever the CLI does; an unknown name says how to find one", async () => {
    const server = await serve();
    const mcp = await httpClient(server.url, (await server.account("acme")).key);
    const sam = await ok(mcp, "entities_create", { name: "Sam Rivera", type: "PERSON" });
    const acme = await ok(mcp, "entities_create", { name: "Acme", type: "ORGANIZATION" });
    const rel = await ok(mcp, "relations_create", { sourceId: "Sam Rivera", targetId: "Acme", type: "WORKS_FOR" });
    expect([rel.sourceId, rel.targetId]).toEqual([sam.id, acme.id]);
    const around = await ok(mcp, "graph_neighbors", { id: "Sam Rivera" });
    expect(around.root.id).toBe(sam.id);
    expect(around.nodes.map((n: { name: string }) => n.name)).toEqual(["Acme"]);
    expect((await ok(mcp, "entities_get", { id: "sam rivera" })).id).toBe(sam.id);
    expect((await ok(mcp, "graph_path", { from: "Sam Rivera", to: "Acme" })).found).toBe(true);
    expect((await ok(mcp, "relations_list", { sourceId: "Sam Rivera" })).items.map((r: { id: string }) => r.id)).toEqual([rel.id]);
    const linked = await ok(mcp, "memories_add", { content: "Sam leads the Phoenix office", userId: "u", entityIds: ["Sam Rivera"] });
    expect(linked.entityIds).toEqual([sam.id]);
    const missing = await call(mcp, "graph_neighbors", { id: "Nobody Here" });
    expect(missing.isError).toBe(true);
    expect(missing.content[0].text).toContain('No entity is named "Nobody Here". The entities_list tool with search "Nobody Here" finds names that contain it.');
    await mcp.close();
  });

  it("over HTTP, a name where an id goes says an id was expected and how to look one up", async () => {
    const server = await serve();
    const { key } = await server.account("acme");
    const http = client(server.url, key);
    const acme = (await http.post("/v1/entities", { body: { name: "Acme", type: "ORGANIZATION" } })).body;
    const res = await http.post("/v1/relations", { body: { sourceId: "Sam", targetId: acme.id, type: "WORKS_FOR" } });
    expectError(res, 404, "SOURCE_ENTITY_NOT_FOUND");
    expect(res.body.error.message).toBe("Source entity Sam does not exist. sourceId takes an entity id (ent_…), not a name: GET /v1/entities?search=Sam finds \"Sam\" by name, and its id is in the answer.");
    const get = await http.get("/v1/entities/Sam%20Rivera");
    expectError(get, 404, "ENTITY_NOT_FOUND");
    expect(get.body.error.message).toContain("It takes an entity id (ent_…), not a name: GET /v1/entities?search=Sam%20Rivera");
  });
});
