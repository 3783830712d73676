import { describe, expect, it } from "vitest";
import { vectorIndexPartitions, wantedVectorIndex } from "../../src/storage/indexes.js";
import { maintainIfDue } from "../../src/storage/maintenance.js";
import { Store, type MemoryRow } from "../../src/storage/store.js";
import { memoryRow } from "../helpers/rows.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const DIMS = 16;
const TUNING = { vectorIndexMinRows: 2_500, exactSearchMaxRows: 500 };

const CLUSTERS = 40;

/** Deterministic pseudo-random coordinates in [-0.5, 0.5). */
function noise(seed: number): Float32Array {
  let s = seed * 2654435761 + 1;
  return Float32Array.from({ length: DIMS }, () => {
    s = (s * 1664525 + 1013904223) % 4294967296;
    return s / 4294967296 - 0.5;
  });
}

/**
 * A deterministic unit vector near one of 40 centres. Clustered, like real embeddings: uniform
 * noise in 16 dimensions has no structure for IVF to find, and its recall swung around 0.95 with
 * LanceDB's random k-means sample (0.9425 in one CI run).
 */
function vector(seed: number): Float32Array {
  const centre = noise(7_777_777 + (seed % CLUSTERS));
  const n = noise(seed);
  const v = centre.map((c, j) => c + 0.35 * n[j]!);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

/** Row i belongs to user "big" unless i % 50 === 0 (user "small": 2% of the table). */
function rows(from: number, to: number): MemoryRow[] {
  const createdAt = new Date(Date.UTC(2026, 0, 1)).toISOString();
  return Array.from({ length: to - from }, (_, k) => {
    const i = from + k;
    return memoryRow({ id: `mem_${String(i).padStart(24, "0")}`, content: `memory number ${i}`, userId: i % 50 === 0 ? "small" : "big", vector: vector(i), createdAt });
  });
}

/** Batches of `batch` rows from row `from`, with a maintenance pass after each (as a CLI batch has). */
async function fill(store: Store, total: number, from = 0, batch = 1_000): Promise<void> {
  for (let i = from; i < from + total; i += batch) {
    await store.write((w) => w.insertMemories(rows(i, Math.min(from + total, i + batch))));
    await maintainIfDue(store);
  }
}

const ids = (hits: { record: { id: string } }[]) => hits.map((h) => h.record.id);
/** The cosine of `v` with row `id`'s vector (rows() numbers its ids). */
const cosineTo = (v: Float32Array, id: string) => {
  const u = vector(Number(id.slice("mem_".length)));
  return v.reduce((sum, x, j) => sum + x * u[j]!, 0);
};

describe("vector index policy", () => {
  it("builds at the minimum size with √rows partitions, and retrains only after 4× growth", () => {
    expect(wantedVectorIndex(49_999, null, 50_000)).toBeNull();
    expect(wantedVectorIndex(50_000, null, 50_000)).toEqual({ partitions: 224 });
    expect(wantedVectorIndex(150_000, { partitions: 224 }, 50_000)).toBeNull();
    expect(wantedVectorIndex(200_704, { partitions: 224 }, 50_000)).toEqual({ partitions: 448 });
    expect(vectorIndexPartitions(1_000_000)).toBe(1_000);
    expect(vectorIndexPartitions(100)).toBe(16);
    expect(vectorIndexPartitions(1e9)).toBe(4096);
  });
});

describe("automatic vector index (real LanceDB)", () => {
  it("is built by maintenance once the table is large enough, retrained as it grows, and reported in stats", async () => {
    const store = await Store.open(await tempDir(), { create: { provider: "test", model: "v", dims: DIMS }, tuning: TUNING });
    await fill(store, 2_000);
    expect((await store.stats()).memories.vectorIndex).toBeNull();
    await fill(store, 10_000, 2_000); // maintenance passes build the index, then retrain it
    const stats = await store.stats();
    expect(stats.memories.rows).toBe(12_000);
    // Built at ≥ 2,500 rows with ~50 partitions, retrained once √rows passed twice that.
    expect(stats.memories.vectorIndex?.partitions).toBeGreaterThanOrEqual(100);
    expect(stats.memories.vectorIndex?.type).toBe("IVF_FLAT");
    const vectorIndexes = (await store.stats()).memories.indices;
    expect(vectorIndexes).toBe(3); // text, userId and exactly one vector index
    store.close();
  });

  it("finds what exact search finds (recall@10 ≥ 0.95), exact for narrow filters, and sees rows added after the build", async () => {
    const dir = await tempDir();
    const store = await Store.open(dir, { create: { provider: "test", model: "v", dims: DIMS }, tuning: TUNING });
    await fill(store, 12_000);
    const r = await store.optimize({ keepVersionsMs: 0 });
    expect(r.fragmentsRemoved).toBeGreaterThanOrEqual(0);
    const partitions = (await store.stats()).memories.vectorIndex!.partitions;
    expect(partitions).toBeGreaterThanOrEqual(100);
    // A second handle that never uses the index: the ground truth.
    const exact = await Store.open(dir, { tuning: { ...TUNING, exactSearchMaxRows: Number.MAX_SAFE_INTEGER } });

    expect(await store.vectorPlans("accountId = 'acct_default'", 10)).toEqual([{ exact: false, nprobes: 20 }]);
    expect(await store.vectorPlans("accountId = 'acct_default' AND userId = 'big'", 10)).toEqual([{ exact: false, nprobes: 21 }]);
    expect(await store.vectorPlans("accountId = 'acct_default' AND userId = 'small'", 10)).toEqual([{ exact: true }]);
    expect(await exact.vectorPlans("accountId = 'acct_default'", 10)).toEqual([{ exact: true }]);

    let found = 0;
    const queries = 40;
    for (let q = 0; q < queries; q++) {
      const v = vector(1_000_000 + q);
      const filter = { accountId: "acct_default", ...(q % 2 ? { userId: "big" } : {}) };
      const [approx, truth] = await Promise.all([store.searchMemories(v, filter, 10), exact.searchMemories(v, filter, 10)]);
      expect(approx).toHaveLength(10);
      const truthIds = new Set(ids(truth));
      found += ids(approx).filter((id) => truthIds.has(id)).length;
      // Scores are the same exact cosine distances either way, in the same order.
      for (const hit of approx) {
        const same = truth.find((t) => t.record.id === hit.record.id);
        if (same) expect(hit.distance).toBeCloseTo(same.distance, 5);
      }
      const distances = approx.map((h) => h.distance);
      expect(distances).toEqual([...distances].sort((a, b) => a - b));
    }
    expect(found / (queries * 10)).toBeGreaterThanOrEqual(0.95);

    // The narrow filter is exact: identical to the ground truth.
    const small = { accountId: "acct_default", userId: "small" };
    expect(ids(await store.searchMemories(vector(7), small, 10))).toEqual(ids(await exact.searchMemories(vector(7), small, 10)));

    // Detection's nearest older notes (core/validity.ts) can do with approximate hits: a scope of
    // more rows than it names goes through the index even where exact search would be chosen,
    // probing a quarter of the partitions at most. Asked near the scope's own memories (a new
    // note is near its user's), the hits are the scope's own, with exact distances, and most are
    // those exact search finds. (Far from them, partitions that hold none of the scope's rows can
    // leave fewer hits than asked: what is missed is far anyway.)
    const smallWhere = "accountId = 'acct_default' AND userId = 'small'";
    expect(await store.vectorPlans(smallWhere, 5, 100)).toEqual([{ exact: false, nprobes: Math.floor(partitions / 4) }]);
    expect(await store.vectorPlans(smallWhere, 5, 240)).toEqual([{ exact: true }]);
    let near = 0;
    for (let q = 0; q < 20; q++) {
      const v = vector(2_000_000 + 50 * q); // in one of user "small"'s clusters, as rows() puts them
      const [approx, truth] = await Promise.all([store.searchMemories(v, small, 5, { approximateAbove: 100 }), exact.searchMemories(v, small, 5)]);
      expect(approx).toHaveLength(5);
      const truthIds = new Set(ids(truth));
      near += ids(approx).filter((id) => truthIds.has(id)).length;
      for (const hit of approx) {
        expect(hit.record.userId).toBe("small");
        expect(hit.distance).toBeCloseTo(1 - cosineTo(v, hit.record.id), 5);
      }
    }
    expect(near / 100).toBeGreaterThanOrEqual(0.8);

    // A row added after the build is not in the index yet, but search still finds it.
    const late = rows(12_000, 12_001);
    await store.write((w) => w.insertMemories(late));
    expect((await store.stats()).memories.vectorIndex!.unindexedRows).toBe(1);
    const top = await store.searchMemories(late[0]!.vector, { accountId: "acct_default" }, 1);
    expect(ids(top)).toEqual([late[0]!.id]);
    expect(top[0]!.distance).toBeCloseTo(0, 5);
    exact.close();
    store.close();
  });
});
