#!/usr/bin/env node
// `npm run bench`: speed, memory and scale figures for mm, each beside its floor. Prints a table and
// writes JSON (bench-results/bench.json). Options:
//   --sizes 10000,100000   store sizes of the growth run: one store filled to each size in turn,
//                          measured at each (add 1000000 for the 1M run: about an hour here)
//   --quick                a short smoke run (sizes 2000, few queries) for tests
//   --out <file>           where to write the JSON
//   --sections a,b         only some of: ingest, cold, write, search, remote, transfer, hooks (default all;
//                          --quick leaves hooks out: scripts/bench-hooks.mjs has no short form)
//   --index-min-rows <n>   build the vector index from n rows (default 50,000), search exactly
//   --exact-max-rows <n>   up to n rows (default 20,000), seal segments at n rows (default
//   --segment-rows <n>     250,000): the smoke test shrinks them to exercise every path on a small store
//   --sections object-store, or --store az://…: one replica on Azurite (started by the bench)
//                          against a local store, with object-store requests counted (opt-in);
//                          --object-memories 100000 for the store size (from 10,000, filled
//                          through the import path with vectors given), --pin to run the emulator
//                          on a core of its own (docs/object-storage.md, "Measured")
//   --keep <dir>           grow the store in <dir> (new or empty) and keep it afterwards, for A/B runs on it
//   --check                the performance guard (.ci/run): four ratios measured in one run each,
//                          against floors; exits 1 when one stays below its floor after a retry
// Texts come from ../shared/data/locomo-dev when present (read at run time, never copied), else
// from a template generator. The growth run fills its store through `mm import` with vectors
// derived from a pool of real embeddings (see fillByImport), because embedding a million texts
// would take hours on 2 cores.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
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
const SIZES = (flag("sizes", QUICK ? "2000" : "10000,100000")).split(",").map(Number).sort((a, b) => a - b);
const OUT = resolve(flag("out", join(root, "bench-results", "bench.json")));
const QUERIES = QUICK ? 20 : 200;
const SECTIONS = new Set(flag("sections", "ingest,cold,write,search,remote,transfer,hooks").split(","));
const INGEST_N = QUICK ? 200 : 2000;
/** Records per `mm import` commit in the growth run: a commit of 1,024 rows of 512 floats takes about 0.3 s here. */
const IMPORT_BATCH = 1024;
const TUNING = {
  ...(flag("index-min-rows") ? { vectorIndexMinRows: Number(flag("index-min-rows")) } : {}),
  ...(flag("exact-max-rows") ? { exactSearchMaxRows: Number(flag("exact-max-rows")) } : {}),
  ...(flag("segment-rows") ? { segmentRows: Number(flag("segment-rows")) } : {}),
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
if (args.includes("--check")) {
  let failed;
  try {
    failed = await runChecks();
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}
try {
  if (SECTIONS.has("ingest")) await benchIngest();
  if (SECTIONS.has("cold")) await benchColdStart();
  if (SECTIONS.has("write")) await benchWrites();
  if (SECTIONS.has("search")) {
    const store = flag("keep") ? resolve(flag("keep")) : join(work, "growth-store");
    let filled = 0;
    for (const size of SIZES) {
      await benchSearch(store, filled, size);
      filled = size;
    }
  }
  if (SECTIONS.has("remote")) await benchRemote();
  if (SECTIONS.has("transfer")) await benchTransfer();
  if (SECTIONS.has("hooks") && !QUICK) benchHooks();
  if (SECTIONS.has("object-store") || flag("store")?.startsWith("az://")) benchObjectStore();
} finally {
  rmSync(work, { recursive: true, force: true });
}
results.finishedAt = new Date().toISOString();
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, JSON.stringify(results, null, 2) + "\n");
printTable();
console.log(`\nJSON: ${OUT}`);

// ---------------------------------------------------------------------------------------------
/**
 * A coding agent's hooks (docs/agents.md, "Measured: what the hooks inject"): scripts/bench-hooks.mjs
 * on bench/hooks/, its own store and `mm serve`, about two minutes. What they inject on the
 * development and held-out prompts, and how long a prompt's recall takes: a cold process, the
 * process with a server running, and the URL hook the server answers itself.
 */
function benchHooks() {
  const section = "hooks";
  const run = spawnSync(process.execPath, [join(root, "scripts", "bench-hooks.mjs")], { encoding: "utf8", maxBuffer: 1 << 26 });
  if (run.status !== 0) throw new Error(`bench-hooks failed: ${run.stderr.slice(-500)}`);
  const report = JSON.parse(readFileSync(join(root, "bench-results", "hooks.json"), "utf8"));
  const pc = (x) => `${Math.round(x * 100)}%`;
  for (const [name, f] of Object.entries(report.splits)) {
    record(section, `${name}: relevant among injected / prompts that get their memory / silent when none`, `${pc(f.precision)} / ${pc(f.recall)} / ${pc(f.silence)}`, "", undefined, "≥ 90% / ≥ 70% / ≥ 80%", f.precision >= 0.9 && f.recall >= 0.7 && f.silence >= 0.8);
  }
  const l = report.latency;
  const ms = (x) => `${round(x.p50)} / ${round(x.p95)}`;
  record(section, "a prompt, cold process, no server: p50 / p95", ms(l.prompt), "ms", undefined, "p95 ≤ 1500 ms", l.prompt.p95 <= 1500);
  record(section, "a session's start, cold process: p50 / p95", ms(l.session), "ms");
  record(section, "a prompt, process hook with mm serve running: p50 / p95", ms(l.served), "ms", undefined, "p95 ≤ 150 ms", l.served.p95 <= 150);
  record(section, "a prompt, URL hook (POST /hooks/claude-code): p50 / p95", ms(l.url), "ms", undefined, "p95 ≤ 50 ms", l.url.p95 <= 50);
}

// ---------------------------------------------------------------------------------------------
/**
 * One replica's figures on an object store against the local store in the same run:
 * scripts/measure-object-store.mjs starts its own Azurite (Microsoft's emulator) and counts the
 * object-store requests of a create and of a search through a pass-through proxy. Opt-in
 * (`--sections object-store`, or `--store az://…`): it takes minutes, and the store it measures is
 * always that Azurite, whatever container `--store` names (docs/scale-out.md, "Measured").
 */
function benchObjectStore() {
  const section = "object store (Azurite) vs local, one replica";
  const n = QUICK ? 300 : Number(flag("object-memories", "2000"));
  // From 10,000 memories the stores are filled with vectors given (embedding them would take an
  // hour); with --pin, mm runs on one core for both stores and the emulator on the other.
  const extra = [...(n >= 10_000 ? ["--bulk"] : []), ...(args.includes("--pin") ? ["--pin"] : [])];
  const run = spawnSync(process.execPath, [join(root, "scripts", "measure-object-store.mjs"), "--memories", String(n), "--searches", QUICK ? "20" : "100", ...extra], { encoding: "utf8", maxBuffer: 1 << 26 });
  if (run.status !== 0) throw new Error(`measure-object-store failed:\n${run.stderr}`);
  const m = JSON.parse(run.stdout.slice(run.stdout.indexOf("{")));
  const { local, azurite } = m;
  record(section, "memories in each store", n, "");
  if (m.pinned) record(section, "cores", m.pinned, "");
  record(section, "load average (1 min) at the end of the run", m.loadAverage1m, "");
  record(section, "creates/s, 8 concurrent clients (local → Azurite)", `${local.createsPerS8Clients} → ${azurite.createsPerS8Clients}`, "/s", undefined, "≥ 0.8 × local", azurite.createsPerS8Clients >= 0.8 * local.createsPerS8Clients);
  record(section, "creates/s, one client (local → Azurite)", `${local.createsPerSOneClient} → ${azurite.createsPerSOneClient}`, "/s");
  record(section, "search p50, as the maintainer left the store (local → Azurite)", `${local.searchP50Ms} → ${azurite.searchP50Ms}`, "ms");
  record(section, "search p95 (local → Azurite)", `${local.searchP95Ms} → ${azurite.searchP95Ms}`, "ms");
  record(section, "search p50, compacted store (local → Azurite)", `${local.searchP50MsCompacted} → ${azurite.searchP50MsCompacted}`, "ms", undefined, "≤ 2 × local", azurite.searchP50MsCompacted <= 2 * local.searchP50MsCompacted);
  record(section, "search p95, compacted store (local → Azurite)", `${local.searchP95MsCompacted} → ${azurite.searchP95MsCompacted}`, "ms");
  record(section, "Azurite's own CPU during the timed part (it shares the machine's cores)", azurite.azuriteCpuSTimed, "s");
  record(section, "CPU during the 8 clients' creates, mm + Azurite (local → Azurite)", `${local.cpuDuringCreates.mmCpuS} → ${azurite.cpuDuringCreates.mmCpuS} + ${azurite.cpuDuringCreates.azuriteCpuS}`, "s");
  record(section, "object-store requests per create / per search (compacted; with 30 small fragments)", `${azurite.requestsPerCreate} / ${azurite.requestsPerSearch}; ${azurite.requestsPerSearch30Fragments}`, "");
  record(section, `another process reads a new memory by id after (p50 / max; read consistency ${m.readConsistencyIntervalS} s)`, `${azurite.visibleAfterMs.p50} / ${azurite.visibleAfterMs.max}`, "ms");
}

// ---------------------------------------------------------------------------------------------
/**
 * The performance guard (`npm run bench -- --check`, run by .ci/run): ratios of two timings taken
 * in one run, side by side, so that the machine's speed cancels out and a slow CI machine doesn't
 * fail it. Each ratio has a floor set from measurements with a margin, below the target; one that
 * falls below its floor is measured once more, and only a second miss fails the run. The table is
 * printed every time. About a minute and a half on 2 cores.
 */
function checks() {
  return [
    // Floors from every run measured, with room for a loaded machine, each still failing the
    // regression it guards against (docs/performance.md, "The performance guard"): creates fell to
    // 0.37-0.41 of a batch add (#54); runs measured 0.47-1.61. A cold list measured 2.37-3.59; the
    // search 4.1-4.5.
    {
      name: "HTTP creates, 8 clients / mm memories add --batch, the same 400 texts",
      floor: 0.45,
      target: 0.8,
      measure: checkWrites,
    },
    { name: "cold mm memories list / node -e 0", ceiling: 3.2, target: 2.2, measure: checkColdList },
    { name: "HTTP hybrid search p50 / its query's embedding p50", ceiling: 6, measure: checkHybridSearch },
    // The URL hook searches at a threshold of 0.05 with explain, so more candidates are scored than
    // at the default 0.5. With one keyword query per search it measured 3.4 to 4.4 (load 2 to 9);
    // with one query per word of the prompt, as before 8 December, 6.2 to 8.1: the ceiling sits
    // between, so it fails that regression (docs/performance.md, "The performance guard").
    { name: "URL hook (POST /hooks/claude-code) p50 / its prompt's embedding p50", ceiling: 6, measure: checkHookRecall },
  ];
}

async function runChecks() {
  const table = [];
  let failed = false;
  for (const check of checks()) {
    const passes = (r) => (check.floor !== undefined ? r >= check.floor : r <= check.ceiling);
    let m = await check.measure();
    const tries = [m];
    if (!passes(m.ratio)) tries.push((m = await check.measure()));
    const ok = passes(m.ratio);
    failed ||= !ok;
    table.push({ check, tries, ok });
  }
  const limit = (c) => (c.floor !== undefined ? `≥ ${c.floor}` : `≤ ${c.ceiling}`) + (c.target ? ` (target ${c.target})` : "");
  const head = ["check", "ratio", "measured", "limit", "ok"];
  const body = table.map(({ check, tries, ok }) => [check.name, tries.map((t) => t.ratio.toFixed(2)).join(", then "), tries.at(-1).detail, limit(check), ok ? "yes" : "NO"]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join(" | ");
  console.log(`\nmm bench --check · ${cpus().length} cores, Node ${process.version}, load average ${loadavg()[0].toFixed(1)}`);
  console.log(line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("-|-"));
  for (const b of body) console.log(line(b));
  if (failed) console.log("\nA ratio stayed below its floor in two runs: see docs/performance.md, \"The performance guard\".");
  return failed;
}

/**
 * 8 HTTP clients creating single memories on a warm `mm serve`, then `mm memories add --batch` of the
 * same 400 lines into a fresh store: the whole command, as a user times it, and its steady rate
 * (less a 20-line batch: Node, the store, the model) shown beside it.
 */
async function checkWrites() {
  const n = 400;
  const lines = Array.from({ length: n }, (_, i) => ({ content: texts[i], userId: `user${i % 20}` }));
  const dir = mkdtempSync(join(work, "check-writes-"));
  const http = await httpCreates(join(dir, "http"), lines, 8);
  const file = join(dir, "lines.jsonl");
  writeFileSync(file, lines.map((l) => JSON.stringify(l)).join("\n"));
  writeFileSync(join(dir, "first.jsonl"), lines.slice(0, 20).map((l) => JSON.stringify(l)).join("\n"));
  const first = timeCmd(["memories", "add", "--batch", join(dir, "first.jsonl"), "--json"], join(dir, "first"));
  const all = timeCmd(["memories", "add", "--batch", file, "--json"], join(dir, "batch"));
  rmSync(dir, { recursive: true, force: true });
  const batch = n / (all / 1000);
  const steady = (n - 20) / ((all - first) / 1000);
  return {
    ratio: http.rate / batch,
    detail: `${round(http.rate)} creates/s (p50 ${Math.round(pct(http.latency, 50))}, p95 ${Math.round(pct(http.latency, 95))} ms) / ${round(batch)} lines/s (steady ${round(steady)})`,
  };
}

/** Single creates of `lines` from `clients` concurrent HTTP clients on a warm `mm serve` of a new store. */
async function httpCreates(store, lines, clients) {
  run(["init"], store);
  const key = JSON.parse(run(["keys", "create", "--name", "bench", "--json"], store)).key;
  const server = await serve(store);
  try {
    const post = async (body) => {
      const t = performance.now();
      const res = await fetch(`${server.url}/v1/memories`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      if (res.status !== 201) throw new Error(`POST /v1/memories: ${res.status} ${await res.text()}`);
      await res.json();
      return performance.now() - t;
    };
    // Warm: the model on its worker threads, the store, the connections (users the timed part never has).
    for (let i = 0; i < 16; i++) await post({ content: texts[texts.length - 1 - i], userId: `warm${i % 4}` });
    const latency = [];
    let next = 0;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: clients }, async () => {
      while (next < lines.length) latency.push(await post(lines[next++]));
    }));
    return { rate: lines.length / ((performance.now() - t0) / 1000), latency };
  } finally {
    await server.stop();
  }
}

/** Cold `mm memories list` against a bare `node -e 0`, alternating, medians of 7. */
async function checkColdList() {
  const store = join(work, "check-cold");
  run(["memories", "add", "warm the page cache", "--user", "u"], store);
  timeCmd(["memories", "list"], store);
  const list = [];
  const node = [];
  for (let i = 0; i < 7; i++) {
    list.push(timeCmd(["memories", "list"], store));
    node.push(timeProcess(["-e", "0"]));
  }
  return { ratio: median(list) / median(node), detail: `${Math.round(median(list))} / ${Math.round(median(node))} ms` };
}

/**
 * Hybrid searches over HTTP on a warm `mm serve` (one user's 400 memories), each alternating with
 * the embedding of its query on one thread in this process: what a search costs beyond the model.
 */
async function checkHybridSearch() {
  return checkAgainstEmbedding("search", (url, key, query) =>
    fetch(`${url}/v1/memories/search`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ query, userId: "u", limit: 10, mode: "hybrid" }),
    }),
  );
}

/** The URL hook a coding agent calls (http/hooks.ts): a prompt's recall, against its embedding, as the search is. */
async function checkHookRecall() {
  return checkAgainstEmbedding("hook", (url, key, prompt) =>
    fetch(`${url}/hooks/claude-code?userId=u`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ session_id: `check-${Math.random()}`, transcript_path: join(work, "t.jsonl"), cwd: work, permission_mode: "default", hook_event_name: "UserPromptSubmit", prompt }),
    }),
  );
}

/**
 * The p50 of `ask` on a warm `mm serve` (one user's 400 memories) against the same queries'
 * embedding on one thread in this process, alternating, so the machine's speed cancels out.
 */
async function checkAgainstEmbedding(name, ask) {
  const store = join(work, `check-${name}`);
  const file = join(work, `check-${name}.jsonl`);
  writeFileSync(file, texts.slice(0, 400).map((content) => JSON.stringify({ content, userId: "u" })).join("\n"));
  run(["memories", "add", "--batch", file, "--json"], store);
  const key = JSON.parse(run(["keys", "create", "--name", "bench", "--json"], store)).key;
  const embedder = useLiteProvider.create({ ...DEFAULT_EMBEDDER, options: { workers: 1 } }, {});
  const server = await serve(store);
  try {
    const search = async (query) => {
      const t = performance.now();
      const res = await ask(server.url, key, query);
      if (res.status !== 200) throw new Error(`${name}: ${res.status} ${await res.text()}`);
      await res.json();
      return performance.now() - t;
    };
    const embed = async (query) => {
      const t = performance.now();
      await embedder.embed([query]);
      return performance.now() - t;
    };
    for (const q of queries.slice(-10)) await search(q).then(() => embed(q));
    const http = [];
    const model = [];
    for (let i = 0; i < 60; i++) {
      const q = queries[i % queries.length];
      if (i % 2) model.push(await embed(q)), http.push(await search(q));
      else http.push(await search(q)), model.push(await embed(q));
    }
    return { ratio: median(http) / median(model), detail: `${round(median(http))} / ${round(median(model))} ms` };
  } finally {
    await server.stop();
    await embedder.close?.();
  }
}

// ---------------------------------------------------------------------------------------------

async function benchIngest() {
  const sample = texts.slice(0, INGEST_N);
  const single = useLiteProvider.create({ ...DEFAULT_EMBEDDER, options: { workers: 1 } }, {});
  await single.embed(sample.slice(0, 8));
  const t1 = performance.now();
  await single.embed(sample);
  const singleRate = sample.length / ((performance.now() - t1) / 1000);
  await single.close?.();

  // The CLI end to end: batch add of INGEST_N lines, minus a batch of the first WARM_N (the fixed
  // start-up: Node, the store, and the worker threads loading and warming their models, which the
  // embedder's own figure leaves out too), so both rates are steady-state rates. With --quick's
  // 200 lines, a first batch of 100 left too little between the two timings: on a loaded machine
  // the difference came out negative (a rate of -330.7 memories/s, 27 November).
  const WARM_N = QUICK ? 20 : 100;
  const file = join(work, "ingest.jsonl");
  const lines = sample.map((content) => JSON.stringify({ content, userId: "bench" }));
  writeFileSync(file, lines.join("\n"));
  writeFileSync(join(work, "first.jsonl"), lines.slice(0, WARM_N).join("\n"));
  const store = join(work, "ingest-store");
  const { rate: pooledRate, result: cliRate } = await embedderAround(sample, async () => {
    const first = timeCmd(["memories", "add", "--batch", join(work, "first.jsonl"), "--json", "--batch-size", "256"], store);
    const all = timeCmd(["memories", "add", "--batch", file, "--json", "--batch-size", "256"], store);
    return (sample.length - WARM_N) / ((all - first) / 1000);
  });

  record("ingest", "embedder, 1 thread", round(singleRate), "texts/s");
  record("ingest", `embedder, ${Math.min(4, cpus().length)} worker threads`, round(pooledRate), "texts/s", round(singleRate), "≥ 1.6× 1 thread", pooledRate >= 1.6 * singleRate);
  record("ingest", "mm memories add --batch", round(cliRate), "memories/s", round(pooledRate), "≥ 90% of the embedder", cliRate >= 0.9 * pooledRate);
  benchDetection();
}

/**
 * What replaced-fact detection and deduplication cost a batch add (docs/memory-validity.md), by
 * scripts/supersede-speed.mjs: a person's and an agent's notes (bench/everyday's memories and the
 * replaced-fact development set's facts, which say what changed; LoCoMo's turns are transcripts,
 * which detection reads as talk and passes by) added in batches of 64 with both on (the default)
 * and both off, each into a fresh store, alternating, in one process (through the CLI, a command's
 * start-up and its background maintenance made the ratio jump). Wall time decides the target; CPU
 * time (every thread: the main one and the model's workers) is printed beside it, because the
 * model keeps both cores busy and what detection adds shows there even when the machine's load
 * makes wall time jump.
 */
function benchDetection() {
  const run = spawnSync(process.execPath, [join(root, "scripts", "supersede-speed.mjs"), "--notes", "--lines", QUICK ? "200" : "600", "--rounds", QUICK ? "1" : "5", "--no-search", "--json"], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(`supersede-speed failed:\n${run.stderr}`);
  const { wallMs, cpuMs } = JSON.parse(run.stdout.trim().split("\n").at(-1));
  const ms = (x) => Math.round(x * 100) / 100;
  record("ingest", "batch add of notes, detection and dedupe off (wall; CPU)", `${ms(wallMs.off)}; ${ms(cpuMs.off)}`, "ms/memory");
  record("ingest", `batch add of notes, detection and dedupe on, the default (wall; CPU): ${(wallMs.on / wallMs.off).toFixed(2)}×; ${(cpuMs.on / cpuMs.off).toFixed(2)}× off`, `${ms(wallMs.on)}; ${ms(cpuMs.on)}`, "ms/memory", ms(wallMs.off), "wall ≤ 1.15× off", wallMs.on <= 1.15 * wallMs.off);
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
 * What `mm --remote` adds to a request: a real `mm serve` on a store of its own, and the same get,
 * list and search made over and over each way, alternating, so drift on a busy machine hits all:
 * with curl, and with `mm --remote URL --key K memories … --json` (the same request, the same body
 * printed). The floor of any Node CLI is a Node process that makes the get with node:http and
 * exits; `node -e 0` is Node's own start-up.
 */
async function benchRemote() {
  const section = "remote CLI";
  if (spawnSync("curl", ["--version"]).error) return record(section, "curl not found: section skipped", "", "");
  const runs = QUICK ? 5 : 40;
  const store = join(work, "remote-store");
  run(["accounts", "create", "bench", "--plan", "enterprise"], store);
  const key = JSON.parse(run(["keys", "create", "--account", "bench", "--name", "bench", "--json"], store)).key;
  const server = await serve(store);
  try {
    const remote = ["--remote", server.url, "--key", key];
    const added = spawnSync(process.execPath, [BIN, ...remote, "memories", "add", "--batch", "-", "--user", "bench", "--json"], {
      env: env(store),
      input: texts.slice(0, 50).map((content) => JSON.stringify({ content })).join("\n"),
      encoding: "utf8",
    });
    if (added.status !== 0) throw new Error(`mm --remote memories add --batch failed: ${added.stderr}`);
    const id = JSON.parse(run([...remote, "memories", "list", "--limit", "1", "--json"], store)).items[0].id;
    const query = texts[0].split(" ").slice(0, 5).join(" ");
    const curl = (...a) => ["curl", ["-sf", "-o", "/dev/null", "-H", `Authorization: Bearer ${key}`, ...a]];
    const mm = (...a) => [process.execPath, [BIN, ...remote, "memories", ...a, "--json"]];
    const ways = {
      "node -e 0": [process.execPath, ["-e", "0"]],
      "node:http get": [process.execPath, ["-e", `require("node:http").get(${JSON.stringify(`${server.url}/v1/memories/${id}`)}, { headers: { Authorization: "Bearer ${key}" } }, (r) => r.resume())`]],
      "get curl": curl(`${server.url}/v1/memories/${id}`),
      "get mm": mm("get", id),
      "list curl": curl(`${server.url}/v1/memories?userId=bench`),
      "list mm": mm("list", "--user", "bench"),
      "search curl": curl("-H", "Content-Type: application/json", "-d", JSON.stringify({ query, userId: "bench" }), `${server.url}/v1/memories/search`),
      "search mm": mm("search", query, "--user", "bench"),
    };
    const ms = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
    for (let i = 0; i < runs + 2; i++) {
      for (const [name, [cmd, argv]] of Object.entries(ways)) {
        const t = performance.now();
        const r = spawnSync(cmd, argv, { env: { ...env(store), MM_URL: "", MM_API_KEY: "" }, encoding: "utf8" });
        if (r.status !== 0) throw new Error(`${name} failed (${r.status}): ${r.stderr}`);
        if (i >= 2) ms[name].push(performance.now() - t); // the first two warm the disk cache
      }
    }
    // Wall times move with whatever else the machine runs; a process's own CPU time (user + sys,
    // reported at its exit by a preloaded file) much less: the Node ways again, measured so.
    const reporter = join(work, "cpu-report.cjs");
    writeFileSync(reporter, 'process.on("exit", () => { const u = process.cpuUsage(); require("node:fs").writeSync(2, `\\nmm-bench-cpu ${(u.user + u.system) / 1000}\\n`); });\n');
    const cpu = { "node -e 0": [], "node:http get": [], "get mm": [], "list mm": [], "search mm": [] };
    for (let i = 0; i < runs + 2; i++) {
      for (const name of Object.keys(cpu)) {
        const [cmd, argv] = ways[name];
        const r = spawnSync(cmd, argv, { env: { ...env(store), MM_URL: "", MM_API_KEY: "", NODE_OPTIONS: `--require ${reporter}` }, encoding: "utf8" });
        if (r.status !== 0) throw new Error(`${name} failed (${r.status}): ${r.stderr}`);
        if (i >= 2) cpu[name].push(Number(/mm-bench-cpu ([\d.]+)/.exec(r.stderr)[1]));
      }
    }
    const p50p95 = (name) => `${round(pct(ms[name], 50))} / ${round(pct(ms[name], 95))}`;
    record(section, "node start-up alone (node -e 0), p50 / p95", p50p95("node -e 0"), "ms");
    record(section, "a Node process that makes the get with node:http, p50 / p95", p50p95("node:http get"), "ms");
    const floor = median(ms["node:http get"]) - median(ms["get curl"]);
    for (const op of ["get", "list", "search"]) {
      record(section, `${op}: curl, p50 / p95`, p50p95(`${op} curl`), "ms");
      record(section, `${op}: mm --remote … --json, p50 / p95`, p50p95(`${op} mm`), "ms");
      const over = median(ms[`${op} mm`]) - median(ms[`${op} curl`]);
      record(section, `  ${op}: mm --remote over curl, p50 (floor: node:http get over curl)`, round(over), "ms", round(floor), "≤ 50 ms", over <= 50);
      record(section, `  ${op}: mm --remote CPU time over the node:http get's, p50`, round(median(cpu[`${op} mm`]) - median(cpu["node:http get"])), "ms");
    }
    record(section, "load average (1 min) at the end: wall times move with it", round(loadavg()[0]), "");
    record(section, "CPU time p50: node -e 0 / the node:http get", `${round(median(cpu["node -e 0"]))} / ${round(median(cpu["node:http get"]))}`, "ms");
  } finally {
    await server.stop();
  }
}

/**
 * The bare LanceDB queries of one hybrid search (core/search.ts): the scope's size and the
 * full-text lookup of the query's words (one query where it can be), beside the vector search's
 * nearest 50; then one exact-cosine fetch of the 50 keyword matches outside them. `vector` may be a promise (still embedding).
 */
async function hybridQueries(s, vector, q, filter) {
  const words = keywordQuery(q).split(" ").filter(Boolean);
  const [, perWord, nearest, v] = await Promise.all([
    s.countMemories(filter),
    s.memoriesWithWords(words, filter, 5000),
    s.searchMemories(vector, filter, 50),
    vector,
  ]);
  const near = new Set(nearest.map((h) => h.record.id));
  const ids = [...new Set(perWord.flat().map((r) => r.id))].filter((id) => !near.has(id)).slice(0, 50);
  const t = performance.now();
  await s.nearestAmong(v, filter, { ids, seqs: new Map() });
  return { fetchMs: performance.now() - t };
}

/**
 * HTTP creates of single memories from 8 concurrent clients on a warm `mm serve`, beside the
 * embedder's batched throughput: group commit (core/group-commit.ts) should make one embedding
 * call and one commit serve many requests.
 */
async function benchWrites() {
  const n = QUICK ? 80 : 800;
  const clients = 8;
  const lines = Array.from({ length: n }, (_, i) => ({ content: texts[i % texts.length], userId: `user${i % 20}` }));
  const { rate: embedderRate, result: { rate, latency } } = await embedderAround(texts.slice(0, QUICK ? 200 : 800), () => httpCreates(join(work, "write-store"), lines, clients));
  const p50 = pct(latency, 50);
  const p95 = pct(latency, 95);
  record("write", `HTTP create, ${clients} clients, single memories`, round(rate), "memories/s", `embedder ${round(embedderRate)} texts/s`, "≥ 0.8 × the embedder", rate >= 0.8 * embedderRate);
  record("write", "  latency p50 / p95", `${round(p50)} / ${round(p95)}`, "ms", undefined, "p95 ≤ 3 × p50", p95 <= 3 * p50);
}

/**
 * The embedder's batched rate (texts/s) on `sample`, on warm worker threads, timed right before
 * and right after `measure` runs; the mean is the floor that `measure`'s figure is compared with,
 * since on a busy machine figures taken minutes apart drift by 20%.
 */
async function embedderAround(sample, measure) {
  const pooled = useLiteProvider.create(DEFAULT_EMBEDDER, {});
  try {
    await pooled.embed(sample.slice(0, 100)); // starts and warms the workers
    const timed = async () => {
      const t = performance.now();
      await pooled.embed(sample);
      return sample.length / ((performance.now() - t) / 1000);
    };
    const before = await timed();
    const result = await measure();
    return { rate: (before + (await timed())) / 2, result };
  } finally {
    await pooled.close?.();
  }
}

async function benchSearch(store, from, size) {
  const section = `search @${label(size)}`;
  const fill = await fillByImport(store, from, size);
  record(section, `fill ${label(from)} → ${label(size)} (mm import, vectors given)`, round((size - from) / (fill.ms / 1000)), "rows/s");
  record(section, "  maintenance passes during the fill: count, total, longest", `${fill.passes.length}, ${round(sum(fill.passes) / 1000)} s, ${round(Math.max(0, ...fill.passes) / 1000)} s`, "");
  // Maintenance never takes the write lock: a write waits for it only through its own commit,
  // slowed by maintenance sharing the machine. Its wait for the lock is for the import's commits.
  const worst = (a) => round(Math.max(...a));
  record(section, `  a write in all, one every 250 ms beside ${IMPORT_BATCH}-row import commits: longest`, worst(fill.probeMs), "ms", `p50 ${round(pct(fill.probeMs, 50))}`);
  record(section, "    its wait for the write lock (held by the import's commits, never by maintenance)", worst(fill.lockMs), "ms", `p50 ${round(pct(fill.lockMs, 50))}`);
  record(section, "    its own commit, beside maintenance: the longest wait for maintenance", worst(fill.commitMs), "ms", `p50 ${round(pct(fill.commitMs, 50))}`, "≤ 1 s", Math.max(...fill.commitMs) <= 1000);
  record(section, "  mm store optimize after the fill", round(fill.optimizeMs / 1000), "s");
  record(section, "store on disk at rest / computed (vectors ×2 + text ×2)", `${round(fill.restBytes / 2 ** 20)} / ${round(fill.computedBytes / 2 ** 20)}`, "MiB", undefined, "≤ 2 × computed", fill.restBytes <= 2 * fill.computedBytes);
  record(section, "peak disk during the fill and its maintenance", round(fill.peakBytes / 2 ** 20), "MiB", undefined, "≤ 1.5 × at rest", fill.peakBytes <= 1.5 * fill.restBytes);
  record(section, "segments (sealed + active)", fill.segments, "");

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
  record(section, "vector index (built by maintenance)", index ? `IVF_FLAT in ${index.segments} of ${stats.memories.segments.length} segments, ${index.partitions} partitions` : "none (table below the index size)", "");
  if (index) {
    // Top-10 through the index and exactly (a second handle that never uses it), on the same query
    // vectors: account-wide (the whole table in scope) and prefiltered by user.
    const exact = await Store.open(store, { tuning: { exactSearchMaxRows: Number.MAX_SAFE_INTEGER } });
    const n = QUICK ? 10 : 50;
    const queryVectors = await embedder.embed(Array.from({ length: n }, (_, i) => queries[i % queries.length]));
    for (const scope of ["account-wide", "per user"]) {
      const annMs = [];
      const exactMs = [];
      let found = 0;
      let expected = 0;
      for (let i = 0; i < n; i++) {
        const filter = scope === "per user" ? { accountId: "acct_default", userId: `user${i % users}` } : { accountId: "acct_default" };
        let t = performance.now();
        const approx = await s.searchMemories(queryVectors[i], filter, 10);
        annMs.push(performance.now() - t);
        t = performance.now();
        const truth = new Set((await exact.searchMemories(queryVectors[i], filter, 10)).map((h) => h.record.id));
        exactMs.push(performance.now() - t);
        found += approx.filter((h) => truth.has(h.record.id)).length;
        expected += truth.size;
      }
      const recall = found / expected;
      record(section, `${scope} top-10 p50 / p95 (store API)`, `${round(pct(annMs, 50))} / ${round(pct(annMs, 95))}`, "ms", `exact ${round(pct(exactMs, 50))} / ${round(pct(exactMs, 95))}`);
      record(section, `${scope} recall@10 vs exact search`, Math.round(recall * 1000) / 1000, "", undefined, "≥ 0.95", recall >= 0.95);
    }
    exact.close();
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
    const rssBefore = currentRss(server.pid);
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
    const rssAfter = currentRss(server.pid);
    await new Promise((r) => setTimeout(r, 200)); // the last access-log lines
    const inServer = server.searchMs.slice(warmups.length * 2);
    const serverSide = { semantic: inServer.slice(0, QUERIES), hybrid: inServer.slice(QUERIES, 2 * QUERIES) };
    const fp50 = pct(floorVec, 50);
    record(section, "semantic p50 / p95 (HTTP)", `${round(pct(latency.semantic, 50))} / ${round(pct(latency.semantic, 95))}`, "ms", `${round(fp50)} / ${round(pct(floorVec, 95))}`, "p50 ≤ floor + 5 ms", pct(latency.semantic, 50) <= fp50 + 5);
    const hp50 = pct(floorHybrid, 50);
    record(section, "hybrid p50 / p95 (HTTP)", `${round(pct(latency.hybrid, 50))} / ${round(pct(latency.hybrid, 95))}`, "ms", `${round(hp50)} / ${round(pct(floorHybrid, 95))}`, "p50 ≤ floor + 5 ms", pct(latency.hybrid, 50) <= hp50 + 5);
    record(section, "  semantic / hybrid p50 inside mm serve (its access log)", `${round(pct(serverSide.semantic, 50))} / ${round(pct(serverSide.hybrid, 50))}`, "ms");
    record(section, "  of which the keyword candidates' cosine fetch, p50", round(pct(cosineFetchMs, 50)), "ms");
    record(section, "indices (text, userId, vector)", stats.memories.indices, "");
    record(section, "mm serve peak RSS", round(rss / 1024), "MiB");
    record(section, "  mm serve RSS before → after the searches", `${round(rssBefore / 1024)} → ${round(rssAfter / 1024)}`, "MiB");
  } finally {
    await server.stop();
    s.close();
    await embedder.close?.();
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * Markdown export and import (docs/import-export.md, "Markdown") against JSON Lines of the same
 * store, in the same run: TRANSFER_N memories of five users with tags, metadata and entity links,
 * a relation, and one memory in a hundred replaced, put in through `mm import` with vectors given
 * (pool vectors, as fillByImport). Each export writes from that store; each import goes into a fresh
 * store and embeds every memory (neither format carries vectors by default), so embedding is most
 * of both imports. The exports run three times each, alternated, into new folders (medians), each
 * Markdown export followed by its floor: a bare Node process writing the same files' bytes into a
 * new folder, timed around the writes alone. That is what a file per memory costs on this disk at
 * that moment whatever mm does, and it varies more than tenfold with the file system's state
 * (docs/performance.md, "Import and export").
 */
async function benchTransfer() {
  const section = "transfer";
  const n = QUICK ? 1000 : 10_000;
  const pool = await vectorPool();
  const dir = join(work, "transfer");
  mkdirSync(dir, { recursive: true });
  const t0 = Date.parse("2026-01-01T00:00:00.000Z");
  const at = (i) => new Date(t0 + i * 1000).toISOString();
  const [ada, bob] = ["ent_" + "A".padStart(24, "0"), "ent_" + "B".padStart(24, "0")];
  const lines = [
    { format: "mm-export", version: 1, exportedAt: new Date().toISOString(), embedder: DEFAULT_EMBEDDER, scope: { accountId: "acct_default" }, vectors: true },
    { kind: "entity", id: ada, name: "Ada Lovelace", type: "PERSON", description: "mathematician", metadata: { born: 1815 }, createdAt: at(0), updatedAt: at(0) },
    { kind: "entity", id: bob, name: "Charles Babbage", type: "PERSON", createdAt: at(0), updatedAt: at(0) },
    { kind: "relation", id: "rel_" + "A".padStart(24, "0"), sourceId: ada, targetId: bob, type: "KNOWS", createdAt: at(0) },
  ];
  for (let i = 0; i < n; i++) {
    const k = i % pool.texts.length;
    lines.push({
      kind: "memory",
      id: memoryId(i + 1),
      content: `${pool.texts[k]} (#${i})`,
      userId: `user${i % 5}`,
      ...(i % 4 === 0 ? { tags: ["t1", `t${i % 7}`] } : {}),
      ...(i % 5 === 0 ? { metadata: { i, unicode: "ü→🚀" } } : {}),
      ...(i % 10 === 0 ? { entityIds: i % 20 === 0 ? [ada, bob] : [ada] } : {}),
      createdAt: at(i + 1),
      updatedAt: at(i + 1),
      // One in a hundred replaced by the memory five later (the same user's).
      ...(i % 100 === 0 && i + 5 < n ? { supersededBy: memoryId(i + 6), supersededAt: at(i + 6) } : {}),
      vector: perturbed(pool.vectors[k], i),
    });
  }
  writeFileSync(join(dir, "source.jsonl"), lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  const source = join(dir, "source-store");
  timeCmd(["import", join(dir, "source.jsonl"), "--batch-size", "1024", "--json"], source);

  const [jsonRuns, mdRuns, filesRuns] = [[], [], []];
  for (let i = 0; i < 3; i++) {
    jsonRuns.push(timeCmd(["export", "-o", join(dir, `export-${i}.jsonl`)], source));
    mdRuns.push(timeCmd(["export", "--format", "markdown", join(dir, `markdown-${i}`)], source));
    filesRuns.push(writeFilesAgain(join(dir, `markdown-${i}`), join(dir, `files-${i}`)));
  }
  const [jsonExport, mdExport, files] = [median(jsonRuns), median(mdRuns), median(filesRuns)];
  const mdReexport = timeCmd(["export", "--format", "markdown", join(dir, "markdown-0")], source);
  const jsonImport = timeCmd(["import", join(dir, "export-0.jsonl"), "--batch-size", "1000", "--json"], join(dir, "from-jsonl"));
  const mdImport = timeCmd(["import", "--format", "markdown", join(dir, "markdown-0"), "--batch-size", "1000"], join(dir, "from-markdown"));
  const ratio = (a, b) => Math.round((a / b) * 100) / 100;
  record(section, `JSON Lines export / import, ${label(n)} memories (whole process)`, `${round(jsonExport)} / ${round(jsonImport)}`, "ms");
  record(section, "Markdown export into an empty folder / import into an empty store", `${round(mdExport)} / ${round(mdImport)}`, "ms");
  record(section, "  the export's files written by a bare Node process (the writes alone)", round(files), "ms");
  // The floor: JSON Lines export plus that, over JSON Lines export.
  record(section, "  Markdown export over JSON Lines export", ratio(mdExport, jsonExport), "×", ratio(jsonExport + files, jsonExport), "≤ 1.5×", mdExport <= 1.5 * jsonExport);
  record(section, "  Markdown import over JSON Lines import", ratio(mdImport, jsonImport), "×", undefined, "≤ 1.5×", mdImport <= 1.5 * jsonImport);
  record(section, "Markdown export again into the same folder (no file changes)", round(mdReexport), "ms");
  const runs = (xs) => xs.map((x) => Math.round(x)).join(", ");
  record(section, "  each run: JSON Lines export; Markdown export; its files", `${runs(jsonRuns)}; ${runs(mdRuns)}; ${runs(filesRuns)}`, "ms");
  record(section, "load average (1 min) at the end: wall times move with it", round(loadavg()[0]), "");
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Grows the store from `from` to `to` memories through `mm import` (the product's own bulk path,
 * its background maintenance included), streaming an mm export with vectors into its stdin.
 * The vectors come from a pool of real embeddings: the first 3,000 LoCoMo turns embedded once by
 * use-lite (cached in bench-results/cache), each copy made distinct by a small deterministic
 * perturbation (±0.02 per dimension, renormalised), so the store has the geometry of real text.
 * Meanwhile this process writes one memory every 250 ms (how long a write waits while the import
 * commits and maintains) and samples the store's size on disk every second.
 */
async function fillByImport(dir, from, to) {
  const pool = await vectorPool();
  const users = userCount(to);
  const t0 = Date.parse("2026-01-01T00:00:00.000Z");
  const env = { ...process.env, MM_STORE: dir, MM_DEBUG: "1", MM_TEST_TUNING: JSON.stringify(TUNING), LANCEDB_LOG: "error" };
  const child = spawn(process.execPath, [BIN, "import", "-", "--batch-size", String(IMPORT_BATCH), "--json"], { env, stdio: ["pipe", "pipe", "pipe"] });
  let failed = 0;
  let stderr = "";
  const passes = [];
  createInterface({ input: child.stdout }).on("line", (line) => line.includes('"error"') && failed++);
  createInterface({ input: child.stderr }).on("line", (line) => {
    if (line.startsWith('{"event":"maintenance"')) passes.push(JSON.parse(line).ms);
    else stderr += line + "\n";
  });
  const exited = new Promise((done) => child.on("close", done));

  let probe;
  let peakBytes = 0;
  const probeMs = [];
  const split = { lockMs: [], commitMs: [] };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peakBytes = Math.max(peakBytes, await dirBytes(dir));
      await sleep(1000);
    }
  })();
  const started = performance.now();
  const header = { format: "mm-export", version: 1, exportedAt: new Date().toISOString(), embedder: DEFAULT_EMBEDDER, scope: { accountId: "acct_default" }, vectors: true };
  const write = (line) => (child.stdin.write(line + "\n") ? undefined : new Promise((r) => child.stdin.once("drain", r)));
  await write(JSON.stringify(header));
  for (let i = from; i < to; i++) {
    const k = i % pool.texts.length;
    const at = new Date(t0 + i * 1000).toISOString();
    const memory = { kind: "memory", id: memoryId(i), content: `${pool.texts[k]} (#${i})`, userId: `user${Math.floor(i / 2000) % users}`, createdAt: at, updatedAt: at, vector: perturbed(pool.vectors[k], i) };
    await write(JSON.stringify(memory));
    // The probe starts once the store exists (the import creates it with its first batch).
    if (!probe && i - from === Math.min(8192, Math.floor((to - from) / 4))) probe = startProbe(dir, probeMs, split);
  }
  child.stdin.end();
  const code = await exited;
  const ms = performance.now() - started;
  await probe?.stop();
  if (code !== 0 || failed) throw new Error(`mm import exited ${code} with ${failed} failed records: ${stderr}`);

  const store = await Store.open(dir, { tuning: TUNING });
  const t = performance.now();
  await store.optimize({ keepVersionsMs: 0 });
  const optimizeMs = performance.now() - t;
  sampling = false;
  await sampler;
  const restBytes = await dirBytes(dir);
  const stats = await store.stats();
  store.close();
  // What the data needs: each vector twice (the column and the IVF_FLAT index) and each text twice
  // (the row's other columns and the full-text index), from one sample row's JSON size.
  const sample = JSON.stringify({ id: memoryId(0), accountId: "acct_default", content: `${pool.texts[0]} (#0)`, userId: "user0", createdAt: header.exportedAt, updatedAt: header.exportedAt });
  const rows = stats.memories.rows;
  const computedBytes = rows * (2 * DEFAULT_EMBEDDER.dims * 4 + 2 * Buffer.byteLength(sample));
  const some = (a) => (a.length ? a : [0]);
  return { ms, passes, probeMs: some(probeMs), lockMs: some(split.lockMs), commitMs: some(split.commitMs), optimizeMs, restBytes, peakBytes: Math.max(peakBytes, restBytes), computedBytes, segments: stats.memories.segments.length };
}

/**
 * One memory every 250 ms from this process, timing each write: in all, and split into its wait for
 * the write lock (which only the import's commits hold: maintenance never takes it) and its own
 * commit (which maintenance can slow down only by sharing the machine). The split goes in `split`.
 */
function startProbe(dir, probeMs, split) {
  let stopped = false;
  let n = 0;
  const loop = (async () => {
    let store;
    while (!store && !stopped) {
      store = await Store.open(dir, { tuning: TUNING }).catch(() => undefined); // until the import has created it
      if (!store) await sleep(100);
    }
    if (!store) return;
    const vector = new Float32Array(DEFAULT_EMBEDDER.dims).fill(1 / Math.sqrt(DEFAULT_EMBEDDER.dims));
    while (!stopped) {
      const at = new Date().toISOString();
      const row = { id: `mem_P${String(Date.now()).padStart(15, "0")}${String(n++).padStart(8, "0")}`, accountId: "acct_default", content: "probe", userId: "probe", agentId: null, tags: [], metadata: null, entityIds: [], createdAt: at, updatedAt: at, vector };
      const t = performance.now();
      let locked = t;
      await store.write((w) => ((locked = performance.now()), w.insertMemories([row])));
      const end = performance.now();
      probeMs.push(end - t);
      split.lockMs.push(locked - t);
      split.commitMs.push(end - locked);
      await sleep(250);
    }
    store.close();
  })();
  return { stop: async () => ((stopped = true), await loop) };
}

/** The pool of real embeddings (see fillByImport), embedded on first use and cached. */
async function vectorPool() {
  const poolSize = Math.min(texts.length, QUICK ? 300 : 3000);
  const poolFile = join(root, "bench-results", "cache", `pool-vectors-${poolSize}.json`);
  if (existsSync(poolFile)) return JSON.parse(readFileSync(poolFile, "utf8"));
  const e = useLiteProvider.create(DEFAULT_EMBEDDER, {});
  const base = texts.slice(0, poolSize);
  const vectors = await e.embed(base);
  await e.close?.();
  const pool = { texts: base, vectors: vectors.map((v) => Array.from(v, (x) => Math.round(x * 1e5) / 1e5)) };
  mkdirSync(dirname(poolFile), { recursive: true });
  writeFileSync(poolFile, JSON.stringify(pool));
  return pool;
}

/** Pool vector `base`, made distinct for memory `i`: ±0.02 per dimension, renormalised, 5 decimals. */
function perturbed(base, i) {
  const v = base.map((x) => x + Math.sin(i * 12.9898 + x * 78.233) * 0.02);
  const n = Math.hypot(...v);
  return v.map((x) => Math.round((x / n) * 1e5) / 1e5);
}

/** A valid memory id for row i (mem_ + 24 base-36 capitals), in row order. */
function memoryId(i) {
  return `mem_${i.toString(36).toUpperCase().padStart(24, "0")}`;
}

async function dirBytes(dir) {
  let total = 0;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) total += await dirBytes(path);
    else total += await stat(path).then((s) => s.size, () => 0);
  }
  return total;
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

function sum(values) {
  return values.reduce((a, b) => a + b, 0);
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
  return procStatus(pid, "VmHWM");
}

function currentRss(pid) {
  return procStatus(pid, "VmRSS");
}

/** A field of /proc/<pid>/status, in KiB. */
function procStatus(pid, field) {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
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

/** Milliseconds a bare Node process takes to write every file of `from` again under `to` (folders made first, bytes read before the clock starts). */
function writeFilesAgain(from, to) {
  const code = `
    import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
    import { join } from "node:path";
    const [from, to] = process.argv.slice(1);
    const files = [];
    const walk = (rel) => { for (const d of readdirSync(join(from, rel), { withFileTypes: true })) d.isDirectory() ? walk(join(rel, d.name)) : files.push([join(rel, d.name), readFileSync(join(from, rel, d.name))]); };
    walk("");
    const t = performance.now();
    for (const folder of new Set(files.map(([p]) => join(to, p, "..")))) mkdirSync(folder, { recursive: true });
    for (const [p, bytes] of files) writeFileSync(join(to, p), bytes, { flag: "wx" });
    process.stdout.write(String(performance.now() - t));`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", code, from, to], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`writing the files again failed: ${r.stderr}`);
  return Number(r.stdout);
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
