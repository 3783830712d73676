#!/usr/bin/env node
// `npm run calibrate`: refits the hybrid and keyword score constants of src/core/ranking.ts on the
// calibration set, and reports how they hold on data they were not fitted on. It prints the
// figures docs/search-quality.md quotes and writes them to bench-results/calibration.json. It
// changes no source file: copy constants across by hand, with the figures, if they move.
//
// The calibration set (docs/search-quality.md, "Calibration"):
// - LoCoMo's development split (../shared/data/locomo-dev, five conversations, 760 questions with
//   evidence): each turn a memory of the user `locomo-<conversation>`, as bench:locomo loads them.
//   Positives: a question's evidence turns, searched for in its own conversation. Negatives: the
//   ten best hits of the same question asked in each of the four other conversations, where its
//   answer cannot be ("wrong-user" questions).
// - Two hand-labelled 20-memory stores (test/fixtures/calibration/small-store-{a,b}.json): a
//   person's facts, with one-word, all-words, question, paraphrase and unrelated queries.
//
// Fitting, per held-out conversation (leave-one-conversation-out): the structural constants
// (keyword weight, neighbour cap) by R@10 + MRR@10 on the four other conversations; then the
// midpoint, the highest at which R@10 counting only hits ≥ 0.5 stays within 10% of R@10 at
// threshold 0, on the same four; then the slope, by a class-balanced logistic regression of
// evidence against wrong-user hits. Keyword mode: midpoint and slope by that regression alone. Reported on the held-out conversation, and on both 20-memory
// stores, which are never fitted on: another size of store, another kind of text. The final
// constants are the same fit on all five conversations.
//
//   node scripts/calibrate.mjs [--features file]   with --features, the searches' evidence is
//   saved to the file, or read from it if it exists (the searches take ~5 minutes).
//
// Every search runs through the real code (core/memories.ts searchCandidates) on a real store with
// the real model; only the last step, turning evidence into a score, is redone here with trial
// constants (core/ranking.ts hybridScore, keywordScore).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(pathToFileURL(join(root, "dist", p)).href);
const { openContext } = await dist("core/context.js");
const { addMemoriesFromLines, searchCandidates } = await dist("core/memories.js");
const { HYBRID, KEYWORD, LEAD, hybridRaw, hybridScore, keywordScore } = await dist("core/ranking.js");
const locomoData = resolve(root, "..", "shared", "data", "locomo-dev", "locomo-dev.json");
const locomoBench = resolve(root, "..", "shared", "bench", "locomo-recall.mjs");
if (!existsSync(locomoData) || !existsSync(locomoBench)) {
  console.error(`calibration needs ${locomoData} and ${locomoBench}`);
  process.exit(2);
}
const { loadLocomo, selectQuestions, CATEGORY_NAMES: CATEGORY } = await import(pathToFileURL(locomoBench).href);

const K = 10;
const GRID = { keywordWeight: [0.5, 0.55, 0.6], neighbourCap: [0.25, 0.3, 0.35] };

const featuresFile = process.argv.includes("--features") ? process.argv[process.argv.indexOf("--features") + 1] : undefined;
const log = (...a) => console.error(...a);
const { convs, smalls } = featuresFile && existsSync(featuresFile) ? JSON.parse(readFileSync(featuresFile, "utf8")) : await collect();
if (featuresFile && !existsSync(featuresFile)) writeFileSync(featuresFile, JSON.stringify({ convs, smalls }));
fitAndReport(convs, smalls);

/** Loads the calibration set into a temp store and runs every search; returns their evidence. */
async function collect() {
  const store = mkdtempSync(join(tmpdir(), "mm-calibrate-"));
  const ctx = await openContext({ storeDir: store, env: process.env });
  try {
    const { conversations } = loadLocomo(locomoData);
    const convs = [];
    for (const c of conversations) {
      const userId = `locomo-${c.sampleId}`;
      const ids = [];
      // As ../shared/bench/locomo-recall.mjs stores them: each turn tagged and labelled with its session,
      // which is what makes neighbouring turns one conversation (core/conversation.ts).
      const line = (t) => JSON.stringify({ content: t.content, userId, tags: ["locomo", `session_${t.session}`], metadata: { dia_id: t.diaId, session: t.session, date_time: t.dateTime } });
      await addMemoriesFromLines(ctx, c.turns.map(line), { batchSize: 256, onResult: (r) => ids.push(r.memory.id) });
      const diaOf = new Map(ids.map((id, i) => [id, c.turns[i].diaId]));
      convs.push({ id: c.sampleId, userId, diaOf, questions: selectQuestions(c).map((q) => ({ question: q.question, category: q.category, evidence: q.evidence })) });
      log(`loaded ${c.sampleId}: ${ids.length} turns`);
    }
    const smalls = [];
    for (const name of ["a", "b"]) {
      const fixture = JSON.parse(readFileSync(join(root, "test", "fixtures", "calibration", `small-store-${name}.json`), "utf8"));
      const userId = `small-${name}`;
      const ids = [];
      await addMemoriesFromLines(ctx, fixture.memories.map((m) => JSON.stringify({ content: m.content, userId })), { onResult: (r) => ids.push(r.memory.id) });
      const fixtureId = new Map(ids.map((id, i) => [id, fixture.memories[i].id]));
      smalls.push({ name, userId, fixtureId, queries: fixture.queries });
    }

    // ---- evidence of every search ----
    const features = (cands, label) =>
      cands.map((c) => ({ coverage: c.coverage ?? 0, nb: c.neighbourCoverage ?? 0, cosine: c.cosine ?? 0, missing: c.missingShare ?? 0, lead: c.lead, createdAt: c.record.createdAt, label: label(c.record.id) }));
    const search = (query, userId) => searchCandidates(ctx, { query, userId, mode: "hybrid", limit: K });
    for (const conv of convs) {
      for (const q of conv.questions) {
        const evidence = new Set(q.evidence);
        q.own = features(await search(q.question, conv.userId), (id) => evidence.has(conv.diaOf.get(id)));
        q.size = evidence.size;
        q.wrong = [];
        for (const other of convs) if (other !== conv) q.wrong.push(features(await search(q.question, other.userId), () => false));
      }
      log(`searched ${conv.id}`);
    }
    for (const s of smalls) for (const q of s.queries) q.own = features(await search(q.query, s.userId), (id) => q.relevant.includes(s.fixtureId.get(id)));
    for (const c of convs) delete c.diaOf;
    for (const s of smalls) delete s.fixtureId;
    return { convs, smalls };
  } finally {
    await ctx.close();
    rmSync(store, { recursive: true, force: true });
  }
}

function fitAndReport(convs, smalls) {
  // ---- scoring with trial constants ----
  // One search's scores, as core/ranking.ts rank() gives them: in hybrid mode the nearest memory's
  // lead (LEAD) counts only when no memory reaches LEAD.unless by its own score.
  const scored = (fs, score) => {
    const out = fs.map((f) => ({ ...f, score: score(f) }));
    if (score.hybrid && !out.some((f) => f.score >= LEAD.unless)) for (const f of out) if (f.lead !== undefined) f.score = Math.max(f.score, f.lead);
    return out;
  };
  const ranked = (fs, score) => scored(fs, score).sort((a, b) => b.score - a.score || (a.createdAt < b.createdAt ? 1 : -1));
  const hybrid = (p) => Object.assign((f) => hybridScore({ coverage: f.coverage, neighbourCoverage: f.nb, cosine: f.cosine, missingShare: f.missing }, p), { hybrid: true });
  const keyword = (p) => (f) => (f.coverage > 0 ? keywordScore(f.coverage, p) : -1);

  function locomoFigures(convList, score) {
    const byCat = {};
    const add = (cat, row) => {
      const a = (byCat[cat] ??= { n: 0, r: 0, mrr: 0, r05: 0, wrongQueries: 0, wrongWithHit: 0, wrongHits: 0 });
      for (const [k, v] of Object.entries(row)) a[k] += v;
    };
    for (const conv of convList) {
      for (const q of conv.questions) {
        const top = ranked(q.own, score).filter((f) => f.score >= 0).slice(0, K);
        const found = top.filter((f) => f.label);
        const first = top.findIndex((f) => f.label);
        let wrongWithHit = 0;
        let wrongHits = 0;
        for (const w of q.wrong) {
          const hits = scored(w, score).filter((f) => f.score >= 0.5).length;
          wrongWithHit += hits > 0 ? 1 : 0;
          wrongHits += Math.min(K, hits);
        }
        const row = { n: 1, r: found.length / q.size, mrr: first >= 0 ? 1 / (first + 1) : 0, r05: found.filter((f) => f.score >= 0.5).length / q.size, wrongQueries: q.wrong.length, wrongWithHit, wrongHits };
        add("overall", row);
        add(CATEGORY[q.category] ?? String(q.category), row);
      }
    }
    return Object.fromEntries(
      Object.entries(byCat).map(([cat, a]) => [
        cat,
        { n: a.n, R10: a.r / a.n, MRR10: a.mrr / a.n, R10at05: a.r05 / a.n, wrongUserQueriesWithHit: a.wrongWithHit / a.wrongQueries, wrongUserHitsPerQuery: a.wrongHits / a.wrongQueries },
      ]),
    );
  }

  function smallFigures(s, score) {
    const kinds = {};
    let falsePositives = 0;
    let pairs = 0;
    for (const q of s.queries) {
      const k = (kinds[q.kind] ??= { queries: 0, found: 0 });
      k.queries++;
      const hits = scored(q.own, score).filter((f) => f.score >= 0.5);
      if (q.relevant.length && q.own.filter((f) => f.label).length === q.relevant.length && hits.filter((f) => f.label).length === q.relevant.length) k.found++;
      falsePositives += hits.filter((f) => !f.label).length;
      pairs += 20 - q.relevant.length;
    }
    return { kinds, falsePositives, nonRelevantPairs: pairs };
  }

  /** Class-balanced logistic regression of label on x: the midpoint (P = 0.5) and the slope. */
  function logistic(pos, neg) {
    let a = 10;
    let b = -4;
    for (let it = 0; it < 6000; it++) {
      let ga = 0;
      let gb = 0;
      for (const [xs, y] of [[pos, 1], [neg, 0]]) {
        for (const x of xs) {
          const g = (1 / (1 + Math.exp(-(a * x + b))) - y) / xs.length;
          ga += g * x;
          gb += g;
        }
      }
      a -= 20 * ga;
      b -= 20 * gb;
    }
    return { slope: Math.round(a * 10) / 10, midpoint: Math.round((-b / a) * 1000) / 1000 };
  }

  /**
   * The hybrid constants for these conversations: the structure (keyword weight, neighbour cap) with
   * the best R@10 + MRR@10; then the midpoint, the highest (in steps of 0.005) at which R@10 counting
   * only hits ≥ 0.5 stays within 10% of R@10 at threshold 0 (the recall the default threshold
   * promises); then the slope, by a class-balanced logistic regression of evidence against the
   * top wrong-user hits (its own midpoint, about 0.05 higher, is what balancing the two classes
   * alone would pick: fewer false positives, 10% less recall at 0.5).
   */
  function fitHybrid(convList) {
    let best;
    for (const keywordWeight of GRID.keywordWeight) {
      for (const neighbourCap of GRID.neighbourCap) {
        const p = { ...HYBRID, keywordWeight, neighbourCap };
        const f = locomoFigures(convList, hybrid(p)).overall;
        if (!best || f.R10 + f.MRR10 > best.objective) best = { p, objective: f.R10 + f.MRR10 };
      }
    }
    let midpoint = 0.2;
    for (let m = 0.5; m >= 0.2; m -= 0.005) {
      const f = locomoFigures(convList, hybrid({ ...best.p, midpoint: m })).overall;
      if (f.R10at05 >= 0.9 * f.R10) {
        midpoint = Math.round(m * 1000) / 1000;
        break;
      }
    }
    const raw = (f) => hybridRaw({ coverage: f.coverage, neighbourCoverage: f.nb, cosine: f.cosine, missingShare: f.missing }, best.p);
    const pos = [];
    const neg = [];
    for (const conv of convList) {
      for (const q of conv.questions) {
        pos.push(...q.own.filter((f) => f.label).map(raw));
        for (const w of q.wrong) neg.push(...w.map(raw).sort((x, y) => y - x).slice(0, K));
      }
    }
    return { ...best.p, slope: logistic(pos, neg).slope, midpoint };
  }

  /** Keyword mode, the same way: midpoint by the recall rule, slope by the regression. */
  function fitKeyword(convList) {
    const pos = [];
    const neg = [];
    for (const conv of convList) {
      for (const q of conv.questions) {
        pos.push(...q.own.filter((f) => f.label && f.coverage > 0).map((f) => f.coverage));
        for (const w of q.wrong) neg.push(...w.map((f) => f.coverage).filter((c) => c > 0).sort((x, y) => y - x).slice(0, K));
      }
    }
    const { slope } = logistic(pos, neg);
    for (let m = 1; m >= 0; m -= 0.005) {
      const f = locomoFigures(convList, keyword({ slope, midpoint: m })).overall;
      if (f.R10at05 >= 0.9 * f.R10) return { slope, midpoint: Math.round(m * 1000) / 1000 };
    }
    return { slope, midpoint: 0 };
  }


  // ---- leave one conversation out ----
  const [smallA, smallB] = smalls;
  const folds = [];
  for (const held of convs) {
    const rest = convs.filter((c) => c !== held);
    const p = fitHybrid(rest);
    folds.push({ heldOut: held.id, constants: p, heldOutFigures: locomoFigures([held], hybrid(p)) });
    log(`fold ${held.id}: ${JSON.stringify(p)}`);
  }
  // Pool the held-out figures over the five folds, weighted by questions.
  const pooled = {};
  for (const f of folds) {
    for (const [cat, v] of Object.entries(f.heldOutFigures)) {
      const a = (pooled[cat] ??= { n: 0 });
      for (const [k, x] of Object.entries(v)) if (k !== "n") a[k] = (a[k] ?? 0) + x * v.n;
      a.n += v.n;
    }
  }
  for (const a of Object.values(pooled)) for (const k of Object.keys(a)) if (k !== "n") a[k] /= a.n;

  const final = fitHybrid(convs);
  const finalKeyword = fitKeyword(convs);
  const report = {
    leaveOneConversationOut: pooled,
    folds: folds.map((f) => ({ heldOut: f.heldOut, constants: f.constants, overall: f.heldOutFigures.overall })),
    final: { hybrid: final, keyword: finalKeyword },
    inUse: { hybrid: HYBRID, keyword: KEYWORD },
    inUseFigures: {
      locomo: locomoFigures(convs, hybrid(HYBRID)),
      locomoKeyword: locomoFigures(convs, keyword(KEYWORD)),
      smallStoreA: smallFigures(smallA, hybrid(HYBRID)),
      smallStoreB: smallFigures(smallB, hybrid(HYBRID)),
      smallStoreAKeyword: smallFigures(smallA, keyword(KEYWORD)),
      smallStoreBKeyword: smallFigures(smallB, keyword(KEYWORD)),
    },
  };
  mkdirSync(join(root, "bench-results"), { recursive: true });
  writeFileSync(join(root, "bench-results", "calibration.json"), JSON.stringify(report, null, 2) + "\n");
  print(report);
}

function print(r) {
  const f3 = (x) => x.toFixed(3);
  const row = (name, v) => `| ${name} | ${v.n} | ${f3(v.R10)} | ${f3(v.MRR10)} | ${f3(v.R10at05)} | ${f3(v.wrongUserQueriesWithHit)} |`;
  const table = (title, figs) => {
    console.log(`\n${title}\n| category | n | R@10 | MRR@10 | R@10 at 0.5 | wrong-user questions with a hit ≥ 0.5 |\n|---|---|---|---|---|---|`);
    for (const cat of ["single-hop", "multi-hop", "temporal", "open-domain", "overall"]) if (figs[cat]) console.log(row(cat, figs[cat]));
  };
  table("LoCoMo dev, leave-one-conversation-out (constants fitted on the other four, reported on the fifth):", r.leaveOneConversationOut);
  for (const f of r.folds) console.log(`  held out ${f.heldOut}: ${JSON.stringify(f.constants)}  R@10 ${f3(f.overall.R10)} MRR ${f3(f.overall.MRR10)}`);
  console.log(`\nfitted on all five: hybrid ${JSON.stringify(r.final.hybrid)}, keyword ${JSON.stringify(r.final.keyword)}`);
  console.log(`in use (src/core/ranking.ts): hybrid ${JSON.stringify(r.inUse.hybrid)}, keyword ${JSON.stringify(r.inUse.keyword)}`);
  table("LoCoMo dev with the constants in use (hybrid):", r.inUseFigures.locomo);
  table("LoCoMo dev with the constants in use (keyword mode):", r.inUseFigures.locomoKeyword);
  for (const [name, s] of [["small store A", r.inUseFigures.smallStoreA], ["small store B", r.inUseFigures.smallStoreB], ["small store A, keyword mode", r.inUseFigures.smallStoreAKeyword], ["small store B, keyword mode", r.inUseFigures.smallStoreBKeyword]]) {
    const kinds = Object.entries(s.kinds).map(([k, v]) => `${k} ${k === "unrelated" ? "-" : `${v.found}/${v.queries}`}`).join(", ");
    console.log(`${name}: found at 0.5: ${kinds}; non-relevant memories at ≥ 0.5: ${s.falsePositives} of ${s.nonRelevantPairs} pairs`);
  }
}
