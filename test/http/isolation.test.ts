import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, expectError, startTestServer, type ApiResponse, type Client, type TestServer } from "../helpers/http-server.js";

/**
 * Account isolation over real HTTP, endpoint by endpoint: account B never sees, lists, counts,
 * changes, links or deletes account A's data; A's ids answer B exactly like unknown ids; and A's
 * data is unchanged afterwards.
 */

let server: TestServer;
let A: Client;
let B: Client;
/** A's resources, as A first saw them. */
const a: Record<string, any> = {};
/** B's own resources. */
const b: Record<string, any> = {};
let aSnapshot: Record<string, unknown>;
let aRequests = 0;

const SHARED_USER = "shared-user";

async function snapshot(api: Client): Promise<Record<string, unknown>> {
  return {
    memory: (await api.get(`/v1/memories/${a.memory.id}`)).body,
    linked: (await api.get(`/v1/memories/${a.linked.id}`)).body,
    person: (await api.get(`/v1/entities/${a.person.id}`)).body,
    org: (await api.get(`/v1/entities/${a.org.id}`)).body,
    relation: (await api.get(`/v1/relations/${a.relation.id}`)).body,
    memories: (await api.get("/v1/memories", { query: { limit: 100 } })).body,
    entities: (await api.get("/v1/entities", { query: { limit: 100 } })).body,
    relations: (await api.get("/v1/relations", { query: { limit: 100 } })).body,
    personMemories: (await api.get(`/v1/entities/${a.person.id}/memories`)).body,
  };
}

/**
 * B's answer for A's id must be the answer for an unknown id of the same form: same status, code
 * and envelope keys, and the same message once the id is swapped.
 */
function expectSameAsUnknown(forA: ApiResponse, forUnknown: ApiResponse, aId: string, unknownId: string, code: string): void {
  const errA = expectError(forA, 404, code);
  const errU = expectError(forUnknown, 404, code);
  expect(errA.message.replaceAll(aId, "<id>")).toBe(errU.message.replaceAll(unknownId, "<id>"));
  expect(Object.keys(errA).sort()).toEqual(Object.keys(errU).sort());
  expect(forA.status).toBe(forUnknown.status);
}

beforeAll(async () => {
  server = await startTestServer();
  const rawA = client(server.url, (await server.account("alpha")).key);
  // Counts A's requests, so the quota check below knows exactly what A did.
  A = Object.fromEntries(
    Object.entries(rawA).map(([k, fn]) => [
      k,
      k === "request"
        ? (m: string) => (path: string, o?: object) => (aRequests++, (rawA.request(m) as any)(path, o))
        : (path: string, o?: object) => (aRequests++, (fn as any)(path, o)),
    ]),
  ) as Client;
  B = client(server.url, (await server.account("beta")).key);

  a.person = (await A.post("/v1/entities", { body: { name: "Ada Lovelace", type: "PERSON", description: "A's", metadata: { owner: "A" } } })).body;
  a.org = (await A.post("/v1/entities", { body: { name: "Analytical Engines", type: "ORGANIZATION" } })).body;
  a.relation = (await A.post("/v1/relations", { body: { sourceId: a.person.id, targetId: a.org.id, type: "WORKS_FOR", metadata: { since: 1843 } } })).body;
  a.memory = (await A.post("/v1/memories", { body: { content: "alpha secret launch codes", userId: SHARED_USER, agentId: "agent", tags: ["secret", "shared"], metadata: { owner: "A" } } })).body;
  a.linked = (await A.post("/v1/memories", { body: { content: "Ada wrote the first program", userId: SHARED_USER, entityIds: [a.person.id] } })).body;

  b.memory = (await B.post("/v1/memories", { body: { content: "beta public notes", userId: SHARED_USER, agentId: "agent", tags: ["shared"] } })).body;
  // The same folded name and type in another account is a new entity (201), not A's (200).
  const twin = await B.post("/v1/entities", { body: { name: "ada lovelace", type: "PERSON" } });
  expect(twin.status).toBe(201);
  expect(twin.body.id).not.toBe(a.person.id);
  b.person = twin.body;
  b.place = (await B.post("/v1/entities", { body: { name: "Beta Town", type: "LOCATION" } })).body;
  b.relation = (await B.post("/v1/relations", { body: { sourceId: b.person.id, targetId: b.place.id, type: "LOCATED_IN" } })).body;

  aSnapshot = await snapshot(A);
});

afterAll(async () => server?.close());

describe("B cannot reach A's memories", () => {
  const unknown = "mem_0000000000ZZZZZZZZZZZZZZ";

  it("GET /v1/memories/:id → the same 404 as an unknown id", async () => {
    expectSameAsUnknown(await B.get(`/v1/memories/${a.memory.id}`), await B.get(`/v1/memories/${unknown}`), a.memory.id, unknown, "MEMORY_NOT_FOUND");
  });

  it("PATCH /v1/memories/:id → the same 404 as an unknown id", async () => {
    const body = { content: "overwritten by B", tags: ["pwned"] };
    expectSameAsUnknown(await B.patch(`/v1/memories/${a.memory.id}`, { body }), await B.patch(`/v1/memories/${unknown}`, { body }), a.memory.id, unknown, "MEMORY_NOT_FOUND");
  });

  it("DELETE /v1/memories/:id → the same 404 as an unknown id", async () => {
    expectSameAsUnknown(await B.delete(`/v1/memories/${a.memory.id}`), await B.delete(`/v1/memories/${unknown}`), a.memory.id, unknown, "MEMORY_NOT_FOUND");
  });

  it("GET /v1/memories lists and counts only B's, whatever the filters", async () => {
    for (const query of [{}, { userId: SHARED_USER }, { agentId: "agent" }, { tags: "shared" }, { tags: "secret" }, { limit: 100 }]) {
      const res = await B.get("/v1/memories", { query });
      expect(res.status).toBe(200);
      const ids = res.body.items.map((m: any) => m.id);
      expect(ids).not.toContain(a.memory.id);
      expect(ids).not.toContain(a.linked.id);
      expect(res.body.pagination.total, JSON.stringify(query)).toBe(ids.length);
      expect(ids.every((id: string) => id === b.memory.id)).toBe(true);
    }
    expect((await B.get("/v1/memories")).body.pagination).toEqual({ page: 1, limit: 20, total: 1, totalPages: 1 });
    expect((await B.get("/v1/memories", { query: { tags: "secret" } })).body.pagination.total).toBe(0);
  });

  it("POST /v1/memories/search never returns A's memories, even for A's exact text at threshold 0", async () => {
    for (const body of [
      { query: "alpha secret launch codes", threshold: 0, limit: 100 },
      { query: "alpha secret launch codes", userId: SHARED_USER, threshold: 0 },
      { query: "Ada wrote the first program", tags: ["shared"], threshold: 0 },
      { query: "alpha secret launch codes", agentId: "agent", threshold: 0 },
    ]) {
      const res = await B.post("/v1/memories/search", { body });
      expect(res.status).toBe(200);
      const ids = res.body.results.map((h: any) => h.id);
      expect(ids).not.toContain(a.memory.id);
      expect(ids).not.toContain(a.linked.id);
    }
    // Sanity: A finds it.
    expect((await A.post("/v1/memories/search", { body: { query: "alpha secret launch codes" } })).body.results[0].id).toBe(a.memory.id);
  });

  it("ids crafted to escape the account filter are unknown ids", async () => {
    for (const id of [`${a.memory.id}' OR '1'='1`, `' OR accountId != '`, `${a.memory.id}"`, "%", "*"]) {
      expectError(await B.get(`/v1/memories/${encodeURIComponent(id)}`), 404, "MEMORY_NOT_FOUND");
      expectError(await B.delete(`/v1/memories/${encodeURIComponent(id)}`), 404, "MEMORY_NOT_FOUND");
    }
    for (const query of [{ userId: "' OR '1'='1" }, { tags: "secret' OR '1'='1" }, { agentId: "x') OR (1=1" }]) {
      const res = await B.get("/v1/memories", { query });
      expect(res.status).toBe(200);
      expect(res.body.items).toEqual([]);
    }
  });
});

describe("B cannot reach A's entities", () => {
  const unknown = "ent_0000000000ZZZZZZZZZZZZZZ";

  it("GET, PATCH, DELETE /v1/entities/:id and GET /v1/entities/:id/memories → the same 404 as an unknown id", async () => {
    expectSameAsUnknown(await B.get(`/v1/entities/${a.person.id}`), await B.get(`/v1/entities/${unknown}`), a.person.id, unknown, "ENTITY_NOT_FOUND");
    const body = { name: "Renamed by B" };
    expectSameAsUnknown(await B.patch(`/v1/entities/${a.person.id}`, { body }), await B.patch(`/v1/entities/${unknown}`, { body }), a.person.id, unknown, "ENTITY_NOT_FOUND");
    expectSameAsUnknown(await B.delete(`/v1/entities/${a.org.id}`), await B.delete(`/v1/entities/${unknown}`), a.org.id, unknown, "ENTITY_NOT_FOUND");
    expectSameAsUnknown(
      await B.get(`/v1/entities/${a.person.id}/memories`),
      await B.get(`/v1/entities/${unknown}/memories`),
      a.person.id,
      unknown,
      "ENTITY_NOT_FOUND",
    );
  });

  it("GET /v1/entities lists, searches and counts only B's", async () => {
    for (const query of [{}, { type: "PERSON" }, { type: "ORGANIZATION" }, { search: "ada" }, { search: "Analytical" }, { limit: 100 }]) {
      const res = await B.get("/v1/entities", { query });
      expect(res.status).toBe(200);
      const ids = res.body.items.map((e: any) => e.id);
      expect(ids).not.toContain(a.person.id);
      expect(ids).not.toContain(a.org.id);
      expect(res.body.pagination.total, JSON.stringify(query)).toBe(ids.length);
    }
    expect((await B.get("/v1/entities")).body.pagination.total).toBe(2);
    expect((await B.get("/v1/entities", { query: { search: "ada" } })).body.items.map((e: any) => e.id)).toEqual([b.person.id]);
    expect((await B.get("/v1/entities", { query: { type: "ORGANIZATION" } })).body.pagination.total).toBe(0);
  });

  it("B cannot link A's entity to a memory on create or PATCH (ENTITY_NOT_FOUND), and nothing changes", async () => {
    const before = (await B.get("/v1/memories")).body.pagination.total;
    expectError(await B.post("/v1/memories", { body: { content: "link attempt", userId: "u", entityIds: [a.person.id] } }), 404, "ENTITY_NOT_FOUND", {
      missing: [a.person.id],
    });
    expectError(await B.post("/v1/memories", { body: { content: "link attempt", userId: "u", entityIds: [b.person.id, a.org.id] } }), 404, "ENTITY_NOT_FOUND", {
      missing: [a.org.id],
    });
    expect((await B.get("/v1/memories")).body.pagination.total).toBe(before);
    expectError(await B.patch(`/v1/memories/${b.memory.id}`, { body: { entityIds: [a.person.id] } }), 404, "ENTITY_NOT_FOUND");
    expect((await B.get(`/v1/memories/${b.memory.id}`)).body).toEqual(b.memory);
    // A's memory linked to A's entity is not listed under B's same-named entity.
    expect((await B.get(`/v1/entities/${b.person.id}/memories`)).body.pagination.total).toBe(0);
  });

  it("renaming B's entity to A's entity's name is allowed (the twin check is per account)", async () => {
    const e = (await B.post("/v1/entities", { body: { name: "Beta Org", type: "ORGANIZATION" } })).body;
    const res = await B.patch(`/v1/entities/${e.id}`, { body: { name: "Analytical Engines" } });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe("Analytical Engines");
    expect((await B.delete(`/v1/entities/${e.id}`)).status).toBe(200);
  });
});

describe("B cannot reach A's relations", () => {
  const unknown = "rel_0000000000ZZZZZZZZZZZZZZ";

  it("GET and DELETE /v1/relations/:id → the same 404 as an unknown id", async () => {
    expectSameAsUnknown(await B.get(`/v1/relations/${a.relation.id}`), await B.get(`/v1/relations/${unknown}`), a.relation.id, unknown, "RELATION_NOT_FOUND");
    expectSameAsUnknown(await B.delete(`/v1/relations/${a.relation.id}`), await B.delete(`/v1/relations/${unknown}`), a.relation.id, unknown, "RELATION_NOT_FOUND");
  });

  it("GET /v1/relations lists and counts only B's, also when filtering by A's entity ids", async () => {
    for (const query of [{}, { type: "WORKS_FOR" }, { sourceId: a.person.id }, { targetId: a.org.id }, { limit: 100 }]) {
      const res = await B.get("/v1/relations", { query });
      expect(res.status).toBe(200);
      const ids = res.body.items.map((r: any) => r.id);
      expect(ids).not.toContain(a.relation.id);
      expect(res.body.pagination.total, JSON.stringify(query)).toBe(ids.length);
    }
    expect((await B.get("/v1/relations")).body.items.map((r: any) => r.id)).toEqual([b.relation.id]);
    expect((await B.get("/v1/relations", { query: { sourceId: a.person.id } })).body.pagination.total).toBe(0);
  });

  it("POST /v1/relations with A's entity as source or target → SOURCE_/TARGET_ENTITY_NOT_FOUND, nothing created", async () => {
    const before = (await B.get("/v1/relations")).body.pagination.total;
    expectError(await B.post("/v1/relations", { body: { sourceId: a.person.id, targetId: b.place.id, type: "KNOWS" } }), 404, "SOURCE_ENTITY_NOT_FOUND");
    expectError(await B.post("/v1/relations", { body: { sourceId: b.person.id, targetId: a.org.id, type: "KNOWS" } }), 404, "TARGET_ENTITY_NOT_FOUND");
    expectError(await B.post("/v1/relations", { body: { sourceId: a.person.id, targetId: a.org.id, type: "KNOWS" } }), 404, "SOURCE_ENTITY_NOT_FOUND");
    expect((await B.get("/v1/relations")).body.pagination.total).toBe(before);
    expect((await A.get("/v1/relations")).body.pagination.total).toBe(1);
  });

  it("deleting B's entity cascades only B's relations", async () => {
    const p = (await B.post("/v1/entities", { body: { name: "Cascade Probe", type: "PERSON" } })).body;
    await B.post("/v1/relations", { body: { sourceId: p.id, targetId: b.place.id, type: "KNOWS" } });
    const res = await B.delete(`/v1/entities/${p.id}`);
    expect(res.body).toEqual({ success: true, id: p.id, deletedRelations: 1 });
  });
});

describe("A afterwards", () => {
  it("A's data is exactly as before every attempt by B", async () => {
    expect(await snapshot(A)).toEqual(aSnapshot);
    expect((aSnapshot.memories as any).pagination.total).toBe(2);
    expect((aSnapshot.entities as any).pagination.total).toBe(2);
    expect((aSnapshot.relations as any).pagination.total).toBe(1);
    expect((aSnapshot.personMemories as any).items.map((m: any) => m.id)).toEqual([a.linked.id]);
    expect(aSnapshot.memory).toEqual(a.memory);
    expect(aSnapshot.person).toEqual(a.person);
  });

  it("A cannot reach B's data either", async () => {
    expectError(await A.get(`/v1/memories/${b.memory.id}`), 404, "MEMORY_NOT_FOUND");
    expectError(await A.get(`/v1/entities/${b.person.id}`), 404, "ENTITY_NOT_FOUND");
    expectError(await A.get(`/v1/relations/${b.relation.id}`), 404, "RELATION_NOT_FOUND");
  });

  it("B's requests never counted against A's quota", async () => {
    const res = await A.get("/v1/memories");
    expect(Number(res.headers.get("x-quota-used"))).toBe(aRequests);
    const ledgerB = await server.ledger.usage((await server.accounts.resolve("beta")).id, null);
    expect(ledgerB.used).toBeGreaterThan(40);
  });
});
