import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTES } from "../../src/http/routes.js";
import { client, startTestServer, type Client, type TestServer } from "../helpers/http-server.js";

/**
 * GET /v1/openapi.json over real HTTP: a valid OpenAPI 3.1 document (checked by a real
 * validator), listing every route of ROUTES with its method, whose request schemas accept and
 * reject sample bodies as the service does, and whose response schemas describe real answers.
 */

let server: TestServer;
let api: Client;
let doc: any;

beforeAll(async () => {
  server = await startTestServer();
  api = client(server.url, (await server.account("openapi")).key);
  const res = await client(server.url).get("/v1/openapi.json");
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(async () => server?.close());

const openapiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}");

/** Compiles one (self-contained) schema of the document as JSON Schema draft 2020-12. */
function compile(schema: object) {
  return new Ajv2020({ strict: false, allErrors: true }).compile(schema);
}

describe("the document", () => {
  it("is served without a key as JSON and is valid OpenAPI 3.1 per @seriousme/openapi-schema-validator", async () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 1)?.slice(0, 2000)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toMatch(/^3\.1/);
  });

  it("the validator is not a rubber stamp: it rejects a broken copy", async () => {
    const broken = structuredClone(doc);
    delete broken.info;
    broken.paths["/v1/memories"].get.responses = "nope";
    const result = await new Validator().validate(broken);
    expect(result.valid).toBe(false);
  });

  it("lists every route of ROUTES under its path and method, and nothing else", () => {
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
      Object.keys(ops)
        .filter((k) => ["get", "post", "put", "patch", "delete"].includes(k))
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
    const expected = ROUTES.map((r) => `${r.method} ${openapiPath(r.path)}`);
    expect(documented.sort()).toEqual([...expected].sort());
    expect(expected).toHaveLength(24);
    for (const must of [
      "POST /v1/memories",
      "POST /v1/memories/search",
      "GET /v1/memories",
      "GET /v1/memories/{id}",
      "PATCH /v1/memories/{id}",
      "DELETE /v1/memories/{id}",
      "POST /v1/entities",
      "GET /v1/entities",
      "GET /v1/entities/{id}",
      "PATCH /v1/entities/{id}",
      "DELETE /v1/entities/{id}",
      "GET /v1/entities/{id}/memories",
      "POST /v1/relations",
      "GET /v1/relations",
      "GET /v1/relations/{id}",
      "DELETE /v1/relations/{id}",
      "PATCH /v1/relations/{id}",
      "GET /v1/entities/{id}/neighbors",
      "GET /v1/graph/path",
      "GET /v1/graph/export",
    ]) {
      expect(documented).toContain(must);
    }
  });

  it("each operation: unique operationId, its success status, path parameters, a body exactly when it takes one, bearer security", () => {
    const ids = new Set<string>();
    for (const r of ROUTES) {
      const op = doc.paths[openapiPath(r.path)][r.method.toLowerCase()];
      expect(op.operationId).toBeTruthy();
      expect(ids.has(op.operationId), op.operationId).toBe(false);
      ids.add(op.operationId);
      expect(Object.keys(op.responses)).toContain(String(r.status));
      for (const code of ["400", "401", "403", "404", "429"]) expect(Object.keys(op.responses), `${r.method} ${r.path}`).toContain(code);
      const pathParams = (op.parameters ?? []).filter((p: any) => p.in === "path").map((p: any) => p.name);
      expect(pathParams).toEqual([...r.path.matchAll(/:(\w+)/g)].map((m) => m[1]));
      expect(Boolean(op.requestBody), `${r.method} ${r.path} requestBody`).toBe(Boolean(r.body));
      if (r.body) expect(Object.keys(op.requestBody.content)).toEqual(["application/json"]);
    }
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.security).toEqual([{ bearer: [] }]);
    const list = doc.paths["/v1/memories"].get.parameters.map((p: any) => p.name);
    for (const q of ["userId", "agentId", "tags", "page", "limit"]) expect(list).toContain(q);
    for (const path of ["/v1/memories", "/v1/entities", "/v1/relations", "/v1/entities/{id}/memories"]) {
      const names = (doc.paths[path].get.parameters ?? []).filter((p: any) => p.in === "query").map((p: any) => p.name);
      expect(names, `${path} documents its paging`).toEqual(expect.arrayContaining(["page", "limit"]));
    }
  });
});

describe("request schemas agree with the service", () => {
  const samples: [string, string, object, boolean][] = [
    ["POST", "/v1/memories", { content: "hello", userId: "u" }, true],
    ["POST", "/v1/memories", { content: "hello", userId: "u", agentId: "a", tags: ["x"], metadata: { k: 1 } }, true],
    ["POST", "/v1/memories", { content: 1, userId: "u" }, false],
    ["POST", "/v1/memories", { content: "hello", userId: "u", tags: "x" }, false],
    ["POST", "/v1/memories", { content: "hello", userId: "u", bogus: 1 }, false],
    ["POST", "/v1/memories", { content: "hello", userId: "u", tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, false],
    ["POST", "/v1/memories/search", { query: "hello" }, true],
    ["POST", "/v1/memories/search", { query: "hello", threshold: 2 }, false],
    ["POST", "/v1/memories/search", { query: "hello", extra: true }, false],
    ["POST", "/v1/memories/search", {}, false],
    ["POST", "/v1/entities", { name: "Ada", type: "PERSON" }, true],
    ["POST", "/v1/entities", { name: "Ada", type: "person" }, false],
    ["POST", "/v1/entities", { name: "Ada", type: "PERSON", color: "red" }, false],
    ["PATCH", "/v1/entities/{id}", { description: "d" }, true],
    ["PATCH", "/v1/memories/{id}", { tags: ["a"] }, true],
    ["PATCH", "/v1/memories/{id}", { content: 5 }, false],
  ];

  for (const [method, path, body, ok] of samples) {
    it(`${method} ${path} ${JSON.stringify(body).slice(0, 60)} → ${ok ? "accepted" : "rejected"} by the schema and by the service`, async () => {
      const op = doc.paths[path][method.toLowerCase()];
      const validate = compile(op.requestBody.content["application/json"].schema);
      expect(validate(body), JSON.stringify(validate.errors)).toBe(ok);

      // The service agrees (a real id for PATCH, so success is possible).
      let concrete = path;
      if (path === "/v1/entities/{id}") concrete = `/v1/entities/${(await api.post("/v1/entities", { body: { name: `OA ${Math.random()}`, type: "OTHER" } })).body.id}`;
      if (path === "/v1/memories/{id}") concrete = `/v1/memories/${(await api.post("/v1/memories", { body: { content: "oa", userId: "u" } })).body.id}`;
      const res = await api.request(method)(concrete, { body });
      if (ok) expect(res.status, res.text).toBeLessThan(300);
      else expect(res.status, res.text).toBe(400);
    });
  }
});

// Regression: metadata (a z.custom object check) was documented as `{}`, any JSON value. On PATCH
// it is object-or-null (null clears it).
it("the documented request schemas reject non-object metadata, as the service does", async () => {
  for (const [method, path] of [["POST", "/v1/memories"], ["PATCH", "/v1/memories/{id}"], ["POST", "/v1/entities"], ["PATCH", "/v1/entities/{id}"], ["POST", "/v1/relations"]]) {
    const schema = doc.paths[path][method.toLowerCase()].requestBody.content["application/json"].schema;
    const metadata = schema.properties.metadata;
    const variants = metadata.anyOf ?? [metadata];
    expect(variants.some((v: { type?: string }) => v.type === "object"), `${method} ${path}`).toBe(true);
    expect(variants.every((v: { type?: string }) => v.type === "object" || (method === "PATCH" && v.type === "null")), `${method} ${path}`).toBe(true);
  }
  const res = await api.post("/v1/memories", { body: { content: "x", userId: "u", metadata: [1, 2] } });
  expect(res.status).toBe(400);
});

describe("response schemas describe real answers", () => {
  it("bodies of every endpoint validate against the documented success schema; error bodies against the error schema", async () => {
    const check = (method: string, path: string, status: number, body: unknown) => {
      const op = doc.paths[path][method.toLowerCase()];
      let response = op.responses[String(status)];
      if (response.$ref) response = doc.components.responses[response.$ref.split("/").pop()];
      const validate = compile(response.content["application/json"].schema);
      expect(validate(body), `${method} ${path} ${status}: ${JSON.stringify(validate.errors)}`).toBe(true);
    };
    const m = await api.post("/v1/memories", { body: { content: "schema check", userId: "u", tags: ["a"], metadata: { k: 1 } } });
    check("POST", "/v1/memories", 201, m.body);
    check("GET", "/v1/memories/{id}", 200, (await api.get(`/v1/memories/${m.body.id}`)).body);
    check("GET", "/v1/memories", 200, (await api.get("/v1/memories")).body);
    check("POST", "/v1/memories/search", 200, (await api.post("/v1/memories/search", { body: { query: "schema check" } })).body);
    check("PATCH", "/v1/memories/{id}", 200, (await api.patch(`/v1/memories/${m.body.id}`, { body: { content: "schema checked" } })).body);
    const e1 = await api.post("/v1/entities", { body: { name: "Schema A", type: "PERSON", description: "d", metadata: { x: 1 } } });
    const e2 = await api.post("/v1/entities", { body: { name: "Schema B", type: "EVENT" } });
    check("POST", "/v1/entities", 201, e1.body);
    check("GET", "/v1/entities/{id}", 200, (await api.get(`/v1/entities/${e1.body.id}`)).body);
    check("GET", "/v1/entities", 200, (await api.get("/v1/entities")).body);
    check("PATCH", "/v1/entities/{id}", 200, (await api.patch(`/v1/entities/${e1.body.id}`, { body: { description: "e" } })).body);
    check("GET", "/v1/entities/{id}/memories", 200, (await api.get(`/v1/entities/${e1.body.id}/memories`)).body);
    const r = await api.post("/v1/relations", { body: { sourceId: e1.body.id, targetId: e2.body.id, type: "KNOWS", metadata: { y: 1 } } });
    check("POST", "/v1/relations", 201, r.body);
    check("GET", "/v1/relations/{id}", 200, (await api.get(`/v1/relations/${r.body.id}`)).body);
    check("GET", "/v1/relations", 200, (await api.get("/v1/relations")).body);
    check("PATCH", "/v1/relations/{id}", 200, (await api.patch(`/v1/relations/${r.body.id}`, { body: { type: "WORKS_WITH", metadata: null } })).body);
    check("GET", "/v1/entities/{id}/neighbors", 200, (await api.get(`/v1/entities/${e1.body.id}/neighbors`, { query: { depth: 2 } })).body);
    check("GET", "/v1/graph/path", 200, (await api.get("/v1/graph/path", { query: { from: e1.body.id, to: e2.body.id } })).body);
    check("GET", "/v1/graph/path", 200, (await api.get("/v1/graph/path", { query: { from: e2.body.id, to: e1.body.id, direction: "out" } })).body);
    check("GET", "/v1/graph/export", 200, (await api.get("/v1/graph/export")).body);
    check("GET", "/v1/graph/path", 400, (await api.get("/v1/graph/path", { query: { from: e1.body.id } })).body);
    check("DELETE", "/v1/relations/{id}", 200, (await api.delete(`/v1/relations/${r.body.id}`)).body);
    check("DELETE", "/v1/entities/{id}", 200, (await api.delete(`/v1/entities/${e2.body.id}`)).body);
    check("DELETE", "/v1/memories/{id}", 200, (await api.delete(`/v1/memories/${m.body.id}`)).body);

    check("GET", "/v1/memories/{id}", 404, (await api.get("/v1/memories/mem_x")).body);
    check("POST", "/v1/memories", 400, (await api.post("/v1/memories", { body: {} })).body);
    check("GET", "/v1/memories", 401, (await client(server.url).get("/v1/memories")).body);

    // The schemas are not vacuous: a wrong body fails them.
    const strict = compile(doc.paths["/v1/memories/{id}"].get.responses["200"].content["application/json"].schema);
    expect(strict({ id: 1 })).toBe(false);
    expect(strict({ ...m.body, surprise: true })).toBe(false);
  });
});
