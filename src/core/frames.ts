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

export type ValueKind = "num" | "time" | "date" | "name" | "email" | "phone" | "address";

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
  /** The topic's head noun, its last word that is not a verb ("my phone plan costs…": plan), or "". */
  head: string;
  /** Its values, folded. */
  values: { text: string; kind: ValueKind }[];
  /** It says something changed ("now", "moved", "went up", "from now on"…). */
  cue: boolean;
  /** It reports what someone said, asked or thought ("Bo talked about the new job on day 26"): an event, whatever its values. */
  report: boolean;
  /** Its first value follows a word that states it ("X is…", "X: …", "X = …"), as in a label or a list of words ("Note 3: …", "green tea garden morning") it doesn't. */
  stated: boolean;
}

/** Single words that say a value changed (CHANGE_CUE; core/supersede.ts builds its CHANGED from them). */
export const WORD_CHANGE =
  "now|new|newly|moved|moving|changed|changing|switched|switching|rescheduled|postponed|pushed|bumped|shifted|delayed|updated|raised|lowered|increased|decreased|dropped|rose|cut|reduced|renamed|replaced|instead|anymore|longer|became|become|upgraded|downgraded|relocated|transferred|reassigned|went|goes|gone|slipped|migrated|migrating|ported|swapped|started|starting|effective|remortgaged|re-registered|extended|raise|correction|corrected|reset|going|rising|falling|increasing|decreasing";
/** Past tense of saying, asking and thinking: a sentence with one reports a conversation, not a value that holds. */
export const REPORT = /\b(?:talked|asked|discussed|mentioned|worried|said|told|chatted|spoke|emailed|texted|messaged|wondered|complained|joked|argued|remembered|heard)\b/i;
/** What comes before a sentence's first value states what it is of: a copula, a colon or an equals sign. */
const STATED = /\b(?:is|are|was|were|am)\b|\p{L}['’]s\b|[:=]/iu;
/** Words that say a value changed. */
const CHANGE_CUE = new RegExp(String.raw`\b(?:${WORD_CHANGE}|from now on|these days|nowadays|lately|no longer|brought forward|put (?:\w+ ){0,2}up|back to|(?:taken|got|landed|accepted|started) a (?:new )?(?:job|role|position))\b`);
const CHANGE_WORDS = new Set(WORD_CHANGE.split("|"));
/** When, said around a fact: it dates the fact, it isn't what the fact is about. */
const WHEN_PHRASES =
  /\b(?:(?:last|next|this|past|coming) (?:week|month|year|night|weekend|spring|summer|autumn|fall|winter|semester|quarter|term|time)|(?:\w+ )?(?:days?|weeks?|months?|years?) ago|yesterday|today|tomorrow|tonight|lately|recently|these days|nowadays|at the moment|for now|from now on|as of|in the (?:spring|summer|autumn|fall|winter)|through and through)\b/gi;
/** Where what a sentence is about ends and its reasons begin ("…because of the new timetable", "…, by the beach"). */
const REASON = /\s*(?:\b(?:because|since|due to|thanks to|after the|after a|so that|so we|so i|which|who|while|though|although)\b|\s[-–—]\s|\(|,\s+(?=[a-z]))/;
const STOP = new Set(
  "back closer nearly almost user everything something anything nothing everyone someone anyone stuff a an the my our your his her their its i we you he she they it me us them this that these those is are was were be been being am has have had do does did will would can could shall should to of in on at for with by from as and or but so than then there here what which who whom whose very really just also quite about into onto up down out over per each every some any all not no more most less much many got get gets getting finally officially currently still always usually again ever even only around approx approximately roughly pm o'clock until till through via across around within without behind under between among during off near past".split(" "),
);
/** The people a sentence can be about besides the user: "my sister lives in Lyon" is not "I live in Rome". */
const RELATIONS =
  /^(?:wife|husband|partner|girlfriend|boyfriend|fiance|fiancee|spouse|sister|brother|sibling|mom|mum|mother|dad|father|parent|son|daughter|kid|child|children|baby|boss|manager|friend|roommate|flatmate|housemate|neighbou?r|grandma|grandmother|grandpa|grandfather|grandparent|aunt|uncle|cousin|niece|nephew|colleague|coworker|mentor|landlord|landlady|in-law|mother-in-law|father-in-law|stepmom|stepdad|stepson|stepdaughter|godson|goddaughter)s?$/;
/** Things one has several of at once: a new value adds, unless the sentence says it changed. */
const MANY =
  /^(?:pet|dog|cat|allerg|allergic|kid|child|children|son|daughter|hobby|language|speak|friend|meet|meeting|appointment|visit|call|class|lesson|birthday|party|event|trip|flight|guest|order|ticket|task|project|book|film|movie|show|concert|game|match|deadline|bill|payment|subscription|plant|car|bike|list(?!en))/;
/** Days and months as frames read them (and search's newerFirst, core/search.ts): alternations for a regular expression. */
export const DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun";
export const MONTHS = "january|february|march|april|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec";
const DATE_WORD = new RegExp(String.raw`^(?:(?:${DAYS})s?|${MONTHS}|weekdays?|weekends?|noon|midnight|mornings?|afternoons?|evenings?)$`, "i");
const PART_OF_MONTH = new RegExp(String.raw`^(?:mid|early|late)-(?:${MONTHS}|may)$`, "i");
/** Words that are numbers, as frames read values (and search's answer kinds, core/answer-kind.ts): an alternation for a regular expression. */
export const NUMBER_WORDS = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand|half|once|twice";
const NUMBER_WORD = new RegExp(`^(?:${NUMBER_WORDS})$`, "i");
/** Capitalised first words that are neither names nor things: verbs, adverbs, greetings ("Switched my notes…", "Honestly…"). */
const NOT_LEADING =
  /^(?:\p{Lu}\p{Ll}{3,}(?:ed|ing)|Use|Got|Found|Left|Quit|Sold|Bought|Paid|Took|Made|Need|Remember|Note|Update|Honestly|Actually|Anyway|Btw|Fyi|Also|So|Well|Ok|Okay|Now|Today|Currently|Recently|Finally|Just|Still|Yes|Yeah|Heads|Quick|Reminder|Please|Since|From|Starting|As|Then|After|Before|When|While|If)$/u;
/** Words around a value that say little about what it is of: an anchor needs a rarer one. */
export const GENERIC_WORD = /^(?:day|week|month|year|time|hour|minut|take|get|have|make|go|do|pay|cost|us|use|need|one|thing|lot|bit|every|each|per)$/;
/** Words before "number" that still make it a phone number: "my phone number", "the home number". */
export const PHONE_OWNERS = new Set(["phone", "mobile", "cell", "cellphone", "telephone", "contact", "home", "work", "office", "landline", "whatsapp", "emergency"]);
/** The same, stemmed as frames' topics are. */
const PHONE_OWNER_STEMS = new Set([...PHONE_OWNERS].map(stem));
/** A value that is a street address: a number, then a name ending in a street word. */
const ADDRESS = /^\d+[a-z]? (?:[\p{L}'-]+ )*(?:street|st|road|rd|avenue|ave|lane|ln|way|drive|dr|place|pl|square|sq|court|ct|close|crescent|boulevard|blvd|terrace|row|rue|strasse|straße|via|calle|quay|hill|gardens|park)$/u;

/** Topic words that are verbs, not the head noun ("the repo is hosted on", "my phone plan costs"), stemmed. */
export const VERBISH = new Set(
  "due deadline cost costs run runs start starts begin begins meet meets take takes hosted written live lives work works pay pays use uses go goes come comes open opens close closes leave leaves arrive arrives launch launches happen happens held kept paid made built located based set scheduled planned booked get gets stay stays sit sits turn turns have has do does need needs make makes keep keeps call calls say says".split(" ").map(stem),
);
/** Heads that name an event by what it is for ("physio appointment", "piano lesson"). */
const EVENT = /^(?:appointment|session|lesson|class|meet|meeting|practic|rehearsal|call|visit|slot|shift|training|check-up|checkup|consult)$/;
/** One word the same as another, or with a prefix ("remortgaged" / "mortgage"). */
const like = (a: string, b: string) => a === b || (Math.min(a.length, b.length) >= 4 && (a.endsWith(b) || b.endsWith(a)));

/** Units written apart from their number. */
const UNITS = /^(?:kg|kgs|kilos?|lbs?|pounds|stone|km|kms|miles?|mi|mg|mcg|ml|g|grams?|%|percent|k|grand|hours?|hrs?|minutes?|mins?|euros?|dollars?|quid|bucks|gb|tb|mb|cm|m|ft|inches)$/;

/** Capitalised words that are not names. */
const NOT_NAME = /^(?:I|I'm|I've|I'd|I'll|Im|Ive|OK|Ok|User|User's)$/;

function kindOf(token: string, next: string | undefined): ValueKind | undefined {
  if (token.includes("@")) return "email";
  if (/\d/.test(token)) {
    if (/^\d{1,2}(?::\d{2})?(?:am|pm|h)$/i.test(token) || /^\d{1,2}:\d{2}$/.test(token) || /^(?:am|pm|o'clock)$/i.test(next ?? "")) return "time";
    // "the 12th" is a date, "the 3rd floor" a number.
    if (/^\d{1,2}(?:st|nd|rd|th)$/i.test(token)) return /^(?:\p{Ll}+)$/u.test(next ?? "") && !/^(?:of|at|in|on|and|or|to|from)$/.test(next ?? "") ? "num" : "date";
    return "num";
  }
  if (DATE_WORD.test(token) || token === "May" || PART_OF_MONTH.test(token)) return "date";
  if (NUMBER_WORD.test(token)) return "num";
  return undefined;
}

/** The frames of a text: one per sentence that gives a value. Questions and wishes give none (core/supersede.ts filters them first). */
export function framesOf(sentences: string[]): Frame[] {
  const frames: Frame[] = [];
  for (const sentence of sentences) {
    // Lower case only, the first word aside: "New York" says nothing changed.
    const cue = CHANGE_CUE.test(sentence.replace(/^\s*\p{Lu}/u, (c) => c.toLowerCase()));
    const text = (sentence.replace(WHEN_PHRASES, " ").split(REASON)[0] ?? "").replace(/;/g, ",");
    // A comma is a token of its own: "7 Harbour Road, Cobh" is two values.
    const matched = [...text.matchAll(/[\p{L}\p{N}$€£@][\p{L}\p{N}'’.:@$€£%+\/-]*|,/gu)];
    const tokens = matched.map((m) => m[0].replace(/(.)[.:'’]+$/, "$1"));
    let firstValue = -1;
    const low = tokens.map(fold);
    const values: Frame["values"] = [];
    const skeleton: string[] = [];
    const topic: string[] = [];
    const heads: string[] = [];
    let topicDone = false;
    let subject = "";
    let i = 0;
    // A sentence that starts with a name is about that person ("Marcus works at Globex"), or with a
    // thing it is about ("Standup moved to 10am"): frameChange tells them apart.
    for (let n = 0; n < 2 && i < tokens.length && /^\p{Lu}\p{Ll}+(?:'s)?$/u.test(tokens[i]) && !NOT_NAME.test(tokens[i]) && !NOT_LEADING.test(tokens[i]) && !STOP.has(tokens[i].toLowerCase()) && !kindOf(tokens[i], tokens[i + 1]); n++, i++) {
      subject = `${subject} ${low[i].replace(/'s$/, "")}`.trim();
    }
    const leading = subject !== "";
    for (let prev = ""; i < tokens.length; i++) {
      const t = tokens[i];
      if (t === ",") {
        prev = "";
        continue;
      }
      const lower = low[i];
      const next = low[i + 1] ?? "";
      // A name before a noun names the thing, it isn't a value: "the Orion budget", "the Nova launch".
      const modifier = /^\p{Ll}/u.test(tokens[i + 1] ?? "") && !STOP.has(next) && !CHANGE_WORDS.has(next) && !kindOf(tokens[i + 1], tokens[i + 2]);
      const before = low[i - 1] ?? "";
      // "My GP", "a new GP": what follows a possessive or an article is what the sentence is about.
      const owned = /^(?:my|our|your|his|her|their)$/.test(before) || (/^(?:a|an|new)$/.test(before) && /^\p{Lu}{2,5}$/u.test(t));
      const kind = kindOf(t, tokens[i + 1]) ?? (i > 0 && /^\p{Ll}*\p{Lu}/u.test(t) && !NOT_NAME.test(t) && !STOP.has(lower) && !modifier && !owned ? "name" : undefined);
      // "Note 3:", "Day 2:": a label that numbers the note, not a value it states.
      if (kind && !values.length && /:$/.test(matched[i][0])) continue;
      if (kind) {
        const last = values[values.length - 1];
        // "Hard Fork", "Pixel 8", "Dr Lee", "3 pm", "June 1", "0612 345 678", "7 Harbour Road": one value.
        if (last && prev === "value" && (last.kind === kind || (last.kind === "name" && kind === "num") || (last.kind === "num" && kind === "name") || (last.kind === "date") !== (kind === "date"))) {
          last.text += ` ${lower}`;
          if (kind === "date" || last.kind === "date") last.kind = "date";
          else if (kind === "name") last.kind = "name";
        } else values.push({ text: lower, kind });
        if (firstValue < 0) firstValue = i;
        if (topic.length || leading) topicDone = true;
        prev = "value";
        continue;
      }
      prev = "";
      const word = lower.replace(/'s$|'$/, "").split("'")[0];
      if (/^(?:am|pm|a\.m|p\.m)$/.test(word) && values.length) continue;
      // "82 kg", "25 percent": the unit belongs to its number.
      const last = values[values.length - 1];
      if (last && last.kind === "num" && before === last.text.split(" ").at(-1) && UNITS.test(word)) {
        last.text += word === "percent" ? "%" : word;
        continue;
      }
      if (!word || STOP.has(word) || CHANGE_WORDS.has(word)) continue;
      if (RELATIONS.test(word) && /^(?:my|our|his|her|their)$/.test(before) && !subject) {
        subject = stem(word);
        continue;
      }
      skeleton.push(stem(word));
      // The topic runs to the first value after it ("Monday sales huddle moved to 8:15": sales huddle).
      if (!values.length || !topicDone) {
        topic.push(stem(word));
        // "Bedtime for the kids": what follows "for" or "of" qualifies the head, it isn't it.
        if (!/^(?:for|of)$/.test(before) && !/^(?:for|of)$/.test(low[i - 2] ?? "")) heads.push(stem(word));
      }
    }
    for (const v of values) {
      if (ADDRESS.test(v.text)) v.kind = "address";
      else if (v.kind === "num" && /^\+?[\d\s()-]+$/.test(v.text) && v.text.replace(/\D/g, "").length >= 7) v.kind = "phone";
    }
    if (values.length && (skeleton.length || subject || values.some((v) => /^(?:email|phone|address)$/.test(v.kind) || unitOf(v) !== ""))) frames.push({ subject, leading, skeleton: [...new Set(skeleton)], topic: [...new Set(topic)], head: heads.filter((w) => !VERBISH.has(w)).at(-1) ?? "", values, cue, report: REPORT.test(sentence), stated: firstValue > 0 && STATED.test(text.slice(0, matched[firstValue].index)) });
  }
  return frames;
}

/** A number's unit ("82kg" → kg, "$40" → money), or "". */
export const unitOf = (v: { text: string; kind?: ValueKind }) =>
  /^[$€£]/.test(v.text) ? "money" : v.kind !== "num" || /\d(?:st|nd|rd|th)$/.test(v.text) ? "" : (/^[\d.,]+([a-z%]+)$/.exec(v.text)?.[1] ?? "");

const COMPATIBLE: Record<ValueKind, ValueKind[]> = { num: ["num", "time"], time: ["time", "num"], date: ["date"], name: ["name"], email: ["email"], phone: ["phone", "num"], address: ["address", "name"] };

/**
 * Why the frame `newer` states a new value for what `older` states, or undefined. Always: the same
 * subject, what follows the values not naming two things, and a value of one kind changed. Then
 * one of: the same skeleton (two words or more, not a thing one has several of); or, when the
 * newer says it changed, the same topic, one topic within the other with the same head noun, the
 * same head with no clashing modifiers, an event named by what it is for, a typed value said anew,
 * a number in the same unit with an anchor, or one part of a value changed.
 */
/** A topic's words besides its head that name which one ("library card" of "library card number"). */
function others(f: Frame): string[] {
  return f.topic.filter((w) => w !== f.head && !VERBISH.has(w) && !GENERIC_WORD.test(w));
}

/**
 * A bare "number" is a phone number ("Got a new number: 07700 900222"), not a number the other
 * frame names as something else ("My new library card number is 2290 4417"): two things.
 */
export function twoNumbers(a: Frame, b: Frame): boolean {
  const bare = (x: Frame, y: Frame) => x.topic.length === 1 && x.topic[0] === "number" && y.head === "number" && others(y).some((w) => !PHONE_OWNER_STEMS.has(w));
  return bare(a, b) || bare(b, a);
}

export function frameChange(newer: Frame, older: Frame): string | undefined {
  // "Standup moved to 10am" starts with what "The standup is at 9:30" is about: a thing, not a person;
  // "Brightline's contact is now…" with what "the contact for Brightline is…" names as a value.
  const asThing = (a: Frame): Frame => ({ ...a, subject: "", leading: false, skeleton: [stem(a.subject), ...a.skeleton], topic: [stem(a.subject), ...a.topic], head: a.head || stem(a.subject) });
  const named = (a: Frame, b: Frame) => a.leading && !a.subject.includes(" ") && b.values.some((v) => v.text === a.subject);
  const thing = (a: Frame, b: Frame) => {
    if (named(a, b)) return { ...a, subject: "", leading: false };
    return a.leading && !a.subject.includes(" ") && b.skeleton.includes(stem(a.subject)) ? asThing(a) : a;
  };
  [newer, older] = [thing(newer, older), thing(older, newer)];
  // "Landlord raised the rent": once the other's subject is a thing, a leading word is who acted.
  if (!older.subject && newer.leading && !newer.subject.includes(" ") && newer.skeleton.some((w) => older.topic.includes(w))) newer = asThing(newer);
  // "Project Atlas" and "Atlas": one name within the other.
  const within1 = (a: string, b: string) => a !== "" && b !== "" && (` ${b} `.includes(` ${a} `) || ` ${a} `.includes(` ${b} `));
  if (newer.leading && older.leading && within1(newer.subject, older.subject)) older = { ...older, subject: newer.subject };
  if (newer.subject !== older.subject) return undefined;
  // "Talked to Sam about the new job on Monday" / "… on Friday": two conversations.
  if (newer.report || older.report) return undefined;
  // What follows the value says which one ("…a month for the gym", "…for cloud storage"): two things.
  const tail = (f: Frame) => f.skeleton.filter((w) => !f.topic.includes(w) && !GENERIC_WORD.test(w));
  const [tn, to] = [tail(newer), tail(older)];
  if (tn.length && to.length && !tn.some((w) => to.includes(w))) return undefined;

  const has = (f: Frame, v: { text: string }) => f.values.some((x) => x.text.replace(/\s+/g, "") === v.text.replace(/\s+/g, ""));
  const gone = older.values.filter((v) => !has(newer, v));
  const added = newer.values.filter((v) => !has(older, v));
  const pair = added.flatMap((a) => gone.filter((g) => COMPATIBLE[a.kind].includes(g.kind)).map((g) => [g, a] as const))[0];
  if (!pair) return undefined;
  // Two names on the same day or time are two events ("lunch with Anna on Friday", "lunch with Ben on Friday").
  const keptWhen = older.values.some((v) => (v.kind === "date" || v.kind === "time") && has(newer, v));
  if (pair[1].kind === "name" && keptWhen && !newer.cue) return undefined;

  const shared = newer.topic.filter((w) => older.topic.includes(w));
  const sameTopic = shared.length > 0 && shared.length === newer.topic.length && shared.length === older.topic.length;
  const within = shared.length > 0 && (shared.length === newer.topic.length || shared.length === older.topic.length);
  // The head noun, the topic's last word: "our mortgage rate is…" and "the rate is… now".
  const sameHead = newer.head !== "" && newer.head === older.head;
  // The other words of the topics must not name two things ("my cat's name" / "its code name").
  const clash = others(newer).length > 0 && others(older).length > 0 && !others(newer).some((a) => others(older).some((b) => like(a, b)));
  if (twoNumbers(newer, older)) return undefined;
  const sameSkeleton = newer.skeleton.length === older.skeleton.length && newer.skeleton.every((w) => older.skeleton.includes(w));
  const many = newer.skeleton.some((w) => MANY.test(w));
  const why = `${newer.subject || "self"}.${(shared.length ? shared : newer.skeleton).join("-") || "value"}: ${pair[0].text} → ${pair[1].text}`;
  // Without a word of change, only a sentence that states a value ("My phone number is 555-0199"):
  // two titles or labels that differ in a number or a time of day are two things ("note 115 about
  // chess" / "note 121 about chess", "green tea garden morning" / "… evening").
  if (sameSkeleton && sameTopic && newer.skeleton.length >= 2 && !many && (newer.stated || newer.cue)) return why;
  if (!newer.cue) return undefined;
  // "Tennis is on Saturday mornings at 9" / "Tennis is on Sunday afternoons at 3 now": one named thing.
  if (newer.leading && newer.subject === older.subject && !newer.topic.length && !older.topic.length) return why;
  // "Physio is on Tuesdays" and "my physio appointments are on Thursdays": an event named by what it is for.
  const [small, large] = newer.topic.length <= older.topic.length ? [newer, older] : [older, newer];
  const eventOf = within && small.topic.length === 1 && EVENT.test(large.head);
  if (sameTopic || (sameHead && (within || !clash)) || eventOf) return why;
  // A value that says what it is (an email, a phone number, a street address), said anew: "Use
  // ana@proton.me for me from now on" replaces "My email is ana@gmail.com".
  const rare = (f: Frame) => f.topic.filter((w) => !GENERIC_WORD.test(w));
  const disjoint = rare(newer).length > 0 && rare(older).length > 0 && !shared.length;
  if (/^(?:email|phone|address)$/.test(pair[1].kind) && pair[0].kind === pair[1].kind && !disjoint) return why;
  // A number changed, anchored by its subject or a word both say ("raised my amlodipine to 10mg" /
  // "I take 5mg of amlodipine"), in the same unit.
  const anchored = (newer.subject !== "" && newer.leading) || unitOf(pair[0]) !== "" || newer.skeleton.some((w) => !GENERIC_WORD.test(w) && older.skeleton.includes(w));
  const heads = newer.head !== "" && older.head !== "" && newer.head !== older.head;
  if (pair[1].kind === pair[0].kind && /^(?:num|time|date)$/.test(pair[0].kind) && unitOf(pair[0]) === unitOf(pair[1]) && anchored && !heads) return why;
  // One part of a value changed, the rest kept ("Year 2" → "Year 3", "Galaxy S21" → "Galaxy S24"), for one subject.
  const words = (v: { text: string }) => v.text.split(" ");
  if (pair[0].kind === pair[1].kind && words(pair[1]).some((w) => /\p{L}{3,}/u.test(w) && words(pair[0]).includes(w)) && !disjoint) return why;
  return undefined;
}
