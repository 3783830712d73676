#!/usr/bin/env node
// `npm run bench:everyday`: search quality on everyday memory (bench/everyday/), through the real
// code on a real store with the real model. Prints a table per part of the set and writes
// bench-results/everyday.json.
//
// The set (bench/everyday/README.md): twelve users' memories in five styles (a person's notes,
// work notes, facts an agent extracted, MCP observations, chat turns) with three kinds of question:
// - reworded: no content word in common with the memory that answers it;
// - shared: at least one word in common with it;
// - unanswerable: no memory answers it, but it shares a word with one of the user's memories;
// - named: answered by a memory it shares only names with ("what does Tobias do for a living?" for
//   "Tobias Bianchi: Works night shifts as an ICU nurse"), added on 29 November 2026, after the
//   others, so that a rule about names shows its cost here (docs/search-quality.md).
// Four users are held out from tuning (HELD_OUT below); the report gives both parts.
//
// What is measured, at the default threshold (0.5) unless said:
// - reworded: the answer returned at 0.5; the answer ranked first (threshold 0);
// - shared: the answer returned at 0.5; other memories returned at 0.5, per question;
// - unanswerable: questions that return anything at 0.5;
// - named: the answer returned at 0.5; the answer ranked first (threshold 0);
// - wrong-user: every reworded, shared and unanswerable question asked of another user of the same
//   part (not the named ones, added later, so the figure stays comparable); those that return anything.
//
//   node scripts/bench-everyday.mjs [--mode hybrid|semantic|keyword] [--out file] [--show]
//   --show prints every question that misses its target.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(pathToFileURL(join(root, "dist", p)).href);
const { openContext } = await dist("core/context.js");
const { addMemoriesFromLines, listMemories, searchMemories } = await dist("core/memories.js");
const { createEntities } = await dist("core/mcp-memory.js");

/** Users never tuned on: one of each style but MCP observations. */
export const HELD_OUT = new Set(["a-mei", "a-trucker", "b-fiona-ops", "b-arjun-assistant"]);

const arg = (name) => (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1] : undefined);
const mode = arg("mode") ?? "hybrid";
const out = resolve(arg("out") ?? join(root, "bench-results", "everyday.json"));
const show = process.argv.includes("--show");

const setDir = join(root, "bench", "everyday");
const users = readdirSync(setDir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .flatMap((f) => JSON.parse(readFileSync(join(setDir, f), "utf8")).users);

const store = mkdtempSync(join(tmpdir(), "mm-everyday-"));
const ctx = await openContext({ storeDir: store, env: process.env });
try {
  for (const u of users) await load(u);
  const parts = { dev: tally(), heldOut: tally() };
  const byUser = {};
  for (const u of users) {
    const t = HELD_OUT.has(u.userId) ? parts.heldOut : parts.dev;
    const own = tally();
    for (const q of u.questions) await ask(u, q, [t, own]);
    byUser[u.userId] = { style: u.style, ...figures(own) };
  }
  // Wrong-user questions: every question asked of the next user of the same part, whose memories
  // are about another life, so any hit at 0.5 is wrong.
  for (const held of [false, true]) {
    const us = users.filter((u) => HELD_OUT.has(u.userId) === held);
    const t = held ? parts.heldOut : parts.dev;
    for (const [i, u] of us.entries()) {
      const other = us[(i + 1) % us.length];
      for (const q of u.questions.filter((q) => q.kind !== "named")) {
        const { results } = await searchMemories(ctx, { query: q.q, userId: other.userId, mode, limit: 10 });
        t.wrongUser.n++;
        t.wrongUser.withHit += results.length ? 1 : 0;
      }
    }
  }
  const report = { mode, users: users.length, memories: users.reduce((n, u) => n + u.memories.length, 0), parts: Object.fromEntries(Object.entries(parts).map(([k, t]) => [k, figures(t)])), byUser };
  printTable(report);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwrote ${out}`);
} finally {
  await ctx.close();
  rmSync(store, { recursive: true, force: true });
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

function tally() {
  return { reworded: { n: 0, returned: 0, first: 0 }, shared: { n: 0, returned: 0, others: 0 }, unanswerable: { n: 0, withHit: 0 }, named: { n: 0, returned: 0, first: 0 }, wrongUser: { n: 0, withHit: 0 } };
}

/** Asks one question of its user and counts the outcome in each of `tallies` (its part's, its user's). */
async function ask(u, q, tallies) {
  const { results } = await searchMemories(ctx, { query: q.q, userId: u.userId, mode, threshold: 0, limit: 50 });
  const hits = results.map((h) => ({ id: u.idOf.get(h.id), score: h.score, content: h.content }));
  const passed = hits.filter((h) => h.score >= 0.5);
  const answers = new Set(q.answers);
  let miss = false;
  for (const t of tallies) {
    if (q.kind === "reworded" || q.kind === "named") {
      const returned = passed.some((h) => answers.has(h.id));
      const first = hits.length > 0 && answers.has(hits[0].id);
      t[q.kind].n++;
      t[q.kind].returned += returned ? 1 : 0;
      t[q.kind].first += first ? 1 : 0;
      miss = !returned || !first;
    } else if (q.kind === "shared") {
      const returned = passed.some((h) => answers.has(h.id));
      const others = passed.filter((h) => !answers.has(h.id)).length;
      t.shared.n++;
      t.shared.returned += returned ? 1 : 0;
      t.shared.others += others;
      miss = !returned || others > 0;
    } else {
      t.unanswerable.n++;
      t.unanswerable.withHit += passed.length ? 1 : 0;
      miss = passed.length > 0;
    }
  }
  if (show && miss) {
    const top = hits.slice(0, 2).map((h) => `${answers.has(h.id) ? "*" : ""}${h.score.toFixed(3)} ${h.content.slice(0, 60)}`);
    console.log(`[${u.userId} ${q.kind}] ${q.q}\n    ${top.join("\n    ")}`);
  }
}

function figures(t) {
  const r = (a, b) => (b ? Math.round((a / b) * 1000) / 1000 : null);
  return {
    reworded: { questions: t.reworded.n, returnedAt05: r(t.reworded.returned, t.reworded.n), rankedFirst: r(t.reworded.first, t.reworded.n) },
    shared: { questions: t.shared.n, returnedAt05: r(t.shared.returned, t.shared.n), otherMemoriesAt05PerQuestion: r(t.shared.others, t.shared.n) },
    unanswerable: { questions: t.unanswerable.n, withAHitAt05: r(t.unanswerable.withHit, t.unanswerable.n) },
    named: { questions: t.named.n, returnedAt05: r(t.named.returned, t.named.n), rankedFirst: r(t.named.first, t.named.n) },
    wrongUser: { questions: t.wrongUser.n, withAHitAt05: r(t.wrongUser.withHit, t.wrongUser.n) },
  };
}

function printTable(report) {
  console.log(`everyday memory, ${report.users} users, ${report.memories} memories, mode ${report.mode}\n`);
  console.log("| part | reworded: returned at 0.5 | reworded: ranked first | shared: returned at 0.5 | shared: others at 0.5 per question | unanswerable: any hit at 0.5 | wrong-user: any hit at 0.5 | named: returned at 0.5 | named: ranked first |");
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const [name, f] of Object.entries(report.parts)) {
    const n = `${f.reworded.questions}/${f.shared.questions}/${f.unanswerable.questions}/${f.named.questions}`;
    console.log(`| ${name} (${n} questions) | ${f.reworded.returnedAt05} | ${f.reworded.rankedFirst} | ${f.shared.returnedAt05} | ${f.shared.otherMemoriesAt05PerQuestion} | ${f.unanswerable.withAHitAt05} | ${f.wrongUser.withAHitAt05} | ${f.named.returnedAt05} | ${f.named.rankedFirst} |`);
  }
}
