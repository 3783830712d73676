/**
 * The full-text index's own analysis of plain ASCII text, done in JavaScript: which index term a
 * word becomes, and which terms a memory's content holds. It lets one full-text query for all of a
 * search's words say which memory holds which word (MemoryReads.memoriesWithWords), where asking
 * the index once per word cost a hybrid search most of its time (docs/performance.md, 8 December).
 *
 * The index (storage/indexes.ts: LanceDB's `simple` tokenizer, English, stemmed, stop words
 * removed, lower-cased, ASCII-folded) turns text into terms in this order:
 *   1. tokens: the runs of characters Rust's `char::is_alphanumeric` accepts;
 *   2. tokens of 40 bytes or more are dropped;
 *   3. lower-cased;
 *   4. stemmed by Snowball's English stemmer (Porter2, rust-stemmers);
 *   5. dropped when the stem is one of the English stop words (STOP_STEMS);
 *   6. ASCII-folded.
 * Only the ASCII case is reproduced here: a token of the letters a–z, A–Z and the digits, between
 * characters that are surely not alphanumeric to Rust (ASCII punctuation and spaces, Unicode
 * punctuation, spaces and symbols). Its term is `porter2(lower-cased)`, or none (stop words, long
 * tokens). Anything else (an accented letter, another script, a combining mark) is left to the
 * index: `contentTerms` says the content isn't fully known, and `indexTerm` answers undefined for
 * such a word, and the caller asks the index. test/storage/fts-terms.test.ts checks, against a real
 * index, that the words of an English word list, generated words built on every suffix the stemmer
 * knows, and words with digits are grouped into exactly the terms the index makes of them.
 */

const VOWELS = new Set("aeiouy");
const DOUBLES = new Set(["bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt"]);
const LI_ENDINGS = new Set("cdeghkmnrt");

/** Whole words Snowball's English stemmer maps by a table (its `exception1`). A Map: "constructor" is no exception. */
const EXCEPTIONS = new Map(Object.entries({
  skis: "ski",
  skies: "sky",
  dying: "die",
  lying: "lie",
  tying: "tie",
  idly: "idl",
  gently: "gentl",
  ugly: "ugli",
  early: "earli",
  only: "onli",
  singly: "singl",
  sky: "sky",
  news: "news",
  howe: "howe",
  atlas: "atlas",
  cosmos: "cosmos",
  bias: "bias",
  andes: "andes",
}));
/** Words left as they are after step 1a (`exception2`). */
const INVARIANT_AFTER_1A = new Set(["inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed"]);

const STEP_1A = ["sses", "ied", "ies", "us", "ss", "s"];
const STEP_1B = ["eedly", "ingly", "edly", "eed", "ing", "ed"];
const STEP_2: [string, string][] = [
  ["ization", "ize"], ["ational", "ate"], ["fulness", "ful"], ["ousness", "ous"], ["iveness", "ive"],
  ["tional", "tion"], ["biliti", "ble"], ["lessli", "less"], ["entli", "ent"], ["ation", "ate"],
  ["alism", "al"], ["aliti", "al"], ["ousli", "ous"], ["iviti", "ive"], ["fulli", "ful"],
  ["enci", "ence"], ["anci", "ance"], ["abli", "able"], ["izer", "ize"], ["ator", "ate"],
  ["alli", "al"], ["bli", "ble"], ["ogi", "og"], ["li", ""],
];
const STEP_3: [string, string][] = [
  ["ational", "ate"], ["tional", "tion"], ["alize", "al"], ["icate", "ic"], ["iciti", "ic"],
  ["ative", ""], ["ical", "ic"], ["ness", ""], ["ful", ""],
];
const STEP_4 = ["ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti", "ous", "ive", "ize", "ion", "al", "er", "ic"];

/** The longest of `suffixes` that `w` ends with (Snowball's `among`: the longest match decides). */
function longest(w: string, suffixes: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const s of suffixes) if ((!best || s.length > best.length) && w.endsWith(s)) best = s;
  return best;
}

const STEP_2_SUFFIXES = STEP_2.map(([suffix]) => suffix);
const STEP_3_SUFFIXES = STEP_3.map(([suffix]) => suffix);
const STEP_2_MAP = new Map(STEP_2);
const STEP_3_MAP = new Map(STEP_3);

const isVowel = (c: string | undefined) => c !== undefined && VOWELS.has(c);

/**
 * Snowball's English (Porter2) stemmer, as its english.sbl defines it (the version rust-stemmers
 * 1.2 was generated from), for a lower-cased word of a–z and 0–9. `Y` marks a y that is a
 * consonant; digits are consonants.
 */
export function porter2(word: string): string {
  if (word.length < 3) return word;
  const exception = EXCEPTIONS.get(word);
  if (exception !== undefined) return exception;

  // Prelude: an initial y, and a y after a vowel, are consonants (Y).
  const chars = [...word];
  if (chars[0] === "y") chars[0] = "Y";
  for (let i = 0; i + 1 < chars.length; i++) if (isVowel(chars[i]) && chars[i + 1] === "y") chars[i + 1] = "Y";
  let w = chars.join("");

  // Regions: R1 after the first non-vowel that follows a vowel (or after gener-, commun-, arsen-), R2 the same within R1.
  const after = (from: number) => {
    let i = from;
    while (i < w.length && !isVowel(w[i])) i++;
    while (i < w.length && isVowel(w[i])) i++;
    return i < w.length ? i + 1 : w.length;
  };
  const prefix = ["gener", "commun", "arsen"].find((p) => w.startsWith(p));
  let p1: number;
  let p2: number;
  if (prefix) {
    p1 = prefix.length;
    p2 = after(p1);
  } else {
    p1 = after(0);
    p2 = p1 < w.length ? after(p1) : w.length;
  }
  const inR1 = (start: number) => start >= p1;
  const inR2 = (start: number) => start >= p2;
  /** A short syllable ends at `end`: non-vowel, vowel, non-vowel other than w, x, Y; or the word starts with vowel, non-vowel. */
  const shortSyllable = (end: number) => {
    const [a, b, c] = [w[end - 3], w[end - 2], w[end - 1]];
    if (end >= 3 && !isVowel(a) && isVowel(b) && !isVowel(c) && c !== "w" && c !== "x" && c !== "Y") return true;
    return end === 2 && isVowel(b) && !isVowel(c);
  };

  // Step 1a.
  const s1a = longest(w, STEP_1A);
  if (s1a === "sses") w = w.slice(0, -2);
  else if (s1a === "ied" || s1a === "ies") w = w.slice(0, -3) + (w.length - 3 > 1 ? "i" : "ie");
  else if (s1a === "s") {
    // Deleted when a vowel comes before the letter before the s (gaps → gap, gas stays).
    const before = w.slice(0, -2);
    if (w.length >= 2 && [...before].some(isVowel)) w = w.slice(0, -1);
  }
  if (INVARIANT_AFTER_1A.has(w)) return w.replace(/Y/g, "y");

  // Step 1b.
  const s1b = longest(w, STEP_1B);
  if (s1b === "eed" || s1b === "eedly") {
    if (inR1(w.length - s1b.length)) w = w.slice(0, -s1b.length) + "ee";
  } else if (s1b !== undefined) {
    const stem = w.slice(0, -s1b.length);
    if ([...stem].some(isVowel)) {
      w = stem;
      if (w.endsWith("at") || w.endsWith("bl") || w.endsWith("iz")) w += "e";
      else if (DOUBLES.has(w.slice(-2))) w = w.slice(0, -1);
      else if (w.length === p1 && shortSyllable(w.length)) w += "e";
    }
  }

  // Step 1c: a final y or Y after a non-vowel that isn't the first letter becomes i.
  if ((w.endsWith("y") || w.endsWith("Y")) && w.length > 2 && !isVowel(w[w.length - 2])) w = w.slice(0, -1) + "i";

  // Step 2.
  const s2 = longest(w, STEP_2_SUFFIXES);
  if (s2 && inR1(w.length - s2.length)) {
    const stem = w.slice(0, -s2.length);
    if (s2 === "ogi") {
      if (stem.endsWith("l")) w = stem + "og";
    } else if (s2 === "li") {
      if (LI_ENDINGS.has(stem[stem.length - 1] ?? "")) w = stem;
    } else w = stem + STEP_2_MAP.get(s2)!;
  }

  // Step 3.
  const s3 = longest(w, STEP_3_SUFFIXES);
  if (s3 && inR1(w.length - s3.length)) {
    if (s3 !== "ative" || inR2(w.length - s3.length)) w = w.slice(0, -s3.length) + STEP_3_MAP.get(s3)!;
  }

  // Step 4.
  const s4 = longest(w, STEP_4);
  if (s4 && inR2(w.length - s4.length)) {
    const stem = w.slice(0, -s4.length);
    if (s4 !== "ion") w = stem;
    else if (stem.endsWith("s") || stem.endsWith("t")) w = stem;
  }

  // Step 5.
  if (w.endsWith("e")) {
    const start = w.length - 1;
    if (inR2(start) || (inR1(start) && !shortSyllable(start))) w = w.slice(0, -1);
  } else if (w.endsWith("l")) {
    const start = w.length - 1;
    if (inR2(start) && w[start - 1] === "l") w = w.slice(0, -1);
  }

  return w.replace(/Y/g, "y");
}

/**
 * The stems the index drops as stop words: its English list (NLTK's), compared after stemming.
 * A stem here never matches anything, in a query or in a memory.
 */
export const STOP_STEMS: ReadonlySet<string> = new Set(
  (
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself it " +
    "its itself they them their theirs themselves what which who whom this that these those am is are was were be been " +
    "being have has had having do does did doing a an the and but if or because as until while of at by for with about " +
    "against between into through during before after above below to from up down in out on off over under again further " +
    "then once here there when where why how all any both each few more most other some such no nor not only own same so " +
    "than too very s t can will just don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma " +
    "mightn mustn needn shan shouldn wasn weren won wouldn"
  ).split(" "),
);

/** Tokens of this many bytes or more are left out of the index (LanceDB's default max token length). */
const MAX_TOKEN_BYTES = 40;

/** Most tokens, and most texts, whose terms are remembered (each table is emptied when full). */
const REMEMBERED = 20_000;
const tokenTerms = new Map<string, string | null>();

/** The index's term for a plain token (ASCII letters and digits), or null when the index drops it. */
function termOf(token: string): string | null {
  let term = tokenTerms.get(token);
  if (term === undefined) {
    const stem = token.length >= MAX_TOKEN_BYTES ? null : porter2(token.toLowerCase());
    term = stem === null || STOP_STEMS.has(stem) ? null : stem;
    if (tokenTerms.size >= REMEMBERED) tokenTerms.clear();
    tokenTerms.set(token, term);
  }
  return term;
}

/**
 * The index term a query word becomes: a string, null when the index drops it (a stop word: no
 * memory matches it), or undefined when the word isn't plain ASCII and only the index can say.
 */
export function indexTerm(word: string): string | null | undefined {
  return /^[A-Za-z0-9]+$/.test(word) ? termOf(word) : undefined;
}

/**
 * Characters that are surely not alphanumeric to Rust (so they end a token, as ASCII punctuation
 * does): Unicode punctuation, spaces, controls, format characters, variation selectors, the keycap
 * mark, and symbols that aren't letters (not the enclosed alphanumerics, some of which are).
 */
const SEPARATOR = /^[\p{P}\p{Z}\p{S}\p{Cc}\p{Cf}\uFE00-\uFE0F\u20E3]$/u;
const NOT_SEPARATOR = /[\p{Alphabetic}\p{N}\u2460-\u24FF\u{1F100}-\u{1F1FF}]/u;

/** Whether a non-ASCII character surely ends a token. */
function separates(c: string): boolean {
  return SEPARATOR.test(c) && !NOT_SEPARATOR.test(c);
}

/**
 * The index terms a text holds that can be read here: those of its plain tokens (ASCII letters
 * and digits between separators). `complete` is false when the text has other characters (an
 * accented letter, another script): then the index may hold terms of them that aren't listed, and
 * a plain-looking run beside such a character isn't a token of its own. Remembered by text: a
 * search reads the same memories' content again and again.
 */
export function contentTerms(text: string): { terms: Set<string>; complete: boolean } {
  let known = textTerms.get(text);
  if (!known) {
    known = /^[\x00-\x7F]*$/.test(text) ? asciiTerms(text) : mixedTerms(text);
    if (textTerms.size >= REMEMBERED) textTerms.clear();
    textTerms.set(text, known);
  }
  return known;
}

const textTerms = new Map<string, { terms: Set<string>; complete: boolean }>();

/** An ASCII text's terms: every run of letters and digits is a token. */
function asciiTerms(text: string): { terms: Set<string>; complete: boolean } {
  const terms = new Set<string>();
  for (const [token] of text.matchAll(/[A-Za-z0-9]+/g)) {
    const term = termOf(token);
    if (term !== null) terms.add(term);
  }
  return { terms, complete: true };
}

function mixedTerms(text: string): { terms: Set<string>; complete: boolean } {
  const terms = new Set<string>();
  let complete = true;
  // Runs of ASCII letters and digits, and the other characters one by one.
  for (const m of text.matchAll(/[A-Za-z0-9]+|[^\x00-\x7F]/gu)) {
    const run = m[0];
    if (run.codePointAt(0)! > 0x7f) {
      if (!separates(run)) complete = false;
      continue;
    }
    const start = m.index!;
    const end = start + run.length;
    // A plain run is a token only between separators (or the text's ends).
    if (!boundary(text, start - 1, -1) || !boundary(text, end, 1)) continue;
    const term = termOf(run);
    if (term !== null) terms.add(term);
  }
  return { terms, complete };
}

/** Whether the character at `i` (or before/after it in a surrogate pair, by `direction`) ends a token: ASCII non-alphanumerics, separators, the text's ends. */
function boundary(text: string, i: number, direction: 1 | -1): boolean {
  if (i < 0 || i >= text.length) return true;
  const code = text.charCodeAt(i);
  if (code <= 0x7f) return !/[A-Za-z0-9]/.test(text[i]);
  const at = direction === 1 ? i : code >= 0xdc00 && code <= 0xdfff && i > 0 ? i - 1 : i;
  const c = String.fromCodePoint(text.codePointAt(at)!);
  return separates(c);
}
