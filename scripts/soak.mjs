#!/usr/bin/env node
// `npm run soak`: a long run of mixed traffic against a real `mm serve` (a fresh store,
// 127.0.0.1), sampling the server's resident memory, to show whether it plateaus or grows.
// REST, MCP (/mcp) and console traffic. Prints a line per sample, a table and a verdict, and writes JSON. Exit 1 if any request failed
// (5xx, no answer) or if RSS grew more than --max-growth-pct over the second half of the run.
//   --requests 200000      (npm test runs 240)
//   --embedder stub        stub: a stand-in embeddings endpoint reached through mm's openai
//                          provider (the server and the store are measured, not the model's CPU);
//                          use-lite: the real bundled model (~30 requests/s on 2 cores)
//   --concurrency 8
//   --samples 40           RSS samples over the run
//   --max-growth-pct 10
//   --seed 1
//   --out bench-results/soak.json
//   --memory-every-ms 0    >0: the server logs process.memoryUsage and LanceDB's cache size this often
//                          (MM_DEBUG_MEMORY_MS); each sample then carries the latest reading
//   --mix all              which requests to send: all, or a comma list of groups (rest, mcp, console)
//                          and request names ("mcp read,create memory"); each keeps its share
//   --heap-snapshots ""    request counts (e.g. 10000,30000) at which to signal the server (SIGUSR2)
//                          to write a V8 heap snapshot; start it with
//                          NODE_OPTIONS="--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=DIR"
import { join } from "node:path";
import { startMmServe } from "./mm-serve.mjs";
import { BIN, consoleSession, machine, MCP_HEADERS, newStore, parseArgs, printTable, rng, rssMb, root, stubEmbeddings, writeJson } from "./suite-kit.mjs";

const opts = parseArgs({ requests: 200_000, concurrency: 8, samples: 40, "max-growth-pct": 10, seed: 1, embedder: "stub", out: join(root, "bench-results", "soak.json"), "memory-every-ms": 0, "heap-snapshots": "", mix: "all" });

const r = rng(opts.seed);
const words = "alice bob carol tea coffee berlin lisbon tokyo meeting project deadline music film book travel garden dinner doctor running piano".split(" ");
const text = () => Array.from({ length: 4 + r.int(10) }, () => r.pick(words)).join(" ");
const ids = { mem: [], ent: [] };

// Per 100 requests: the share each kind of request takes. Every write makes a table version (what
// made memory grow). Once 300 memories exist, 8 deletes (REST and MCP) follow 10 creates, so the
// store grows by 2 memories per 100 requests, as before MCP joined the mix: MCP adds without MCP
// deletes had doubled that, and the searches without a userId (console, MCP) cost more, in time
// and memory, the larger the account (docs/safety.md). MCP calls (over /mcp, one message or a
// small batch) and console pages (with a signed-in session) take their share too.
const ALL_KINDS = [
  [12, "list memories", (k) => get(k, `/v1/memories?limit=20&userId=u${r.int(20)}`)],
  [4, "mcp search", (k) => mcp(k, tool(r.pick(["memories_search", "search_nodes"]), { query: text(), ...(r.chance(0.5) ? { userId: `u${r.int(20)}` } : {}) }))],
  [3, "mcp read", (k) => mcp(k, tool(r.pick(["memories_list", "read_graph", "memories_get"]), { ...(r.chance(0.3) ? { id: r.pick(ids.mem) ?? "mem_none" } : {}) }))],
  [2, "mcp add", (k) => mcp(k, tool("memories_add", { content: text(), userId: `u${r.int(20)}` }), (b) => b.result?.structuredContent?.id && ids.mem.push(b.result.structuredContent.id))],
  [2, "mcp delete", (k) => mcp(k, tool("memories_delete", { id: ids.mem.length > 300 ? ids.mem.splice(r.int(ids.mem.length), 1)[0] : "mem_none" }))],
  [1, "mcp batch", (k) => mcp(k, [1, 2, 3].map((id) => ({ jsonrpc: "2.0", id, method: "tools/list" })))],
  [2, "console search", () => consolePage(`/console/memories?q=${encodeURIComponent(text())}&threshold=0.2`)],
  [2, "console page", () => consolePage(r.pick([`/console/memories?userId=u${r.int(20)}`, "/console/graph", "/console/usage", "/console/keys"]))],
  [14, "get memory", (k) => get(k, `/v1/memories/${r.pick(ids.mem) ?? "mem_none"}`)],
  [12, "search", (k) => post(k, "/v1/memories/search", { query: text(), userId: `u${r.int(20)}`, threshold: 0.2 })],
  [8, "create memory", (k) => post(k, "/v1/memories", { content: text(), userId: `u${r.int(20)}`, tags: [r.pick(words)], metadata: { n: r.int(1000) } }, (b) => ids.mem.push(b.id))],
  [2, "update memory", (k) => send(k, "PATCH", `/v1/memories/${r.pick(ids.mem) ?? "mem_none"}`, { tags: [r.pick(words)] })],
  [6, "delete memory", (k) => send(k, "DELETE", `/v1/memories/${ids.mem.length > 300 ? ids.mem.splice(r.int(ids.mem.length), 1)[0] : "mem_none"}`)],
  [2, "create entity", (k) => post(k, "/v1/entities", { name: `${r.pick(words)} ${r.int(2000)}`, type: "PERSON" }, (b) => ids.ent.push(b.id))],
  [2, "create relation", (k) => post(k, "/v1/relations", { sourceId: r.pick(ids.ent) ?? "ent_none", targetId: r.pick(ids.ent) ?? "ent_none", type: "KNOWS" })],
  [6, "list entities", (k) => get(k, "/v1/entities?limit=10")],
  [12, "400 / 404", (k) => (r.chance(0.5) ? post(k, "/v1/memories", { content: 42 }) : get(k, "/v1/entities/ent_missing"))],
  [8, "401", () => get("mm_not_a_real_key_0000000000000000000000", "/v1/memories")],
];
const MIX = selectMix(ALL_KINDS, opts.mix);
const WEIGHTS = MIX.reduce((a, [w]) => a + w, 0);

const stub = opts.embedder === "stub" ? await stubEmbeddings() : undefined;
const store = await newStore({ main: "enterprise", second: "hobby" }, stub?.config);
let lastMemory;
let heapPeakMb = 0;
const memoryEnv = opts["memory-every-ms"] > 0 ? { MM_DEBUG_MEMORY_MS: String(opts["memory-every-ms"]) } : {};
const server = await startMmServe(BIN, { ...store.env, ...memoryEnv }, { rateLimit: 1_000_000, onLog: (e) => e.event === "memory" && ((lastMemory = e), (heapPeakMb = Math.max(heapPeakMb, e.heapUsedMb))) });
const snapshotAt = String(opts["heap-snapshots"] || "").split(",").filter(Boolean).map(Number);
const session = await consoleSession(store.store, server.url, "main");
const keys = [store.accounts.main.key, store.accounts.main.key, store.accounts.main.key, store.accounts.second.key];

const counts = Object.fromEntries(MIX.map(([, name]) => [name, 0]));
const statuses = {};
const failures = [];
const samples = [];
const every = Math.max(1, Math.floor(opts.requests / opts.samples));
const started = performance.now();
let next = 0;
let done = 0;

sample();
await Promise.all(
  Array.from({ length: opts.concurrency }, async () => {
    while (next < opts.requests && failures.length < 20) {
      next++;
      let pick = r.int(WEIGHTS);
      const [, name, run] = MIX.find(([w]) => (pick -= w) < 0);
      counts[name]++;
      try {
        const status = await run(r.pick(keys));
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status >= 500) failures.push(`${name}: ${status}`);
      } catch (e) {
        failures.push(`${name}: ${e.cause?.code ?? e.message}`);
      }
      if (++done % every === 0) sample();
      if (snapshotAt.includes(done)) {
        console.log(`${done} requests: heap snapshot requested (SIGUSR2)`);
        process.kill(server.pid, "SIGUSR2");
      }
    }
  }),
);
sample();
await server.stop();
await stub?.close();
store.cleanup();

const half = samples.filter((s) => s.requests >= opts.requests / 2);
const secondHalf = { from: half[0]?.rssMb, to: samples.at(-1).rssMb, max: Math.max(...half.map((s) => s.rssMb)) };
const growthPct = Math.round(((secondHalf.max - secondHalf.from) / secondHalf.from) * 1000) / 10;
const plateau = growthPct <= opts["max-growth-pct"];
const result = {
  machine: machine(),
  requests: done,
  concurrency: opts.concurrency,
  seconds: Math.round((performance.now() - started) / 100) / 10,
  embedder: opts.embedder,
  mix: counts,
  statuses,
  rssMb: { start: samples[0].rssMb, end: samples.at(-1).rssMb, peak: Math.max(...samples.map((s) => s.rssMb)), secondHalf, secondHalfGrowthPct: growthPct },
  plateau,
  samples,
  failures,
};
printTable(
  `mm soak · ${done} mixed requests, ${opts.concurrency} at a time, in ${result.seconds} s · ${machine().cpus} cores`,
  ["requests", "seconds", "req/s (interval)", "server RSS (MB)"],
  samples.map((s, i) => [s.requests, s.seconds, i ? Math.round((s.requests - samples[i - 1].requests) / Math.max(0.001, s.seconds - samples[i - 1].seconds)) : "", s.rssMb]),
);
console.log(`\nRSS start ${result.rssMb.start} MB, peak ${result.rssMb.peak} MB, end ${result.rssMb.end} MB; over the second half ${secondHalf.from} → ${secondHalf.to} MB (max ${secondHalf.max}, +${growthPct}%): ${plateau ? "plateau" : "STILL GROWING"}`);
console.log(`answers by status: ${Object.entries(statuses).map(([s, n]) => `${s}:${n}`).join(" ")}; failures: ${failures.length}`);
for (const f of failures.slice(0, 10)) console.log(`FAIL ${f}`);
writeJson(opts.out, result);
process.exit(failures.length || !plateau ? 1 : 0);

function sample() {
  const s = { requests: done, seconds: Math.round((performance.now() - started) / 100) / 10, rssMb: rssMb(server.pid) };
  if (lastMemory) {
    const { time, event, ...m } = lastMemory;
    // The highest heap reading since the last sample (at least the latest one, read again when none came since).
    s.server = { ...m, heapPeakMb: Math.max(heapPeakMb, m.heapUsedMb) };
    heapPeakMb = 0;
  }
  samples.push(s);
  const m = s.server ? ` (heap ${s.server.heapUsedMb}, peak since the last sample ${s.server.heapPeakMb}, external ${s.server.externalMb}, arrayBuffers ${s.server.arrayBuffersMb}, LanceDB cache ${s.server.lanceCacheMb} MB, ${s.server.lanceCacheItems} items)` : "";
  console.log(`${s.requests} requests, ${s.seconds} s: server RSS ${s.rssMb} MB${m}`);
}

async function send(key, method, path, body, onCreated) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body && JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  if (res.status === 201 && onCreated) onCreated(JSON.parse(text));
  return res.status;
}

/** A tools/call message for `name`. */
function tool(name, args) {
  return { jsonrpc: "2.0", id: r.int(1e9), method: "tools/call", params: { name, arguments: args } };
}

/** One POST to /mcp; an internal error in any answer counts as a 500. */
async function mcp(key, message, onAnswer) {
  const res = await fetch(`${server.url}/mcp`, { method: "POST", headers: { Authorization: `Bearer ${key}`, ...MCP_HEADERS }, body: JSON.stringify(message), signal: AbortSignal.timeout(60_000) });
  const body = JSON.parse(await res.text());
  for (const m of Array.isArray(body) ? body : [body]) {
    if (m?.error?.code === -32603 || m?.result?.structuredContent?.error?.code === "INTERNAL_ERROR") return 500;
  }
  if (res.status === 200 && onAnswer) onAnswer(body);
  return res.status;
}

/** A console page as the signed-in owner clicking through it. */
async function consolePage(path) {
  const res = await fetch(`${server.url}${path}`, { headers: { Cookie: session.cookie, "Sec-Fetch-Site": "same-origin" }, redirect: "manual", signal: AbortSignal.timeout(60_000) });
  await res.text();
  return res.status;
}

/** The kinds `--mix` names: "all", or groups (rest, mcp, console) and request names, comma-separated. */
function selectMix(kinds, mix) {
  if (mix === "all") return kinds;
  const group = (name) => (/^(mcp|console) /.test(name) ? name.split(" ")[0] : "rest");
  const wanted = String(mix).split(",").map((w) => w.trim());
  const unknown = wanted.filter((w) => !["rest", "mcp", "console"].includes(w) && !kinds.some(([, name]) => name === w));
  if (unknown.length) throw new Error(`--mix: unknown ${unknown.join(", ")}; use all, or groups rest, mcp, console and names: ${kinds.map(([, n]) => n).join(", ")}`);
  return kinds.filter(([, name]) => wanted.includes(name) || wanted.includes(group(name)));
}

function get(key, path) {
  return send(key, "GET", path);
}

function post(key, path, body, onCreated) {
  return send(key, "POST", path, body, onCreated);
}
