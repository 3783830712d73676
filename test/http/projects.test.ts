import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, expectError, startTestServer, type Client, type TestServer } from "../helpers/http-server.js";

/** Projects over real HTTP (an extension of the spec): create, list and search fields, their errors, and the OpenAPI document. */
let server: TestServer;
let A: Client;

beforeAll(async () => {
  server = await startTestServer();
  A = client(server.url, (await server.account("alpha")).key);
});
afterAll(() => server.close());

const ids = (items: { id: string }[]) => items.map((m) => m.id).sort();

describe("projects over HTTP", () => {
  it("stores the project, and lists and searches a project's view", async () => {
    const global = (await A.post("/v1/memories", { body: { content: "I prefer tabs", userId: "u" } })).body;
    const shop = await A.post("/v1/memories", { body: { content: "the shop deploys with fly.io", userId: "u", project: "shop" } });
    expect(shop.status).toBe(201);
    expect(shop.body.project).toBe("shop");
    expect(global).not.toHaveProperty("project");
    const blog = (await A.post("/v1/memories", { body: { content: "the blog deploys with netlify", userId: "u", project: "blog" } })).body;

    expect(ids((await A.get("/v1/memories", { query: { project: "shop" } })).body.items)).toEqual(ids([global, shop.body]));
    expect(ids((await A.get("/v1/memories", { query: { project: "shop", projectOnly: "true" } })).body.items)).toEqual([shop.body.id]);
    const hits = (await A.post("/v1/memories/search", { body: { query: "how does it deploy?", project: "blog", threshold: 0 } })).body.results;
    expect(ids(hits)).toEqual(ids([global, blog]));
    expect(hits.find((h: { id: string }) => h.id === blog.id).project).toBe("blog");
    const moved = await A.patch(`/v1/memories/${blog.id}`, { body: { project: null } });
    expect(moved.body).not.toHaveProperty("project");
  });

  it("refuses a bad project with VALIDATION_ERROR naming the field, and stores nothing", async () => {
    const before = (await A.get("/v1/memories")).body.pagination.total;
    for (const project of ["", "../x", "a b", 5, "x".repeat(101)]) {
      const err = expectError(await A.post("/v1/memories", { body: { content: "x", userId: "u", project } }), 400, "VALIDATION_ERROR");
      expect(err.details.map((d: { field: string }) => d.field)).toContain("project");
    }
    expectError(await A.get("/v1/memories", { query: { projectOnly: "true" } }), 400, "VALIDATION_ERROR");
    expectError(await A.get("/v1/memories", { query: { project: "shop", projectOnly: "maybe" } }), 400, "VALIDATION_ERROR");
    expectError(await A.post("/v1/memories/search", { body: { query: "x", project: "shop", projectOnly: "yes" } }), 400, "VALIDATION_ERROR");
    expect((await A.get("/v1/memories")).body.pagination.total).toBe(before);
  });

  it("documents the fields in the OpenAPI document", async () => {
    const doc = (await A.get("/v1/openapi.json")).body;
    const text = JSON.stringify(doc);
    expect(text).toContain('"projectOnly"');
    const listParams = doc.paths["/v1/memories"].get.parameters.map((p: { name: string }) => p.name);
    expect(listParams).toEqual(expect.arrayContaining(["project", "projectOnly"]));
  });
});
