#!/usr/bin/env node
// `npm run bench`: speed, memory and scale figures for mm, each beside its floor. Prints a table and
// writes JSON (bench-results/bench.json). Options:
//   --sizes 10000,100000   store sizes for the search/growth runs (add 1000000 by hand: slow)
//   --quick                a short smoke run (sizes 2000, few queries) for tests
//   --out <file>           where to write the JSON
//   --sections a,b         only some of: ingest, cold, search (default all)
//   --index-min-rows <n>   build the vector index from n rows (default 50,000; the smoke test
//   --exact-max-rows <n>   uses small values to exercise the index on a small store)
// Texts come from ../shared/data/locomo-dev when present (read at run time, never copied), else
// from a template generator. Large stores are filled through the store API with vectors derived
// from a pool of real embeddings (the same vector space, made distinct with small noise), because
// embedding 100k texts would take most of an hour on 2 cores.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startMmServe } from "./mm-serve.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const BIN = join(root, "bin", "mm.js");
const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const QUICK = args.includes("--quick");
const SIZES = (flag("sizes", QUICK ? "2000" : "10000,100000")).split(",").map(Number);
const OUT = resolve(flag("out", join(root, "bench-results", "bench.json")));
const QUERIES = QUICK ? 20 : 200;
const SECTIONS = new Set(flag("sections", "ingest,cold,search").split(","));
const INGEST_N = QUICK ? 200 : 2000;
const TUNING = {
  ...(flag("index-min-rows") ? { vectorIndexMinRows: Number(flag("index-min-rows")) } : {}),
  ...(flag("exact-max-rows") ? { exactSearchMaxRows: Number(flag("exact-max-rows")) } : {}),
};

const { useLiteProvider } = await import(join(root, "dist/embedder/use-lite.js"));
const { Store } = await import(join(root, "dist/storage/store.js"));
const { DEFAULT_EMBEDDER } = await import(join(root, "dist/embedder/index.js"));
const { keywordQuery } = await import(join(root, "dist/core/ranking.js"));

const results = { machine: machine(), startedAt: new Date().toISOString(), quick: QUICK, figures: {} };
const rows = [];
const record = (section, name, value, unit, floor, target, ok) => {
  rows.push({ section, name, value, unit, floor, target, ok });
  (results.figures[section] ??= {})[name] = { value, unit, ...(floor !== undefined ? { floor } : {}), ...(target ? { target, ok } : {}) };
};

const texts = loadTexts();
const queries = loadQueries();
const work = mkdtempSync(join(tmpdir(), "mm-bench-"));
try {
  if (SECTIONS.has("ingest")) await benchIngest();
  if (SECTIONS.has("cold")) await benchColdStart();
  if (SECTIONS.has("search")) for (const size of SIZES) await benchSearch(size);
} finally {
  rmSync(work, { recursive: true, force: true });
}
results.finishedAt = new Date().toISOString();
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, JSON.stringify(results, null, 2) + "\n");
printTable();
console.log(`\nJSON: ${OUT}`);

// ---------------------------------------------------------------------------------------------

async function benchIngest() {
  const sample = texts.slice(0, INGEST_N);
  const single = useLiteProvider.create({ ...DEFAULT_EMBEDDER, options: { workers: 1 } }, {});
  await single.embed(sample.slice(0, 8));
  const t1 = performance.now();
  await single.embed(sample);
  const singleRate = sample.length / ((performance.now() - t1) / 1000);
  await single.close?.();

  const pooled = useLiteProvider.create(DEFAULT_EMBEDDER, {});
  await pooled.embed(sample.slice(0, 100)); // starts and warms the workers
  const t2 = performance.now();
  await pooled.embed(sample);
  const pooledRate = sample.length / ((performance.now() - t2) / 1000);
  await pooled.close?.();

  // The CLI end to end: batch add of INGEST_N lines, minus the fixed start-up (a 1-line batch).
  const file = join(work, "ingest.jsonl");
  writeFileSync(file, sample.map((content) => JSON.stringify({ content, userId: "bench" })).join("\n"));
  writeFileSync(join(work, "one.jsonl"), JSON.stringify({ content: sample[0], userId: "bench" }));
  const store = join(work, "ingest-store");
  const one = timeCmd(["memories", "add", "--batch", join(work, "one.jsonl"), "--json"], store);
  const all = timeCmd(["memories", "add", "--batch", file, "--json", "--batch-size", "256"], store);
  const cliRate = sample.length / ((all - one) / 1000);

  record("ingest", "embedder, 1 thread", round(singleRate), "texts/s");
  record("ingest", `embedder, ${Math.min(4, cpus().length)} worker threads`, round(pooledRate), "texts/s", round(singleRate), "≥ 1.6× 1 thread", pooledRate >= 1.6 * singleRate);
  record("ingest", "mm memories add --batch", round(cliRate), "memories/s", round(pooledRate), "≥ 90% of the embedder", cliRate >= 0.9 * pooledRate);
}

async function benchColdStart() {
  const store = join(work, "cold-store");
  spawnSync(process.execPath, [BIN, "memories", "add", "warm the page cache", "--user", "u"], { env: env(store) });
  const list = median(Array.from({ length: 5 }, () => timeCmd(["memories", "list"], store)));
  // The search's floor is a process that does nothing but load the model and embed the query:
  // both are wall times of a cold process. Alternated, so that drift on a busy machine hits both.
  const search = [];
  const modelProcess = [];
  for (let i = 0; i < 5; i++) {
    search.push(timeCmd(["memories", "search", "page cache", "--threshold", "0"], store));
    modelProcess.push(timeProcess(["-e", modelScript("await e.embed(['page cache'])")]));
  }
  const load = median(Array.from({ length: 3 }, modelLoadMs));
  const node = median(Array.from({ length: 5 }, () => timeProcess(["-e", "0"])));
  record("cold start", "node start-up alone (node -e 0)", round(node), "ms");
  record("cold start", "mm memories list", round(list), "ms", undefined, "≤ 300 ms", list <= 300);
  record("cold start", "use-lite model load, in process (after Node's start-up)", round(load), "ms");
  const floor = median(modelProcess);
  record("cold start", "use-lite model load, whole process (start-up, load, one embedding, exit)", round(floor), "ms");
  record("cold start", "mm memories search", round(median(search)), "ms", round(floor), "≤ model-load process + 200 ms", median(search) <= floor + 200);
}

/**
 * The bare LanceDB queries of one hybrid search (core/search.ts): the scope's size and one
 * full-text lookup per query word, beside the vector search's nearest 50; then one exact-cosine
 * fetch of the 50 keyword matches outside them. `vector` may be a promise (still embedding).
 */
async function hybridQueries(s, vector, q, filter) {
  const words = keywordQuery(q).split(" ").filter(Boolean);
  const [, perWord, nearest, v] = await Promise.all([
    s.countMemories(filter),
    Promise.all(words.map((w) => s.memoriesWithWord(w, filter, 5000))),
    s.searchMemories(vector, filter, 50),
    vector,
  ]);
  const near = new Set(nearest.map((h) => h.record.id));
  const ids = [...new Set(perWord.flat().map((r) => r.id))].filter((id) => !near.has(id)).slice(0, 50);
  const t = performance.now();
  await s.nearestAmong(v, filter, { ids, seqs: new Map() });
  return { fetchMs: performance.now() - t };
}

async function benchSearch(size) {
  const store = join(work, `store-${size}`);
  const fill = await fillStore(store, size);
  record(`search @${label(size)}`, "fill (store API, derived vectors, maintenance included)", round(size / (fill.ms / 1000)), "rows/s");
  record(`search @${label(size)}`, "  slowest batch of 5,000 (a maintenance pass)", round(fill.slowestBatchMs / 1000), "s");

  // The floor: query embedding plus the bare LanceDB queries, in one process, same filters.
  const s = await Store.open(store, { tuning: TUNING });
  const embedder = useLiteProvider.create({ ...DEFAULT_EMBEDDER, options: { workers: 1 } }, {});
  await embedder.embed(["warm"]);
  const users = userCount(size);
  // Warm-up (not timed) on queries the timed loops never ask, for the floor here and for the server
  // below: the issue measures a warm `mm serve`.
  const warmups = queries.slice(-20);
  for (const [i, q] of warmups.entries()) {
    const [v] = await embedder.embed([q]);
    await s.searchMemories(v, { accountId: "acct_default", userId: `user${i % users}` }, 10);
    await hybridQueries(s, v, q, { accountId: "acct_default", userId: `user${i % users}` });
  }
  const stats = await s.stats();
  const index = stats.memories.vectorIndex;
  const section = `search @${label(size)}`;
  record(section, "vector index (built by maintenance)", index ? `IVF_FLAT, ${index.partitions} partitions` : "none (table below the index size)", "");
  if (index) {
    // Account-wide top-10 (no user filter: the whole table is in scope), through the index and
    // exactly (a second handle that never uses it), on the same query vectors.
    const exact = await Store.open(store, { tuning: { exactSearchMaxRows: Number.MAX_SAFE_INTEGER } });
    const annMs = [];
    const exactMs = [];
    let found = 0;
    const n = QUICK ? 10 : 50;
    const queryVectors = await embedder.embed(Array.from({ length: n }, (_, i) => queries[i % queries.length]));
    for (let i = 0; i < n; i++) {
      const filter = { accountId: "acct_default" };
      let t = performance.now();
      const approx = await s.searchMemories(queryVectors[i], filter, 10);
      annMs.push(performance.now() - t);
      t = performance.now();
      const truth = new Set((await exact.searchMemories(queryVectors[i], filter, 10)).map((h) => h.record.id));
      exactMs.push(performance.now() - t);
      found += approx.filter((h) => truth.has(h.record.id)).length;
    }
    exact.close();
    const recall = found / (n * 10);
    record(section, "account-wide top-10, index p50 / p95 (store API)", `${round(pct(annMs, 50))} / ${round(pct(annMs, 95))}`, "ms", `exact ${round(pct(exactMs, 50))} / ${round(pct(exactMs, 95))}`);
    record(section, "index recall@10 vs exact search", Math.round(recall * 1000) / 1000, "", undefined, "≥ 0.95", recall >= 0.95);
  }
  // Through HTTP on a warm `mm serve`, each query alternating with its floor (above), so that a
  // busy minute on this shared machine slows both sides of a comparison, not one.
  const server = await serve(store);
  try {
    const key = JSON.parse(run(["keys", "create", "--name", "bench"], store)).key;
    const latency = { semantic: [], hybrid: [] };
    const search = async (query, userId, mode) => {
      const res = await fetch(`${server.url}/v1/memories/search`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify({ query, userId, limit: 10, threshold: 0, mode }),
      });
      await res.json();
    };
    for (const [i, q] of warmups.entries()) {
      for (const mode of ["semantic", "hybrid"]) await search(q, `user${i % users}`, mode);
    }
    const floorVec = [];
    const floorHybrid = [];
    const cosineFetchMs = [];
    const floors = {
      // The query embedding and the same LanceDB query the service makes, same filter.
      semantic: async (q, filter) => {
        const t = performance.now();
        const [v] = await embedder.embed([q]);
        await s.searchMemories(v, filter, 10);
        floorVec.push(performance.now() - t);
      },
      // The same bare LanceDB queries hybrid makes (hybridQueries), with the embedding in parallel.
      hybrid: async (q, filter) => {
        const t = performance.now();
        const { fetchMs } = await hybridQueries(s, embedder.embed([q]).then(([v]) => v), q, filter);
        cosineFetchMs.push(fetchMs);
        floorHybrid.push(performance.now() - t);
      },
    };
    for (const mode of ["semantic", "hybrid"]) {
      for (let i = 0; i < QUERIES; i++) {
        const q = queries[i % queries.length] + (i >= queries.length ? ` ${i}` : "");
        const userId = `user${i % users}`;
        const http = async () => {
          const t = performance.now();
          // A trailing space keeps hybrid's queries out of the server's query-embedding cache.
          await search(q + (mode === "hybrid" ? " " : ""), userId, mode);
          latency[mode].push(performance.now() - t);
        };
        const floor = () => floors[mode](q, { accountId: "acct_default", userId });
        if (i % 2) await floor().then(http);
        else await http().then(floor);
      }
    }
    const rss = peakRss(server.pid);
    await new Promise((r) => setTimeout(r, 200)); // the last access-log lines
    const inServer = server.searchMs.slice(warmups.length * 2);
    const serverSide = { semantic: inServer.slice(0, QUERIES), hybrid: inServer.slice(QUERIES, 2 * QUERIES) };
    const fp50 = pct(floorVec, 50);
    record(`search @${label(size)}`, "semantic p50 / p95 (HTTP)", `${round(pct(latency.semantic, 50))} / ${round(pct(latency.semantic, 95))}`, "ms", `${round(fp50)} / ${round(pct(floorVec, 95))}`, "p50 ≤ floor + 5 ms", pct(latency.semantic, 50) <= fp50 + 5);
    const hp50 = pct(floorHybrid, 50);
    record(`search @${label(size)}`, "hybrid p50 / p95 (HTTP)", `${round(pct(latency.hybrid, 50))} / ${round(pct(latency.hybrid, 95))}`, "ms", `${round(hp50)} / ${round(pct(floorHybrid, 95))}`, "p50 ≤ floor + 5 ms", pct(latency.hybrid, 50) <= hp50 + 5);
    record(`search @${label(size)}`, "  semantic / hybrid p50 inside mm serve (its access log)", `${round(pct(serverSide.semantic, 50))} / ${round(pct(serverSide.hybrid, 50))}`, "ms");
    record(`search @${label(size)}`, "  of which the keyword candidates' cosine fetch, p50", round(pct(cosineFetchMs, 50)), "ms");
    record(`search @${label(size)}`, "indices (text, userId, vector)", stats.memories.indices, "");
    record(`search @${label(size)}`, "store on disk", round(stats.diskBytes / 2 ** 20), "MiB");
    record(`search @${label(size)}`, "mm serve peak RSS", round(rss / 1024), "MiB");
  } finally {
    await server.stop();
    s.close();
    await embedder.close?.();
  }
}

// ---------------------------------------------------------------------------------------------

/** Fills a store with `size` memories over `userCount(size)` users, vectors derived from a pool of real embeddings. */
async function fillStore(dir, size) {
  const poolSize = Math.min(texts.length, QUICK ? 300 : 3000);
  const poolFile = join(root, "bench-results", "cache", `pool-vectors-${poolSize}.json`);
  let pool;
  if (existsSync(poolFile)) pool = JSON.parse(readFileSync(poolFile, "utf8"));
  else {
    const e = useLiteProvider.create(DEFAULT_EMBEDDER, {});
    const base = texts.slice(0, poolSize);
    const vectors = await e.embed(base);
    await e.close?.();
    pool = { texts: base, vectors: vectors.map((v) => Array.from(v, (x) => Math.round(x * 1e5) / 1e5)) };
    mkdirSync(dirname(poolFile), { recursive: true });
    writeFileSync(poolFile, JSON.stringify(pool));
  }
  const store = await Store.open(dir, { create: DEFAULT_EMBEDDER, tuning: TUNING });
  const users = userCount(size);
  const started = performance.now();
  let slowestBatchMs = 0;
  const batch = 5000;
  const t0 = Date.parse("2026-01-01T00:00:00.000Z");
  for (let start = 0; start < size; start += batch) {
    const rowsOut = [];
    for (let i = start; i < Math.min(size, start + batch); i++) {
      const k = i % pool.texts.length;
      const v = Float32Array.from(pool.vectors[k], (x) => x + (Math.sin(i * 12.9898 + x * 78.233) * 0.02));
      let n = 0;
      for (const x of v) n += x * x;
      n = Math.sqrt(n);
      for (let j = 0; j < v.length; j++) v[j] /= n;
      const at = new Date(t0 + i * 1000).toISOString();
      rowsOut.push({
        id: `mem_${String(i).padStart(24, "0")}`,
        accountId: "acct_default",
        content: `${pool.texts[k]} (#${i})`,
        userId: `user${Math.floor(i / 2000) % users}`, // users arrive in bursts of 2,000 memories
        agentId: null,
        tags: [],
        metadata: null,
        entityIds: [],
        createdAt: at,
        updatedAt: at,
        vector: v,
      });
    }
    const t = performance.now();
    await store.write((w) => w.insertMemories(rowsOut));
    slowestBatchMs = Math.max(slowestBatchMs, performance.now() - t);
  }
  const ms = performance.now() - started;
  await store.optimize({ keepVersionsMs: 0 });
  store.close();
  return { ms, slowestBatchMs };
}

function userCount(size) {
  return Math.max(1, Math.round(size / 2000));
}

async function serve(store) {
  const searchMs = [];
  const server = await startMmServe(BIN, env(store), {
    rateLimit: 100_000,
    onLog: (e) => e.path === "/v1/memories/search" && searchMs.push(e.ms),
  });
  /** searchMs: the server's own time per search request (its access log), in arrival order. */
  return { ...server, searchMs };
}

function peakRss(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** Node code that imports the use-lite provider, creates `e` and runs `body` (an async function's). */
function modelScript(body) {
  const config = JSON.stringify({ ...DEFAULT_EMBEDDER, options: { workers: 1 } });
  // With the code cache the CLI uses (src/code-cache.ts): the floor is the fastest load mm knows.
  const codeCache = `require(${JSON.stringify(join(root, "dist/bundle/code-cache.js"))}).useCodeCache(${JSON.stringify(join(root, "dist/bundle/code-cache"))});`;
  return `${codeCache} import(${JSON.stringify(join(root, "dist/embedder/use-lite.js"))}).then(async (m) => { const e = m.useLiteProvider.create(${config}, {}); ${body}; })`;
}

function modelLoadMs() {
  const r = spawnSync(process.execPath, ["-e", `const t = performance.now(); ${modelScript("await e.embed(['x']); console.log(performance.now() - t)")}`], { encoding: "utf8" });
  return Number(r.stdout.trim());
}

function timeCmd(argv, store) {
  return timeProcess([BIN, ...argv], store);
}

function timeProcess(argv, store) {
  const t = performance.now();
  const r = spawnSync(process.execPath, argv, { env: env(store), encoding: "utf8", maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`node ${argv.join(" ")} failed: ${r.stderr}`);
  return performance.now() - t;
}

function run(argv, store) {
  const r = spawnSync(process.execPath, [BIN, ...argv], { env: env(store), encoding: "utf8" });
  if (r.status !== 0) throw new Error(`mm ${argv.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
}

function env(store) {
  return { ...process.env, MM_STORE: store, LANCEDB_LOG: "error" };
}

function loadTexts() {
  const data = join(root, "..", "shared", "data", "locomo-dev", "locomo-dev.json");
  const out = [];
  if (existsSync(data)) {
    for (const sample of JSON.parse(readFileSync(data, "utf8"))) {
      for (const [k, v] of Object.entries(sample.conversation)) {
        if (/^session_\d+$/.test(k)) for (const t of v) out.push(`${t.speaker}: ${t.text}`);
      }
    }
  }
  if (out.length < 3000) {
    const subjects = ["I", "My sister", "Our team", "The doctor", "Alex", "My neighbour"];
    const verbs = ["visited", "talked about", "planned", "finished", "started", "cancelled"];
    const objects = ["a trip to Lisbon", "the quarterly budget", "a pottery class", "the new bike", "a birthday party", "the garden"];
    for (let i = out.length; i < 3000; i++) out.push(`${subjects[i % 6]} ${verbs[(i >> 1) % 6]} ${objects[(i >> 2) % 6]} on day ${i}.`);
  }
  return out;
}

function loadQueries() {
  const data = join(root, "..", "shared", "data", "locomo-dev", "locomo-dev.json");
  if (!existsSync(data)) return texts.slice(0, 200).map((t) => t.split(" ").slice(0, 6).join(" "));
  return JSON.parse(readFileSync(data, "utf8")).flatMap((s) => s.qa.map((q) => q.question));
}

function machine() {
  return { cpus: cpus().length, cpu: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, platform: process.platform };
}

function pct(values, p) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

function median(values) {
  return pct(values, 50);
}

function round(x) {
  return typeof x === "number" ? Math.round(x * 10) / 10 : x;
}

function label(n) {
  return n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n);
}

function printTable() {
  const head = ["section", "figure", "value", "floor", "target", "ok"];
  const body = rows.map((r) => [r.section, r.name, `${r.value} ${r.unit}`.trim(), r.floor === undefined ? "" : `${r.floor}`, r.target ?? "", r.target ? (r.ok ? "yes" : "NO") : ""]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => String(b[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join(" | ");
  console.log(`\nmm bench · ${results.machine.cpus} cores (${results.machine.cpu}), ${results.machine.memoryGiB} GiB, Node ${results.machine.node}`);
  console.log(line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("-|-"));
  for (const b of body) console.log(line(b));
}
