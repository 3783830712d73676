import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/http-cli.js";
import { client, expectError, startTestServer, type Client, type TestServer } from "../helpers/http-server.js";

/**
 * The graph walks over /v1 (extensions): the same answers as `mm graph … --json` on the same
 * store, the API's codes for bad input, and nothing of another account's graph.
 */

let server: TestServer;
let api: Client;
let account: string;
const ids: Record<string, string> = {};

beforeAll(async () => {
  server = await startTestServer();
  const acct = await server.account("graphs");
  account = acct.id;
  api = client(server.url, acct.key);
  for (const [name, type] of [["Ada", "PERSON"], ["Bob", "PERSON"], ["Acme", "ORGANIZATION"], ["Paris", "LOCATION"]]) {
    ids[name] = (await api.post("/v1/entities", { body: { name, type } })).body.id;
  }
  for (const [s, t, type] of [["Ada", "Bob", "KNOWS"], ["Bob", "Acme", "WORKS_FOR"], ["Acme", "Paris", "LOCATED_IN"]]) {
    await api.post("/v1/relations", { body: { sourceId: ids[s], targetId: ids[t], type } });
  }
});
afterAll(() => server.close());

describe("graph endpoints", () => {
  it("answer exactly what the CLI prints for the same walk", async () => {
    const pairs: [string, Record<string, string | number>, string[]][] = [
      [`/v1/entities/${ids.Ada}/neighbors`, { depth: 2 }, ["graph", "neighbors", ids.Ada, "--depth", "2"]],
      [`/v1/entities/${ids.Bob}/neighbors`, { direction: "out", type: "WORKS_FOR" }, ["graph", "neighbors", ids.Bob, "--direction", "out", "--type", "WORKS_FOR"]],
      ["/v1/graph/path", { from: ids.Ada, to: ids.Paris }, ["graph", "path", ids.Ada, ids.Paris]],
      ["/v1/graph/path", { from: ids.Paris, to: ids.Ada, direction: "out", maxDepth: 3 }, ["graph", "path", ids.Paris, ids.Ada, "--direction", "out", "--max-depth", "3"]],
      ["/v1/graph/export", {}, ["graph", "export"]],
      ["/v1/graph/export", { root: ids.Acme, depth: 1 }, ["graph", "export", "--root", ids.Acme, "--depth", "1"]],
    ];
    for (const [path, query, args] of pairs) {
      const res = await api.get(path, { query });
      expect(res.status, res.text).toBe(200);
      const cli = await runCli(server.storeDir, account, args, server.clock);
      expect(cli.code, cli.stderr).toBe(0);
      expect(res.body, path).toEqual(JSON.parse(cli.stdout));
    }
    const path = (await api.get("/v1/graph/path", { query: { from: ids.Ada, to: ids.Paris } })).body;
    expect(path).toMatchObject({ found: true, length: 3 });
    expect(path.nodes.map((n: { name: string }) => n.name)).toEqual(["Ada", "Bob", "Acme", "Paris"]);
  });

  it("answer bad input with the API's codes, and another account's entities like unknown ones", async () => {
    expectError(await api.get("/v1/entities/ent_missing/neighbors"), 404, "ENTITY_NOT_FOUND");
    expectError(await api.get(`/v1/entities/${ids.Ada}/neighbors`, { query: { depth: 11 } }), 400, "VALIDATION_ERROR");
    expectError(await api.get(`/v1/entities/${ids.Ada}/neighbors`, { query: { type: "knows" } }), 400, "INVALID_RELATION_TYPE");
    expectError(await api.get(`/v1/entities/${ids.Ada}/neighbors`, { query: { direction: "up" } }), 400, "VALIDATION_ERROR");
    expectError(await api.get("/v1/graph/path", { query: { from: ids.Ada } }), 400, "VALIDATION_ERROR");
    expectError(await api.get("/v1/graph/path", { query: { from: ids.Ada, to: "ent_missing" } }), 404, "ENTITY_NOT_FOUND");
    expectError(await api.get("/v1/graph/export", { query: { depth: 2 } }), 400, "VALIDATION_ERROR");
    expectError(await api.post("/v1/graph/path", { body: {} }), 405, "METHOD_NOT_ALLOWED");
    const other = client(server.url, (await server.account("other")).key);
    expectError(await other.get(`/v1/entities/${ids.Ada}/neighbors`), 404, "ENTITY_NOT_FOUND");
    expectError(await other.get("/v1/graph/path", { query: { from: ids.Ada, to: ids.Bob } }), 404, "ENTITY_NOT_FOUND");
    expect((await other.get("/v1/graph/export")).body).toEqual({ entities: [], relations: [] });
  });

  it("update a relation's type and metadata, never its ends", async () => {
    const rel = (await api.post("/v1/relations", { body: { sourceId: ids.Ada, targetId: ids.Acme, type: "KNOWS", metadata: { since: 2020 } } })).body;
    const res = await api.patch(`/v1/relations/${rel.id}`, { body: { type: "WORKS_FOR", metadata: null } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: rel.id, type: "WORKS_FOR", sourceId: ids.Ada, targetId: ids.Acme, createdAt: rel.createdAt });
    expect(res.body.metadata).toBeUndefined();
    expectError(await api.patch(`/v1/relations/${rel.id}`, { body: { sourceId: ids.Bob } }), 400, "VALIDATION_ERROR");
    expectError(await api.patch(`/v1/relations/${rel.id}`, { body: { type: "works for" } }), 400, "INVALID_RELATION_TYPE");
    expectError(await api.patch(`/v1/relations/${rel.id}`, { body: {} }), 400, "VALIDATION_ERROR");
    expectError(await api.patch("/v1/relations/rel_missing", { body: { type: "KNOWS" } }), 404, "RELATION_NOT_FOUND");
    expect((await api.get(`/v1/relations/${rel.id}`)).body.type).toBe("WORKS_FOR");
  });
});
