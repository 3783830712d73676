/**
 * The hybrid scorer (core/scorer.ts) and the properties a search a person can trust must have,
 * checked on generated stores with the real model:
 * - locality: notes that share no word with a query and are far from it by meaning change neither
 *   its first result nor any other note's score;
 * - dominance: a note with a higher cosine and more keyword evidence than another scores higher;
 * - no transfer: a note's score is the same whether or not other notes say "new", "changed",
 *   "just" or "now";
 * and agent phrasing, the newcomer's three notes, bad queries and `explain`.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { addMemoriesFromLines, searchCandidates, searchMemories } from "../../src/core/memories.js";
import { queryTerms } from "../../src/core/keyword.js";
import { keywordQuery } from "../../src/core/ranking.js";
import { FALLBACK, asAskedByUser, explain, keywordShare, paramsFor, score, stemsOfText, turnEvidence, turnLength, type Signals } from "../../src/core/scorer.js";
import { embedderId, scoreOf, signalsOf } from "../../src/core/search.js";
import { useModelStore } from "../helpers/model-store.js";
// @ts-expect-error: a script's module, without types
import { rng } from "../../scripts/suite-kit.mjs";

const OWNERS = ["My", "Our", "Mum's", "Lena's", "The neighbour's", "Tom's"];
const THINGS = ["passport", "dentist", "bike", "wifi password", "locker code", "car insurance", "library card", "flight", "gym membership", "phone number", "blood test", "piano lesson", "boiler service", "allotment", "vet appointment"];
const TAILS = ["is on Friday at 10:40", "expires in August 2028", "is 07700 900123", "moved to the green folder", "costs 45 pounds a month", "needs renewing before spring", "is with Dr Okafor", "is tangerine-42", "starts at 18:00", "was sorted last week"];
const CHANGE = ["New", "Just changed the", "Changed the", "Finally sorted the", "Now the"];
/** Notes about things no query here asks about, in words none of them uses. */
const FAR = ["Sourdough starter fed with rye flour", "Tomatoes ripening slowly on the balcony", "Jigsaw of the Alps finished, 1000 pieces", "Knitting pattern: cable scarf, 4mm needles", "Crossword solved without help", "Origami cranes strung over the cot"];

function notes(seed: number, n: number): string[] {
  const r = rng(seed); // a fixed seed: every run builds the same stores
  return Array.from({ length: n }, (_, i) => (i % 4 === 3 ? `${r.pick(CHANGE)} ${r.pick(THINGS)} ${r.pick(TAILS)}` : `${r.pick(OWNERS)} ${r.pick(THINGS)} ${r.pick(TAILS)}`));
}
const QUERIES = ["when does my passport expire?", "what's the wifi password?", "who is my dentist?", "what's the locker code?", "when is the vet appointment?", "how much is the gym membership?"];

describe("the scorer", () => {
  const p = paramsFor("use-lite:universal-sentence-encoder-lite");

  it("is fitted for the default model, and falls back to conservative constants for another", () => {
    expect(p.model).toBe("use-lite:universal-sentence-encoder-lite");
    expect(paramsFor("openai:text-embedding-3-small")).toEqual(FALLBACK);
    // The fallback passes a note sharing no word only from a cosine of 0.8.
    expect(score({ cosine: 0.79, keyword: 0, turn: 0 }, FALLBACK)).toBeLessThan(0.5);
    expect(score({ cosine: 0.81, keyword: 0, turn: 0 }, FALLBACK)).toBeGreaterThan(0.5);
  });

  it("never lowers a score for more evidence: every weight is at least 0", () => {
    for (const w of [p.notes, p.turns, FALLBACK.notes]) for (const k of ["cosine", "keyword", "keyword2", "every", "speaker", "length"] as const) expect(w[k]).toBeGreaterThanOrEqual(0);
  });

  it("explains a score: the contributions add up to the logit the score is σ of", () => {
    for (const s of [
      { cosine: 0.71, keyword: 1, turn: 0 },
      { cosine: 0.2, keyword: 0.4, turn: 1 },
      { cosine: 0.3, keyword: 0.5, turn: 1, speaker: 1, length: 0.6 },
      { cosine: 0, keyword: 0, turn: 0 },
    ] satisfies Signals[]) {
      const e = explain(s, p);
      const logit = e.contributions.bias + e.contributions.cosine + e.contributions.keyword + (e.contributions.speaker ?? 0) + (e.contributions.length ?? 0);
      expect(e.score).toBeCloseTo(1 / (1 + Math.exp(-logit)), 12);
      expect(e.signals).toEqual(s);
    }
  });

  it("keeps every score finite and in 0..1, whatever the signals", () => {
    for (const s of [{ cosine: NaN, keyword: 0, turn: 0 }, { cosine: 1e9, keyword: 1e9, turn: 0 }, { cosine: -5, keyword: -5, turn: 1 }]) {
      const v = score(s, p);
      expect(Number.isFinite(v) && v >= 0 && v <= 1).toBe(true);
    }
  });

  it.each([
    ["where does the user live?", "where do I live?"],
    ["what is the user's wifi password?", "what is my wifi password?"],
    ["does the user have any pets?", "do I have any pets?"],
    ["when is the user's dentist appointment?", "when is my dentist appointment?"],
    ["what does the user do for work?", "what do I do for work?"],
    ["who is the user married to?", "who am I married to?"],
    ["remind the user about the bins", "remind me about the bins"],
    ["where do I live?", "where do I live?"],
  ])("reads an agent's %j as the user's own %j", (agent, person) => {
    expect(asAskedByUser(agent)).toBe(person);
  });

  it("reads a turn's speaker as who spoke, not as what was said", () => {
    const terms = queryTerms(keywordQuery("what did Caroline research?"));
    const holdsIn = (content: string) => (i: number) => stemsOfText(content).has(terms[i].stem);
    // Every turn of Caroline's holds her name: it no longer counts as half the query's words.
    const chat = "Caroline: hey! how was your weekend?";
    expect(keywordShare(terms, holdsIn(chat))).toBeGreaterThan(0.3);
    expect(turnEvidence(terms, holdsIn(chat), chat)).toEqual({ keyword: 0, speaker: 1 });
    const answer = "Caroline: I've been researching adoption agencies all week";
    expect(turnEvidence(terms, holdsIn(answer), answer)).toEqual({ keyword: 1, speaker: 1 });
    // Another speaker who mentions her: her name is what was said, so it stays keyword evidence.
    const other = "Melanie: Caroline told me about it";
    expect(turnEvidence(terms, holdsIn(other), other)).toEqual({ keyword: keywordShare(terms, holdsIn(other)), speaker: 0 });
    // Never above the plain share: search bounds an unread candidate's score by it.
    for (const c of [chat, answer, other]) expect(turnEvidence(terms, holdsIn(c), c).keyword).toBeLessThanOrEqual(keywordShare(terms, holdsIn(c)) + 1e-12);
    // The speaker's name counts for the turn, fitted: a turn of the named speaker scores higher.
    const base = { cosine: 0.4, keyword: 0.5, turn: 1 };
    expect(score({ ...base, speaker: 1 }, p)).toBeGreaterThan(score({ ...base, speaker: 0 }, p));
  });

  it("reads a turn's length: ln(1 + words) / ln(81), 1 from 80 words on, and a longer turn scores higher", () => {
    expect(turnLength("")).toBe(0);
    expect(turnLength("Leo: no way!! what's next?")).toBeCloseTo(Math.log(7) / Math.log(81), 12); // leo no way what s next
    expect(turnLength("word ".repeat(80))).toBe(1);
    expect(turnLength("word ".repeat(5000))).toBe(1);
    const base = { cosine: 0.4, keyword: 0.5, turn: 1, speaker: 0 };
    expect(score({ ...base, length: 0.8 }, p)).toBeGreaterThan(score({ ...base, length: 0.3 }, p));
    // A note's length is no signal: its score is the same with or without one.
    expect(score({ cosine: 0.4, keyword: 0.5, turn: 0, length: 1 }, p)).toBe(score({ cosine: 0.4, keyword: 0.5, turn: 0 }, p));
  });

  it("weighs a word by English alone: the same in every store", () => {
    const terms = queryTerms(keywordQuery("when is the dentist appointment?"));
    expect(terms.map((t) => t.stem)).toEqual(["dentist", "appoint"]);
    expect([...stemsOfText("Booked the dentist")]).toContain("dentist");
  });
});

describe("search properties on generated stores (real model)", () => {
  const ctx = useModelStore("mm-scorer-");
  const SEEDS = [11, 23, 47];

  beforeAll(async () => {
    for (const seed of SEEDS) await addMemoriesFromLines(ctx(), notes(seed, 24).map((content) => JSON.stringify({ content, userId: `gen-${seed}` })));
  });

  const all = async (query: string, userId: string) => new Map((await searchMemories(ctx(), { query, userId, threshold: 0, limit: 100 })).results.map((h) => [h.content + h.id, h]));

  it("locality: far notes sharing no word with the query move no score and not the first result", async () => {
    for (const seed of SEEDS) {
      const userId = `gen-${seed}`;
      const before = new Map<string, Awaited<ReturnType<typeof all>>>();
      for (const q of QUERIES) before.set(q, await all(q, userId));
      await addMemoriesFromLines(ctx(), FAR.map((content) => JSON.stringify({ content, userId })));
      for (const q of QUERIES) {
        const qStems = new Set(queryTerms(keywordQuery(q)).map((t) => t.stem));
        for (const far of FAR) expect([...stemsOfText(far)].filter((s) => qStems.has(s)), far).toEqual([]);
        const after = await all(q, userId);
        const old = before.get(q)!;
        expect([...after.keys()][0], q).toBe([...old.keys()][0]);
        for (const [k, h] of old) expect(Math.abs(after.get(k)!.score - h.score), `${q} / ${k}`).toBeLessThanOrEqual(0.01);
        // And the far notes are far: none of them passes the default threshold.
        for (const [k, h] of after) if (!old.has(k)) expect(h.score, k).toBeLessThan(0.5);
      }
    }
  });

  it("dominance: a note with a higher cosine and more keyword evidence than another scores higher", async () => {
    const params = paramsFor(embedderId(ctx()));
    let pairs = 0;
    for (const seed of SEEDS) {
      for (const q of QUERIES) {
        const cs = await searchCandidates(ctx(), { query: q, userId: `gen-${seed}`, threshold: 0, limit: 100 });
        for (const a of cs)
          for (const b of cs) {
            // The signals as the scorer takes them (a cosine clamped to 0..1).
            const [sa, sb] = [signalsOf(a), signalsOf(b)];
            const [ca, cb, ka, kb] = [sa.cosine, sb.cosine, sa.keyword, sb.keyword];
            if (!(ca >= cb && ka >= kb && (ca > cb || ka > kb)) || !!a.turn !== !!b.turn) continue;
            pairs++;
            expect(scoreOf("hybrid", a, params).score, `${q}: ${a.record.content} over ${b.record.content}`).toBeGreaterThan(scoreOf("hybrid", b, params).score);
          }
      }
    }
    expect(pairs).toBeGreaterThan(1000);
  });

  it("no transfer: a note's score is the same whether or not other notes say new, changed, just or now", async () => {
    const base = ["My passport expires in August 2028", "The home wifi password is tangerine-42", "Lena's dentist is Dr Okafor on Friday at 10:40"];
    const changes = ["My new phone number is 07700 900123", "Just changed my bike tyres to Schwalbe Marathons", "Changed the locker code to 4471", "New shower head installed today", "Now the gym opens at 6"];
    await addMemoriesFromLines(ctx(), base.map((content) => JSON.stringify({ content, userId: "plain" })));
    await addMemoriesFromLines(ctx(), [...base, ...changes].map((content) => JSON.stringify({ content, userId: "changed" })));
    for (const q of ["when does my passport expire?", "what's the wifi password?", "who is Lena's dentist?", "what's my passport number?"]) {
      const plain = await searchMemories(ctx(), { query: q, userId: "plain", threshold: 0, limit: 20 });
      const changed = await searchMemories(ctx(), { query: q, userId: "changed", threshold: 0, limit: 20 });
      for (const h of plain.results) expect(changed.results.find((c) => c.content === h.content)!.score, `${q} / ${h.content}`).toBe(h.score);
      if (q !== "what's my passport number?") expect(changed.results[0].content, q).toBe(plain.results[0].content);
    }
  });

  it("the newcomer's three notes: each question returns its own note first, above 0.5, and nothing else above 0.5", async () => {
    await addMemoriesFromLines(ctx(), ["My passport expires in August 2028", "The home wifi password is tangerine-42", "My new phone number is 07700 900123"].map((content) => JSON.stringify({ content, userId: "newcomer" })));
    for (const [q, note] of [
      ["when does my passport expire?", "My passport expires in August 2028"],
      ["what's the wifi password?", "The home wifi password is tangerine-42"],
      ["what's my phone number?", "My new phone number is 07700 900123"],
    ]) {
      const { results } = await searchMemories(ctx(), { query: q, userId: "newcomer" });
      expect(results.map((h) => h.content), q).toEqual([note]);
    }
  });

  it("an agent's question ranks and scores as the user's own", async () => {
    await addMemoriesFromLines(ctx(), ["I live in a flat in Leeds, near Hyde Park", "My wifi password is otter-42", "We have two cats, Miso and Pickle"].map((content) => JSON.stringify({ content, userId: "agent" })));
    for (const [agent, person] of [
      ["where does the user live?", "where do I live?"],
      ["what is the user's wifi password?", "what is my wifi password?"],
      ["does the user have any pets?", "do I have any pets?"],
    ]) {
      const a = await searchMemories(ctx(), { query: agent, userId: "agent", threshold: 0 });
      const b = await searchMemories(ctx(), { query: person, userId: "agent", threshold: 0 });
      expect(a.results.map((h) => [h.content, h.score])).toEqual(b.results.map((h) => [h.content, h.score]));
    }
  });

  it("explain: each hit carries its signals, and its score is the explained one", async () => {
    const { results } = await searchMemories(ctx(), { query: "when does my passport expire?", userId: "newcomer", threshold: 0, explain: true });
    expect(results.length).toBe(3);
    for (const h of results) {
      const e = h.explanation!;
      expect(e.mode).toBe("hybrid");
      if (e.mode !== "hybrid") continue;
      expect(e.score).toBe(h.score);
      expect(e.model).toBe("use-lite:universal-sentence-encoder-lite");
      expect(e.signals.keyword).toBeGreaterThanOrEqual(0);
    }
    expect(results[0].explanation!.mode === "hybrid" && results[0].explanation!.signals.keyword).toBe(1);
    const plain = await searchMemories(ctx(), { query: "when does my passport expire?", userId: "newcomer", threshold: 0 });
    expect(plain.results.every((h) => h.explanation === undefined)).toBe(true);
    const semantic = await searchMemories(ctx(), { query: "passport", userId: "newcomer", threshold: 0, mode: "semantic", explain: true });
    expect(semantic.results[0].explanation).toEqual({ mode: "semantic", score: semantic.results[0].score, signals: { cosine: semantic.results[0].score } });
  });

  it("a chat's speaker: her turns are hers, and the one that answers comes first", async () => {
    const turns = [
      "Caroline: hey! how was your weekend?",
      "Melanie: busy, painted the fence with the kids",
      "Caroline: I've been researching adoption agencies all week",
      "Melanie: that's huge, how are you feeling?",
      "Caroline: nervous but excited, honestly",
      "Melanie: Caroline told me about the agencies, so proud of her",
    ];
    await addMemoriesFromLines(ctx(), turns.map((content) => JSON.stringify({ content, userId: "chat", metadata: { sessionId: "s1" } })));
    const { results } = await searchMemories(ctx(), { query: "what did Caroline research?", userId: "chat", threshold: 0, explain: true });
    expect(results[0].content).toBe(turns[2]);
    const byContent = new Map(results.map((h) => [h.content, h]));
    const signals = (c: string) => byContent.get(c)!.explanation!.signals as Record<string, number>;
    // Her name says who spoke: in her turns it is the speaker signal, not a keyword.
    expect(signals(turns[0])).toMatchObject({ turn: 1, speaker: 1, keyword: 0 });
    expect(signals(turns[2])).toMatchObject({ turn: 1, speaker: 1, keyword: 1 });
    // Named by someone else, it is what was said: a keyword of Melanie's turn.
    expect(signals(turns[5]).speaker).toBe(0);
    expect(signals(turns[5]).keyword).toBeGreaterThan(0);
    // Her small talk doesn't pass the default threshold on her name alone.
    expect(byContent.get(turns[0])!.score).toBeLessThan(0.5);
    // Each turn's length is its own: the explanation shows it, and the score is the explained one.
    for (const t of turns) expect(signals(t).length).toBe(turnLength(t));
  });

  it.each([["emoji only", "🙂🎉"], ["another script", "где мой паспорт?"], ["10,000 characters", "passport ".repeat(1111).slice(0, 10_000)], ["punctuation", "?!…"]])(
    "a query of %s gets results with finite scores in 0..1, in a store with one note",
    async (_, query) => {
      await addMemoriesFromLines(ctx(), [JSON.stringify({ content: "My passport expires in August 2028", userId: "one" })]);
      const { results } = await searchMemories(ctx(), { query, userId: "one", threshold: 0, explain: true });
      for (const h of results) expect(Number.isFinite(h.score) && h.score >= 0 && h.score <= 1).toBe(true);
    },
  );
});
