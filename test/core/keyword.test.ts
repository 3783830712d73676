import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { coverage, englishCount, queryTerms, stemWord, termWeights } from "../../src/core/keyword.js";
import { keywordQuery } from "../../src/core/ranking.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

describe("keyword terms", () => {
  it("are the query's topical words, stemmed as the index stems them, each stem once", () => {
    expect(queryTerms(keywordQuery("When did Caroline paint the paintings of sunrises?"))).toEqual([
      { word: "caroline", stem: "carolin" },
      { word: "paint", stem: "paint" },
      { word: "sunrises", stem: "sunris" },
    ]);
    expect(queryTerms("")).toEqual([]);
  });

  it("fold accents and keep words with digits whole (the stemmer would turn 2023 into 202i)", () => {
    expect(stemWord("Zoë")).toBe("zoe");
    expect(stemWord("2023")).toBe("2023");
    expect(stemWord("3rd")).toBe("3rd");
    expect(stemWord("running")).toBe("run");
  });
});

describe("English word counts", () => {
  it("know common words as common and rare ones as rare, per stem", () => {
    expect(englishCount("the")).toBeGreaterThan(1_000_000);
    expect(englishCount(stemWord("dentist"))).toBeGreaterThan(100);
    expect(englishCount(stemWord("dentist"))).toBeLessThan(2_000);
    expect(englishCount(stemWord("drinking"))).toBe(englishCount(stemWord("drinks")));
    expect(englishCount("zzqxj")).toBe(0);
  });

  it("are exactly what scripts/english-frequencies.mjs generates from SUBTLEX-US", () => {
    // Exits 1 if src/core/english-frequencies.ts differs from a fresh generation.
    execFileSync(process.execPath, [join(root, "scripts", "english-frequencies.mjs"), "--check"], { stdio: "pipe" });
  });
});

describe("coverage", () => {
  const terms = queryTerms("dentist appointment");
  const contains = (stems: string[]) => (i: number) => stems.includes(terms[i].stem);

  it("is 1 for a memory holding every query word and 0 for one holding none, in any scope", () => {
    for (const scope of [{ size: 1, docFreq: [1, 1] }, { size: 5_000, docFreq: [3, 900] }, { size: 20, docFreq: [0, 0] }]) {
      const w = termWeights(terms, scope);
      expect(coverage(w, contains(["dentist", "appoint"]))).toBe(1);
      expect(coverage(w, contains([]))).toBe(0);
    }
  });

  it("weighs a rare word above a common one, from English when the scope is small", () => {
    const w = termWeights(queryTerms("dentist time"), { size: 3, docFreq: [1, 1] });
    expect(w.present[0]).toBeGreaterThan(w.present[1] + 1);
  });

  it("follows the scope when it is big: a word in half the memories weighs little there", () => {
    const rare = termWeights(queryTerms("caroline"), { size: 600, docFreq: [2] }).present[0];
    const everywhere = termWeights(queryTerms("caroline"), { size: 600, docFreq: [300] }).present[0];
    expect(everywhere).toBeLessThan(rare / 3);
  });

  it("does not discount a word for occurring in the memory being scored: a one-memory store weighs by English", () => {
    const [t] = queryTerms("dentist");
    const alone = termWeights([t], { size: 1, docFreq: [1] });
    const absentFromAll = termWeights([t], { size: 1, docFreq: [0] });
    expect(alone.present[0]).toBeCloseTo(absentFromAll.absent[0], 10);
  });

  it("depends on nothing but the terms and the scope's counts", () => {
    const a = termWeights(terms, { size: 40, docFreq: [2, 5] });
    const b = termWeights(terms, { size: 40, docFreq: [2, 5] });
    expect(a).toEqual(b);
  });
});
