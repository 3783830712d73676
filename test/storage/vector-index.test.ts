import { describe, expect, it } from "vitest";
import { maintenanceDue, Store, vectorIndexPartitions, wantedVectorIndex, type MemoryRow } from "../../src/storage/store.js";
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
function rows(from: number, to: number): Omit<MemoryRow, "seq">[] {
  const at = new Date(Date.UTC(2026, 0, 1)).toISOString();
  return Array.from({ length: to - from }, (_, k) => {
    const i = from + k;
    return {
      id: `mem_${String(i).padStart(24, "0")}`,
      accountId: "acct_default",
      content: `memory number ${i}`,
      userId: i % 50 === 0 ? "small" : "big",
      agentId: null,
      tags: [],
      metadata: null,
      entityIds: [],
      createdAt: at,
      updatedAt: at,
      vector: vector(i),
    };
  });
}

async function fill(store: Store, total: number, batch = 1_000): Promise<void> {
  for (let i = 0; i < total; i += batch) await store.write((w) => w.insertMemories(rows(i, Math.min(total, i + batch)) as MemoryRow[]));
}

const ids = (hits: { record: { id: string } }[]) => hits.map((h) => h.record.id);

describe("maintenance schedule", () => {
  it("runs every 32 versions on small tables, less often as the table grows", () => {
    expect(maintenanceDue({ before: 31, after: 32, rows: 1_000, unindexedTextRows: 0 })).toBe(true);
    expect(maintenanceDue({ before: 32, after: 33, rows: 1_000, unindexedTextRows: 0 })).toBe(false);
    // At 1M rows the interval is 32 × 10 versions.
    expect(maintenanceDue({ before: 31, after: 32, rows: 1_000_000, unindexedTextRows: 0 })).toBe(false);
    expect(maintenanceDue({ before: 319, after: 320, rows: 1_000_000, unindexedTextRows: 0 })).toBe(true);
  });

  it("folds unindexed rows in at 2,000 on small tables, at a fifth of the table on large ones", () => {
    expect(maintenanceDue({ before: 1, after: 2, rows: 5_000, unindexedTextRows: 2_001 })).toBe(true);
    expect(maintenanceDue({ before: 1, after: 2, rows: 5_000, unindexedTextRows: 2_000 })).toBe(false);
    expect(maintenanceDue({ before: 1, after: 2, rows: 1_000_000, unindexedTextRows: 150_000 })).toBe(false);
    expect(maintenanceDue({ before: 1, after: 2, rows: 1_000_000, unindexedTextRows: 200_001 })).toBe(true);
  });

  it("amortises: filling 1M rows in 5,000-row batches maintains a logarithmic number of times", () => {
    let passes = 0;
    let unindexed = 0;
    for (let rows = 5_000, version = 1; rows <= 1_000_000; rows += 5_000, version++) {
      unindexed += 5_000;
      if (maintenanceDue({ before: version - 1, after: version, rows, unindexedTextRows: unindexed })) {
        passes++;
        unindexed = 0;
      }
    }
    // Once per batch would be 200 passes.
    expect(passes).toBeLessThan(40);
    expect(passes).toBeGreaterThan(5);
  });
});

describe("vector index policy", () => {
  it("builds at the minimum size with √rows partitions, and retrains only after 4× growth", () => {
    const tuning = { vectorIndexMinRows: 50_000, exactSearchMaxRows: 20_000 };
    expect(wantedVectorIndex(49_999, null, tuning)).toBeNull();
    expect(wantedVectorIndex(50_000, null, tuning)).toEqual({ partitions: 224 });
    expect(wantedVectorIndex(150_000, { partitions: 224 }, tuning)).toBeNull();
    expect(wantedVectorIndex(200_704, { partitions: 224 }, tuning)).toEqual({ partitions: 448 });
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
    await fill(store, 10_000); // rows 2,000.. are appended; maintenance passes build, then retrain
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

    expect(await store.vectorPlan("accountId = 'acct_default'", 10)).toEqual({ exact: false, nprobes: 20 });
    expect(await store.vectorPlan("accountId = 'acct_default' AND userId = 'big'", 10)).toEqual({ exact: false, nprobes: 21 });
    expect(await store.vectorPlan("accountId = 'acct_default' AND userId = 'small'", 10)).toEqual({ exact: true });
    expect(await exact.vectorPlan("accountId = 'acct_default'", 10)).toEqual({ exact: true });

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

    // A row added after the build is not in the index yet, but search still finds it.
    const late = rows(12_000, 12_001);
    await store.write((w) => w.insertMemories(late as MemoryRow[]));
    expect((await store.stats()).memories.vectorIndex!.unindexedRows).toBe(1);
    const top = await store.searchMemories(late[0]!.vector, { accountId: "acct_default" }, 1);
    expect(ids(top)).toEqual([late[0]!.id]);
    expect(top[0]!.distance).toBeCloseTo(0, 5);
    exact.close();
    store.close();
  });
});
