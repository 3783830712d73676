import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { bridgesOf, stemsOf } from "../../src/core/bridges.js";
import { stemWord } from "../../src/core/keyword.js";
import { addMemoriesFromLines, searchMemories } from "../../src/core/memories.js";
import { searchCandidates } from "../../src/core/search.js";
import { useModelStore } from "../helpers/model-store.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

describe("WordNet bridges", () => {
  it("are exactly what scripts/wordnet-bridges.mjs generates from WordNet 3.1", () => {
    // Exits 1 if src/core/wordnet-bridges.ts differs from a fresh generation.
    execFileSync(process.execPath, [join(root, "scripts", "wordnet-bridges.mjs"), "--check"], { stdio: "pipe" });
  });

  it.each([
    ["spud", "potato"],
    ["glasshouse", "greenhouse"],
    ["chowder", "soup"],
    ["citrus", "grapefruit"],
    ["influenza", "flu"],
    ["bicycle", "bike"],
    ["spectacles", "eyeglasses"],
    ["vacation", "holiday"],
  ])("link the uncommon word %j to %j (stemmed as queries are)", (from, to) => {
    expect(bridgesOf(stemWord(from)).has(stemWord(to))).toBe(true);
  });

  it.each(["use", "name", "phone", "come", "family"])("leave the common word %j without bridges: it has too many senses", (word) => {
    expect(bridgesOf(stemWord(word)).size).toBe(0);
  });

  it("find every line of the table, first, last and between (binary search over its sorted lines)", () => {
    const lines = readFileSync(join(root, "assets", "wordnet-bridges.txt"), "latin1").split("\n").filter((l) => l && !l.startsWith("#"));
    expect(lines.length).toBeGreaterThan(20_000);
    const step = Math.floor(lines.length / 500);
    for (const line of [lines[0], lines.at(-1)!, ...lines.filter((_, i) => i % step === 0)]) {
      const [stem, ...others] = line.split(" ");
      expect([...bridgesOf(stem)]).toEqual(others);
    }
  });

  it("know nothing of a word WordNet doesn't have", () => {
    for (const stem of ["zzqx", "", "#", "a", "zzzzzzzz", "aaa"]) expect(bridgesOf(stem).size).toBe(0);
  });

  it("read a note's words as a query's: stop words gone, stemmed", () => {
    expect([...stemsOf("Seed potatoes: Gulløye did best last year")].sort()).toEqual(["best", "gulløy", "last", "potato", "seed", "year"].sort());
    expect(stemsOf("").size).toBe(0);
  });

  it("keep the WordNet license with the table", () => {
    const table = readFileSync(join(root, "assets", "wordnet-bridges.txt"), "utf8");
    expect(table).toContain("WordNet 3.0 Copyright 2006 by Princeton University.  All rights reserved.");
    expect(table).toContain('THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS"');
  });
});

/**
 * A person's notes (bench/everyday's dev user a-ingrid, in part), searched with questions whose
 * words the notes don't hold, but WordNet links ("spud" / "potatoes"). Real model. Without bridges
 * the first two answers rank second, and the flu jab scores 0.03.
 */
const NOTES = [
  "Dr. Halvorsen moved my blood pressure pills to 10mg, take in the morning",
  "The greenhouse door hinge is rusted, ask Arne to look at it",
  "Seed potatoes: Gulløye did best last year, order 3kg again",
  "Hurtigruten to Kirkenes with Randi, sails June 3",
  "Choir practice moved to Thursdays 19:00",
  "Mor's fish soup: saffron, cream, leek, splash of white wine",
  "Glasses prescription +2.25 left, +2.00 right",
  "Don't eat grapefruit with the statin",
  "Sigrid's husband Ole works offshore, 2 weeks on 4 off",
  "Flu jab at the health centre Nov 5, 11:15",
  "Returned the broken kettle to Elkjøp, refund in 5 working days",
];

describe("search through WordNet bridges (real model)", () => {
  const ctx = useModelStore("mm-bridges-");
  const search = async (query: string, userId = "u", threshold = 0) => (await searchMemories(ctx(), { query, userId, threshold })).results;

  beforeAll(async () => {
    await addMemoriesFromLines(ctx(), NOTES.map((content) => JSON.stringify({ content, userId: "u" })), {});
    // The same lines as turns of one conversation: bridges are for notes alone.
    await addMemoriesFromLines(ctx(), NOTES.map((content) => JSON.stringify({ content, userId: "chat", metadata: { sessionId: "s1" } })), {});
  });

  it.each([
    ["which spud variety grew well?", "Seed potatoes: Gulløye did best last year, order 3kg again"],
    ["which citrus clashes with my cholesterol medicine?", "Don't eat grapefruit with the statin"],
  ])("ranks first the note a question's uncommon word bridges to: %j", async (query, note) => {
    expect((await search(query))[0].content).toBe(note);
  });

  it("returns at the default threshold a note holding a synonym of the question's heaviest word", async () => {
    expect((await search("when is my influenza vaccination?", "u", 0.5)).map((r) => r.content)).toEqual(["Flu jab at the health centre Nov 5, 11:15"]);
  });

  it("counts a bridged word at 0.8 of its weight, and keeps the note's own coverage apart for the lead", async () => {
    const candidates = await searchCandidates(ctx(), { query: "which spud variety grew well?", userId: "u" });
    const potatoes = candidates.find((c) => c.record.content.startsWith("Seed potatoes"))!;
    expect(potatoes.coverage).toBeGreaterThan(0);
    expect(potatoes.ownCoverage).toBe(0);
    const kettle = candidates.find((c) => c.record.content.startsWith("Returned the broken kettle"))!;
    expect(kettle.coverage).toBe(0);
    expect(kettle.ownCoverage).toBeUndefined();
  });

  it("reads a bridged note that lacks a name the question asks about as a note about someone else", async () => {
    await addMemoriesFromLines(ctx(), ["Sigrid lives in Bergen now", "New eyeglasses ordered, +2.25 left"].map((content) => JSON.stringify({ content, userId: "names" })), {});
    const candidates = await searchCandidates(ctx(), { query: "are Sigrid's spectacles ready?", userId: "names" });
    const eyeglasses = candidates.find((c) => c.record.content.startsWith("New eyeglasses"))!;
    expect(eyeglasses.ownCoverage).toBe(0);
    expect(eyeglasses.coverage).toBeGreaterThan(0);
    expect(eyeglasses.missingName).toBe(true);
    const results = await search("are Sigrid's spectacles ready?", "names", 0);
    expect(results.find((r) => r.content.startsWith("New eyeglasses"))!.score).toBeLessThan(0.5);
  });

  it("leaves turns of a conversation to their own words", async () => {
    const candidates = await searchCandidates(ctx(), { query: "which spud variety grew well?", userId: "chat" });
    const potatoes = candidates.find((c) => c.record.content.startsWith("Seed potatoes"))!;
    expect(potatoes.coverage).toBe(0);
    expect(potatoes.ownCoverage).toBeUndefined();
  });

  it.each([
    ["emoji only", "🙂🙂🙂"],
    ["another script", "Где живёт моя сестра?"],
    ["10,000 characters of a bridged word", "spud ".repeat(2000)],
    ["every bridged word at once", "spud glasshouse chowder citrus influenza spectacles"],
  ])("answers a query with finite scores in [0, 1], best first: %s", async (_, query) => {
    const results = await search(query);
    for (const r of results) expect(Number.isFinite(r.score) && r.score >= 0 && r.score <= 1).toBe(true);
    expect(results.map((r) => r.score)).toEqual(results.map((r) => r.score).sort((a, b) => b - a));
  });
});
