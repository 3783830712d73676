#!/usr/bin/env node
// npm run bench:hooks: what `mm hook claude-code` injects, on bench/hooks/ (60 memories of one
// developer, 52 coding-session prompts: 32 for development, 20 held out), and how long it takes.
// Every prompt is a real, cold `mm hook` process (no server), fed the event Claude Code sends.
//
//   node scripts/bench-hooks.mjs            the figures, development and held out apart
//   node scripts/bench-hooks.mjs --sweep    development only, for tuning: the figures of the hook's
//                                           gate (core/recall.ts RECALL_GATE) at each score, its word
//                                           constants kept, from `mm memories search --explain`
//
// Figures: precision, the share of injected memories that are relevant; recall, the share of the
// prompts that have a relevant memory that get one; silence, the share of the prompts with none
// that get an empty answer. Latency: wall time of the spawned process, p50 and p95.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(root, "bin", "mm.js");
const sweep = process.argv.includes("--sweep");
const load = (f) => JSON.parse(readFileSync(join(root, "bench", "hooks", f), "utf8"));
const { memories } = load("memories.json");
const splits = sweep ? { dev: load("dev.json").prompts } : { dev: load("dev.json").prompts, "held out": load("held-out.json").prompts };

const dir = mkdtempSync(join(tmpdir(), "mm-bench-hooks-"));
const env = { ...process.env, HOME: join(dir, "home"), MM_STORE: join(dir, "store"), XDG_STATE_HOME: join(dir, "state"), LANCEDB_LOG: "error" };
delete env.MM_URL;
mkdirSync(env.HOME, { recursive: true });

const mm = (args, input) => spawnSync(process.execPath, [bin, ...args], { env, input, encoding: "utf8", cwd: dir });

// Project scope, when this mm has it: each project a folder with a .mm-project naming it.
const projects = mm(["memories", "add", "--help"]).stdout.includes("--project");
const cwdOf = (project) => join(dir, project ?? "scratch");
for (const p of ["orders-api", "shop-web", "scratch"]) {
  mkdirSync(cwdOf(p), { recursive: true });
  if (p !== "scratch") writeFileSync(join(cwdOf(p), ".mm-project"), `${p}\n`);
}

const lines = memories.map((m) => JSON.stringify({ content: m.content, userId: "me", ...(m.tags ? { tags: m.tags } : {}), ...(projects && m.project ? { project: m.project } : {}) }));
writeFileSync(join(dir, "seed.jsonl"), lines.join("\n") + "\n");
const seeded = mm(["memories", "add", "--batch", join(dir, "seed.jsonl")]);
if (seeded.status !== 0) throw new Error(`seeding failed: ${seeded.stderr}`);
const idOf = new Map(memories.map((m) => [m.content, m.id]));

function hook(event, cwd, extraEnv = {}) {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [bin, "hook", "claude-code", "--user", "me", "--timeout", "10"], { env: { ...env, ...extraEnv }, cwd });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("close", () => resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, out }));
    // A session per prompt: each is judged on its own (a memory is injected once per session).
    child.stdin.end(JSON.stringify({ session_id: `bench-${Math.random().toString(36).slice(2)}`, transcript_path: join(dir, "t.jsonl"), cwd, permission_mode: "default", ...event }));
  });
}

/** The memories a hook's answer injected, by bench id. */
function injected(out) {
  if (!out.trim()) return [];
  const context = JSON.parse(out).hookSpecificOutput.additionalContext;
  return context
    .split("\n")
    .filter((l) => l.startsWith("- "))
    .map((l) => idOf.get(JSON.parse(l.slice(l.indexOf(": ") + 2))) ?? "?");
}

function figures(outcomes) {
  const shown = outcomes.flatMap((o) => o.got.map((id) => o.relevant.includes(id)));
  const wanting = outcomes.filter((o) => o.relevant.length);
  const none = outcomes.filter((o) => !o.relevant.length);
  const share = (n, d) => (d ? n / d : NaN);
  return {
    prompts: outcomes.length,
    injected: shown.length,
    precision: share(shown.filter(Boolean).length, shown.length),
    recall: share(wanting.filter((o) => o.got.some((id) => o.relevant.includes(id))).length, wanting.length),
    silence: share(none.filter((o) => o.got.length === 0).length, none.length),
  };
}

const pct = (x) => (Number.isNaN(x) ? "–" : `${(x * 100).toFixed(0)}%`);
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];

if (sweep) {
  const scored = splits.dev.map((p) => {
    const args = ["memories", "search", p.prompt, "--user", "me", "--threshold", "0", "--limit", "10", "--explain", "--json", ...(projects && p.project ? ["--project", p.project] : [])];
    const hits = JSON.parse(mm(args).stdout).results.filter((h) => !(h.tags ?? []).includes("private"));
    return { ...p, hits: hits.map((h) => ({ id: idOf.get(h.content), score: h.score, ...h.explanation.signals })) };
  });
  // RECALL_GATE with its score varied: (score ≥ s and keyword ≥ 0.25) or (keyword ≥ 0.4 and cosine ≥ 0.4).
  console.log("gate score  precision  recall  silence  injected");
  for (let t = 0.3; t <= 0.951; t += 0.05) {
    const gate = (h) => (h.score >= t && h.keyword >= 0.25) || (h.keyword >= 0.4 && h.cosine >= 0.4);
    const f = figures(scored.map((p) => ({ relevant: p.relevant, got: p.hits.filter(gate).slice(0, 5).map((h) => h.id) })));
    console.log(`${t.toFixed(2).padStart(10)}  ${pct(f.precision).padStart(9)}  ${pct(f.recall).padStart(6)}  ${pct(f.silence).padStart(7)}  ${String(f.injected).padStart(8)}`);
  }
  const signals = (h) => `${h.id} s${h.score.toFixed(2)} c${h.cosine.toFixed(2)} k${h.keyword.toFixed(2)}`;
  for (const p of scored) console.log(`  ${JSON.stringify(p.prompt)} [${p.relevant}] → ${p.hits.slice(0, 4).map(signals).join(", ")}`);
} else {
  const report = { projectScope: projects, splits: {}, latency: {} };
  const times = [];
  for (const [name, prompts] of Object.entries(splits)) {
    const outcomes = [];
    for (const p of prompts) {
      const r = await hook({ hook_event_name: "UserPromptSubmit", prompt: p.prompt }, cwdOf(p.project));
      times.push(r.ms);
      outcomes.push({ prompt: p.prompt, relevant: p.relevant, got: injected(r.out) });
    }
    report.splits[name] = { ...figures(outcomes), wrong: outcomes.filter((o) => o.got.some((id) => !o.relevant.includes(id))).map((o) => `${o.prompt} → ${o.got}`) };
  }
  // The same prompts with an mm serve running on the store: the hook asks it (MM_API_KEY).
  const { key } = JSON.parse(mm(["keys", "create", "--name", "bench-hooks"]).stdout);
  const server = spawn(process.execPath, [bin, "serve", "--port", "0"], { env, stdio: ["ignore", "ignore", "pipe"] });
  await new Promise((resolve, reject) => {
    let log = "";
    server.stderr.on("data", (d) => ((log += d), log.includes('"listening"') && resolve()));
    server.once("exit", () => reject(new Error(`mm serve stopped: ${log}`)));
  });
  // One request first: the server loads the model on its first search, as it would once a day in use.
  await hook({ hook_event_name: "UserPromptSubmit", prompt: "warm up" }, cwdOf(null), { MM_API_KEY: key });
  const served = [];
  for (const p of Object.values(splits).flat()) served.push((await hook({ hook_event_name: "UserPromptSubmit", prompt: p.prompt }, cwdOf(p.project), { MM_API_KEY: key })).ms);
  server.kill("SIGTERM");
  const starts = [];
  for (let i = 0; i < 10; i++) starts.push((await hook({ hook_event_name: "SessionStart", source: "startup" }, cwdOf("orders-api"))).ms);
  report.latency = {
    prompt: { runs: times.length, p50: quantile(times, 0.5), p95: quantile(times, 0.95), over2s: times.filter((t) => t > 2000).length },
    session: { runs: starts.length, p50: quantile(starts, 0.5), p95: quantile(starts, 0.95) },
    served: { runs: served.length, p50: quantile(served, 0.5), p95: quantile(served, 0.95), max: Math.max(...served) },
  };
  console.log(`project scope: ${projects ? "yes" : "not in this mm: every memory of the user is in scope"}`);
  console.log("split      prompts  injected  precision  recall  silence");
  for (const [name, f] of Object.entries(report.splits)) {
    console.log(`${name.padEnd(9)}  ${String(f.prompts).padStart(7)}  ${String(f.injected).padStart(8)}  ${pct(f.precision).padStart(9)}  ${pct(f.recall).padStart(6)}  ${pct(f.silence).padStart(7)}`);
  }
  const l = report.latency;
  console.log(`latency, cold process, no server: prompt p50 ${l.prompt.p50.toFixed(0)} ms, p95 ${l.prompt.p95.toFixed(0)} ms (${l.prompt.over2s} of ${l.prompt.runs} over 2 s); session start p50 ${l.session.p50.toFixed(0)} ms, p95 ${l.session.p95.toFixed(0)} ms`);
  console.log(`latency, process hook with mm serve running: prompt p50 ${l.served.p50.toFixed(0)} ms, p95 ${l.served.p95.toFixed(0)} ms, slowest ${l.served.max.toFixed(0)} ms`);
  console.log(`load average at the end: ${(await import("node:os")).loadavg().map((x) => x.toFixed(1)).join(", ")} (${(await import("node:os")).cpus().length} cores)`);
  // The development prompts' mistakes only: the held-out ones stay unseen while tuning (they are in bench-results/hooks.json).
  for (const w of report.splits.dev.wrong) console.log(`  dev: injected an irrelevant memory: ${w}`);
  mkdirSync(join(root, "bench-results"), { recursive: true });
  writeFileSync(join(root, "bench-results", "hooks.json"), JSON.stringify(report, null, 2) + "\n");
}
rmSync(dir, { recursive: true, force: true });
