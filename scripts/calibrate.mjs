#!/usr/bin/env node
// `npm run calibrate`: fits the hybrid scorer's constants (src/core/scorer.ts) for the store's
// embedding model, reports how they hold on data they were not fitted on, and writes them to
// src/core/scorer-params.ts. With --ablate it also fits each candidate mechanism as an extra
// signal and prints the ablation table docs/search-quality.md quotes.
//
// The fit is a logistic regression: score = σ(bias + Σ weight · signal), each weight ≥ 0 (more
// evidence never lowers a score), by Newton's method with a small L2 penalty (scaled by the number
// of answers, not of rows). Its rows are (question, memory) pairs: for each question of the
// development users of bench/everyday, of the two 20-memory stores of test/fixtures/calibration and
// of LoCoMo's development split, every memory of its user, labelled 1 when it answers. Notes and
// conversation turns get a model each (fitTwo). The held-out users of bench/everyday
// (scripts/search-set.mjs) are never fitted on; LoCoMo is reported leave-one-conversation-out
// (fitted on the other four).
//
// The signals are worked out here from the texts, as core/scorer.ts defines them; the embeddings
// come from the real model. `npm run bench:everyday` then measures the fitted scorer through the
// real search on a real store.
//
//   node scripts/calibrate.mjs [--cache file] [--check] [--held-out] [--show] [--ablate]
//                              [--features a,b,…] [--variants] [--turn-body] [--no-agent-rewrite]
//                              [--no-small] [--no-locomo]
//   --cache       embeddings are kept in the file between runs (the model takes ~3 minutes on LoCoMo)
//   --check       exit 1 if src/core/scorer-params.ts is not what this fit writes
//   --held-out    print the held-out users' figures too (tuning reads the development part alone)
//   --show        print the development questions whose first hit is wrong at 0.9 or more
//   --ablate      the ablation table (MM_ABLATE_DIST: a build of commit e9da6e1, for the old modules)
//   --features    fit these signals instead (FEATURES below; with --variants, cosDense and cosKw:
//                 the question embedded without its question words, or as its keywords)
//   --turn-body   a turn's words without its speaker (measured and not kept: LoCoMo R@10 0.68 → 0.66)
//   --no-agent-rewrite, --no-small, --no-locomo: leave out the reading of "the user" as "I", the
//                 20-memory stores, LoCoMo (the parameters file is then not written)
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { header, isHeldOut, loadEveryday, outcome, row, storedContent, summarize } from "./search-set.mjs";
import { writeOrCheck } from "./generated-file.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const distDir = process.env.MM_DIST ?? join(root, "dist");
const dist = (p) => import(pathToFileURL(join(distDir, p)).href);
const { createEmbedder, DEFAULT_EMBEDDER } = await dist("embedder/index.js");
const { denseQuery, keywordQuery } = await dist("core/ranking.js");
const { queryTerms } = await dist("core/keyword.js");
const { asAskedByUser, holdsEveryWord, keywordShare, stemsOfText, turnEvidence, turnLength, unit, wordWeight } = await dist("core/scorer.js");
const args = process.argv.slice(2);
const option = (name) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : undefined);
const log = (...a) => console.error(...a);
/** Held-out figures are printed only when asked for: tuning reads the development part alone. */
const SHOW_HELD = args.includes("--held-out");

const locomoData = resolve(root, "..", "shared", "data", "locomo-dev", "locomo-dev.json");
const locomoBench = resolve(root, "..", "shared", "bench", "locomo-recall.mjs");
const { loadLocomo, selectQuestions } = await import(pathToFileURL(locomoBench).href);

// ---------------------------------------------------------------------------------------------
// Embeddings, cached by text.
// One thread: the worker pool buys nothing for a script that embeds and then computes.
const embedder = await createEmbedder(DEFAULT_EMBEDDER, { ...process.env, MM_EMBED_WORKERS: "1" });
const cacheFile = option("cache");
const cache = new Map(cacheFile && existsSync(cacheFile) ? Object.entries(JSON.parse(readFileSync(cacheFile, "utf8"))).map(([k, v]) => [k, new Float32Array(Uint8Array.from(Buffer.from(v, "base64")).buffer)]) : []);
async function embedAll(texts) {
  const missing = [...new Set(texts.filter((t) => !cache.has(t)))];
  for (let i = 0; i < missing.length; i += 128) {
    const batch = missing.slice(i, i + 128);
    const vs = await embedder.embed(batch);
    batch.forEach((t, j) => cache.set(t, vs[j]));
    if (missing.length > 500) log(`embedded ${Math.min(i + 128, missing.length)}/${missing.length}`);
  }
  return texts.map((t) => cache.get(t));
}
const dot = (a, b) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

// ---------------------------------------------------------------------------------------------
// The sets as lists of questions over their user's memories, each pair with its signals.
const rewrite = !args.includes("--no-agent-rewrite");
const VARIANTS = args.includes("--variants");
const asked = (q) => (rewrite ? asAskedByUser(q) : q);

/** A conversation turn's words without the speaker who opens it ("Caroline: I went…" → "I went…"). */
const turnBody = (content) => content.replace(/^[^:\n]{1,40}:\s+/u, "");

/** A user's memories: content, conversation and order, their stems and embedding. */
async function memoriesOf(list) {
  const vectors = await embedAll(list.map((m) => m.content));
  return list.map((m, i) => ({ ...m, seq: i + 1, stems: stemsOfText(m.conversation && args.includes("--turn-body") ? turnBody(m.content) : m.content), vector: vectors[i] }));
}

/** The signals of every memory of a user for one question. */
function signalsFor(question, vector, memories, extras, more = {}) {
  const terms = queryTerms(keywordQuery(asked(question)));
  const share = (m) => keywordShare(terms, (i) => m.stems.has(terms[i].stem));
  const kw = memories.map(share);
  return memories.map((m, i) => {
    const before = memories[i - 1];
    const after = memories[i + 1];
    const nb = m.conversation ? Math.max(before?.conversation === m.conversation ? kw[i - 1] : 0, after?.conversation === m.conversation ? kw[i + 1] : 0) : 0;
    // A turn: query words naming its speaker count as `speaker`, not as keyword evidence (core/scorer.ts).
    const turn = m.conversation ? turnEvidence(terms, (j) => m.stems.has(terms[j].stem), m.content) : undefined;
    const s = { cosine: unit(dot(vector, m.vector)), keyword: turn ? turn.keyword : kw[i], neighbour: nb, turn: m.conversation ? 1 : 0, speaker: turn ? turn.speaker : 0, length: turn ? turnLength(m.content) : 0 };
    for (const [k, v] of Object.entries(more)) s[k] = unit(dot(v, m.vector));
    if (extras) Object.assign(s, extras(question, m, terms));
    return s;
  });
}

async function everydayQuestions(extras) {
  const users = loadEveryday(root);
  const out = [];
  for (const u of users) {
    // A note a later one replaced is hidden from search once write-time detection links the two;
    // here every note a `current` question names as stale is taken as linked (bench:everyday
    // measures what detection really links).
    const stale = new Set(u.questions.flatMap((q) => q.stale ?? []));
    const memories = await memoriesOf(u.memories.filter((m) => !stale.has(m.id)).map((m) => ({ id: m.id, content: storedContent(m), conversation: m.metadata?.sessionId ? String(m.metadata.sessionId) : null })));
    const vectors = await embedAll(u.questions.map((q) => asked(q.q)));
    const raws = VARIANTS ? await embedAll(u.questions.map((q) => denseQuery(asked(q.q)))) : [];
    const kws = VARIANTS ? await embedAll(u.questions.map((q) => keywordQuery(asked(q.q)) || asked(q.q))) : [];
    u.questions.forEach((q, i) => {
      const more = VARIANTS ? { cosDense: raws[i], cosKw: kws[i] } : {};
      out.push({ set: "everyday", user: u.userId, heldOut: isHeldOut(u.userId), kind: q.kind, q: q.q, answers: new Set(q.answers), stale: new Set(q.stale ?? []), memories, signals: signalsFor(q.q, vectors[i], memories, extras, more) });
    });
  }
  return out;
}

/**
 * The two hand-labelled 20-memory stores (test/fixtures/calibration): one-word and all-words
 * queries ("dentist", "Lisbon"), questions, paraphrases and unrelated questions. Fitted on, beside
 * the development users: the everyday sets have no query of bare keywords.
 */
async function smallStoreQuestions(extras) {
  const out = [];
  for (const name of ["a", "b"]) {
    const fixture = JSON.parse(readFileSync(join(root, "test", "fixtures", "calibration", `small-store-${name}.json`), "utf8"));
    const memories = await memoriesOf(fixture.memories.map((m) => ({ id: m.id, content: m.content, conversation: null })));
    const vectors = await embedAll(fixture.queries.map((q) => asked(q.query)));
    const kindOf = { "one-word": "keywords", "all-words": "keywords", question: "shared", paraphrase: "reworded", unrelated: "unanswerable" };
    fixture.queries.forEach((q, i) => out.push({ set: "small", user: `small-${name}`, heldOut: false, kind: kindOf[q.kind], q: q.query, answers: new Set(q.relevant ?? []), stale: new Set(), memories, signals: signalsFor(q.query, vectors[i], memories, extras) }));
  }
  return out;
}

async function locomoQuestions(extras) {
  const { conversations } = loadLocomo(locomoData);
  const out = [];
  for (const c of conversations) {
    const memories = await memoriesOf(c.turns.map((t) => ({ id: t.diaId, content: t.content, conversation: `session_${t.session}` })));
    const qs = selectQuestions(c);
    const vectors = await embedAll(qs.map((q) => asked(q.question)));
    const raws = VARIANTS ? await embedAll(qs.map((q) => denseQuery(asked(q.question)))) : [];
    qs.forEach((q, i) => out.push({ set: "locomo", user: c.sampleId, heldOut: false, kind: "locomo", q: q.question, answers: new Set(q.evidence), memories, signals: signalsFor(q.question, vectors[i], memories, extras, VARIANTS ? { cosDense: raws[i] } : {}) }));
    log(`locomo ${c.sampleId}: ${memories.length} turns, ${qs.length} questions`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The model: a logistic regression over named features of the signals.
const FEATURES = {
  cosine: (s) => s.cosine,
  keyword: (s) => s.keyword,
  keyword2: (s) => s.keyword * s.keyword,
  bridged2: (s) => (s.bridged ?? 0) ** 2,
  neighbour: (s) => s.neighbour,
  every: (s) => holdsEveryWord(s.keyword),
  speaker: (s) => s.speaker,
  length: (s) => s.length,
};

function design(names) {
  return (s) => names.map((n) => (FEATURES[n] ?? ((x) => x[n] ?? 0))(s));
}

/**
 * Two models, one for notes and one for conversation turns (each memory is one or the other): a
 * turn is read beside its neighbours and its words weigh differently. The turns' bias is then
 * lowered or raised so that, on the questions fitted on, the answers ranked in the top ten that
 * score 0.5 or more are TURN_KEEP of all those ranked there (the default threshold's promise).
 */
function fitTwo(questions, names, signs) {
  const notes = fit(rowsOf(questions, names, (s) => !s.turn), signs);
  const turns = fit(rowsOf(questions, names, (s) => s.turn), signs);
  const x = design(names);
  const logit = (m, s) => m.bias + x(s).reduce((a, v, j) => a + v * m.weights[j], 0);
  // The shift: the TURN_KEEP quantile of the logits of the answers ranked in the top ten.
  const ranked = [];
  for (const q of questions.filter((q) => q.set === "locomo")) {
    const order = q.signals.map((s, i) => [logit(turns, s), i]).sort((a, b) => b[0] - a[0]).slice(0, 10);
    for (const [z, i] of order) if (q.answers.has(q.memories[i].id)) ranked.push(z);
  }
  ranked.sort((a, b) => a - b);
  const shift = ranked.length ? -ranked[Math.floor((1 - TURN_KEEP) * ranked.length)] : 0;
  turns.bias += Math.max(0, shift);
  const score = (s) => 1 / (1 + Math.exp(-logit(s.turn ? turns : notes, s)));
  return { notes, turns, score };
}
const TURN_KEEP = 0.92;
/** The signals of core/scorer.ts, as fitted. */
const FINAL = ["cosine", "keyword", "keyword2", "every", "speaker", "length"];

/**
 * Rows of the fit: every memory of each question's user that `which` takes (notes or turns). All of
 * them, not the best few by a first ranking: negatives picked by rank and positives taken whatever
 * their rank made keyword evidence look useless on LoCoMo.
 */
function rowsOf(questions, names, which) {
  const x = design(names);
  const rows = [];
  for (const q of questions) {
    q.signals.forEach((s, i) => {
      if (which(s)) rows.push({ x: x(s), y: q.answers.has(q.memories[i].id) ? 1 : 0, w: q.set === "locomo" ? 0.5 : 1 });
    });
  }
  return rows;
}

/** The keyword share with each term held at `held[i]` (1, a bridge's share, or 0). */
function bridgedShare(terms, held) {
  let have = 0;
  let all = 0;
  terms.forEach((t, i) => {
    const w = wordWeight(t.stem);
    all += w;
    have += held[i] * w;
  });
  return all ? have / all : 0;
}

/** Weighted logistic regression by Newton's method; `signs[j]` ≥ 0 forces weight j ≥ 0, < 0 forces ≤ 0, 0 leaves it free. */
function fit(rows, signs, l2 = 1e-3) {
  const k = signs.length;
  // The penalty scales with the answers, not the rows: a question has one or two answers among hundreds.
  const mass = rows.reduce((a, r) => a + r.w * r.y, 0);
  let active = signs.map(() => true);
  for (;;) {
    const idx = [...Array(k).keys()].filter((j) => active[j]);
    let w = new Array(idx.length + 1).fill(0);
    for (let it = 0; it < 50; it++) {
      const d = idx.length + 1;
      const g = new Array(d).fill(0);
      const H = Array.from({ length: d }, () => new Array(d).fill(0));
      for (const r of rows) {
        const v = [1, ...idx.map((j) => r.x[j])];
        const z = v.reduce((a, x, i) => a + x * w[i], 0);
        const p = 1 / (1 + Math.exp(-z));
        for (let i = 0; i < d; i++) {
          g[i] += r.w * (p - r.y) * v[i];
          for (let j = 0; j < d; j++) H[i][j] += r.w * p * (1 - p) * v[i] * v[j];
        }
      }
      for (let i = 1; i < d; i++) {
        g[i] += l2 * w[i] * mass;
        H[i][i] += l2 * mass;
      }
      const step = solve(H, g);
      w = w.map((x, i) => x - step[i]);
      if (Math.max(...step.map(Math.abs)) < 1e-7) break;
    }
    const full = { bias: w[0], weights: new Array(k).fill(0) };
    idx.forEach((j, i) => (full.weights[j] = w[i + 1]));
    const wrong = idx.find((j) => (signs[j] > 0 && full.weights[j] < 0) || (signs[j] < 0 && full.weights[j] > 0));
    if (wrong === undefined) return full;
    active = active.map((a, j) => a && j !== wrong);
  }
}

function solve(A, b) {
  const n = b.length;
  const M = A.map((r, i) => [...r, b[i]]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(M[r][c]) > Math.abs(M[p][c])) p = r;
    [M[c], M[p]] = [M[p], M[c]];
    if (Math.abs(M[c][c]) < 1e-12) continue;
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = M[r][c] / M[c][c];
      for (let j = c; j <= n; j++) M[r][j] -= f * M[c][j];
    }
  }
  return M.map((r, i) => (Math.abs(r[i]) < 1e-12 ? 0 : r[n] / r[i]));
}

/** Each question's outcome under a score function (semantic: the cosine itself). Ties: the newer memory first. */
function outcomes(questions, scoreOf) {
  return questions.map((q) => {
    const hits = q.memories.map((m, i) => ({ id: m.id, score: scoreOf(q.signals[i]), seq: m.seq })).sort((a, b) => b.score - a.score || b.seq - a.seq);
    return { ...outcome(q.kind, hits, q.answers, q.stale), hits, answers: q.answers };
  });
}

function locomoFigures(os) {
  let r10 = 0;
  let mrr = 0;
  let kept = 0;
  for (const o of os) {
    const top = o.hits.slice(0, 10);
    const { answers } = o;
    const found = top.filter((h) => answers.has(h.id)).length;
    r10 += found / answers.size;
    kept += top.filter((h) => h.score >= 0.5 && answers.has(h.id)).length / answers.size;
    const first = top.findIndex((h) => answers.has(h.id));
    mrr += first >= 0 ? 1 / (first + 1) : 0;
  }
  const n = os.length;
  return { r10: +(r10 / n).toFixed(3), mrr: +(mrr / n).toFixed(3), r10At05: +(kept / n).toFixed(3), keptShare: +(kept / r10).toFixed(3) };
}

// ---------------------------------------------------------------------------------------------
const SIGNS = { cosine: 1, keyword: 1, keyword2: 1, neighbour: 1, speaker: 1, length: 1, turn: 0, lacksKind: -1, bridged: 1, bridged2: 1 };

export async function prepare(extras) {
  const everyday = [...(await everydayQuestions(extras)), ...(args.includes("--no-small") ? [] : await smallStoreQuestions(extras))];
  const locomo = args.includes("--no-locomo") ? [] : await locomoQuestions(extras);
  if (cacheFile) writeFileSync(cacheFile, JSON.stringify(Object.fromEntries([...cache].map(([k, v]) => [k, Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64")]))));
  return { everyday, locomo };
}

/** Fits `names` on the dev users and LoCoMo, returns the model and its figures on each part. */
export function evaluate({ everyday, locomo }, names) {
  const signs = names.map((n) => SIGNS[n] ?? 1);
  const dev = everyday.filter((q) => !q.heldOut);
  const held = everyday.filter((q) => q.heldOut);
  const model = fitTwo([...dev, ...locomo], names, signs);
  const f = model.score;
  const figures = { model, dev: summarize(outcomes(dev.filter((q) => q.set === "everyday"), f)), heldOut: summarize(outcomes(held, f)), small: summarize(outcomes(dev.filter((q) => q.set === "small"), f)) };
  if (locomo.length) {
    // Leave one conversation out: fitted on the other four, measured on it.
    const convs = [...new Set(locomo.map((q) => q.user))];
    const all = [];
    for (const c of convs) {
      const m = fitTwo([...dev, ...locomo.filter((q) => q.user !== c)], names, signs);
      all.push(...outcomes(locomo.filter((q) => q.user === c), m.score));
    }
    figures.locomo = locomoFigures(all);
  }
  return figures;
}

function semanticFigures({ everyday }) {
  const f = (s) => s.cosine;
  return { dev: summarize(outcomes(everyday.filter((q) => !q.heldOut && q.set === "everyday"), f)), heldOut: summarize(outcomes(everyday.filter((q) => q.heldOut), f)) };
}

if (args.includes("--ablate")) {
  // Each mechanism of the landed rule stack that can be said of one note, added back to the fitted
  // scorer as a signal and fitted again; its effect on the held-out users. The old modules come
  // from a build of the commit before the scorer (MM_ABLATE_DIST, e.g. a worktree of e9da6e1).
  const old = process.env.MM_ABLATE_DIST;
  if (!old) throw new Error("--ablate needs MM_ABLATE_DIST: the dist/ of a build of commit e9da6e1");
  const { answerKind, holdsKind } = await import(pathToFileURL(join(old, "core", "answer-kind.js")).href);
  const { bridgesOf, stemsOf, BRIDGE } = await import(pathToFileURL(join(old, "core", "bridges.js")).href);
  const extras = (question, m, terms) => {
    const kind = answerKind(asked(question));
    const stems = stemsOf(m.content);
    const held = terms.map((t) => (m.stems.has(t.stem) ? 1 : [...bridgesOf(t.stem)].some((b) => stems.has(b)) ? BRIDGE.share : 0));
    return { lacksKind: kind && !m.conversation && !holdsKind(m.content, kind) ? 1 : 0, bridged: terms.length ? bridgedShare(terms, held) : 0 };
  };
  const data = await prepare(extras);
  const base = FINAL;
  const variants = [
    ["fitted scorer", base],
    ["+ answer kinds (a note without the kind of value asked for)", [...base, "lacksKind"]],
    ["+ WordNet bridges (keyword share counting bridged words at 0.8)", ["cosine", "bridged", "bridged2"]],
    ["+ neighbour propagation (turns: the neighbours' keyword share)", [...base, "neighbour"]],
  ];
  console.log(header("variant"));
  const sem = semanticFigures(data);
  console.log(row("meaning alone (semantic), held out", sem.heldOut));
  for (const [name, names] of variants) {
    const r = evaluate(data, names);
    console.log(row(`${name}, held out`, r.heldOut));
    console.log(row(`${name}, dev`, r.dev));
    if (r.locomo) console.log(`|   LoCoMo (LOCO): R@10 ${r.locomo.r10}, MRR@10 ${r.locomo.mrr}, R@10 at 0.5 ${r.locomo.r10At05} |`);
  }
} else if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const data = await prepare();
  const names = (option("features") ?? FINAL.join(",")).split(",");
  const result = evaluate(data, names);
  const sem = semanticFigures(data);
  console.log(header());
  console.log(row("semantic, dev", sem.dev));
  if (SHOW_HELD) console.log(row("semantic, held out", sem.heldOut));
  console.log(row("fitted, dev", result.dev));
  console.log(row("fitted, 20-memory stores", result.small), JSON.stringify(result.small.byKind.keywords ?? {}));
  if (SHOW_HELD) console.log(row("fitted, held out", result.heldOut));
  if (args.includes("--show")) {
    const dev = data.everyday.filter((q) => !q.heldOut);
    for (const o of outcomes(dev, result.model.score).map((o, i) => ({ ...o, q: dev[i] }))) {
      const h = o.hits[0];
      if (h && h.score >= 0.9 && !o.q.answers.has(h.id)) {
        const m = o.q.memories.find((m) => m.id === h.id);
        const s = o.q.signals[o.q.memories.indexOf(m)];
        console.log(`HIJACK ${h.score.toFixed(3)} [${o.q.kind}${s.turn ? ", turn" : ""}] ${o.q.q} -> ${m.content.slice(0, 70)} cos ${s.cosine.toFixed(2)} kw ${s.keyword.toFixed(2)}`);
      }
    }
  }
  if (result.locomo) console.log(`\nLoCoMo leave-one-conversation-out: R@10 ${result.locomo.r10}, MRR@10 ${result.locomo.mrr}, R@10 at 0.5 ${result.locomo.r10At05} (${result.locomo.keptShare} of R@10)`);
  for (const which of ["notes", "turns"]) console.log(`\n${which}:`, JSON.stringify({ bias: result.model[which].bias, ...Object.fromEntries(names.map((n, j) => [n, result.model[which].weights[j]])) }));
  console.log(JSON.stringify(result.dev.byKind));
  if (names.join() === FINAL.join() && !args.includes("--no-locomo")) {
    const set = (m) => `{ bias: ${m.bias.toFixed(4)}, ${FINAL.map((n, j) => `${n}: ${m.weights[j].toFixed(4)}`).join(", ")} }`;
    const id = `${DEFAULT_EMBEDDER.provider}:${DEFAULT_EMBEDDER.model}`;
    const text = `// Written by scripts/calibrate.mjs (\`npm run calibrate\`): the hybrid scorer's constants per embedding\n// model (core/scorer.ts), fitted on bench/everyday's development users and LoCoMo's development\n// split. Don't edit by hand: rerun the fit.\nimport type { ScorerParams } from "./scorer.js";\n\nexport const FITTED: Record<string, Omit<ScorerParams, "model">> = {\n  "${id}": {\n    notes: ${set(result.model.notes)},\n    turns: ${set(result.model.turns)},\n  },\n};\n`;
    writeOrCheck(join(root, "src", "core", "scorer-params.ts"), text, "scripts/calibrate.mjs");
  }
  if (SHOW_HELD) console.log(JSON.stringify(result.heldOut.byKind));
}
await embedder.close?.();
