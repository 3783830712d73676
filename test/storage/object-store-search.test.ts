import { describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { searchMemories } from "../../src/core/search.js";
import type { StoreTuning } from "../../src/storage/store-types.js";
import { requestsDuring, useAzurite } from "../helpers/azurite.js";
import { memoryRow } from "../helpers/rows.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
// Azurite's debug log has a line per request it served, with its headers: the bytes a search read.
const azurite = useAzurite({ debug: true });

const DIMS = 512;
const USERS = 20;
const PER_USER = 50;
/** Bytes of the memories' vector column: what a search that bypasses the vector index reads of it. */
const VECTOR_COLUMN_BYTES = USERS * PER_USER * DIMS * 4;
const TOPICS = ["garden", "boat", "dentist", "piano", "kitchen", "marathon"];

async function open(uri: string, state: string, tuning: Partial<StoreTuning>): Promise<Context> {
  return openContext({ storeDir: uri, env: { ...azurite().env, XDG_STATE_HOME: state }, embedder: createTestEmbedder(DIMS, "search"), tuning: { vectorIndexMinRows: 100, ...tuning } });
}

/** The requests `fn` made, as Azurite logged them. */
const requestsOf = (fn: () => Promise<unknown>) => requestsDuring(azurite(), fn);

/** Bytes of the memories table's data files the requests read (ranged GETs; a whole-file GET counts as the column). */
function dataBytes(lines: string[]): number {
  let bytes = 0;
  for (const line of lines.filter((l) => l.includes("RequestMethod=GET") && /memories\.lance(%2F|\/)data/.test(l))) {
    const range = /"(?:x-ms-)?range":"bytes=(\d+)-(\d+)"/.exec(line);
    bytes += range ? Number(range[2]) - Number(range[1]) + 1 : VECTOR_COLUMN_BYTES;
  }
  return bytes;
}

describe("search on an object store reads vectors through the index (real Azurite)", () => {
  it("gives the same hits and scores as an exact search that bypasses the index, reading a fraction of the vector column", async () => {
    const uri = `az://${await azurite().container()}/search`;
    const state = await tempDir();
    const viaIndex = await open(uri, state, {});
    const embedder = await viaIndex.embedder();
    // Each user's notes in turn, so that one user's rows lie spread through the data file; the
    // later notes restate earlier ones in other words (newer notes the hybrid ranking compares).
    const texts = Array.from({ length: USERS * PER_USER }, (_, i) => {
      const topic = TOPICS[Math.floor(i / USERS) % TOPICS.length];
      return i < (USERS * PER_USER) / 2 ? `the ${topic} plan for week ${i % 7} is settled` : `now the ${topic} plan changed again, week ${i % 5} is settled`;
    });
    const vectors = await embedder.embed(texts);
    const start = Date.parse("2026-01-01T00:00:00Z");
    const rows = texts.map((content, i) => {
      const at = new Date(start + i * 60_000).toISOString();
      return memoryRow({ id: `mem_${String(i).padStart(26, "0")}`, content, userId: `user${i % USERS}`, vector: vectors[i], createdAt: at, updatedAt: at, supersededBy: null, supersededAt: null, matchKeys: [], history: null });
    });
    await viaIndex.store.write((w) => w.insertMemories(rows));
    await viaIndex.store.optimize({ keepVersionsMs: 0 });
    expect((await viaIndex.store.stats()).memories.vectorIndex?.indexedRows).toBe(rows.length);
    const bypassing = await open(uri, state, { vectorsFromIndex: false });

    const scope = "accountId = 'acct_default' AND userId = 'user3'";
    expect(await viaIndex.store.vectorPlans(scope, 50)).toEqual([{ exact: true, nprobes: 4096 }]);
    expect(await bypassing.store.vectorPlans(scope, 50)).toEqual([{ exact: true }]);

    const questions = TOPICS.flatMap((topic, i) => [
      { query: `what is the ${topic} plan`, userId: `user${i % USERS}` },
      { query: `${topic} week ${i}`, userId: `user${(i + 3) % USERS}`, mode: "semantic" },
      { query: `changed ${topic} plan settled`, userId: `user${(i + 5) % USERS}`, limit: 20 },
    ]);
    for (const q of questions) {
      const [a, b] = [await searchMemories(viaIndex, q), await searchMemories(bypassing, q)];
      expect(a.results.length).toBeGreaterThan(0);
      // The same hits with the same scores, to float rounding: the index computes a distance in
      // another order of operations, so two hits that tie may swap.
      expect(a.results.map((h) => h.id).sort()).toEqual(b.results.map((h) => h.id).sort());
      a.results.forEach((h, i) => expect(h.score).toBeCloseTo(b.results[i].score, 5));
    }
    // Exact distances to chosen memories (a search's keyword matches), through the index too.
    const among = { ids: rows.filter((r) => r.userId === "user2").slice(0, 30).map((r) => r.id), seqs: new Map([["user2", [44, 45, 46]]]) };
    const near = (ctx: Context) => ctx.store.nearestAmong(vectors[7], { accountId: "acct_default", userId: "user2" }, among).then((hits) => new Map(hits.map((h) => [h.record.id, h.distance])));
    const [amongViaIndex, amongBypassing] = [await near(viaIndex), await near(bypassing)];
    expect(amongViaIndex.size).toBe(33);
    expect([...amongViaIndex.keys()].sort()).toEqual([...amongBypassing.keys()].sort());
    for (const [id, distance] of amongViaIndex) expect(distance).toBeCloseTo(amongBypassing.get(id)!, 5);

    const question = { query: "what is the boat plan now", userId: "user6" };
    const readViaIndex = dataBytes(await requestsOf(() => searchMemories(viaIndex, question)));
    const readBypassing = dataBytes(await requestsOf(() => searchMemories(bypassing, { ...question, query: "what is the boat plan today" })));
    expect(readBypassing).toBeGreaterThanOrEqual(VECTOR_COLUMN_BYTES);
    expect(readViaIndex).toBeLessThan(VECTOR_COLUMN_BYTES / 4);
    await Promise.all([viaIndex.close(), bypassing.close()]);
  }, 120_000);
});
