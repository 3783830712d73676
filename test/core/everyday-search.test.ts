import { beforeAll, describe, expect, it } from "vitest";
import { addMemoriesFromLines, searchMemories } from "../../src/core/memories.js";
import { stemWord } from "../../src/core/keyword.js";
import { namesOf } from "../../src/core/search.js";
import { MAX_QUERY_LENGTH } from "../../src/schemas/memory.js";
import { codeOf } from "../helpers/errors.js";
import { useModelStore } from "../helpers/model-store.js";

/**
 * A person's notes, added in this order with one batch (issue: search on everyday notes): notes
 * stored one after another are unrelated, so a match lends nothing to its neighbours, and a note
 * that shares a common word but lacks the word that says what is asked stays under 0.5. Real model.
 */
const NOTES = [
  "My landlord is Mr. Havel, he lives downstairs",
  "The wifi password for the flat is otter-42",
  "My favourite restaurant is the Georgian place on Linden Street",
  "Mum's birthday is on August 19th",
  "My sister lives in Lisbon",
  "Booked the dentist for March 3rd",
  "My bicycle has a flat rear tire",
];

describe("search on a person's notes (real model)", () => {
  const ctx = useModelStore("mm-notes-");
  const id: Record<string, string> = {};
  const search = async (query: string, threshold = 0.5) => (await searchMemories(ctx(), { query, userId: "u", threshold })).results;

  beforeAll(async () => {
    await addMemoriesFromLines(ctx(), NOTES.map((content) => JSON.stringify({ content, userId: "u" })), { onResult: (r) => (id[r.memory!.content] = r.memory!.id) });
  });

  it.each([
    ["where does my sister live?", "My sister lives in Lisbon"],
    ["what should I get mum for her birthday", "Mum's birthday is on August 19th"],
    ["what's the wifi password?", "The wifi password for the flat is otter-42"],
  ])("%j returns its note alone at the default threshold, not the notes stored beside it", async (query, note) => {
    const results = await search(query);
    expect(results.map((r) => r.content)).toEqual([note]);
    expect(results[0].score).toBeGreaterThan(0.99);
  });

  it("a note sharing only a common word with the question, not the word that says what is asked, stays under 0.5", async () => {
    expect(await search("what is my favourite movie?")).toEqual([]);
    const restaurant = (await search("what is my favourite movie?", 0)).find((r) => r.id === id[NOTES[2]])!;
    expect(restaurant.score).toBeLessThan(0.5);
  });

  it.each([
    ["bike repair", "My bicycle has a flat rear tire"],
    ["when is my dental appointment?", "Booked the dentist for March 3rd"],
  ])("a reworded question %j, sharing no word with any note, returns the note that stands out by meaning, alone", async (query, note) => {
    expect((await search(query)).map((r) => r.content)).toEqual([note]);
  });

  it.each(["what's the capital of France?", "how do I cook rice?", "who owns a dog?"])("a question no note answers, sharing no word with any, returns nothing: %j", async (query) => {
    expect(await search(query)).toEqual([]);
  });

  it.each([
    ["emoji only", "🙂🙂🙂"],
    ["Japanese", "東京の天気はどうですか"],
    ["Russian", "Привет, где живёт моя сестра?"],
    ["Arabic", "أين تعيش أختي؟"],
    ["10,000 characters of one letter", "a".repeat(MAX_QUERY_LENGTH)],
    ["10,000 characters of words", "where does my sister live? ".repeat(400).slice(0, MAX_QUERY_LENGTH)],
    ["punctuation only", "?!?... ---"],
  ])("a query of %s gets results with finite scores in [0, 1], best first", async (_, query) => {
    for (const mode of ["hybrid", "keyword", "semantic"] as const) {
      const { results } = await searchMemories(ctx(), { query, userId: "u", threshold: 0, mode });
      for (const r of results) {
        expect(Number.isFinite(r.score)).toBe(true);
        expect(r.score).toBeGreaterThanOrEqual(0);
        expect(r.score).toBeLessThanOrEqual(1);
      }
      expect(results.map((r) => r.score)).toEqual([...results.map((r) => r.score)].sort((a, b) => b - a));
    }
  });

  it.each([
    ["empty", ""],
    ["whitespace only", " \t\n "],
    ["longer than 10,000 characters", "a".repeat(MAX_QUERY_LENGTH + 1)],
  ])("a query that is %s is refused with VALIDATION_ERROR", async (_, query) => {
    expect(await codeOf(searchMemories(ctx(), { query, userId: "u" }))).toBe("VALIDATION_ERROR");
  });
});

/**
 * A question that names someone the user has notes about asks about them: a note of the same kind
 * about someone else doesn't answer it, however close the model finds the two (core/ranking.ts
 * hybridScore, missingName). Real model.
 */
describe("a note about someone else, for a question that names someone (real model)", () => {
  const ctx = useModelStore("mm-names-");
  const notes = [
    "Randi's phone number 913 44 208",
    "Neighbour Arne lives in the yellow house, he has the spare key",
    "The greenhouse door hinge is rusted, ask Arne to look at it",
    "Sigrid lives in Bergen now, new address Nygårdsgaten 12",
  ];
  const search = async (query: string, threshold = 0.5) => (await searchMemories(ctx(), { query, userId: "v", threshold })).results;

  beforeAll(async () => {
    await addMemoriesFromLines(ctx(), notes.map((content) => JSON.stringify({ content, userId: "v" })), {});
  });

  it("another person's phone number stays under 0.5 when the user has notes about the person asked for", async () => {
    expect(await search("what's Arne's phone number?")).toEqual([]);
    for (const query of ["what's Arne's phone number?", "what is Sigrid's phone number?"]) {
      const randi = (await search(query, 0)).find((r) => r.content === notes[0])!;
      expect(randi.score).toBeLessThan(0.5);
    }
  });

  it("the person's own note still passes", async () => {
    const own = await search("what's Randi's phone number?");
    expect(own.map((r) => r.content)).toEqual([notes[0]]);
    expect(own[0].score).toBeGreaterThan(0.99);
  });

  it("names are the capitalised words before a possessive's \"'s\"", () => {
    expect([...namesOf("what's Arne's phone number?")]).toEqual([stemWord("Arne")]);
    expect([...namesOf("  Jens Bauer’s email")]).toEqual([stemWord("Jens"), stemWord("Bauer")]);
    expect([...namesOf("when is Mom's follow-up?")]).toEqual([stemWord("Mom")]);
    // Names that only set the scene are not asked about.
    expect([...namesOf("what's my flight to Lisbon?")]).toEqual([]);
    expect([...namesOf("is my iPhone's screen insured?")]).toEqual([]);
  });
});

/**
 * A question that asks for a kind of value (a time, a date, an amount, a number, a phone number,
 * an email; core/answer-kind.ts) isn't answered by a note that holds none, however many of its
 * words the note shares (core/ranking.ts hybridScore, lacksKind). Real model.
 */
describe("a note without the kind of value the question asks for (real model)", () => {
  const ctx = useModelStore("mm-kinds-");
  const notes = [
    "User has a rescue kelpie named Biscuit",
    "Vendor contact at MapTiles: Jens Bauer, jens@maptiles.de",
    "Abena graduates July 8 in Kumasi, need flights!!",
    "Backed up the laptop to the external drive",
    "The greenhouse door hinge is rusted",
  ];
  const search = async (query: string, threshold = 0.5, userId = "k") => (await searchMemories(ctx(), { query, userId, threshold })).results;

  beforeAll(async () => {
    await addMemoriesFromLines(ctx(), notes.map((content) => JSON.stringify({ content, userId: "k" })), {});
    // The same words as turns of one conversation: a turn's value may be in the next turn.
    const turns = ["Sam: we adopted a rescue kelpie, her name is Biscuit", "Kim: aww so cute", "Sam: she sleeps all day"];
    await addMemoriesFromLines(ctx(), turns.map((content) => JSON.stringify({ content, userId: "chat", metadata: { sessionId: "s1" } })), {});
  });

  it.each([
    ["how old is Biscuit?", notes[0]],
    ["Jens Bauer's phone number", notes[1]],
    ["what time is my flight to Kumasi?", notes[2]],
  ])("%j returns nothing: the note sharing its words holds no such value", async (query, note) => {
    expect(await search(query)).toEqual([]);
    const hit = (await search(query, 0)).find((r) => r.content === note)!;
    expect(hit.score).toBeLessThan(0.5);
  });

  it.each([
    ["what's Jens Bauer's email?", notes[1]],
    ["when does Abena graduate?", notes[2]],
    // A past event's time is often the note's own: a log line answers "when did…" by when it was written.
    ["when did I last back up my laptop?", notes[3]],
    ["what's Biscuit?", notes[0]],
  ])("%j still returns its note", async (query, note) => {
    expect((await search(query)).map((r) => r.content)).toEqual([note]);
  });

  it("a turn of a conversation is not held to it", async () => {
    expect((await search("how old is Biscuit?", 0.5, "chat")).map((r) => r.content)).toContain("Sam: we adopted a rescue kelpie, her name is Biscuit");
  });
});
