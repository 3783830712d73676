import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as R from "../../src/schemas/responses.js";
import { client, ISO, startTestServer, type Client, type TestServer } from "../helpers/http-server.js";

/**
 * Every endpoint's success answer over real HTTP: status, shape field for field (the zod response
 * schemas are strict, so an extra field fails), key order where the spec lists the fields, and
 * what each operation does to the data.
 */

const MEMORY_FULL_KEYS = ["id", "content", "userId", "agentId", "tags", "metadata", "createdAt", "updatedAt"];
const MEMORY_LIST_KEYS = ["id", "content", "userId", "agentId", "tags", "createdAt", "updatedAt"];
const HIT_KEYS = ["id", "content", "score", "userId", "agentId", "tags", "createdAt"];
const ENTITY_FULL_KEYS = ["id", "name", "type", "description", "metadata", "createdAt", "updatedAt"];
const ENTITY_LIST_KEYS = ["id", "name", "type", "description", "createdAt", "updatedAt"];
const RELATION_CREATE_KEYS = ["id", "sourceId", "targetId", "type", "metadata", "createdAt"];

let server: TestServer;
let api: Client;

beforeAll(async () => {
  server = await startTestServer();
  const account = await server.account("shapes");
  api = client(server.url, account.key);
});
afterAll(async () => server?.close());

/** Keys of `obj`, in order. */
const keys = (obj: object) => Object.keys(obj);

describe("memories", () => {
  it("POST /v1/memories → 201 with the full memory, fields in the spec's order", async () => {
    const res = await api.post("/v1/memories", {
      body: { content: "Alice prefers green tea", userId: "m-create", agentId: "bot", tags: ["prefs", "drinks"], metadata: { source: "chat", n: [1, { x: null }] } },
    });
    expect(res.status).toBe(201);
    const m = R.Memory.parse(res.body);
    expect(keys(res.body)).toEqual(MEMORY_FULL_KEYS);
    expect(m.id).toMatch(/^mem_[0-9A-Z]{24}$/);
    expect(m).toMatchObject({ content: "Alice prefers green tea", userId: "m-create", agentId: "bot", tags: ["prefs", "drinks"], metadata: { source: "chat", n: [1, { x: null }] } });
    expect(m.createdAt).toMatch(ISO);
    expect(m.updatedAt).toBe(m.createdAt);
  });

  it("omits agentId, tags (also when empty) and metadata when not supplied", async () => {
    const res = await api.post("/v1/memories", { body: { content: "bare memory", userId: "m-bare", tags: [] } });
    expect(res.status).toBe(201);
    R.Memory.parse(res.body);
    expect(keys(res.body)).toEqual(["id", "content", "userId", "createdAt", "updatedAt"]);
  });

  it("GET /v1/memories/:id → 200 with exactly what create returned", async () => {
    const created = await api.post("/v1/memories", { body: { content: "get me", userId: "m-get", tags: ["t"], metadata: { a: 1 } } });
    const res = await api.get(`/v1/memories/${created.body.id}`);
    expect(res.status).toBe(200);
    R.Memory.parse(res.body);
    expect(res.body).toEqual(created.body);
    expect(keys(res.body)).toEqual(keys(created.body));
  });

  it("GET /v1/memories → 200, list items without metadata, newest first, with pagination", async () => {
    const ids: string[] = [];
    for (const [i, extra] of [{ agentId: "a1", metadata: { secret: 1 } }, { tags: ["x"] }, {}].entries()) {
      ids.push((await api.post("/v1/memories", { body: { content: `list item ${i}`, userId: "m-list", ...extra } })).body.id);
    }
    const res = await api.get("/v1/memories", { query: { userId: "m-list" } });
    expect(res.status).toBe(200);
    const page = R.page(R.MemoryListItem).parse(res.body);
    expect(keys(res.body)).toEqual(["items", "pagination"]);
    expect(keys(res.body.pagination)).toEqual(["page", "limit", "total", "totalPages"]);
    expect(page.pagination).toEqual({ page: 1, limit: 20, total: 3, totalPages: 1 });
    expect(page.items.map((m) => m.id)).toEqual([...ids].reverse());
    for (const item of res.body.items) {
      expect(item).not.toHaveProperty("metadata");
      const expected = MEMORY_LIST_KEYS.filter((k) => k in item);
      expect(keys(item)).toEqual(expected);
    }
    expect(res.body.items[2]).toMatchObject({ agentId: "a1" });
    expect(res.body.items[1]).toMatchObject({ tags: ["x"] });
  });

  it("GET /v1/memories filters by userId, agentId and tags (AND)", async () => {
    await api.post("/v1/memories", { body: { content: "f1", userId: "m-filter", agentId: "ag", tags: ["a", "b"] } });
    await api.post("/v1/memories", { body: { content: "f2", userId: "m-filter", tags: ["a"] } });
    await api.post("/v1/memories", { body: { content: "f3", userId: "m-filter-other", agentId: "ag", tags: ["a", "b"] } });
    const content = async (query: Record<string, string>) => (await api.get("/v1/memories", { query })).body.items.map((m: any) => m.content).sort();
    expect(await content({ userId: "m-filter" })).toEqual(["f1", "f2"]);
    expect(await content({ userId: "m-filter", agentId: "ag" })).toEqual(["f1"]);
    expect(await content({ userId: "m-filter", tags: "a" })).toEqual(["f1", "f2"]);
    expect(await content({ userId: "m-filter", tags: "a,b" })).toEqual(["f1"]);
    expect(await content({ agentId: "ag", tags: "b" })).toEqual(["f1", "f3"]);
  });

  it("PATCH /v1/memories/:id → 200: replaces given fields, null clears, re-embeds content, bumps only updatedAt", async () => {
    const created = (await api.post("/v1/memories", { body: { content: "the old walrus text", userId: "m-patch", agentId: "bot", tags: ["a"], metadata: { v: 1, keep: true } } })).body;
    server.clock.advance(1000);
    const res = await api.patch(`/v1/memories/${created.id}`, { body: { content: "a brand new zebra sentence", metadata: { v: 2 }, agentId: null, tags: ["b", "c"] } });
    expect(res.status).toBe(200);
    const m = R.Memory.parse(res.body);
    expect(keys(res.body)).toEqual(["id", "content", "userId", "tags", "metadata", "createdAt", "updatedAt"]);
    expect(m).toMatchObject({ id: created.id, content: "a brand new zebra sentence", userId: "m-patch", tags: ["b", "c"], metadata: { v: 2 }, createdAt: created.createdAt });
    expect(m.updatedAt > created.updatedAt).toBe(true);
    expect((await api.get(`/v1/memories/${created.id}`)).body).toEqual(res.body);

    // Re-embedded: the new words find it, the old ones no longer do.
    const find = async (query: string) =>
      (await api.post("/v1/memories/search", { body: { query, userId: "m-patch", threshold: 0.3 } })).body.results.map((h: any) => h.id);
    expect(await find("brand new zebra sentence")).toContain(created.id);
    expect(await find("old walrus text")).not.toContain(created.id);

    // An absent field stays; tags null clears.
    const cleared = await api.patch(`/v1/memories/${created.id}`, { body: { tags: null } });
    expect(cleared.status).toBe(200);
    expect(keys(cleared.body)).toEqual(["id", "content", "userId", "metadata", "createdAt", "updatedAt"]);
    expect(cleared.body.content).toBe("a brand new zebra sentence");
  });

  it("DELETE /v1/memories/:id → 200 {success, id}; the memory is gone for good", async () => {
    const { id } = (await api.post("/v1/memories", { body: { content: "delete me", userId: "m-del" } })).body;
    const res = await api.delete(`/v1/memories/${id}`);
    expect(res.status).toBe(200);
    expect(R.Deleted.parse(res.body)).toEqual({ success: true, id });
    expect(keys(res.body)).toEqual(["success", "id"]);
    expect((await api.get(`/v1/memories/${id}`)).status).toBe(404);
    expect((await api.delete(`/v1/memories/${id}`)).status).toBe(404);
    expect((await api.get("/v1/memories", { query: { userId: "m-del" } })).body.pagination.total).toBe(0);
  });

  it("POST /v1/memories/search → 200 {results}: hit shape, score in [0,1] descending, threshold and limit", async () => {
    const user = "m-search";
    const a = (await api.post("/v1/memories", { body: { content: "coffee beans roasted dark", userId: user, agentId: "barista", tags: ["coffee"], metadata: { m: 1 } } })).body;
    const b = (await api.post("/v1/memories", { body: { content: "coffee beans", userId: user } })).body;
    await api.post("/v1/memories", { body: { content: "quantum chromodynamics lecture", userId: user } });

    const res = await api.post("/v1/memories/search", { body: { query: "coffee beans", userId: user } });
    expect(res.status).toBe(200);
    const { results } = R.SearchResults.parse(res.body);
    expect(keys(res.body)).toEqual(["results"]);
    expect(results.map((h) => h.id)).toEqual([b.id, a.id]);
    for (const h of res.body.results) expect(keys(h)).toEqual(HIT_KEYS.filter((k) => k in h));
    expect(keys(res.body.results[0])).toEqual(["id", "content", "score", "userId", "createdAt"]);
    expect(keys(res.body.results[1])).toEqual(HIT_KEYS);
    expect(results[0].score).toBeGreaterThan(0.99);
    expect(results[0].score).toBeGreaterThanOrEqual(results[1].score);
    for (const h of results) expect(h.score).toBeGreaterThanOrEqual(0.5);
    // In semantic mode the score is the clamped cosine itself: an identical text scores 1.
    const semantic = (await api.post("/v1/memories/search", { body: { query: "coffee beans", userId: user, mode: "semantic" } })).body.results;
    expect(semantic[0].score).toBeCloseTo(1, 5);
    expect(res.body.results[1]).not.toHaveProperty("metadata");
    expect(res.body.results[1]).not.toHaveProperty("updatedAt");

    const all = (await api.post("/v1/memories/search", { body: { query: "coffee beans", userId: user, threshold: 0 } })).body.results;
    expect(all).toHaveLength(3);
    for (let i = 1; i < all.length; i++) expect(all[i - 1].score).toBeGreaterThanOrEqual(all[i].score);
    const one = (await api.post("/v1/memories/search", { body: { query: "coffee beans", userId: user, threshold: 0, limit: 1 } })).body.results;
    expect(one.map((h: any) => h.id)).toEqual([b.id]);
    const strict = (await api.post("/v1/memories/search", { body: { query: "coffee beans", userId: user, threshold: 1, mode: "semantic" } })).body.results;
    expect(strict.map((h: any) => h.id)).toEqual([b.id]);
  });

  it("POST /v1/memories/search with explain: true → each hit's signals and what each added, matching its score", async () => {
    const user = "m-explain";
    await api.post("/v1/memories", { body: { content: "coffee beans roasted dark", userId: user } });
    const res = await api.post("/v1/memories/search", { body: { query: "coffee beans", userId: user, explain: true } });
    expect(res.status).toBe(200);
    const [hit] = R.SearchResults.parse(res.body).results;
    const e = hit.explanation!;
    expect(e.mode).toBe("hybrid");
    expect(e.score).toBe(hit.score);
    expect(Object.keys(e.signals).sort()).toEqual(["cosine", "keyword", "turn"]);
    expect(e.signals.keyword).toBe(1);
    const logit = Object.values(e.contributions!).reduce((a, b) => a + b, 0);
    expect(hit.score).toBeCloseTo(1 / (1 + Math.exp(-logit)), 12);
    expect(typeof e.model).toBe("string");
    // Not asked for, not there; and a bad value is refused.
    expect((await api.post("/v1/memories/search", { body: { query: "coffee beans", userId: user } })).body.results[0]).not.toHaveProperty("explanation");
    const bad = await api.post("/v1/memories/search", { body: { query: "coffee beans", userId: user, explain: "yes" } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("VALIDATION_ERROR");
  });

  it("POST /v1/memories/search filters by userId, agentId and tags (AND)", async () => {
    const mk = (content: string, extra: object) => api.post("/v1/memories", { body: { content, ...extra } });
    const x = (await mk("mango smoothie recipe", { userId: "s-f1", agentId: "chef", tags: ["food", "drink"] })).body;
    const y = (await mk("mango smoothie recipe", { userId: "s-f1", tags: ["food"] })).body;
    const z = (await mk("mango smoothie recipe", { userId: "s-f2", agentId: "chef", tags: ["food", "drink"] })).body;
    const ids = async (filter: object) =>
      (await api.post("/v1/memories/search", { body: { query: "mango smoothie recipe", ...filter } })).body.results.map((h: any) => h.id).sort();
    expect(await ids({ userId: "s-f1" })).toEqual([x.id, y.id].sort());
    expect(await ids({ agentId: "chef" })).toEqual([x.id, z.id].sort());
    expect(await ids({ tags: ["food", "drink"] })).toEqual([x.id, z.id].sort());
    expect(await ids({ userId: "s-f1", tags: ["drink"] })).toEqual([x.id]);
    expect(await ids({ tags: ["food", "nope"] })).toEqual([]);
  });
});

describe("entities", () => {
  it("POST /v1/entities → 201 with the full entity; the same folded name and type → 200 with the existing one", async () => {
    const res = await api.post("/v1/entities", { body: { name: "Zoë  Saldaña", type: "PERSON", description: "actor", metadata: { born: 1978 } } });
    expect(res.status).toBe(201);
    const e = R.Entity.parse(res.body);
    expect(keys(res.body)).toEqual(ENTITY_FULL_KEYS);
    expect(e).toMatchObject({ name: "Zoë  Saldaña", type: "PERSON", description: "actor", metadata: { born: 1978 } });
    expect(e.updatedAt).toBe(e.createdAt);

    const again = await api.post("/v1/entities", { body: { name: "zoe saldana", type: "PERSON", description: "other text" } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(res.body);

    const otherType = await api.post("/v1/entities", { body: { name: "Zoe Saldana", type: "OTHER" } });
    expect(otherType.status).toBe(201);
    expect(otherType.body.id).not.toBe(e.id);
    expect(keys(otherType.body)).toEqual(["id", "name", "type", "createdAt", "updatedAt"]);
  });

  it("accepts each of the seven entity types", async () => {
    for (const type of ["PERSON", "ORGANIZATION", "LOCATION", "PRODUCT", "EVENT", "CONCEPT", "OTHER"]) {
      const res = await api.post("/v1/entities", { body: { name: `type probe ${type}`, type } });
      expect(res.status, type).toBe(201);
      expect(R.Entity.parse(res.body).type).toBe(type);
    }
  });

  it("GET /v1/entities/:id → 200 with the full entity", async () => {
    const created = (await api.post("/v1/entities", { body: { name: "Get Corp", type: "ORGANIZATION", metadata: { k: "v" } } })).body;
    const res = await api.get(`/v1/entities/${created.id}`);
    expect(res.status).toBe(200);
    R.Entity.parse(res.body);
    expect(res.body).toEqual(created);
    expect(keys(res.body)).toEqual(keys(created));
  });

  it("GET /v1/entities → 200, items without metadata, filters by type and by name ignoring case and accents", async () => {
    const a = (await api.post("/v1/entities", { body: { name: "Listé Alpha", type: "CONCEPT", description: "d", metadata: { hidden: true } } })).body;
    const b = (await api.post("/v1/entities", { body: { name: "liste beta", type: "CONCEPT" } })).body;
    const c = (await api.post("/v1/entities", { body: { name: "LISTE gamma", type: "EVENT" } })).body;
    const res = await api.get("/v1/entities", { query: { search: "LISTE" } });
    expect(res.status).toBe(200);
    const page = R.page(R.EntityListItem).parse(res.body);
    expect(page.items.map((e) => e.id).sort()).toEqual([a.id, b.id, c.id].sort());
    expect(page.pagination).toEqual({ page: 1, limit: 20, total: 3, totalPages: 1 });
    for (const item of res.body.items) {
      expect(item).not.toHaveProperty("metadata");
      expect(keys(item)).toEqual(ENTITY_LIST_KEYS.filter((k) => k in item));
    }
    expect(res.body.items.find((e: any) => e.id === a.id)).toEqual({ id: a.id, name: "Listé Alpha", type: "CONCEPT", description: "d", createdAt: a.createdAt, updatedAt: a.updatedAt });

    const typed = await api.get("/v1/entities", { query: { search: "liste", type: "CONCEPT" } });
    expect(typed.body.items.map((e: any) => e.id)).toEqual([b.id, a.id]);
    const all = await api.get("/v1/entities", { query: { type: "EVENT" } });
    expect(all.body.items.map((e: any) => e.id)).toContain(c.id);
    expect(all.body.items.every((e: any) => e.type === "EVENT")).toBe(true);
  });

  it("PATCH /v1/entities/:id → 200: replaces given fields, null clears, bumps only updatedAt", async () => {
    const created = (await api.post("/v1/entities", { body: { name: "Patchy", type: "PRODUCT", description: "old", metadata: { v: 1 } } })).body;
    server.clock.advance(1000);
    const res = await api.patch(`/v1/entities/${created.id}`, { body: { name: "Patchy II", type: "EVENT", description: null, metadata: { v: 2 } } });
    expect(res.status).toBe(200);
    const e = R.Entity.parse(res.body);
    expect(keys(res.body)).toEqual(["id", "name", "type", "metadata", "createdAt", "updatedAt"]);
    expect(e).toMatchObject({ id: created.id, name: "Patchy II", type: "EVENT", metadata: { v: 2 }, createdAt: created.createdAt });
    expect(e.updatedAt > created.updatedAt).toBe(true);
    expect((await api.get(`/v1/entities/${created.id}`)).body).toEqual(res.body);
    // The new name and type now fold onto it.
    const twin = await api.post("/v1/entities", { body: { name: "PATCHY ii", type: "EVENT" } });
    expect(twin.status).toBe(200);
    expect(twin.body.id).toBe(created.id);
  });

  it("DELETE /v1/entities/:id → 200 {success, id, deletedRelations}, cascading to its relations and memory links", async () => {
    const ada = (await api.post("/v1/entities", { body: { name: "Cascade Ada", type: "PERSON" } })).body;
    const org = (await api.post("/v1/entities", { body: { name: "Cascade Org", type: "ORGANIZATION" } })).body;
    const place = (await api.post("/v1/entities", { body: { name: "Cascade Town", type: "LOCATION" } })).body;
    const r1 = (await api.post("/v1/relations", { body: { sourceId: ada.id, targetId: org.id, type: "WORKS_FOR" } })).body;
    const r2 = (await api.post("/v1/relations", { body: { sourceId: place.id, targetId: ada.id, type: "RELATED_TO" } })).body;
    const r3 = (await api.post("/v1/relations", { body: { sourceId: org.id, targetId: place.id, type: "LOCATED_IN" } })).body;
    const mem = (await api.post("/v1/memories", { body: { content: "Ada works at Org", userId: "cascade", entityIds: [ada.id, org.id] } })).body;
    expect(mem.entityIds).toEqual([ada.id, org.id]);

    const res = await api.delete(`/v1/entities/${ada.id}`);
    expect(res.status).toBe(200);
    expect(R.EntityDeleted.parse(res.body)).toEqual({ success: true, id: ada.id, deletedRelations: 2 });
    expect(keys(res.body)).toEqual(["success", "id", "deletedRelations"]);

    expect((await api.get(`/v1/entities/${ada.id}`)).status).toBe(404);
    expect((await api.get(`/v1/relations/${r1.id}`)).status).toBe(404);
    expect((await api.get(`/v1/relations/${r2.id}`)).status).toBe(404);
    expect((await api.get(`/v1/relations/${r3.id}`)).status).toBe(200);
    const listed = (await api.get("/v1/relations", { query: { limit: 100 } })).body.items.map((r: any) => r.id);
    expect(listed).not.toContain(r1.id);
    expect(listed).not.toContain(r2.id);
    expect(listed).toContain(r3.id);
    // The memory survives, linked only to what still exists.
    expect((await api.get(`/v1/memories/${mem.id}`)).body.entityIds).toEqual([org.id]);
    const del2 = await api.delete(`/v1/entities/${org.id}`);
    expect(del2.body).toEqual({ success: true, id: org.id, deletedRelations: 1 });
    expect((await api.get(`/v1/memories/${mem.id}`)).body).not.toHaveProperty("entityIds");
  });

  it("GET /v1/entities/:id/memories → 200 page of list-shape memories linked to the entity, newest first", async () => {
    const e = (await api.post("/v1/entities", { body: { name: "Linked Thing", type: "OTHER" } })).body;
    const other = (await api.post("/v1/entities", { body: { name: "Unlinked Thing", type: "OTHER" } })).body;
    const m1 = (await api.post("/v1/memories", { body: { content: "first mention", userId: "link", metadata: { x: 1 }, entityIds: [e.id] } })).body;
    await api.post("/v1/memories", { body: { content: "no mention", userId: "link" } });
    const m2 = (await api.post("/v1/memories", { body: { content: "second mention", userId: "link" } })).body;
    const linked = await api.patch(`/v1/memories/${m2.id}`, { body: { entityIds: [e.id, other.id] } });
    expect(linked.body.entityIds).toEqual([e.id, other.id]);
    expect(R.Memory.parse(linked.body)).toBeTruthy();

    const res = await api.get(`/v1/entities/${e.id}/memories`);
    expect(res.status).toBe(200);
    const page = R.page(R.MemoryListItem).parse(res.body);
    expect(page.items.map((m) => m.id)).toEqual([m2.id, m1.id]);
    expect(page.pagination).toEqual({ page: 1, limit: 20, total: 2, totalPages: 1 });
    for (const item of res.body.items) {
      expect(item).not.toHaveProperty("metadata");
      expect(item).not.toHaveProperty("entityIds");
    }
    const paged = (await api.get(`/v1/entities/${e.id}/memories`, { query: { page: 2, limit: 1 } })).body;
    expect(paged).toEqual({ items: [res.body.items[1]], pagination: { page: 2, limit: 1, total: 2, totalPages: 2 } });
    expect((await api.get(`/v1/entities/${other.id}/memories`)).body.items.map((m: any) => m.id)).toEqual([m2.id]);
  });
});

describe("ordering", () => {
  it("lists are newest first, then id descending when createdAt ties, and stable across pages", async () => {
    server.clock.advance(10_000);
    server.clock.freeze();
    const tied: string[] = [];
    try {
      for (let i = 0; i < 5; i++) tied.push((await api.post("/v1/memories", { body: { content: `tie ${i}`, userId: "tie" } })).body.id);
    } finally {
      server.clock.freeze(false);
    }
    const later = (await api.post("/v1/memories", { body: { content: "after the tie", userId: "tie" } })).body.id;
    const all = (await api.get("/v1/memories", { query: { userId: "tie" } })).body.items;
    expect(new Set(all.slice(1).map((m: any) => m.createdAt)).size).toBe(1);
    const expected = [later, ...[...tied].sort().reverse()];
    expect(all.map((m: any) => m.id)).toEqual(expected);
    const paged: string[] = [];
    for (let page = 1; page <= 3; page++) paged.push(...(await api.get("/v1/memories", { query: { userId: "tie", limit: 2, page } })).body.items.map((m: any) => m.id));
    expect(paged).toEqual(expected);
  });

  it("search ties on score are broken by createdAt, newest first", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await api.post("/v1/memories", { body: { content: "identical tie breaker sentence", userId: "search-tie", dedupe: false } })).body.id);
    const results = (await api.post("/v1/memories/search", { body: { query: "identical tie breaker sentence", userId: "search-tie" } })).body.results;
    expect(results.map((h: any) => h.id)).toEqual([...ids].reverse());
    expect(new Set(results.map((h: any) => h.score)).size).toBe(1);
  });
});

describe("concurrency and special characters", () => {
  it("parallel creates of one folded name and type make exactly one entity: one 201, the rest 200 with its id", async () => {
    const all = await Promise.all(
      ["Same Name", "same name", "SAME  NAME", "Sáme Name", "same name", "Same Name", "same NAME", "Same Name"].map((name) =>
        api.post("/v1/entities", { body: { name, type: "CONCEPT" } }),
      ),
    );
    expect(all.filter((r) => r.status === 201)).toHaveLength(1);
    expect(all.filter((r) => r.status === 200)).toHaveLength(7);
    expect(new Set(all.map((r) => r.body.id)).size).toBe(1);
    expect((await api.get("/v1/entities", { query: { search: "same name", type: "CONCEPT" } })).body.pagination.total).toBe(1);
  });

  it("parallel memory creates all land, each once", async () => {
    const all = await Promise.all(Array.from({ length: 10 }, (_, i) => api.post("/v1/memories", { body: { content: `parallel ${i}`, userId: "par" } })));
    expect(all.map((r) => r.status)).toEqual(Array(10).fill(201));
    const listed = (await api.get("/v1/memories", { query: { userId: "par", limit: 100 } })).body;
    expect(listed.pagination.total).toBe(10);
    expect(listed.items.map((m: any) => m.id).sort()).toEqual(all.map((r) => r.body.id).sort());
  });

  it("quotes, backslashes and non-ASCII in userId, tags and content round-trip and filter exactly", async () => {
    const userId = `it's "me" \ ü`;
    const tags = ["it's", 'a"b', "ü", "back\\slash", "%", "_"];
    // A "__proto__" key (as JSON.parse makes it: an own property) is kept as data.
    const metadata = JSON.parse(`{"__proto__": {"polluted": 1}, "a'b": "c\\"d"}`);
    const m = await api.post("/v1/memories", { body: { content: "naïve café — 😀 'quoted' \\n", userId, tags, metadata } });
    expect(m.status).toBe(201);
    expect(m.body).toMatchObject({ content: "naïve café — 😀 'quoted' \\n", userId, tags });
    expect(m.text).toContain(`"metadata":{"__proto__":{"polluted":1},"a'b":"c\\"d"}`);
    expect(({} as any).polluted).toBeUndefined();
    expect((await api.get(`/v1/memories/${m.body.id}`)).body).toEqual(m.body);
    for (const tag of tags) {
      const res = await api.get("/v1/memories", { query: { tags: tag } });
      expect(res.body.items.map((x: any) => x.id), tag).toEqual([m.body.id]);
    }
    expect((await api.get("/v1/memories", { query: { userId } })).body.items.map((x: any) => x.id)).toEqual([m.body.id]);
    expect((await api.get("/v1/memories", { query: { userId: "it's" } })).body.items).toEqual([]);
    const hits = (await api.post("/v1/memories/search", { body: { query: "naïve café", userId, tags: ["it's", "%"] } })).body.results;
    expect(hits.map((h: any) => h.id)).toEqual([m.body.id]);
    // LIKE-style wildcards in an entity search are literal.
    await api.post("/v1/entities", { body: { name: "100% Juice", type: "PRODUCT" } });
    const pct = (await api.get("/v1/entities", { query: { search: "%" } })).body.items.map((e: any) => e.name);
    expect(pct).toEqual(["100% Juice"]);
  });
});

describe("relations", () => {
  let src: any;
  let dst: any;
  beforeAll(async () => {
    src = (await api.post("/v1/entities", { body: { name: "Rel Source", type: "PERSON", metadata: { s: 1 } } })).body;
    dst = (await api.post("/v1/entities", { body: { name: "Rel Target", type: "ORGANIZATION", description: "co" } })).body;
  });

  it("POST /v1/relations → 201 with id, sourceId, targetId, type, metadata, createdAt (no source/target)", async () => {
    const res = await api.post("/v1/relations", { body: { sourceId: src.id, targetId: dst.id, type: "WORKS_FOR", metadata: { since: 2021 } } });
    expect(res.status).toBe(201);
    const r = R.Relation.parse(res.body);
    expect(keys(res.body)).toEqual(RELATION_CREATE_KEYS);
    expect(r).toMatchObject({ sourceId: src.id, targetId: dst.id, type: "WORKS_FOR", metadata: { since: 2021 } });
    expect(r.createdAt).toMatch(ISO);
    expect(res.body).not.toHaveProperty("source");
    expect(res.body).not.toHaveProperty("target");

    const bare = await api.post("/v1/relations", { body: { sourceId: dst.id, targetId: src.id, type: "MENTORS_2" } });
    expect(bare.status).toBe(201);
    expect(keys(bare.body)).toEqual(["id", "sourceId", "targetId", "type", "createdAt"]);
    // Self-loops and duplicates are allowed.
    expect((await api.post("/v1/relations", { body: { sourceId: src.id, targetId: src.id, type: "KNOWS" } })).status).toBe(201);
    expect((await api.post("/v1/relations", { body: { sourceId: src.id, targetId: dst.id, type: "WORKS_FOR" } })).status).toBe(201);
  });

  it("GET /v1/relations/:id → 200 with source and target summaries and metadata", async () => {
    const created = (await api.post("/v1/relations", { body: { sourceId: src.id, targetId: dst.id, type: "CREATED", metadata: { note: "x" } } })).body;
    const res = await api.get(`/v1/relations/${created.id}`);
    expect(res.status).toBe(200);
    R.RelationWithEnds.parse(res.body);
    expect(new Set(keys(res.body))).toEqual(new Set([...RELATION_CREATE_KEYS, "source", "target"]));
    expect(res.body).toEqual({
      ...created,
      source: { id: src.id, name: "Rel Source", type: "PERSON" },
      target: { id: dst.id, name: "Rel Target", type: "ORGANIZATION" },
    });
    expect(keys(res.body.source)).toEqual(["id", "name", "type"]);
    expect(keys(res.body.target)).toEqual(["id", "name", "type"]);
    // The summaries follow the entity.
    await api.patch(`/v1/entities/${dst.id}`, { body: { name: "Rel Target Renamed" } });
    expect((await api.get(`/v1/relations/${created.id}`)).body.target.name).toBe("Rel Target Renamed");
  });

  it("GET /v1/relations → 200, items with source/target but no metadata; filters sourceId, targetId, type", async () => {
    const a = (await api.post("/v1/entities", { body: { name: "RL A", type: "PERSON" } })).body;
    const b = (await api.post("/v1/entities", { body: { name: "RL B", type: "LOCATION" } })).body;
    const r1 = (await api.post("/v1/relations", { body: { sourceId: a.id, targetId: b.id, type: "LOCATED_IN", metadata: { m: 1 } } })).body;
    const r2 = (await api.post("/v1/relations", { body: { sourceId: b.id, targetId: a.id, type: "RELATED_TO" } })).body;
    const res = await api.get("/v1/relations", { query: { sourceId: a.id } });
    expect(res.status).toBe(200);
    const page = R.page(R.RelationListItem).parse(res.body);
    expect(page.pagination).toEqual({ page: 1, limit: 20, total: 1, totalPages: 1 });
    expect(res.body.items[0]).toEqual({
      id: r1.id,
      sourceId: a.id,
      targetId: b.id,
      type: "LOCATED_IN",
      source: { id: a.id, name: "RL A", type: "PERSON" },
      target: { id: b.id, name: "RL B", type: "LOCATION" },
      createdAt: r1.createdAt,
    });
    expect((await api.get("/v1/relations", { query: { targetId: a.id } })).body.items.map((r: any) => r.id)).toEqual([r2.id]);
    expect((await api.get("/v1/relations", { query: { sourceId: b.id, type: "RELATED_TO" } })).body.items.map((r: any) => r.id)).toEqual([r2.id]);
    expect((await api.get("/v1/relations", { query: { sourceId: b.id, type: "LOCATED_IN" } })).body.items).toEqual([]);
    const all = R.page(R.RelationListItem).parse((await api.get("/v1/relations", { query: { limit: 100 } })).body);
    expect(all.items.map((r) => r.id).slice(0, 2)).toEqual([r2.id, r1.id]);
    for (const item of all.items) expect(item).not.toHaveProperty("metadata");
  });

  it("DELETE /v1/relations/:id → 200 {success, id}; only that relation goes", async () => {
    const r = (await api.post("/v1/relations", { body: { sourceId: src.id, targetId: dst.id, type: "PART_OF" } })).body;
    const res = await api.delete(`/v1/relations/${r.id}`);
    expect(res.status).toBe(200);
    expect(R.Deleted.parse(res.body)).toEqual({ success: true, id: r.id });
    expect(keys(res.body)).toEqual(["success", "id"]);
    expect((await api.get(`/v1/relations/${r.id}`)).status).toBe(404);
    expect((await api.delete(`/v1/relations/${r.id}`)).status).toBe(404);
    expect((await api.get(`/v1/entities/${src.id}`)).status).toBe(200);
    expect((await api.get(`/v1/entities/${dst.id}`)).status).toBe(200);
  });
});
