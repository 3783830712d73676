#!/usr/bin/env node
// What replaced-fact detection and deduplication cost (docs/memory-validity.md, "Measured"): a
// batch add of the same lines with both on (the default) and both off, alternating in one process,
// each round in a fresh store; then search latency on one store with the default filter (current
// memories only) and without it (includeSuperseded), alternating query by query.
//
//   node scripts/supersede-speed.mjs [--lines 600] [--rounds 3] [--notes] [--single 150] [--no-search] [--json]
// --json ends the output with one line of JSON (the batch add's medians), for `npm run bench`;
// --no-search skips the search latencies.
// Lines are LoCoMo turns when ../shared/data/locomo-dev is there, else the development set's texts;
// --notes takes notes instead (bench/everyday's memories and the supersede fixtures' facts), which
// get frames (core/frames.ts) where transcript turns don't. --single N also times N single creates
// in a row, detection and dedupe on against both off, alternating rounds.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(pathToFileURL(join(root, "dist", p)).href);
const { openContext } = await dist("core/context.js");
const { addMemoriesFromLines, createMemory, searchMemories } = await dist("core/memories.js");
const args = process.argv.slice(2);
const opt = (name, d) => (args.includes(`--${name}`) ? Number(args[args.indexOf(`--${name}`) + 1]) : d);
const N = opt("lines", 600);
const ROUNDS = opt("rounds", 3);
const SINGLE = opt("single", 0);

function notes() {
  const out = [];
  for (const p of ["a", "b"]) for (const u of JSON.parse(readFileSync(join(root, "bench", "everyday", `part-${p}.json`), "utf8")).users) out.push(...u.memories.map((m) => m.content));
  const dir = join(root, "test", "fixtures", "supersede");
  for (const f of ["replaced-dev.jsonl", "both-true-dev.jsonl"]) out.push(...readFileSync(join(dir, f), "utf8").split("\n").filter(Boolean).flatMap((l) => JSON.parse(l).facts));
  return out;
}

function texts() {
  if (args.includes("--notes")) return notes();
  const locomo = resolve(root, "..", "shared", "data", "locomo-dev", "locomo-dev.json");
  if (existsSync(locomo)) {
    const out = [];
    for (const c of JSON.parse(readFileSync(locomo, "utf8"))) {
      for (const [k, v] of Object.entries(c.conversation)) if (/^session_\d+$/.test(k)) for (const t of v) out.push(`${t.speaker}: ${t.text}`);
    }
    return out;
  }
  const dir = join(root, "test", "fixtures", "supersede");
  return ["replaced-dev.jsonl", "both-true-dev.jsonl"].flatMap((f) => readFileSync(join(dir, f), "utf8").split("\n").filter(Boolean).flatMap((l) => JSON.parse(l).facts));
}
const all = texts();
const lines = Array.from({ length: N }, (_, i) => all[i % all.length]);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function batch(on) {
  const store = mkdtempSync(join(tmpdir(), "mm-supersede-speed-"));
  const ctx = await openContext({ storeDir: store, env: process.env });
  try {
    await ctx.embedder(); // the model loads outside the timing
    await addMemoriesFromLines(ctx, ["warm up the embedder"], { defaults: { userId: "warm" } });
    const defaults = on ? { userId: "u" } : { userId: "u", autoSupersede: false, dedupe: false };
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const r = await addMemoriesFromLines(ctx, lines.map((l) => JSON.stringify(l)), { defaults, batchSize: 64 });
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return { ms: ms / r.added, cpu: (cpu.user + cpu.system) / 1000 / r.added, added: r.added };
  } finally {
    await ctx.close();
    rmSync(store, { recursive: true, force: true });
  }
}

// Wall time and CPU time (every thread of the process: the main thread and the model's workers).
// The model keeps both cores busy, so what detection adds shows in CPU time even when other work
// on the machine makes the wall time jump.
const per = { on: [], off: [] };
for (let round = 0; round < ROUNDS; round++) {
  for (const on of round % 2 ? [true, false] : [false, true]) per[on ? "on" : "off"].push(await batch(on));
}
console.log(`Batch add of ${N} lines, ${ROUNDS} rounds each, alternating (ms per memory):`);
console.log(`| | detection and dedupe off | on | ratio |`);
for (const what of ["ms", "cpu"]) {
  const off = per.off.map((x) => x[what]);
  const on = per.on.map((x) => x[what]);
  console.log(`| ${what === "ms" ? "wall" : "CPU"} | ${off.map((x) => x.toFixed(2)).join(", ")} (median ${median(off).toFixed(2)}) | ${on.map((x) => x.toFixed(2)).join(", ")} (median ${median(on).toFixed(2)}) | ${(median(on) / median(off)).toFixed(3)} |`);
}

async function singles(on) {
  const store = mkdtempSync(join(tmpdir(), "mm-supersede-speed-"));
  const ctx = await openContext({ storeDir: store, env: process.env });
  try {
    await ctx.embedder();
    await createMemory(ctx, { content: "warm up the embedder", userId: "warm" });
    const extra = on ? {} : { autoSupersede: false, dedupe: false };
    const t0 = performance.now();
    for (const content of lines.slice(0, SINGLE)) await createMemory(ctx, { content, userId: "u", ...extra });
    return (performance.now() - t0) / SINGLE;
  } finally {
    await ctx.close();
    rmSync(store, { recursive: true, force: true });
  }
}
if (SINGLE) {
  const one = { on: [], off: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const on of round % 2 ? [true, false] : [false, true]) one[on ? "on" : "off"].push(await singles(on));
  }
  console.log(`Single creates, ${SINGLE} in a row, ${ROUNDS} rounds each, alternating (ms per create):`);
  console.log(`| off | on | ratio |`);
  console.log(`| ${one.off.map((x) => x.toFixed(1)).join(", ")} (median ${median(one.off).toFixed(1)}) | ${one.on.map((x) => x.toFixed(1)).join(", ")} (median ${median(one.on).toFixed(1)}) | ${(median(one.on) / median(one.off)).toFixed(3)} |`);
}

if (args.includes("--json")) {
  const medians = (what) => ({ off: median(per.off.map((x) => x[what])), on: median(per.on.map((x) => x[what])) });
  console.log(JSON.stringify({ lines: N, rounds: ROUNDS, wallMs: medians("ms"), cpuMs: medians("cpu") }));
}
if (args.includes("--no-search")) process.exit(0);

// Search: one store, the same queries with and without the current-only filter.
const store = mkdtempSync(join(tmpdir(), "mm-supersede-speed-"));
const ctx = await openContext({ storeDir: store, env: process.env });
try {
  await addMemoriesFromLines(ctx, lines.map((l) => JSON.stringify(l)), { defaults: { userId: "u" }, batchSize: 64 });
  const queries = all.slice(N, N + 60).map((q) => q.replace(/^[^:]+: /, "").slice(0, 120));
  const lat = { current: [], all: [] };
  for (const q of queries) await searchMemories(ctx, { query: q, userId: "u" }); // embeddings cached, caches warm
  for (let rep = 0; rep < 3; rep++) {
    for (const [i, q] of queries.entries()) {
      for (const which of i % 2 ? ["current", "all"] : ["all", "current"]) {
        const t0 = performance.now();
        await searchMemories(ctx, { query: q, userId: "u", ...(which === "all" ? { includeSuperseded: true } : {}) });
        lat[which].push(performance.now() - t0);
      }
    }
  }
  console.log(`Search p50 over ${lat.current.length} searches each (ms): current only ${median(lat.current).toFixed(2)}, includeSuperseded ${median(lat.all).toFixed(2)}`);
} finally {
  await ctx.close();
  rmSync(store, { recursive: true, force: true });
}
