import { foldName } from "../schemas/entity.js";
import type { EntityType } from "../schemas/enums.js";
import type { Mention } from "./entities.js";

/** Names longer than this are almost always a mis-tagged clause, not a name. */
export const MAX_MENTION_LENGTH = 80;

type Nlp = typeof import("compromise").default;

/** The parts of compromise's `json({ offset: true, terms: true })` that extraction reads. */
interface TermJson {
  text: string;
  post: string;
  tags: string[];
  offset: { index: number; start: number; length: number };
}
interface MatchJson {
  terms: TermJson[];
}

/** compromise's selections, in tie-break order: on spans of equal length the earlier type wins. */
const SOURCES: ReadonlyArray<{ type: EntityType; select: (doc: ReturnType<Nlp>) => { json(options: object): unknown } }> = [
  { type: "LOCATION", select: (d) => d.places() },
  { type: "ORGANIZATION", select: (d) => d.organizations() },
  { type: "PERSON", select: (d) => d.people() },
];
const TYPE_RANK: Record<string, number> = { LOCATION: 0, ORGANIZATION: 1, PERSON: 2 };

/**
 * Words compromise glues onto the front of a name ("sister Maya", "my friend Tom", "Aunt Linda").
 * Stripped in any case; a mention made only of them ("Mom") is dropped, since it names a role, not
 * someone the graph can tell apart from every other user's mom.
 */
const LEADING_NOISE = new Set(
  (
    "my our your his her their the a an this that dear old little big best late " +
    "mom mum mommy mummy mother mama ma dad daddy father papa pa parent parents " +
    "sister sis brother bro sibling aunt auntie aunty uncle cousin niece nephew " +
    "grandma grandpa granny grandmother grandfather gran nana nan grandad granddad grandson granddaughter " +
    "son daughter kid kids child baby wife husband spouse partner fiance fiancé fiancee fiancée " +
    "boyfriend girlfriend bf gf stepmom stepdad stepmother stepfather stepbrother stepsister " +
    "friend friends pal buddy mate bestie roommate flatmate housemate neighbor neighbour " +
    "colleague coworker co-worker teammate boss manager mentor client landlord landlady " +
    "sister-in-law brother-in-law mother-in-law father-in-law son-in-law daughter-in-law"
  ).split(" "),
);

/** Tags from compromise's lexicon; a lowercase word with none of them is a common word, not a name. */
const KNOWN_NAME_TAGS = new Set(["FirstName", "LastName", "MaleName", "FemaleName", "City", "Country", "Region", "Organization", "SportsTeam"]);

const PRONOUNS = new Set(
  "i me my mine we us our ours you your yours he him his she her hers they them their theirs it its one someone somebody everyone everybody anyone anybody nobody".split(" "),
);

/** Punctuation in a term's trailing text that separates two names ("Edinburgh, Scotland"; "Nike, Adidas"). */
const SEPARATOR = /[,;:()[\]{}"“”„/\\|!?…]|\s[-–—]\s|^[-–—]$/;
const EDGE_JUNK = /^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu;

let loading: Promise<{ nlp: Nlp; loadMs: number }> | undefined;

/**
 * Loads compromise once and caches it. compromise costs a few hundred milliseconds to import, so it
 * is imported on first use and CLI paths that never extract never pay; callers that know they will
 * extract can start the load early, alongside opening the store. Resolves to how long the one real
 * import took (the same number on every call).
 */
export async function preloadExtractor(): Promise<{ loadMs: number }> {
  const { loadMs } = await loadNlp();
  return { loadMs };
}

function loadNlp(): Promise<{ nlp: Nlp; loadMs: number }> {
  // A cached import of a pure, stateless library, not application state: safe to share.
  loading ??= (async () => {
    const started = performance.now();
    const mod = await import("compromise");
    return { nlp: mod.default, loadMs: performance.now() - started };
  })();
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}

/**
 * Finds people, places and organizations in free text without an LLM, using compromise's
 * rule-and-lexicon tagger, and returns them as mentions for `resolveMentions`.
 *
 * Trade-off: fast, offline and deterministic, but it knows only what compromise's lexicon and
 * capitalization rules know: it misses most lowercase names and companies outside its lexicon,
 * and it never guesses at products, events or concepts.
 *
 * Cleaning: leading kinship and role words removed ("my friend Tom" → "Tom", "Aunt Linda" →
 * "Linda"), as are leading and trailing lowercase common words compromise swept in ("the state of
 * California" → "California", "the Jordan office" → "Jordan"); a mention made only of such words
 * ("Mom") is dropped. A leading honorific is dropped when at least two name words remain
 * ("Dr. Priya Raman" → "Priya Raman", how she is usually written elsewhere) and kept when only a
 * surname would remain ("Dr. Smith" stays: a bare "Smith" would merge with every other Smith).
 * Lone honorifics and abbreviations ("Mr.", "St.") and pronouns are dropped, and lists are split at
 * commas ("Edinburgh, Scotland" → two places). Then {@link cleanMentionName}.
 *
 * Results: one mention per folded name and type, in order of first appearance, first spelling
 * kept. When spans overlap the longer one wins ("University of Toronto" over "Toronto"). A name
 * tagged both LOCATION and ORGANIZATION in one text becomes one LOCATION: compromise's place tags
 * come from its gazetteer, while it calls a known place an organization only from neighbouring
 * words ("the Jordan office"); the same order breaks ties between spans of equal length. PERSON and
 * a place or organization with the same name are kept apart ("Jordan" the friend and Jordan the
 * country).
 */
export async function extractMentions(text: string): Promise<Mention[]> {
  if (text.trim() === "") return [];
  const { nlp } = await loadNlp();
  const doc = nlp(text);

  const candidates: Candidate[] = [];
  for (const { type, select } of SOURCES) {
    for (const match of select(doc).json({ offset: true, terms: true }) as MatchJson[]) {
      for (const part of splitAtSeparators(match.terms)) {
        const terms = trimTerms(part, type);
        if (terms === undefined) continue;
        const name = cleanMentionName(joinTerms(terms));
        if (name === undefined) continue;
        candidates.push({ name, type, start: terms[0].offset.index, end: terms[terms.length - 1].offset.index, char: terms[0].offset.start });
      }
    }
  }
  return dedupe(dropOverlaps(candidates));
}

/**
 * The string-level half of the cleaning: trims quotes and punctuation at the ends (keeping the dot
 * of "Jr." or "D.C."), strips a possessive ("Alice's" → "Alice", "James'" → "James"), collapses
 * whitespace, and returns undefined for pronouns, strings without a letter and names longer than
 * {@link MAX_MENTION_LENGTH} characters. Exported so every rule can be tested on its own.
 */
export function cleanMentionName(raw: string): string | undefined {
  let name = raw.replace(/\s+/g, " ").replace(EDGE_JUNK, "");
  name = name.replace(/['’]s$/iu, "").replace(/(?<=s)['’]$/u, "").replace(EDGE_JUNK, "");
  const endedWithDot = /\.["'”’)\]]*\s*$/u.test(raw);
  if (endedWithDot && (/(?:^|\s)(?:\p{L}\.)+\p{L}$/u.test(name) || /\s(?:Jr|Sr|Inc|Ltd|Co|Corp|Bros)$/u.test(name))) name += ".";
  if (name === "" || !/\p{L}/u.test(name)) return undefined;
  if (PRONOUNS.has(name.toLowerCase())) return undefined;
  if ([...name].length > MAX_MENTION_LENGTH) return undefined;
  return name;
}

interface Candidate extends Mention {
  /** First and last term index in the document, for overlap checks. */
  start: number;
  end: number;
  /** Character offset, for ordering by appearance. */
  char: number;
}

function splitAtSeparators(terms: TermJson[]): TermJson[][] {
  const parts: TermJson[][] = [[]];
  terms.forEach((t, i) => {
    parts[parts.length - 1].push(t);
    if (i < terms.length - 1 && SEPARATOR.test(t.post)) parts.push([]);
  });
  return parts.filter((p) => p.length > 0);
}

/** The term-level half of the cleaning (needs compromise's tags); undefined means "not a name". */
function trimTerms(input: TermJson[], type: EntityType): TermJson[] | undefined {
  let terms = input;
  while (terms.length > 0 && isNoise(terms[0], true)) terms = terms.slice(1);
  while (terms.length > 0 && isNoise(terms[terms.length - 1], false)) terms = terms.slice(0, -1);
  if (terms.length === 0) return undefined;
  if (terms.some((t) => t.tags.includes("Pronoun"))) return undefined;

  const honorifics = leadingHonorifics(terms);
  if (honorifics === terms.length) return undefined;
  if (type === "PERSON" && terms.length - honorifics >= 2) terms = terms.slice(honorifics);
  // A lone "St." is what is left when compromise splits "St. Mary's Hospital" apart.
  if (terms.length === 1 && terms[0].tags.includes("Abbreviation") && !terms[0].tags.includes("Acronym")) return undefined;
  return terms;
}

/** The original text of the terms, with the punctuation between them but not around them. */
function joinTerms(terms: TermJson[]): string {
  const last = terms[terms.length - 1];
  const body = terms.map((t, i) => (i < terms.length - 1 ? t.text + t.post : t.text)).join("");
  return last.post.startsWith(".") ? `${body}.` : body;
}

function bare(t: TermJson): string {
  return t.text.replace(EDGE_JUNK, "");
}

/**
 * Kinship and role words, anywhere at the front; and lowercase words compromise's lexicon doesn't
 * know as names, at either end. compromise keeps known lowercase names ("paris", "tom"), but
 * "downtown" or "office" are common nouns it swept in from context.
 */
function isNoise(t: TermJson, leading: boolean): boolean {
  const word = bare(t);
  if (leading && LEADING_NOISE.has(word.toLowerCase())) return true;
  return !/\p{Lu}/u.test(word) && !t.tags.some((tag) => KNOWN_NAME_TAGS.has(tag));
}

function leadingHonorifics(terms: TermJson[]): number {
  let n = 0;
  while (n < terms.length && terms[n].tags.includes("Honorific")) n++;
  return n;
}

function dropOverlaps(candidates: Candidate[]): Candidate[] {
  const ranked = [...candidates].sort((a, b) => b.end - b.start - (a.end - a.start) || TYPE_RANK[a.type] - TYPE_RANK[b.type] || a.start - b.start);
  const kept: Candidate[] = [];
  for (const c of ranked) {
    if (!kept.some((k) => c.start <= k.end && k.start <= c.end)) kept.push(c);
  }
  return kept.sort((a, b) => a.char - b.char || a.start - b.start);
}

function dedupe(candidates: Candidate[]): Mention[] {
  const placeKeys = new Set(candidates.filter((c) => c.type === "LOCATION").map((c) => foldName(c.name)));
  const seen = new Set<string>();
  const out: Mention[] = [];
  for (const c of candidates) {
    const type: EntityType = c.type === "ORGANIZATION" && placeKeys.has(foldName(c.name)) ? "LOCATION" : c.type;
    const key = `${type}\u0000${foldName(c.name)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ name: c.name, type });
  }
  return out;
}
