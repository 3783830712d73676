import { DAYS, MONTHS, NUMBER_WORDS } from "./frames.js";

/**
 * The kind of value a question asks for, and whether a note holds one (hybrid search,
 * ranking.ts hybridScore). "What time is my flight to Kumasi?" asks for a time, so "Abena
 * graduates July 8 in Kumasi, need flights!!" doesn't answer it though it shares two of its words;
 * nor does "User has a rescue kelpie named Biscuit" answer "how old is Biscuit?", nor "Vendor
 * contact at MapTiles: Jens Bauer, jens@maptiles.de" "Jens Bauer's phone number". Before this
 * (November 2026) those scored 0.87 to 1.00.
 *
 * Only forms that surely ask for a value count; any other question asks for no kind:
 * - a time: "what time…", "at what time…";
 * - a date or a time: "when is/are/do/does/will…", "what day…", "what's the date…". Not "when
 *   did…" or "when was…": a past event's time is often the note's own (a log line "Backed up the
 *   laptop to the external drive" answers "when did I last back up my laptop?" by when it was
 *   written);
 * - how often or how long: a time, a date, a number or a word of frequency ("every", "weekly");
 * - an amount of money: "how much" with a word of money ("cost", "pay", "rent", "bill"…), or
 *   a question whose head noun is a price, fee, rent, rate… ("what's the rent?", not "which bank is
 *   my salary paid into?"); any other "how much" asks for a number ("how much water…":
 *   "Water intake today: 1.5 L");
 * - a number: "how many/old/far/tall/big/heavy…", "what dose/age…";
 * - a phone number ("what's Arne's mobile?", "phone number"; not "which mobile handset…"), an
 *   email address;
 * - a street address ("what's Sigrid's address?"), a code or password ("what's the new eftpos
 *   PIN?" against "Bank changed the eftpos card, new PIN in the safe, not written down").
 *
 * What a value looks like is read from the note's words alone (digits, currency, days, months,
 * "tonight", "twice", "third"…), so a value written out another way ("after exams") is missed: the
 * kind is a reason to doubt a note, never to promote one. Chosen on bench/everyday's dev users and
 * checked on the replaced-fact sets and the 20-memory stores
 * (docs/search-quality.md, "What was tried").
 */
export type AnswerKind = "time" | "when" | "often" | "amount" | "number" | "phone" | "email" | "address" | "code";

const WHAT = String.raw`^\s*(?:what|what's|whats|which)\b`;
/**
 * A question whose head noun is one of `nouns`: "what's the rent?", "what is the gym membership
 * fee?", "what's Priya Raman's day rate?"; not "which bank is my salary paid into?", which asks
 * for a bank, nor "what code editor do I use?", whose head is "editor".
 */
const headed = (nouns: string) =>
  String.raw`^\s*(?:what|which)(?:'s|s| is| was| are| were)?\s+(?:(?:the|my|our|your|his|her|their|this|that)\s+|(?:\p{Lu}[\p{L}-]*\s+)*\p{Lu}[\p{L}-]*['’]s\s+)?(?:[\p{L}-]+\s+){0,2}(?:${nouns})\b(?=\s*(?:$|[?.!,]|(?:for|of|on|at|to|in|into|is|are|was|were|from|with|now|these|this|per|a|an|the|do|does|did)\b))`;
const MONEY_WORD = "cost|costs|pay|paid|charge|charges|rent|price|bill|owe|owed|spend|spent|earn|earned|save|saved|fee|fees|budget|salary";

/** Question forms and the kind each asks for; the first that matches wins. */
const KIND_OF_QUESTION: [RegExp, AnswerKind][] = [
  [/\b(?:what|which|at what) time\b/i, "time"],
  [new RegExp(String.raw`${WHAT}.*\b(?:phone|mobile|cell)\W*$|\b(?:phone|mobile|cell) (?:number|no)\b`, "i"), "phone"],
  [new RegExp(String.raw`${WHAT}.*\be-?mail\W*$|\be-?mail address\b`, "i"), "email"],
  [/\bhow (?:often|long)\b/i, "often"],
  [
    new RegExp(
      String.raw`\bhow much\b.*\b(?:${MONEY_WORD})\b|${headed("prices?|costs?|fees?|rent|salary|budget|wages?|fares?|rates?|charges?")}|^\s*what (?:does|do|did)\b.*\b(?:charge|cost|pay|earn)\b`,
      "iu",
    ),
    "amount",
  ],
  [new RegExp(String.raw`\bhow (?:much|many|old|far|tall|big|heavy)\b|${headed("dose|dosage|age")}`, "iu"), "number"],
  [new RegExp(headed("address|postcode|zip"), "iu"), "address"],
  [new RegExp(headed("password|passcode|code|pin|combination|combo"), "iu"), "code"],
  [/^\s*when (?!did|was|were|had|have)|\bwhen (?:is|are|do|does|will|should|can|'s)\b|\b(?:what|which)(?:'s| is| was)? (?:the )?(?:day|date)\b/i, "when"],
];

/** The kind of value the question asks for, if it surely asks for one. */
export function answerKind(question: string): AnswerKind | undefined {
  for (const [form, kind] of KIND_OF_QUESTION) if (form.test(question)) return kind;
  return undefined;
}

const TIME = /\b\d{1,2}(?::\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.|h)\b|\b\d{1,2}[:.]\d{2}\b|\b(?:noon|midnight|mornings?|afternoons?|evenings?|nights?|tonight|dawn|o'clock|lunch(?:time)?|breakfast)\b/i;
const DATE = new RegExp(
  String.raw`\b(?:(?:${DAYS})s?|${MONTHS})\b|\bMay\b|\b\d{1,2}(?:st|nd|rd|th)\b|\b\d{1,2}[/.-]\d{1,2}(?:[/.-]\d{2,4})?\b|\b(?:19|20)\d{2}\b|` +
    String.raw`\b(?:today|tomorrow|yesterday|tonight|weekends?|weekly|daily|monthly|yearly|annually|fortnightly|christmas|easter|summer|winter|spring|autumn|ago)\b|` +
    String.raw`\b(?:next|last|this|every) (?:\w+ )?(?:week|month|year|day|time)\b|\b\d+ (?:days?|weeks?|months?|years?)\b`,
  "i",
);
/** A digit, a number word as frames read one, or a count said another way ("a third cat", "a couple"). */
const NUMBER = new RegExp(String.raw`\d|\b(?:${NUMBER_WORDS}|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|another|dozen|couple|few)\b`, "i");
const FREQUENCY = /\b(?:every|each|per|since|always|never|usually)\b/i;
const AMOUNT =
  /[$£€¥₹]\s?\d|\d\s?[$£€]|\b\d+(?:[.,]\d+)?\s?(?:k|m|bn|grand|dollars?|euros?|pounds?|quid|bucks|cents?|p|kr|nok|sek|dkk|usd|aud|eur|gbp|cad|chf|pln|zl|zł)\b|\b(?:usd|aud|eur|gbp|cad|nok|sek|dkk|chf|pln|kr|rs)\.?\s?\d|\b\d{2,}\b|\bfree\b/i;
/** A house number or a street word: "Nygårdsgaten 12", "7 Harbour Road". */
const ADDRESS =
  /\d|\b(?:street|st|road|rd|avenue|ave|lane|ln|drive|dr|way|place|close|court|crescent|terrace|gardens|square|boulevard|blvd|rue|strasse|straße|gatan|gaten|vej|via|calle)\b/i;
/** A token a code or password is made of: a digit, a word with a capital inside ("mangoJollof"), two parts joined by a hyphen ("otter-42"). */
const CODE = /\d|\b\w*[a-z]\w*[A-Z]\w*\b|\w-\w/;
const PHONE = /\+?\d[\d\s().-]{5,}\d|\bext\.?\s?\d{2,}/i;

/** Whether the text holds a value of the kind. */
export function holdsKind(text: string, kind: AnswerKind): boolean {
  switch (kind) {
    case "time":
      return TIME.test(text);
    case "when":
      return TIME.test(text) || DATE.test(text);
    case "often":
      return TIME.test(text) || DATE.test(text) || NUMBER.test(text) || FREQUENCY.test(text);
    case "amount":
      return AMOUNT.test(text);
    case "number":
      return NUMBER.test(text);
    case "phone":
      return PHONE.test(text);
    case "email":
      return text.includes("@");
    case "address":
      return ADDRESS.test(text);
    case "code":
      return CODE.test(text);
  }
}
