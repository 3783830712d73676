#!/usr/bin/env node
// `npm run bench:everyday`: search quality on everyday memory (bench/everyday/), through the real
// code on a real store with the real model. Prints a table per part of the set and writes
// bench-results/everyday.json.
//
// The set (bench/everyday/README.md, scripts/search-set.mjs): users' memories in several styles
// (a person's notes, work notes, facts an agent extracted, MCP observations, chat turns) with
// questions of these kinds: shared (a word in common with the answer: "direct"), reworded (none),
// agent ("the user…"), named, current (after a replaced fact), both (two notes answer, both
// true) and unanswerable. Users held out from tuning are reported apart (isHeldOut).
//
// Figures, per part, in the mode asked for and in semantic mode (meaning alone) beside it: top-1
// and recall at 0.5 of answerable questions, per kind; the precision of hits scoring 0.9 or more;
// hijacks (a wrong memory first at 0.9 or more); the expected calibration error over every hit of
// the top ten; unanswerable questions with anything at 0.5; for current questions, an older note
// above the newer one at 0.5 or more; wrong-user questions (asked of another user) with a hit at
// 0.5. And the newcomer's three notes (c-newcomer): each of its
// questions' own note first, above 0.5, and nothing else above 0.5.
//
//   node scripts/bench-everyday.mjs [--mode hybrid|semantic|keyword] [--out file] [--show]
//   --show prints every answerable question whose answer isn't first, and every hijack.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { header, isHeldOut, loadEveryday, outcome, row, summarize } from "./search-set.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(pathToFileURL(join(process.env.MM_DIST ?? join(root, "dist"), p)).href);
const { openContext } = await dist("core/context.js");
const { addMemoriesFromLines, listMemories, searchMemories } = await dist("core/memories.js");
const { createEntities } = await dist("core/mcp-memory.js");

const arg = (name) => (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1] : undefined);
const mode = arg("mode") ?? "hybrid";
const out = resolve(arg("out") ?? join(root, "bench-results", "everyday.json"));
const show = process.argv.includes("--show");

const users = loadEveryday(root);

const store = mkdtempSync(join(tmpdir(), "mm-everyday-"));
const ctx = await openContext({ storeDir: store, env: process.env });
try {
  for (const u of users) await load(u);
  const report = { mode, users: users.length, memories: users.reduce((n, u) => n + u.memories.length, 0), parts: {} };
  /** The mode's outcomes of the newcomer's questions (c-newcomer), which its check reads. */
  const newcomerOutcomes = [];
  for (const m of [mode, ...(mode === "semantic" ? [] : ["semantic"])]) {
    const parts = { dev: [], heldOut: [] };
    for (const u of users) {
      for (const q of u.questions) {
        const o = await ask(u, q, m);
        parts[isHeldOut(u.userId) ? "heldOut" : "dev"].push(o);
        if (m === mode && u.userId === "c-newcomer") newcomerOutcomes.push({ q, o });
      }
    }
    for (const [name, os] of Object.entries(parts)) report.parts[`${m}, ${name}`] = summarize(os);
  }
  report.newcomer = newcomer(newcomerOutcomes);
  report.wrongUser = await wrongUser();
  console.log(`everyday memory, ${report.users} users, ${report.memories} memories\n`);
  console.log(header());
  for (const [name, f] of Object.entries(report.parts)) console.log(row(name, f));
  console.log("\ncurrent (after a replaced fact) and both-true questions:");
  for (const [name, f] of Object.entries(report.parts)) console.log(`- ${name}: current first ${f.byKind.current?.top1 ?? "–"}, an older note above it at 0.5 ${f.byKind.current?.staleAbove ?? "–"}; both true in the top 5 ${f.byKind.both?.allInTop5 ?? "–"}`);
  console.log(`\nwrong-user questions (each question asked of the next user of its part) with a hit at 0.5: ${Object.entries(report.wrongUser).map(([k, v]) => `${k} ${v}`).join(", ")}`);
  console.log(`\nthe newcomer's three notes: ${report.newcomer.ok ? "each question's own note first above 0.5, nothing else above 0.5" : `NOT MET: ${report.newcomer.failures.join("; ")}`}`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwrote ${out}`);
} finally {
  await ctx.close();
  rmSync(store, { recursive: true, force: true });
}

/**
 * The newcomer's store (its shared questions' outcomes, as asked above): each question's own note
 * first, above 0.5, and no other note at 0.5.
 */
function newcomer(asked) {
  if (!asked.length) return { ok: false, failures: ["no c-newcomer user in the set"] };
  const failures = asked
    .filter(({ q }) => q.kind === "shared")
    .filter(({ o }) => !o.first || !o.returned || o.othersAt05 > 0)
    .map(({ q, o }) => `${q.q} → ${o.hits.map((h) => `${h.content} ${h.score.toFixed(3)}`).join(", ")}`);
  return { ok: failures.length === 0, failures };
}

/**
 * Wrong-user questions: every question but the named ones asked of the next user of its part,
 * whose memories are about another life, so any hit at 0.5 is wrong. The share with a hit, per part.
 */
async function wrongUser() {
  const out = {};
  for (const held of [false, true]) {
    const us = users.filter((u) => isHeldOut(u.userId) === held);
    let n = 0;
    let withHit = 0;
    for (const [i, u] of us.entries()) {
      const other = us[(i + 1) % us.length];
      for (const q of u.questions.filter((q) => q.kind !== "named")) {
        const { results } = await searchMemories(ctx, { query: q.q, userId: other.userId, mode, limit: 10 });
        n++;
        withHit += results.length ? 1 : 0;
      }
    }
    out[held ? "heldOut" : "dev"] = n ? Math.round((withHit / n) * 1000) / 1000 : null;
  }
  return out;
}

/** Stores a user's memories as each style arrives in mm: MCP observations through the MCP tools, the rest as lines. */
async function load(u) {
  u.idOf = new Map();
  if (u.style === "mcp-observations") {
    const byEntity = new Map();
    for (const m of u.memories) {
      const e = byEntity.get(m.entity) ?? { name: m.entity, entityType: m.entityType ?? "thing", observations: [], ids: [] };
      e.observations.push(m.content);
      e.ids.push(m.id);
      byEntity.set(m.entity, e);
    }
    await createEntities(ctx, { userId: u.userId }, { entities: [...byEntity.values()].map(({ ids, ...e }) => e) });
    // Map stored observations back to the set's ids by content (unique within a user).
    // mm stores an observation that doesn't name its entity as "Entity: observation".
    const byContent = new Map(u.memories.flatMap((m) => [[m.content, m.id], [`${m.entity}: ${m.content}`, m.id]]));
    for (let page = 1; ; page++) {
      const p = await listMemories(ctx, { userId: u.userId, page, limit: 100 });
      for (const item of p.items) u.idOf.set(item.id, byContent.get(item.content));
      if (page >= p.pagination.totalPages) break;
    }
    return;
  }
  const lines = u.memories.map((m) => JSON.stringify({ content: m.content, userId: u.userId, ...(m.metadata ? { metadata: m.metadata } : {}) }));
  const ids = [];
  await addMemoriesFromLines(ctx, lines, { onResult: (r) => ids.push(r.memory.id) });
  ids.forEach((id, i) => u.idOf.set(id, u.memories[i].id));
}

/** Asks one question of its user (every candidate, threshold 0) and returns its outcome. */
async function ask(u, q, m) {
  const { results } = await searchMemories(ctx, { query: q.q, userId: u.userId, mode: m, threshold: 0, limit: 50 });
  const hits = results.map((h) => ({ id: u.idOf.get(h.id), score: h.score, content: h.content }));
  const answers = new Set(q.answers);
  const o = outcome(q.kind, hits, answers, new Set(q.stale ?? []));
  if (show && m === mode && ((o.answerable && !o.first) || o.hijack || (!o.answerable && o.anyAt05)) && !isHeldOut(u.userId)) {
    const top = hits.slice(0, 2).map((h) => `${answers.has(h.id) ? "*" : ""}${h.score.toFixed(3)} ${h.content.slice(0, 70)}`);
    console.log(`[${u.userId} ${q.kind}] ${q.q}\n    ${top.join("\n    ")}`);
  }
  return { ...o, hits };
}
