/**
 * Replaced facts and duplicates, found without a model and without the network: plain patterns
 * over the text, a few microseconds a memory.
 *
 * A memory states facts as (subject, attribute, value): "I moved to Berlin" is (self, home,
 * berlin), "My dentist is Dr. Lee" is (self, dentist, dr lee), "The standup is now at 10am" is
 * (standup, time, 10am). A new memory replaces an older current one of the same user and agent
 * when both state the same subject and attribute with different values. Only attributes that hold
 * one value at a time have patterns (where one lives, who one works for, "my X is Y", a thing's
 * time or place, how one feels about something); what is only related (two pets, two allergies, a
 * sister and a brother) states no such fact, so it is left alone.
 *
 * Preferences ("I use Vim") hold many values at once, so they are replaced only when the new
 * memory says it changed ("switched from Vim to VS Code", "I no longer drink coffee"). A memory
 * saying it adds ("also", "too", "another", "second") replaces nothing.
 *
 * Each memory's match keys (stored with it, see Store.memoriesMatching) are its folded text, for
 * duplicates, and one key per fact, so a new memory finds the older ones to compare with in one
 * filtered query. The development set and its figures: test/fixtures/supersede/ and
 * docs/memory-validity.md.
 */

/** One fact a memory states: `key` is subject and attribute ("self.home"), `value` is folded. */
export interface Fact {
  key: string;
  value: string;
  /** Negated ("I no longer drink coffee"): replaces the same key and value stated positively. */
  negated?: boolean;
  /** Holds many values at once (preferences, habits): replaced only with a change cue. */
  multi?: boolean;
}

/** Prefix of the match key that stands for a memory's folded text (duplicates). */
export const TEXT_KEY = "text:";
/** Prefix of a fact's match key. */
export const FACT_KEY = "fact:";
/** Prefix of a value's match key: "switched from Vim" finds the memories whose fact values are "vim". */
export const VALUE_KEY = "value:";

/** Words that say a fact was added to, not replaced: "we also have a cat", "a second job". */
const ADDITIVE = /\b(also|too|as well|another|second|besides|in addition|additionally|both|plus)\b/;
/** Words that say something changed: needed to replace a preference or habit. */
const CHANGE = /\b(now|switched|switching|changed|changing|moved|moving|no longer|anymore|any more|instead|new|newly|replaced|rescheduled|postponed|pushed|bumped|these days|nowadays|from now on|started|starting|stopped|quit|gave up|left|got rid of|used to|converted|went|turned|became|become|upgraded|downgraded|traded)\b/;

/** Verbs of preference and habit: many values at once ("I drink tea", "I drink coffee"). */
const PREFERENCE_VERBS =
  "use|uses|using|prefer|prefers|drink|drinks|eat|eats|drive|drives|play|plays|read|reads|watch|watches|listen to|listens to|take|takes|wear|wears|run on|code in|write in|program in|shop at|bank with|go to|play on|ride|rides|practice|practise|do|own";
/** How one feels about something: one feeling at a time per thing (love → hate is a flip). */
const FEELINGS: Record<string, string> = {
  love: "+", loves: "+", adore: "+", adores: "+", like: "+", likes: "+", enjoy: "+", enjoys: "+", "am into": "+", "'m into": "+",
  hate: "-", hates: "-", dislike: "-", dislikes: "-", "can't stand": "-", "cannot stand": "-", detest: "-", "am not into": "-", "'m not into": "-", "don't like": "-", "do not like": "-",
};

/** Where a value ends: a clause, or words about when (they date the fact, they aren't it). */
const VALUE_END =
  /\s*(?:[,;.!?()]|\s-\s|\b(?:and|but|because|since|so|which|who|where|when|while|after|before|until|as of|starting|from|last|this|next|yesterday|today|tomorrow|recently|lately|ago|now|anymore|any more|again|instead|for (?:a|the|about|over|almost|nearly|\d)|in (?:january|february|march|april|may|june|july|august|september|october|november|december|\d{4})|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b|with (?:my|our|a|the))\b)/;

const NUMBER_WORDS = /^(?:\d|one|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty|forty|fifty)/;

/** Folded for comparison: lower case, accents and apostrophes normalised, spaces collapsed. */
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

/** A value as compared: articles, possessives and filler dropped, punctuation gone. */
function cleanValue(raw: string): string {
  const cut = raw.split(VALUE_END)[0] ?? raw;
  return cut
    .replace(/[^\p{L}\p{N}$€£%:.@+#/\s-]/gu, " ")
    .replace(/\b(?:a|an|the|my|our|his|her|their|new|old|current|currently|really|just|actually|very|pretty|quite|big|small|little|nice|lovely|tiny|cute|great|fancy|cozy|cosy|beautiful)\b/g, " ")
    .replace(/[.:]+$/, "")
    .replace(/\s+/g, " ")
    .trim();
}

/** Attribute names as keys: "phone number" → "phone-number", leading "new"/"current"/"favourite" kept only when it names the attribute. */
function attribute(raw: string): string {
  return raw
    .replace(/\b(?:new|current|old|present|latest|now)\b/g, " ")
    .replace(/\bfavou?rite\b/g, "favorite")
    .trim()
    .replace(/\s+/g, "-");
}

/** "I", "we", "my sister", "Marcus": the subject a fact is about, folded. */
const SUBJECT = String.raw`(i|we|my (?:wife|husband|partner|girlfriend|boyfriend|sister|brother|mom|mum|mother|dad|father|son|daughter|boss|manager|friend [a-z]+|best friend|roommate|flatmate|grandma|grandmother|grandpa|grandfather|aunt|uncle|cousin|kid|child|baby|dog|cat)|[A-Z][a-z]+(?: [A-Z][a-z]+)?)`;

function subjectKey(raw: string): string {
  const s = raw.toLowerCase();
  if (s === "i") return "self";
  if (s === "we") return "self";
  return s.replace(/^my /, "").replace(/\s+/g, "-");
}

interface Pattern {
  attr: string;
  re: RegExp;
  multi?: boolean;
}

/** Subject-verb patterns; the value is the last group. Tested on the original text (names keep their capitals). */
const PATTERNS: Pattern[] = [
  { attr: "home", re: new RegExp(String.raw`\b${SUBJECT}(?:'ve| have)? (?:just |recently |finally |now |currently |still )?(?:live|lives|living|reside|resides|am living|'m living|are living|is living|moved|have moved|'ve moved|relocated|am based|'m based|are based|is based|settled|am staying|'m staying) (?:back )?(?:in|to|into|at|near|over to|out to|down to|up to) (.+)`, "i") },
  { attr: "home", re: /\b(my|our) (?:new )?(?:home|address|place|flat|apartment|house|home address) (?:is|is now|now is) (?:in |at |on |near )?(.+)/i },
  { attr: "employer", re: new RegExp(String.raw`\b${SUBJECT}(?:'ve| have| has)? (?:just |recently |finally |now |currently |still )?(?:work|works|working|am working|'m working|is working|are working|joined|started at|started working at|started working for|got a job (?:at|with)|took a job (?:at|with)|am employed|'m employed|is employed|accepted an offer from|accepted a job at|signed with|am with|'m with) (?:at |for |by |with )?(.+)`, "i") },
  { attr: "employer", re: /\b(my|our) (?:new )?(?:employer|company|workplace|job) (?:is|is now|now is) (?:at |with )?(.+)/i },
  { attr: "job", re: new RegExp(String.raw`\b${SUBJECT} (?:am|'m|is|are|was promoted to|got promoted to|have been promoted to|'ve been promoted to|became|now work as|work as|works as|am working as|'m working as|started as) (?:now |currently |still )?(?:a|an|the)? ?((?:senior |junior |lead |head |staff |principal |chief |assistant |associate )?(?:[a-z]+ )?(?:engineer|developer|designer|manager|teacher|nurse|doctor|lawyer|accountant|analyst|consultant|director|architect|scientist|researcher|editor|writer|chef|student|intern|professor|officer|administrator|specialist|coordinator|technician|pharmacist|therapist|programmer|cto|ceo|cfo|vp|lead|freelancer|contractor|barista|paramedic|pilot|mechanic|electrician|plumber|librarian))\b(.*)`, "i") },
  { attr: "status", re: new RegExp(String.raw`\b${SUBJECT} (?:am|'m|is|are|got|just got|have been|'ve been|has been) (?:now |currently |still |officially )?(married|single|engaged|divorced|separated|widowed|dating someone|in a relationship)\b`, "i") },
  { attr: "diet", re: new RegExp(String.raw`\b${SUBJECT} (?:am|'m|is|are|went|have gone|'ve gone|became|am now|'m now) (?:now |currently |still |fully )?(vegetarian|vegan|pescatarian|keto|gluten-free|dairy-free|paleo|carnivore|omnivore)\b`, "i") },
  { attr: "age", re: new RegExp(String.raw`\b${SUBJECT} (?:am|'m|is|are|just turned|turned|will be|'ll be) (\d{1,3})(?: years old| year old|\b)`, "i") },
  { attr: "car", re: new RegExp(String.raw`\b${SUBJECT} (?:now |currently |still )?(?:drive|drives|am driving|'m driving|bought|just bought|got|traded in for|sold .+ and bought) (?:a |an |the )?(?:new |used |second-hand )?((?:[A-Z][\w-]*|\d{4})(?: [A-Z0-9][\w-]*)*)(?: car)?\b`) },
  // "my phone number is …", "our landlord is …", "my sister's new number is …": one value per attribute.
  { attr: "", re: /\b(my|our|[A-Z][a-z]+'s|my [a-z]+'s) ((?:new |current |old |present )?(?:favou?rite |preferred |usual |regular |main |primary |go-to )?[a-z][a-z-]*(?: [a-z][a-z-]*){0,2}?) (?:is|is now|now is|has become|has changed to|changed to|moved to|got moved to|has moved to|was moved to|was changed to|was rescheduled to|is rescheduled to|got rescheduled to|was pushed to|is back to|went up to|went down to|dropped to|rose to|increased to|decreased to|became|will be|'s) (.+)/ },
  // "the standup is at 9", "the meeting moved to Thursday", "the rent went up to 1300".
  { attr: "", re: /\b(the|our|my) ((?:[a-z][a-z-]* ){0,3}?(?:meeting|standup|stand-up|call|sync|appointment|class|lesson|practice|session|review|interview|check-up|checkup|dinner|lunch|party|flight|train|deadline|launch|release|demo|rent|price|fee|subscription|salary|budget|rate|membership|plan|password|wifi password|code|pin|address|number|schedule|shift|commute|route|gym|office|desk|team|project|sprint|retro|one-on-one|1:1|game|match|practice|rehearsal|exam|test|appointment|booking|reservation)) (?:is|is now|now is|will be|has moved to|moved to|was moved to|got moved to|has been moved to|has changed to|changed to|was changed to|was rescheduled to|was rescheduled for|is rescheduled to|is rescheduled for|has been rescheduled to|has been rescheduled for|got rescheduled to|got rescheduled for|was pushed to|got pushed to|has been pushed to|was postponed to|got postponed to|has been postponed to|was bumped to|got bumped to|went up to|went down to|rose to|dropped to|increased to|decreased to|costs|now costs|is going to be|starts|now starts|happens|takes place|is held|will take place) (?:at |on |in |to |for )?(.+)/i },
  { attr: "pref", multi: true, re: new RegExp(String.raw`\b${SUBJECT} (?:now |mostly |usually |always |mainly |currently |only |really |still )?(${PREFERENCE_VERBS}) (.+)`, "i") },
];

/** "switched from Vim to VS Code", "changed from Chase to Ally": the old value, and the new. */
const SWITCH = /\b(?:switched|switching|changed|changing|moved|moving|went|converted|upgraded|downgraded|traded|migrated|transitioned|swapped) (?:over )?from (?:the |a |an |my |our )?(.+?) (?:to|for|over to) (?:the |a |an |my |our )?(.+)/i;
/** "I no longer drink coffee", "I stopped eating meat", "I don't use Vim anymore". */
const STOPPED = new RegExp(String.raw`\b${SUBJECT} (?:no longer|don't|do not|doesn't|does not|never|stopped|quit|gave up|have stopped|'ve stopped|have quit|'ve quit) (?:really |even )?(${PREFERENCE_VERBS}|working at|working for|living in|live in|work at|work for|[a-z]+ing) (.+?)(?: anymore| any more| now)?\b(?:[.!,;]|$)`, "i");
const FEELING = new RegExp(String.raw`\b${SUBJECT} (?:now |really |actually |absolutely |totally |still |kind of |kinda )?(${Object.keys(FEELINGS).map((k) => k.replace(/'/g, "'")).join("|")}) (.+)`, "i");

/** The facts a memory states, by the patterns above; empty for most chat. */
export function factsOf(content: string): Fact[] {
  const facts: Fact[] = [];
  // One sentence at a time: "I live in Paris. My sister lives in Rome." states two facts.
  for (const sentence of content.replace(/[\u2018\u2019\u02bc]/g, "'").split(/(?<=[.!?;])\s+|\n+/)) {
    if (/\?\s*$/.test(sentence)) continue; // a question states nothing
    if (/\b(?:if|would|could|might|maybe|perhaps|hope|hoping|wish|want to|wants to|plan to|planning to|thinking about|thinking of|considering|dream|dreaming|someday|one day)\b/i.test(sentence)) continue;
    const switched = SWITCH.exec(sentence);
    if (switched) {
      const [from, to] = [cleanValue(fold(switched[1])), cleanValue(fold(switched[2]))];
      if (from && to && from !== to) facts.push({ key: `switch`, value: to, negated: false, multi: true }, { key: "switch-from", value: from, negated: true, multi: true });
    }
    const stopped = STOPPED.exec(sentence);
    if (stopped) {
      const value = cleanValue(fold(stopped[3]));
      if (value) facts.push({ key: `${subjectKey(stopped[1])}.${verbKey(stopped[2])}`, value, negated: true, multi: true });
    }
    const feeling = FEELING.exec(sentence);
    if (feeling && !stopped) {
      const object = cleanValue(fold(feeling[3]));
      const polarity = FEELINGS[feeling[2].toLowerCase()];
      if (object && polarity) facts.push({ key: `${subjectKey(feeling[1])}.feels:${object}`, value: polarity });
    }
    for (const p of PATTERNS) {
      const m = p.re.exec(sentence);
      if (!m) continue;
      if (p.attr === "") {
        const owner = m[1].toLowerCase();
        const subject = owner === "my" || owner === "our" || owner === "the" ? "self" : owner.replace(/^my /, "").replace(/'s$/, "");
        const attr = attribute(fold(m[2]));
        const value = cleanValue(fold(m[3]));
        if (!attr || !value || /^(?:a|an|the|so|very|too|really|not|also|still|one|going|getting|doing|coming|being)$/.test(value.split(" ")[0] ?? "")) continue;
        facts.push({ key: `${owner === "the" ? "the" : subject}.${attr}`, value });
        continue;
      }
      if (p.attr === "pref") {
        if (stopped || feeling) continue;
        const value = cleanValue(fold(m[3]));
        if (value) facts.push({ key: `${subjectKey(m[1])}.${verbKey(m[2])}`, value, multi: true });
        continue;
      }
      const value = cleanValue(fold(m[m.length - (p.attr === "job" ? 2 : 1)]));
      if (!value || (p.attr === "home" && NUMBER_WORDS.test(value) && !/\d/.test(value.slice(0, 1)))) continue;
      facts.push({ key: `${subjectKey(m[1])}.${p.attr}`, value });
    }
  }
  return dedupeFacts(facts);
}

function verbKey(verb: string): string {
  const v = verb.toLowerCase().replace(/^(?:working|work) (?:at|for)$/, "employer").replace(/^(?:living|live) in$/, "home");
  if (v === "employer" || v === "home") return v;
  return v.replace(/(?:ing|s)$/, "").replace(/ /g, "-");
}

function dedupeFacts(facts: Fact[]): Fact[] {
  const seen = new Set<string>();
  return facts.filter((f) => {
    const k = `${f.key}\u0000${f.value}\u0000${f.negated ? 1 : 0}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** Words that carry no fact: a memory of only these ("Thanks!", "ok, see you") is chat, never a duplicate. */
const PHATIC = new Set(
  "a an the i you we it is are was be to of and or so too very really just thanks thank ok okay yes yeah yep no nope sure cool great nice good awesome wow haha lol hi hey hello bye see soon later totally agree same me definitely absolutely right true sounds love that this my your oh ah hmm well glad happy".split(" "),
);
/** Fewest words, and fewest words beyond PHATIC, a memory needs before a second copy counts as a duplicate. */
const DUPLICATE_MIN_WORDS = 4;
const DUPLICATE_MIN_CONTENT_WORDS = 2;

/**
 * The folded text a duplicate is recognised by (punctuation, case, accents and spacing aside), or
 * undefined for memories too short or too empty of content to be facts ("Thanks!", "ok").
 */
export function textKey(content: string): string | undefined {
  const words = fold(content).replace(/[^\p{L}\p{N}\s]/gu, " ").split(/\s+/).filter(Boolean);
  if (words.length < DUPLICATE_MIN_WORDS) return undefined;
  if (words.filter((w) => !PHATIC.has(w)).length < DUPLICATE_MIN_CONTENT_WORDS) return undefined;
  return `${TEXT_KEY}${words.join(" ")}`;
}

/** The keys a memory is stored with (Store.memoriesMatching): its text key and one per fact and value. */
export function matchKeysOf(content: string): string[] {
  const keys: string[] = [];
  const text = textKey(content);
  if (text) keys.push(text);
  for (const f of factsOf(content)) {
    if (f.key === "switch" || f.key === "switch-from") continue;
    keys.push(`${FACT_KEY}${f.key}`);
    if (f.multi) keys.push(`${VALUE_KEY}${f.value}`);
  }
  return [...new Set(keys)];
}

/** The keys to look older memories up by, for a new memory: its own, and the values it says it switched from. */
export function lookupKeysOf(content: string, facts = factsOf(content)): string[] {
  const keys = matchKeysOf(content);
  for (const f of facts) if (f.key === "switch-from") keys.push(`${VALUE_KEY}${f.value}`);
  for (const f of facts) if (f.negated && f.key !== "switch-from") keys.push(`${VALUE_KEY}${f.value}`);
  return [...new Set(keys)];
}

/**
 * Why `newer` replaces `older` (both of one user and agent, `older` current), or undefined when
 * it doesn't: the fact key both state with different values, a negation, or a switch.
 */
export function replacementReason(newer: string, older: string, newerFacts = factsOf(newer), olderFacts = factsOf(older)): string | undefined {
  const foldedNew = fold(newer);
  if (ADDITIVE.test(foldedNew)) return undefined;
  const changed = CHANGE.test(foldedNew);
  for (const f of newerFacts) {
    if (f.key === "switch-from") {
      const hit = olderFacts.find((o) => o.value === f.value || o.value.split(" ").includes(f.value) || f.value.split(" ").includes(o.value));
      if (hit) return `switched from ${f.value}`;
      continue;
    }
    if (f.key === "switch") continue;
    for (const o of olderFacts) {
      if (o.key !== f.key) continue;
      if (f.negated && !o.negated && (o.value === f.value || o.value.startsWith(`${f.value} `) || f.value.startsWith(`${o.value} `))) return `no longer ${f.key}: ${o.value}`;
      if (f.negated || o.negated) continue;
      if (o.value === f.value) continue;
      if (f.multi && !changed) continue;
      if (f.key.includes(".feels:") && o.value !== f.value) return `${f.key}: ${o.value} → ${f.value}`;
      return `${f.key}: ${o.value} → ${f.value}`;
    }
  }
  return undefined;
}
