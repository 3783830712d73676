/**
 * A sentence's frame: what it is about (its skeleton: the words that are neither values, nor
 * function words, nor words of change), and the values it gives (numbers, times, dates, prices,
 * emails, names). Two memories of one user whose frames say the same thing with another value
 * ("The daycare fee is 800 a month" / "The daycare fee went up to 950 a month"; "My favourite
 * podcast is Radiolab" / "My favourite podcast is now Hard Fork") are one fact changed, in
 * whatever words the sentence has: no pattern per phrasing is needed (core/supersede.ts holds the
 * patterns; this is what catches the phrasings they don't know).
 *
 * The trade-off is reach: only values that look like values (a digit, a capital letter, a day or
 * a month, an @) are seen, so "I work at the garden centre" is left to the patterns. What keeps it
 * from replacing what is merely related:
 * - the subjects must be the same ("my sister", a name at the start: "Marcus…", or the user);
 * - the skeletons must be the same, or one within the other when the newer says it changed
 *   ("now", "moved", "went up"…), so "the mobile release is on Monday" and "the web release is on
 *   Tuesday" are two facts;
 * - a value of the same kind must have changed (a time for a time, a name for a name);
 * - things there are many of (pets, allergies, children, meetings, visits…) change only with a
 *   cue, and two names on the same day are two events, not one changed.
 */

/** Lower case, accents folded, apostrophes and spaces normalised. */
export function fold(text: string): string {
  return text
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase()
    .replace(/[\u2018\u2019\u02bc]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/\s+/g, " ")
    .trim();
}

/** A crude stem, enough to compare attribute and value words ("coffees"/"coffee", "smoking"/"smoke", "groceries"/"grocery"). */
export function stem(word: string): string {
  let w = word.toLowerCase();
  if (w.length <= 3) return w;
  if (w.endsWith("ies")) return `${w.slice(0, -3)}y`;
  w = w.replace(/([^s])s$/, "$1").replace(/(?:ing|ed)$/, "");
  w = w.replace(/e$/, "");
  if (/([b-df-hj-np-tv-z])\1$/.test(w)) w = w.slice(0, -1);
  return w;
}

export type ValueKind = "num" | "time" | "date" | "name" | "email";

/** One sentence's frame. */
export interface Frame {
  /** Who it is about: "" for the user (I, we, my…), else a relative ("sister") or a leading name ("marcus"). */
  subject: string;
  /** The subject is a leading capitalised word, which may be the thing the sentence is about ("Standup moved…"). */
  leading: boolean;
  /** What it says about them, stemmed, without values, function words and words of change. */
  skeleton: string[];
  /** The skeleton's words before the first value: what the value is of ("my phone plan costs"), not where or when ("at home"). */
  topic: string[];
  /** Its values, folded. */
  values: { text: string; kind: ValueKind }[];
  /** It says something changed ("now", "moved", "went up", "from now on"…). */
  cue: boolean;
}

const WORD_CHANGE =
  "now|new|newly|moved|moving|changed|changing|switched|switching|rescheduled|postponed|pushed|bumped|shifted|delayed|updated|raised|lowered|increased|decreased|dropped|rose|cut|reduced|renamed|replaced|instead|anymore|longer|became|become|upgraded|downgraded|relocated|transferred|reassigned|went|goes|gone|back";
/** Words that say a value changed. */
const CHANGE_CUE = new RegExp(String.raw`\b(?:${WORD_CHANGE}|from now on|these days|nowadays|no longer|brought forward)\b`, "i");
const CHANGE_WORDS = new Set(WORD_CHANGE.split("|"));
/** When, said around a fact: it dates the fact, it isn't what the fact is about. */
const WHEN_PHRASES =
  /\b(?:(?:last|next|this|past|coming) (?:week|month|year|night|weekend|spring|summer|autumn|fall|winter|semester|quarter|term|time)|(?:\w+ )?(?:days?|weeks?|months?|years?) ago|yesterday|today|tomorrow|tonight|lately|recently|these days|nowadays|at the moment|for now|from now on|as of|in the (?:spring|summer|autumn|fall|winter)|through and through)\b/gi;
/** Where what a sentence is about ends and its reasons begin ("…because of the new timetable", "…, by the beach"). */
const REASON = /\s*(?:\b(?:because|since|due to|thanks to|after the|after a|so that|so we|so i|which|who|while|though|although)\b|\s[-–—]\s|\(|,\s+(?=[a-z]))/;
const STOP = new Set(
  "a an the my our your his her their its i we you he she they it me us them this that these those is are was were be been being am has have had do does did will would can could shall should to of in on at for with by from as and or but so than then there here what which who whom whose very really just also quite about into onto up down out over per each every some any all not no more most less much many got get gets getting finally officially currently still always usually again ever even only around approx approximately roughly pm o'clock until till".split(" "),
);
/** The people a sentence can be about besides the user: "my sister lives in Lyon" is not "I live in Rome". */
const RELATIONS =
  /^(?:wife|husband|partner|girlfriend|boyfriend|fiance|fiancee|spouse|sister|brother|sibling|mom|mum|mother|dad|father|parent|son|daughter|kid|child|children|baby|boss|manager|friend|roommate|flatmate|housemate|neighbou?r|grandma|grandmother|grandpa|grandfather|grandparent|aunt|uncle|cousin|niece|nephew|colleague|coworker|mentor|landlord|landlady|in-law|mother-in-law|father-in-law|stepmom|stepdad|stepson|stepdaughter|godson|goddaughter)s?$/;
/** Things one has several of at once: a new value adds, unless the sentence says it changed. */
const MANY =
  /^(?:pet|dog|cat|allerg|allergic|kid|child|children|son|daughter|hobby|language|speak|friend|meet|meeting|appointment|visit|call|class|lesson|birthday|party|event|trip|flight|guest|order|ticket|task|project|book|film|movie|show|concert|game|match|deadline|bill|payment|subscription|plant|car|bike)/;
const DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun";
const MONTHS = "january|february|march|april|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec";
const DATE_WORD = new RegExp(String.raw`^(?:(?:${DAYS})s?|${MONTHS}|weekdays?|weekends?|noon|midnight)$`, "i");
const NUMBER_WORD = /^(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand|half|once|twice)$/i;
/** Capitalised words that are not names. */
const NOT_NAME = /^(?:I|I'm|I've|I'd|I'll|Im|Ive|OK|Ok)$/;

function kindOf(token: string, next: string | undefined): ValueKind | undefined {
  if (token.includes("@")) return "email";
  if (/\d/.test(token)) {
    if (/^\d{1,2}(?::\d{2})?(?:am|pm|h)$/i.test(token) || /^\d{1,2}[:.]\d{2}$/.test(token) || /^(?:am|pm|o'clock)$/i.test(next ?? "")) return "time";
    if (/^\d{1,2}(?:st|nd|rd|th)$/i.test(token)) return "date";
    return "num";
  }
  if (DATE_WORD.test(token) || token === "May") return "date";
  if (NUMBER_WORD.test(token)) return "num";
  return undefined;
}

/** The frames of a text: one per sentence that gives a value. Questions and wishes give none (core/supersede.ts filters them first). */
export function framesOf(sentences: string[]): Frame[] {
  const frames: Frame[] = [];
  for (const sentence of sentences) {
    const cue = CHANGE_CUE.test(sentence);
    const text = (sentence.replace(WHEN_PHRASES, " ").split(REASON)[0] ?? "").replace(/;/g, " ");
    const tokens = text.match(/[\p{L}\p{N}$€£@][\p{L}\p{N}'’.:@$€£%+\/-]*/gu)?.map((t) => t.replace(/[.:'’]+$/, "")) ?? [];
    const values: Frame["values"] = [];
    const skeleton: string[] = [];
    const topic: string[] = [];
    let subject = "";
    let i = 0;
    // A sentence that starts with a name is about that person ("Marcus works at Globex"), or with a
    // thing it is about ("Standup moved to 10am"): frameChange tells them apart.
    for (let n = 0; n < 2 && i < tokens.length && /^\p{Lu}\p{Ll}+(?:'s)?$/u.test(tokens[i]) && !NOT_NAME.test(tokens[i]) && !STOP.has(tokens[i].toLowerCase()) && !kindOf(tokens[i], tokens[i + 1]); n++, i++) {
      subject = `${subject} ${fold(tokens[i]).replace(/'s$/, "")}`.trim();
    }
    const leading = subject !== "";
    for (let prev = ""; i < tokens.length; i++) {
      const t = tokens[i];
      const lower = fold(t);
      const next = fold(tokens[i + 1] ?? "");
      // A name before a noun names the thing, it isn't a value: "the Orion budget", "the Nova launch".
      const modifier = /^\p{Ll}/u.test(tokens[i + 1] ?? "") && !STOP.has(next) && !CHANGE_WORDS.has(next) && !kindOf(tokens[i + 1], tokens[i + 2]);
      const kind = kindOf(t, tokens[i + 1]) ?? (i > 0 && /^\p{Lu}/u.test(t) && !NOT_NAME.test(t) && !STOP.has(lower) && !modifier ? "name" : undefined);
      if (kind) {
        const last = values[values.length - 1];
        // "Hard Fork", "Pixel 8", "Dr Lee", "3 pm": one value.
        if (last && prev === "value" && (last.kind === kind || (last.kind === "name" && kind === "num"))) last.text += ` ${lower}`;
        else values.push({ text: lower, kind });
        prev = "value";
        continue;
      }
      prev = "";
      const word = lower.replace(/'s$|'$/, "").split("'")[0];
      if (/^(?:am|pm|a\.m|p\.m)$/.test(word) && values.length) continue;
      if (!word || STOP.has(word) || CHANGE_WORDS.has(word)) continue;
      const before = fold(tokens[i - 1] ?? "");
      if (RELATIONS.test(word) && /^(?:my|our|his|her|their)$/.test(before) && !subject) {
        subject = stem(word);
        continue;
      }
      skeleton.push(stem(word));
      if (!values.length) topic.push(stem(word));
    }
    if (values.length && (skeleton.length || subject)) frames.push({ subject, leading, skeleton: [...new Set(skeleton)], topic: [...new Set(topic)], values, cue });
  }
  return frames;
}

const COMPATIBLE: Record<ValueKind, ValueKind[]> = { num: ["num"], time: ["time", "num"], date: ["date", "num"], name: ["name"], email: ["email"] };

/**
 * Why the frame `newer` states a new value for what `older` states, or undefined: the same subject,
 * the same skeleton (or one within the other when the newer says it changed), and a value of the
 * same kind changed.
 */
export function frameChange(newer: Frame, older: Frame): string | undefined {
  // "Standup moved to 10am" starts with what "The standup is at 9:30" is about: a thing, not a person.
  const thing = (a: Frame, b: Frame) =>
    a.leading && !b.subject && !a.subject.includes(" ") && b.topic.includes(stem(a.subject)) ? { ...a, subject: "", skeleton: [stem(a.subject), ...a.skeleton], topic: [stem(a.subject), ...a.topic] } : a;
  [newer, older] = [thing(newer, older), thing(older, newer)];
  if (newer.subject !== older.subject) return undefined;
  const shared = newer.topic.filter((w) => older.topic.includes(w));
  const sameTopic = shared.length === newer.topic.length && shared.length === older.topic.length;
  const within = shared.length > 0 && (shared.length === newer.topic.length || shared.length === older.topic.length);
  const sameSkeleton = newer.skeleton.length === older.skeleton.length && newer.skeleton.every((w) => older.skeleton.includes(w));
  const many = newer.skeleton.some((w) => MANY.test(w));
  // What follows the value says which one ("…a month for the gym", "…for cloud storage"): two things.
  const tail = (f: Frame) => f.skeleton.filter((w) => !f.topic.includes(w));
  const [tn, to] = [tail(newer), tail(older)];
  if (tn.length && to.length && !tn.some((w) => to.includes(w))) return undefined;
  if (!(sameSkeleton && sameTopic && newer.skeleton.length >= 2 && !many) && !((sameTopic || within) && shared.length && newer.cue)) return undefined;
  const has = (f: Frame, v: { text: string }) => f.values.some((x) => x.text.replace(/\s+/g, "") === v.text.replace(/\s+/g, ""));
  const gone = older.values.filter((v) => !has(newer, v));
  const added = newer.values.filter((v) => !has(older, v));
  const pair = added.flatMap((a) => gone.filter((g) => COMPATIBLE[a.kind].includes(g.kind)).map((g) => [g, a] as const))[0];
  if (!pair) return undefined;
  // Two names on the same day or time are two events ("lunch with Anna on Friday", "lunch with Ben on Friday").
  const keptWhen = older.values.some((v) => (v.kind === "date" || v.kind === "time") && has(newer, v));
  if (pair[1].kind === "name" && keptWhen && !newer.cue) return undefined;
  return `${newer.subject || "self"}.${(shared.length ? shared : newer.skeleton).join("-")}: ${pair[0].text} → ${pair[1].text}`;
}
