#!/usr/bin/env node
// `npm run bench:locomo [-- --mode hybrid|semantic|keyword] [--out file]`: retrieval quality and
// score calibration through a real `mm serve`, at three store sizes:
//   - all five LoCoMo dev conversations (2,760 memories, 760 questions);
//   - one conversation (conv-26: 419 memories, 150 questions);
//   - the two 20-memory calibration stores (test/fixtures/calibration), 50 labelled queries each.
// LoCoMo is loaded and searched by ../shared/bench/locomo-recall.mjs (data read from ../shared at
// run time, never copied). Besides R@10 and MRR@10 at threshold 0, it reports what the default
// threshold does: R@10 counting only hits scoring ≥ 0.5, and false positives at 0.5, i.e. hits
// ≥ 0.5 for questions whose answer is not in the searched scope (each question asked of another
// conversation's user; for the 20-memory stores, every non-relevant memory scoring ≥ 0.5). And at
// the session level (scripts/session-metrics.mjs): Hit@1 and NDCG@5 of the sessions of the ten
// best turns, ranked by their best turn.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { startMmServe } from "./mm-serve.mjs";
import { sessionMetrics } from "./session-metrics.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const shared = resolve(root, "..", "shared");
const bench = join(shared, "bench", "locomo-recall.mjs");
const data = join(shared, "data", "locomo-dev", "locomo-dev.json");
if (!existsSync(bench) || !existsSync(data)) {
  console.error(`needs ${bench} and ${data}`);
  process.exit(2);
}
const { loadLocomo, selectQuestions, CATEGORY_NAMES } = await import(pathToFileURL(bench).href);
const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const mode = option("mode");
const out = option("out") ?? join(root, "bench-results", "locomo.json");
const passThrough = args.filter((a, i) => a !== "--out" && args[i - 1] !== "--out");
const BIN = join(root, "bin", "mm.js");
const THRESHOLD = 0.5;
const K = 10;

/** A fresh store with one enterprise key and `mm serve` on it; `fn` gets the url and key. */
async function withServer(fn) {
  const store = mkdtempSync(join(tmpdir(), "mm-locomo-"));
  const env = { ...process.env, MM_STORE: store, LANCEDB_LOG: "error" };
  const key = JSON.parse(spawnSync(process.execPath, [BIN, "keys", "create", "--name", "locomo", "--json"], { env, encoding: "utf8" }).stdout).key;
  const server = await startMmServe(BIN, env);
  try {
    return await fn(server.url, key);
  } finally {
    await server.stop();
    rmSync(store, { recursive: true, force: true });
  }
}

async function search(url, key, body) {
  const res = await fetch(`${url}/v1/memories/search`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({ ...body, ...(mode ? { mode } : {}) }),
  });
  if (res.status !== 200) throw new Error(`search answered ${res.status}: ${await res.text()}`);
  return (await res.json()).results;
}

/** The shared LoCoMo bench on a running server, then each question asked of another conversation. */
async function locomoRun(url, key, conversations) {
  const file = join(mkdtempSync(join(tmpdir(), "mm-locomo-out-")), "run.json");
  const r = spawnSync(process.execPath, [bench, "--data", data, "--base", url, "--key", key, "--k", String(K), "--conversations", String(conversations), "--out", file, ...passThrough], {
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (r.status !== 0) throw new Error(`locomo-recall.mjs exited ${r.status}`);
  const run = JSON.parse(readFileSync(file, "utf8"));
  rmSync(dirname(file), { recursive: true, force: true });

  const { conversations: all } = loadLocomo(data);
  /** Each conversation's turns' sessions, by turn id. */
  const sessions = new Map(all.map((c) => [c.sampleId, new Map(c.turns.map((t) => [t.diaId, t.session]))]));
  const byCategory = {};
  for (const q of run.questions) {
    // Each question's figures once; each adds to its category and to the overall one.
    const top = q.retrieved.slice(0, K);
    const ev = new Set(q.evidence);
    const at05 = top.filter((id, i) => ev.has(id) && q.scores[i] >= THRESHOLD);
    const { hit1, ndcg5 } = sessionMetrics(top, q.evidence, (id) => sessions.get(q.sampleId).get(id));
    const figures = { recall: q.recall, mrr: q.rr, recallAt05: new Set(at05).size / ev.size, sessionHit1: hit1, sessionNdcg5: ndcg5 };
    for (const cat of ["overall", CATEGORY_NAMES[q.category]]) {
      const a = (byCategory[cat] ??= { n: 0, ...Object.fromEntries(Object.keys(figures).map((k) => [k, 0])) });
      a.n++;
      for (const [k, v] of Object.entries(figures)) a[k] += v;
    }
  }
  // Sums to means.
  for (const a of Object.values(byCategory)) for (const k of Object.keys(a)) if (k !== "n") a[k] /= a.n;

  // False positives: questions whose answer is elsewhere. In the one-conversation store, the other
  // four conversations' questions; with all five, each question asked of the next conversation.
  const loaded = all.slice(0, conversations);
  const asks = [];
  if (conversations === 1) {
    for (const c of all.slice(1)) for (const q of selectQuestions(c)) asks.push({ query: q.question, userId: `locomo-${loaded[0].sampleId}` });
  } else {
    loaded.forEach((c, i) => {
      for (const q of selectQuestions(c)) asks.push({ query: q.question, userId: `locomo-${loaded[(i + 1) % loaded.length].sampleId}` });
    });
  }
  let withHit = 0;
  let hits = 0;
  for (const ask of asks) {
    const results = await search(url, key, { ...ask, limit: K, threshold: THRESHOLD });
    withHit += results.length > 0 ? 1 : 0;
    hits += results.length;
  }
  return {
    memories: run.ingest?.memories ?? run.data?.turns,
    questions: run.questions.length,
    byCategory,
    perConversation: run.perConversation,
    falsePositives: { questions: asks.length, questionsWithAHit: withHit, share: withHit / asks.length, hitsPerQuestion: hits / asks.length },
    searchLatencyMs: run.searchLatencyMs,
  };
}

/** A 20-memory calibration store: recall of labelled queries at 0.5, and non-relevant hits at 0.5. */
async function smallRun(url, key, name) {
  const fixture = JSON.parse(readFileSync(join(root, "test", "fixtures", "calibration", `small-store-${name}.json`), "utf8"));
  const idOf = new Map();
  for (const m of fixture.memories) {
    const res = await fetch(`${url}/v1/memories`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ content: m.content, userId: "me" }),
    });
    idOf.set((await res.json()).id, m.id);
  }
  const kinds = {};
  let falsePositives = 0;
  let unrelatedWithAHit = 0;
  for (const q of fixture.queries) {
    const results = await search(url, key, { query: q.query, userId: "me", limit: 20, threshold: THRESHOLD });
    const got = results.map((r) => idOf.get(r.id));
    const k = (kinds[q.kind] ??= { queries: 0, found: 0 });
    k.queries++;
    if (q.relevant.length && q.relevant.every((id) => got.includes(id))) k.found++;
    falsePositives += got.filter((id) => !q.relevant.includes(id)).length;
    if (q.kind === "unrelated" && got.length) unrelatedWithAHit++;
  }
  return { memories: fixture.memories.length, queries: fixture.queries.length, kinds, falsePositives, unrelatedWithAHit };
}

const report = { mode: mode ?? "hybrid (default)", threshold: THRESHOLD, k: K, createdAt: new Date().toISOString() };
report.allFive = await withServer((url, key) => locomoRun(url, key, 5));
report.oneConversation = await withServer((url, key) => locomoRun(url, key, 1));
report.small = {};
for (const name of ["a", "b"]) report.small[name] = await withServer((url, key) => smallRun(url, key, name));

mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(report, null, 2) + "\n");

const f3 = (x) => x.toFixed(3);
console.log(`\nScore calibration at three store sizes (mode: ${report.mode}, k=${K}, threshold ${THRESHOLD}):\n`);
console.log("| store | memories | questions | R@10 | MRR@10 | R@10 at 0.5 | false positives at 0.5 |");
console.log("|---|---|---|---|---|---|---|");
for (const [label, r] of [["all five conversations", report.allFive], ["one conversation", report.oneConversation]]) {
  const o = r.byCategory.overall;
  const fp = r.falsePositives;
  console.log(`| ${label} | ${r.memories} | ${r.questions} | ${f3(o.recall)} | ${f3(o.mrr)} | ${f3(o.recallAt05)} | ${fp.questionsWithAHit} of ${fp.questions} wrong-user questions (${(fp.share * 100).toFixed(1)}%), ${f3(fp.hitsPerQuestion)} hits each |`);
}
for (const [name, s] of Object.entries(report.small)) {
  const found = Object.entries(s.kinds)
    .filter(([kind]) => kind !== "unrelated")
    .map(([kind, v]) => `${kind} ${v.found}/${v.queries}`)
    .join(", ");
  console.log(`| 20 memories (store ${name}) | ${s.memories} | ${s.queries} | | | found at 0.5: ${found} | ${s.falsePositives} non-relevant hits; ${s.unrelatedWithAHit} of ${s.kinds.unrelated?.queries ?? 0} unrelated queries with a hit |`);
}
console.log("\nPer category, all five conversations (R@10 / MRR@10 / R@10 at 0.5; sessions: Hit@1 / NDCG@5):");
for (const [cat, a] of Object.entries(report.allFive.byCategory)) console.log(`  ${cat.padEnd(12)} n=${String(a.n).padStart(3)}  ${f3(a.recall)} / ${f3(a.mrr)} / ${f3(a.recallAt05)}; sessions ${f3(a.sessionHit1)} / ${f3(a.sessionNdcg5)}`);
console.log(`\nwritten to ${out}`);
