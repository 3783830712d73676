#!/usr/bin/env node
// `npm run eval:supersede`: how replaced facts and still-true facts fare in search, on the
// development set in test/fixtures/supersede/ (docs/memory-validity.md, "Measured").
//
// Each scenario is a user of its own in one store, with the real model: ten unrelated everyday
// notes, then the scenario's facts, each added by its own create (as separate commands would),
// then the question, searched in the default mode. Reported:
// - replaced facts: the newest fact ranks first; an older fact ranks above it; an older fact
//   passes the default threshold (0.5); and how many older facts detection marked replaced;
// - still-true pairs: both facts in the top 5, both passing the default threshold (neither hidden
//   at 0.5), and neither marked replaced.
//
//   node scripts/supersede-eval.mjs [--heldout | --heldout2 | --check | --check2 | --check3 | --check4 | --heldout3 | --heldout4 | --heldout5 | --heldout6 | --heldout7 | --heldout8 | --heldout9 | --heldout10 | --heldout11 | --logs] [--off] [--misses] [--json file] [--fixtures dir]
//     --heldout   the first held-out files (measured once, then their misses were read: no longer clean)
//     --heldout2  the second held-out files (measured once clean, then tuned on by the frames round)
//     --check     an internal check set written for the frames round (measured once clean, then tuned on)
//     --check2    a second internal check set, written after the first was used (measured once clean, then tuned on)
//     --check3    a third, written after the second was used; --check4 a fourth, after the third
//     --heldout3  the lead's blind set (replaced-heldout3.jsonl, both-true-heldout3.jsonl), added after
//     --heldout4  a second blind set, written for the newer-first ranking (ranking.ts NEWER) and measured once
//     --heldout5  a third blind set, written while detection by the model (supersede.ts changedByModel) was built, measured once (docs/measurements/memory-validity-rounds.md, round four)
//     --heldout6  a fourth blind set, measured once clean (26 November 2026), then tuned on (round five)
//     --heldout7  a fifth blind set, written while round five was made, measured once clean and not read
//     --heldout8  a sixth blind set, measured once clean (26 November 2026), then tuned on (round six)
//     --heldout9  a seventh blind set, written while round six was made, measured once clean and not read
//     --heldout10 an eighth blind set, written while round eight was made, measured once clean before it and once after, not read
//     --heldout11 a ninth, written after round eight, measured once clean on it, not read
//     --logs      logged events (60 still-true pairs, 40 replaced facts), written blind after the log rules; its even lines were read, its odd lines not
//     --fixtures  read the split's two files from this directory instead of test/fixtures/supersede/ (the fillers stay there)
//     --off       detection off (autoSupersede: false): the figures before this feature
//   MM_DIST=<dir>   run another build's dist/ (as bench-everyday.mjs does), e.g. one without a mechanism, for an ablation
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(pathToFileURL(join(process.env.MM_DIST ?? join(root, "dist"), p)).href);
const { openContext } = await dist("core/context.js");
const { addMemoriesFromLines, searchMemories } = await dist("core/memories.js");

const args = process.argv.slice(2);
const SPLITS = ["logs", "heldout11", "heldout10", "check5", "heldout9", "heldout8", "heldout7", "heldout6", "heldout5", "heldout4", "heldout3", "heldout2", "heldout", "check4", "check3", "check2", "check"];
const split = SPLITS.find((s) => args.includes(`--${s}`)) ?? "dev";
const detect = !args.includes("--off");
const jsonOut = args.includes("--json") ? args[args.indexOf("--json") + 1] : undefined;
const fixtures = join(root, "test", "fixtures", "supersede");
const splitDir = args.includes("--fixtures") ? resolve(args[args.indexOf("--fixtures") + 1] ?? "") : fixtures;
const shown = splitDir === fixtures ? "test/fixtures/supersede" : splitDir;
for (const name of [`replaced-${split}.jsonl`, `both-true-${split}.jsonl`]) {
  if (!existsSync(join(splitDir, name))) {
    console.error(`supersede-eval: ${shown}/${name} is missing: the ${split} split needs replaced-${split}.jsonl and both-true-${split}.jsonl there (one JSON object a line: {"id", "facts": [older…, newest], "question"}).`);
    process.exit(2);
  }
}
const read = (name, dir = splitDir) =>
  readFileSync(join(dir, name), "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
const replaced = read(`replaced-${split}.jsonl`);
const bothTrue = read(`both-true-${split}.jsonl`);
const fillers = read("fillers.jsonl", fixtures).map((f) => f.content);

/** A small deterministic generator, so every run picks the same fillers for a scenario. */
function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}
function tenFillers(i) {
  const r = rng(i + 1);
  const pool = [...fillers];
  for (let k = pool.length - 1; k > 0; k--) {
    const j = Math.floor(r() * (k + 1));
    [pool[k], pool[j]] = [pool[j], pool[k]];
  }
  return pool.slice(0, 10);
}

const store = mkdtempSync(join(tmpdir(), "mm-supersede-eval-"));
const ctx = await openContext({ storeDir: store, env: process.env });
const pct = (n, d) => (d ? `${((100 * n) / d).toFixed(1)}%` : "n/a");

/**
 * Every scenario's user gets its ten fillers, then its facts: the first facts of every user in one
 * batch, the second facts in the next, and so on, so each fact of a user arrives in a later
 * commit than the one before it, as separate commands would (users never see each other's).
 */
async function seedAll(scenarios) {
  const add = async (lines) => {
    const out = [];
    await addMemoriesFromLines(ctx, lines.map((l) => JSON.stringify(l)), { batchSize: 256, onResult: (res) => out.push(res.memory) });
    return out;
  };
  await add(scenarios.flatMap((s) => tenFillers(s.seed).map((content) => ({ content, userId: s.userId, dedupe: false, autoSupersede: detect }))));
  const made = scenarios.map(() => []);
  for (let round = 0; round < Math.max(...scenarios.map((s) => s.facts.length)); round++) {
    const these = scenarios.map((s, i) => ({ s, i })).filter(({ s }) => round < s.facts.length);
    const memories = await add(these.map(({ s }) => ({ content: s.facts[round], userId: s.userId, autoSupersede: detect })));
    these.forEach(({ i }, k) => made[i].push(memories[k]));
  }
  return made;
}

try {
  const r = { scenarios: replaced.length, questions: 0, newestFirst: 0, olderAbove: 0, olderPasses: 0, olderFacts: 0, olderMarked: 0, newestMarked: 0, misses: [] };
  const replacedMade = await seedAll(replaced.map((s, i) => ({ ...s, userId: `r-${s.id}`, seed: i })));
  const bothMade = await seedAll(bothTrue.map((s, i) => ({ ...s, userId: `b-${s.id}`, seed: 1000 + i })));
  for (const [i, s] of replaced.entries()) {
    const userId = `r-${s.id}`;
    const made = replacedMade[i];
    const newest = made[made.length - 1];
    const older = made.slice(0, -1);
    const { results } = await searchMemories(ctx, { query: s.question, userId, threshold: 0, limit: 20 });
    const rankOf = (id) => results.findIndex((h) => h.id === id);
    const newestRank = rankOf(newest.id);
    r.questions++;
    if (newestRank === 0) r.newestFirst++;
    const above = older.some((m) => rankOf(m.id) >= 0 && (newestRank < 0 || rankOf(m.id) < newestRank));
    if (above) r.olderAbove++;
    if (results.some((h) => h.score >= 0.5 && older.some((m) => m.id === h.id))) r.olderPasses++;
    const marked = await Promise.all(older.map(async (m) => (await ctx.store.getMemory(ctx.accountId, m.id)).supersededBy !== null));
    r.olderFacts += older.length;
    r.olderMarked += marked.filter(Boolean).length;
    if ((await ctx.store.getMemory(ctx.accountId, newest.id)).supersededBy !== null) r.newestMarked++;
    if (newestRank !== 0 || above) r.misses.push({ id: s.id, newestRank, top: results[0]?.content, marked });
  }
  const b = { pairs: bothTrue.length, bothInTop5: 0, bothPass: 0, marked: 0, misses: [] };
  for (const [i, s] of bothTrue.entries()) {
    const userId = `b-${s.id}`;
    const made = bothMade[i];
    const { results } = await searchMemories(ctx, { query: s.question, userId, threshold: 0, limit: 5 });
    const top = new Set(results.map((h) => h.id));
    const both = made.every((m) => top.has(m.id));
    if (both) b.bothInTop5++;
    if (made.every((m) => results.some((h) => h.id === m.id && h.score >= 0.5))) b.bothPass++;
    const anyMarked = (await Promise.all(made.map(async (m) => (await ctx.store.getMemory(ctx.accountId, m.id)).supersededBy !== null))).some(Boolean);
    if (anyMarked) b.marked++;
    if (!both || anyMarked) b.misses.push({ id: s.id, anyMarked, top: results.map((h) => h.content) });
  }
  console.log(`Replaced facts (${split}, detection ${detect ? "on" : "off"}): ${r.scenarios} scenarios, ${r.olderFacts} older facts`);
  console.log(`| newest ranks first | an older fact ranks above it | an older fact passes 0.5 | older facts marked replaced | newest marked replaced |`);
  console.log(`| ${pct(r.newestFirst, r.questions)} | ${pct(r.olderAbove, r.questions)} | ${pct(r.olderPasses, r.questions)} | ${pct(r.olderMarked, r.olderFacts)} | ${r.newestMarked} |`);
  console.log(`Still-true pairs (${split}): ${b.pairs}`);
  console.log(`| both in the top 5 | both pass 0.5 | either marked replaced |`);
  console.log(`| ${pct(b.bothInTop5, b.pairs)} | ${b.bothPass} of ${b.pairs} | ${pct(b.marked, b.pairs)} |`);
  if (args.includes("--misses")) console.log(JSON.stringify({ replaced: r.misses, bothTrue: b.misses }, null, 1));
  if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ split, detect, replaced: r, bothTrue: b }, null, 2) + "\n");
} finally {
  await ctx.close();
  rmSync(store, { recursive: true, force: true });
}
