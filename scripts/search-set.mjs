// The labelled questions search is fitted and measured on, and the figures reported for them.
// Shared by scripts/calibrate.mjs (the fit, on signals worked out here from text) and
// scripts/bench-everyday.mjs (the same figures through the real search on a real store).
//
// - bench/everyday: users' memories and their questions, each of a kind (bench/everyday/README.md).
//   Users whose id starts with `d-`, and four older users named in HELD_OUT, are held out: never
//   fitted or tuned on.
// - LoCoMo's development split (../shared/data/locomo-dev): conversation turns, evidence turns as
//   answers; fitted leave-one-conversation-out.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

/** Users never tuned on: four of the first twelve, and every user of part D. */
export const HELD_OUT_USERS = new Set(["a-mei", "a-trucker", "b-fiona-ops", "b-arjun-assistant"]);
export const isHeldOut = (userId) => HELD_OUT_USERS.has(userId) || userId.startsWith("d-");

/** The answerable kinds, whose answer should come first. */
export const ANSWERABLE = ["shared", "reworded", "agent", "named", "current", "both", "keywords"];

export function loadEveryday(root) {
  const dir = join(root, "bench", "everyday");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .flatMap((f) => JSON.parse(readFileSync(join(dir, f), "utf8")).users);
}

/** What mm stores for a memory of the set: an MCP observation that doesn't name its entity is stored as "Entity: observation". */
export function storedContent(m) {
  if (!m.entity) return m.content;
  return m.content.toLowerCase().includes(m.entity.toLowerCase()) ? m.content : `${m.entity}: ${m.content}`;
}

/**
 * One question's outcome from its ranked hits (`{id, score}` best first, every candidate, threshold 0).
 * `answers` and `stale` are sets of ids.
 */
export function outcome(kind, hits, answers, stale = new Set()) {
  const top = hits.slice(0, 10);
  const first = hits[0];
  const o = {
    kind,
    answerable: kind !== "unanswerable",
    first: !!first && answers.has(first.id),
    returned: hits.some((h) => h.score >= 0.5 && answers.has(h.id)),
    anyAt05: hits.some((h) => h.score >= 0.5),
    othersAt05: hits.filter((h) => h.score >= 0.5 && !answers.has(h.id)).length,
    hijack: !!first && first.score >= 0.9 && !answers.has(first.id),
    // Calibration: every hit of the top ten, its score and whether it answers.
    top: top.map((h) => [h.score, answers.has(h.id) ? 1 : 0]),
  };
  if (kind === "current") {
    const rankOf = (set) => hits.findIndex((h) => set.has(h.id));
    const a = rankOf(answers);
    const s = rankOf(stale);
    o.staleAbove = s >= 0 && (a < 0 || s < a) && hits[s].score >= 0.5;
  }
  if (kind === "both") o.allInTop5 = [...answers].every((id) => hits.slice(0, 5).some((h) => h.id === id));
  return o;
}

/** The figures of a list of outcomes. */
export function summarize(outcomes) {
  const r = (a, b) => (b ? Math.round((a / b) * 1000) / 1000 : null);
  const of = (pred) => outcomes.filter(pred);
  const answerable = of((o) => o.answerable);
  const byKind = {};
  for (const kind of [...ANSWERABLE, "unanswerable"]) {
    const os = of((o) => o.kind === kind);
    if (!os.length) continue;
    byKind[kind] = kind === "unanswerable" ? { n: os.length, anyAt05: r(os.filter((o) => o.anyAt05).length, os.length) } : { n: os.length, top1: r(os.filter((o) => o.first).length, os.length), recallAt05: r(os.filter((o) => o.returned).length, os.length) };
    if (kind === "current") byKind[kind].staleAbove = r(os.filter((o) => o.staleAbove).length, os.length);
    if (kind === "both") byKind[kind].allInTop5 = r(os.filter((o) => o.allInTop5).length, os.length);
  }
  const hits = outcomes.flatMap((o) => o.top);
  const high = hits.filter(([s]) => s >= 0.9);
  return {
    questions: outcomes.length,
    top1: r(answerable.filter((o) => o.first).length, answerable.length),
    recallAt05: r(answerable.filter((o) => o.returned).length, answerable.length),
    othersAt05: r(answerable.reduce((n, o) => n + o.othersAt05, 0), answerable.length),
    precisionAt09: r(high.filter(([, y]) => y).length, high.length),
    hitsAt09: high.length,
    hijacks: outcomes.filter((o) => o.hijack).length,
    ece: ece(hits),
    byKind,
  };
}

/** Expected calibration error over hits `[score, correct]`: ten equal-width bins, weighted by their size. */
export function ece(hits, bins = 10) {
  if (!hits.length) return null;
  const sum = Array.from({ length: bins }, () => ({ n: 0, s: 0, y: 0 }));
  for (const [s, y] of hits) {
    const b = sum[Math.min(bins - 1, Math.floor(s * bins))];
    b.n++;
    b.s += s;
    b.y += y;
  }
  const e = sum.reduce((acc, b) => acc + (b.n ? Math.abs(b.s - b.y) : 0), 0) / hits.length;
  return Math.round(e * 1000) / 1000;
}

/** A table row of the figures the targets name. */
export const COLUMNS = ["top-1", "R@0.5", "direct top-1", "reworded top-1 / R@0.5", "agent top-1 / R@0.5", "named top-1", "unanswerable any@0.5", "P(≥0.9)", "hijacks", "ECE"];
export function row(name, f) {
  const k = (kind, field) => f.byKind[kind]?.[field] ?? "–";
  return `| ${name} (${f.questions}) | ${f.top1} | ${f.recallAt05} | ${k("shared", "top1")} | ${k("reworded", "top1")} / ${k("reworded", "recallAt05")} | ${k("agent", "top1")} / ${k("agent", "recallAt05")} | ${k("named", "top1")} | ${k("unanswerable", "anyAt05")} | ${f.precisionAt09} (${f.hitsAt09}) | ${f.hijacks} | ${f.ece} |`;
}
export function header(first = "part") {
  return `| ${first} | ${COLUMNS.join(" | ")} |\n|${"---|".repeat(COLUMNS.length + 1)}`;
}
