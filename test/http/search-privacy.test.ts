import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, startTestServer, type Client, type TestServer } from "../helpers/http-server.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";

/**
 * Over real HTTP with two keys and the real model: nothing account B stores may change a score, a
 * rank or a result that account A sees. Keyword statistics taken over the whole table (what
 * LanceDB's BM25 does) would let B's text move A's scores, and so let A learn what B stores.
 */
describe("search results are private to an account", () => {
  let server: TestServer;
  let a: Client;
  let b: Client;
  const mine = [
    "Booked the dentist for March 3rd",
    "My sister Maya moved to Lisbon last spring",
    "I switched from coffee to green tea",
    "The plumber comes on Tuesday to fix the kitchen sink",
    "Reading The Left Hand of Darkness for book club",
  ];
  const queries = ["dentist", "green tea", "when is the dentist?", "where does Maya live now?", "book club", "kitchen sink plumber", "tea"];

  beforeAll(async () => {
    server = await startTestServer({ realModel: true });
    a = client(server.url, (await server.account("a")).key);
    b = client(server.url, (await server.account("b")).key);
    for (const content of mine) expect((await a.post("/v1/memories", { body: { content, userId: "alice" } })).status).toBe(201);
  });
  afterAll(() => server?.close());

  async function whatAsees() {
    const seen: Record<string, unknown> = {};
    for (const mode of ["hybrid", "keyword", "semantic"]) {
      for (const query of queries) {
        for (const userId of ["alice", undefined]) {
          const res = await a.post("/v1/memories/search", { body: { query, userId, mode, threshold: 0, limit: 100 } });
          expect(res.status).toBe(200);
          seen[`${mode} ${query} ${userId ?? "(any user)"}`] = res.body.results;
        }
      }
    }
    return seen;
  }

  it("A's results, ranks and scores are identical before and after B stores 300 memories full of A's query words", async () => {
    const before = await whatAsees();
    expect((before["keyword dentist alice"] as unknown[]).length).toBe(1);
    const words = queries.join(" ").split(/\W+/).filter(Boolean);
    const bodies = Array.from({ length: 300 }, (_, i) => ({
      content: `${words[i % words.length]} ${words[(i * 5) % words.length]} ${mine[i % mine.length]}`,
      userId: i % 2 ? "alice" : "bob",
      dedupe: false, // the same words twice are meant to be stored twice here
    }));
    for (let i = 0; i < bodies.length; i += 10) {
      const statuses = await Promise.all(bodies.slice(i, i + 10).map(async (body) => (await b.post("/v1/memories", { body })).status));
      expect(statuses.every((s) => s === 201)).toBe(true);
    }
    expect((await b.get("/v1/memories", { query: { limit: 1 } })).body.pagination.total).toBe(300);
    expect(await whatAsees()).toStrictEqual(before);
  });
});

/**
 * The query-embedding cache must not tell one account what another searched: a text account A
 * searched a moment ago is embedded again for account B (a cache hit would answer B faster).
 */
describe("the query-embedding cache is per account", () => {
  it("A's search doesn't make B's same query a cache hit; A's own repeat is one", async () => {
    const embedded: string[] = [];
    const base = createTestEmbedder();
    const embedder = { ...base, embed: (texts: string[]) => (embedded.push(...texts), base.embed(texts)) };
    const server = await startTestServer({ embedder });
    try {
      const a = client(server.url, (await server.account("a")).key);
      const b = client(server.url, (await server.account("b")).key);
      const query = "what did the locksmith say about the back door";
      const times = () => embedded.filter((t) => t.includes("locksmith")).length;
      for (const mode of ["semantic", "hybrid"]) {
        const before = times();
        expect((await a.post("/v1/memories/search", { body: { query, mode, userId: "u" } })).status).toBe(200);
        const afterA = times();
        expect((await a.post("/v1/memories/search", { body: { query, mode, userId: "u" } })).status).toBe(200);
        expect(times(), `${mode}: A's repeat comes from the cache`).toBe(afterA);
        expect((await b.post("/v1/memories/search", { body: { query, mode, userId: "u" } })).status).toBe(200);
        expect(times(), `${mode}: B's query is embedded again, not taken from A's entry`).toBe(afterA + (afterA - before));
        if (mode === "semantic") expect(afterA).toBeGreaterThan(before);
      }
    } finally {
      await server.close();
    }
  });
});
