import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { englishCount, queryTerms, stemWord } from "../../src/core/keyword.js";
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

