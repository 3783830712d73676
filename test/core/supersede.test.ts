// Replaced-fact detection (core/supersede.ts, core/frames.ts) on pairs of memories, newer first:
// what must be read as one fact changed, and what must be left alone. Then the same through the
// store, where an older memory is found only by the keys it was stored with.
import { afterEach, describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { createMemory, getMemory } from "../../src/core/memories.js";
import { framesOf } from "../../src/core/frames.js";
import { lookupKeysOf, matchKeysOf, replacementReason } from "../../src/core/supersede.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

/** Whether `newer` replaces `older` the way the write path decides it: a shared key, then the reason. */
function replaces(older: string, newer: string): boolean {
  const keys = new Set(lookupKeysOf(newer));
  if (!matchKeysOf(older).some((k) => keys.has(k) && !k.startsWith("text:"))) return false;
  return replacementReason(newer, older) !== undefined;
}

describe("frames: a value changed in any phrasing", () => {
  it.each([
    ["a price, with a cue", "Netflix costs me 10.99 a month.", "Netflix went up to 12.99 a month."],
    ["a name value, the same words around it", "My favourite podcast is Radiolab.", "My favourite podcast is now Hard Fork."],
    ["a time, the thing named first without its article", "The kids' pickup is at 3pm.", "Pickup is now at 3:45 because of the new timetable."],
    ["a head noun with another modifier", "Our mortgage rate is 3.1%.", "We remortgaged; the rate is 4.2% now."],
    ["a date, one name within the other", "Project Atlas is due on 30 September.", "Atlas deadline extended to 15 October."],
    ["an email, said anew without the word", "My email is ana.r@gmail.com.", "Use ana.rossi@proton.me for me from now on."],
    ["a street address", "Our address is 7 Harbour Road, Cobh.", "We're at 22 Quay Street now, still in Cobh."],
    ["a number in one unit, anchored by a word both say", "I take 5mg of amlodipine every morning.", "The doctor raised my amlodipine to 10mg."],
    ["a unit written apart", "I weigh 82 kg.", "I'm down to 76 kg now."],
    ["an actor before the thing", "Rent is 1450 a month.", "Landlord raised the rent to 1600 a month."],
    ["one part of a value changed", "Lily is in Year 2.", "Lily moved up to Year 3."],
    ["a pronoun's antecedent in the sentence before", "The backend is written in Python.", "We rewrote the backend; it's written in Go now."],
    ["a value stated anew without a cue", "My phone number is 555-0142.", "My phone number is 555-0199."],
  ])("%s", (_why, older, newer) => {
    expect(replaces(older, newer)).toBe(true);
  });

  it.each([
    ["two names on the same day", "Lunch with Priya on Thursday.", "Lunch with Marco on Thursday."],
    ["another subject", "My sister lives in Lyon.", "I live in Rome now."],
    ["a leading name is a person", "Marcus works at Acme.", "I work at Globex now."],
    ["what follows the value says which one", "I pay 50 a month for the gym.", "I pay 12 a month for cloud storage now."],
    ["two heads ('card PIN' / 'card limit')", "My bank card PIN is 4821.", "My credit card limit was raised to 8000."],
    ["other modifiers of one head ('cat's name' / 'code name')", "My cat's name is Tiger.", "The project was renamed; its code name is Kestrel now."],
    ["a value of another kind", "My phone is an iPhone 12.", "My phone plan now costs 25 a month."],
    ["things one has several of, without a cue", "Call with Anna on Monday at 2pm.", "Call with Ben on Monday at 4pm."],
    ["same words, no cue, one word only", "The plumber comes on Wednesday.", "The electrician comes on Thursday."],
    ["'New York' is no change", "Training Tuesdays at 6pm at Hollow Lane.", "I'm taking the train to New York on the 20th."],
    ["'the 3rd floor' is not a date", "left laptop charger on library 3rd floor", "Library books due back 12th"],
    ["an additive cue", "The standup is at 9:30.", "The standup is also at 10 on Fridays now."],
    ["a list of words that differ in a time of day, no cue", "green tea garden morning", "green tea garden evening"],
    ["numbered notes on one topic, no cue", "note 115 about guitar and tennis", "note 121 about guitar and tennis"],
    ["a numbering label, even beside a word of change", "Note 3: talked about a broken bicycle chain with friend number 3", "Note 5: talked about moving to Oslo with friend number 5"],
  ])("leaves alone: %s", (_why, older, newer) => {
    expect(replaces(older, newer)).toBe(false);
  });

  it("reads subjects, topics, heads and values", () => {
    const [f] = framesOf(["The kids' pickup is at 3pm."]);
    expect(f).toMatchObject({ subject: "", topic: ["kid", "pickup"], head: "pickup", values: [{ text: "3pm", kind: "time" }], cue: false });
    const [g] = framesOf(["Marcus moved to Rome last month."]);
    expect(g).toMatchObject({ subject: "marcus", leading: true, values: [{ text: "rome", kind: "name" }], cue: true });
    expect(framesOf(["My phone number is 0612 345 678."])[0].values).toEqual([{ text: "0612 345 678", kind: "phone" }]);
    expect(framesOf(["Thanks, that sounds great!"])).toEqual([]);
  });
});

describe("rules beyond the dev set's phrasings", () => {
  it.each([
    ["a habit, any verb", "I run 5k three times a week.", "I no longer run; I cycle instead."],
    ["a role at a named place", "I'm an intern at Pixar.", "I'm now a junior animator at Pixar."],
    ["a diet", "I eat meat with most meals.", "I went vegetarian in January."],
    ["one of a pair of kinds", "I'm a cat person through and through.", "I've become more of a dog person lately."],
    ["a switch away from a value another fact names", "My pension provider is Aviva.", "I switched my pension from Aviva to Vanguard."],
    ["a switch away from a value only a frame names", "The team chats on Slack.", "The team moved from Slack to Teams."],
    ["leaving an employer", "I work remotely for a startup called Loomly.", "I quit Loomly and I'm now freelancing full time."],
    ["'instead of'", "My go-to coffee order is a flat white.", "These days I order an oat latte instead of a flat white."],
    ["'took over as'", "The Falcon project lead is Priya.", "Ravi took over as Falcon project lead."],
    ["a home named by its noun", "I share a flat in Glasgow with two friends.", "Found a place of my own in Edinburgh and moved in on Saturday."],
    ["a feeling about a pronoun", "I love horror movies.", "I can't watch horror movies anymore, I hate them now."],
    ["a new job", "I'm employed at Deutsche Bank in Frankfurt.", "Started my new job at Commerzbank today."],
    ["a label and an adverb before the fact", "My blood type is listed as A+ in the clinic notes.", "Correction: my blood type is actually O+."],
    ["a relative who moved", "My grandparents live in Krakow.", "My grandparents moved to Warsaw last spring."],
    ["'the user' in an agent's notes", "The user's home city is Phoenix.", "The user has relocated to Portland, Oregon."],
    ["a named person's home, whatever the verb", "Dad's place is in Harrogate.", "Dad sold up and bought a bungalow in Whitby."],
    ["a value with the same head noun", "Our team uses two-week sprints.", "We've switched to one-week sprints."],
    ["the attribute named in the plural", "My dentist is at Smile Studio on Church Road.", "Changed dentists - I go to Bright Dental now."],
    ["a feeling turned", "I'm a big fan of IPAs.", "I've gone off IPAs; I prefer stouts now."],
    ["an owner", "Maya owns the payments service.", "Payments service ownership moved to Theo."],
    ["a thing first, then what it acts through", "We deploy with Capistrano.", "Deploys go through ArgoCD now."],
    ["a trade, its verb first", "I drive a 2015 Mazda 3.", "Traded the Mazda in for a Skoda Enyaq."],
    ["an account closed", "I keep my passwords in 1Password.", "Moved everything to Proton Pass and deleted the 1Password account."],
    ["an offer accepted", "I'm a nurse at St Mary's Hospital.", "Accepted the offer from Royal Free, starting in March."],
    ["a start at a named place, no subject", "I work for Deliveroo in the ops team.", "Starting at Ocado on the 3rd."],
    // Two events on two days, and something besides the day changed, or a word of change says so.
    ["a plan retimed", "Dentist appointment on 3 March", "Dentist appointment moved to 17 March"],
    ["a second move", "Moved to Berlin on 3 March", "Moved to Munich on 9 October"],
    ["a new employer on another day", "Started at Zalando on 1 March", "Started at Bolt on 1 October"],
    ["a new number on another day", "Got a new phone number on 3 March: 555-0101", "Got a new phone number on 9 October: 555-0199"],
    ["a switch away from what a label states", "Usual hairdresser: Mia at Cut Above", "Started going to Jo at Snip Studio instead of Cut Above"],
    ["a move in words after an address label", "Address: 14 Elm Road, Bristol BS6 5AB", "Moved into 3 Carlton Court, Bath today"],
    ["an employer label after a job in words", "I work at Zalando as a backend dev", "Employer: Bolt (Tallinn)"],
  ])("%s", (_why, older, newer) => {
    expect(replaces(older, newer)).toBe(true);
  });

  it.each([
    ["an entity's notes in the third person", "Lives in Turin; calls every Sunday at 6pm", "Moved to Edinburgh last spring; works at a whisky distillery"],
    ["a booking is not a role", "User is a freelance wedding photographer based in Fitzroy", "User is training for the Melbourne Marathon in October"],
    ["a holiday home is not a home", "I live in a flat in York.", "We're staying at a cottage in Cornwall for a week."],
    ["a habit without a cue", "I read thrillers on the train.", "I read the news at breakfast."],
    ["a transcript's turns are talk", "Melanie: I paint landscapes on weekends.", "Melanie: I don't paint much these days."],
    ["'these are…' states no fact", "Melanie: Events like these are great for reminding us of how strong community can be!", "Melanie: Thanks, Caroline! These are for running."],
    ["another relative's home", "I live in a flat in York.", "My sister lives in a flat in Leeds."],
    ["a role told apart by a qualifier", "User's partner is Sam, a high school chemistry teacher", "Omar is my climbing partner."],
    ["another named person's home", "Dad's place is in Harrogate.", "Mia sold up and bought a bungalow in Whitby."],
    ["two conversations on two days", "I talked to Sam about the new job on Monday.", "I talked to Sam about the new job on Friday."],
    ["two reports of one topic", "Bo worried about the new job on day 5, noting detail 52.", "Bo talked about the new job on day 26, noting detail 85."],
    ["two new abilities", "Nico can now climb the stairs on his own.", "Nico can now say 'banana'."],
    ["two new things a place does", "The library now opens on Sundays.", "The library now lends out tools."],
    ["two new things a place has", "Our office now has standing desks.", "Our office now has a nap room."],
    ["two items of a list", "Reading list: Middlemarch", "Reading list: The Left Hand of Darkness"],
    ["a start at a time, not a place", "I work for Deliveroo in the ops team.", "Starting at 9 tomorrow for the stocktake."],
    // Two events on two days: only the day differs, and "went" or "new" names what both are about.
    ["two visits on two days", "Went to the dentist on 3 March", "Went to the dentist on 9 October"],
    ["two jobs on one new thing", "Booked the plumber for the new kitchen on Monday", "Finished painting the new kitchen on Saturday"],
    ["two visits to one new house", "We visited the new house on Saturday", "We measured the new house on Sunday"],
    ["two logged events of one topic", "Bo booked the new job on day 95646, noting detail 64.", "Bo finished the new job on day 99606, noting detail 33."],
    // Logs: what was done, with another number.
    ["two feeds at two times", "Fed Biscuit at 7am", "Fed Biscuit at 6pm"],
    ["two fill-ups written as labels", "Filled up the car: 42 litres", "Filled up the car: 38 litres"],
    ["a switch still planned", "Usual hairdresser: Mia at Cut Above", "I'm going to try Jo at Snip Studio instead of Cut Above"],
    ["another's address under a label", "Address: 14 Elm Road, Bristol", "Mum's address: 7 Birch Close, Harrogate"],
    ["a note about the person a label names", "Manager: Sunita Pillai", "Sunita is on leave until March"],
    ["a second phone beside a phone label", "Phone: 020 7946 0011 (home)", "My mobile is 07700 900123"],
  ])("leaves alone: %s", (_why, older, newer) => {
    expect(replaces(older, newer)).toBe(false);
  });
});

describe("labelled values: one label, one value", () => {
  it.each([
    ["a phone number under one label", "Mobile: 0412 111 908", "Mobile: 0412 338 771"],
    ["a label whose first word is a participle", "Preferred seat: aisle", "Preferred seat: window"],
    ["an employer, a qualifier after each", "Employer: Shopify (remote)", "Employer: Stripe (Dublin office)"],
    ["an agent's key", "user.city = Porto", "user.city = Lisbon"],
    ["an agent's key with an underscore", "reports_to: Benedikt Vogel", "reports_to: Sunita Pillai"],
    ["a head noun with a word before it", "Visa status: pending", "Visa status: approved, stamped 3 Nov"],
    ["a label with a qualifier in brackets", "Landlord (Mr Petrakis): 07700 900412", "Landlord (Mr Petrakis): 07700 900877"],
    ["an identifier in the label", "Order #88213: out for delivery", "Order #88213: delivered, signed for by the neighbour at no. 7"],
    ["a preference", "Passenger pref: exit row when available", "Passenger pref: bulkhead, no exit rows since her surgery"],
  ])("%s", (_why, older, newer) => {
    expect(replaces(older, newer)).toBe(true);
  });

  it.each([
    ["labels of lists", "Decision: use PostGIS for the distance matrix", "Decision: keep the monolith until Q3"],
    ["a bug list", "Bug: login button misaligned on iOS 17", "Bug: CSV export drops the last row"],
    ["things to try", "Restaurant to try: Dishoom in Kings Cross", "Restaurant to try: Padella at Borough Market"],
    ["a PIN that names what it is for", "Pin: bike lock 4471", "Pin: gym locker 0930"],
    ["two labels", "Work email: ana@acme.io", "Personal email: ana.r@proton.me"],
    ["two qualifiers", "Wifi (main): kettlebell-42", "Wifi (guest network): visitor-2026"],
    ["a person, not an attribute", "Dad: amlodipine 5mg, mornings", "Dad: aspirin 75mg, mornings"],
    ["a project's notes", "Project Heron: Felix leads mobile", "Project Heron: Amira leads backend"],
    ["an MCP entity named with an underscore, not an agent's key", "John_Smith: Speaks fluent Spanish", "John_Smith: Works at Anthropic as an engineer"],
    ["an MCP entity's observations, its name ending in a head noun", "Brightwater Hotel: Contact is general manager Claire Fontaine", "Brightwater Hotel: Wants the rooftop garden open by Memorial Day"],
    ["a day has many events", "Saturday: Finn's football 11:00", "Saturday: Ella's ballet 9:30"],
    ["things there are many of, as an agent's key", "user.languages: Portuguese (native)", "user.languages: English (fluent)"],
    ["a one-word label that needs a word before it", "Status: waiting on the landlord", "Status: invoice sent to Acme"],
    ["an additive cue", "Editor: VS Code", "Editor: also Neovim for quick edits"],
  ])("leaves alone: %s", (_why, older, newer) => {
    expect(replaces(older, newer)).toBe(false);
  });

  it("reads a transcript's speaker as a speaker, whatever the line says", () => {
    for (const [older, newer] of [
      ["John: The houses look real nice.", "John: They were awestruck and humbled."],
      ["Caroline: Bought a new painting at the Melbourne market", "Caroline: Painting class at Sunset Studio on 12 May"],
      ["Maria: Thanks, John.", "Maria: Congrats, Jon."],
    ]) {
      expect(replaces(older, newer)).toBe(false);
    }
  });
});

describe("an agent's notes about the user", () => {
  it.each([
    ["User's mother lives in Hobart and visits at Christmas", "My mother lives in Hobart and visits at Christmas"],
    ["User shoots on a Sony A7 IV", "I shoot on a Sony A7 IV"],
    ["The user's wifi password is otter-42", "My wifi password is otter-42"],
    ["User collects Zippo lighters", "I collect Zippo lighters"],
  ])("reads %j as the user's own %j", (agent, own) => {
    // The same facts (the text key, for duplicates, keeps the words as written).
    const facts = (content: string) => matchKeysOf(content).filter((k) => !k.startsWith("text:"));
    expect(facts(agent)).toEqual(facts(own));
  });

  it.each([
    ["User collects Zippo lighters", "User stopped collecting Zippo lighters"],
    ["User edits in Lightroom Classic", "User switched from Lightroom Classic to Capture One"],
    ["User's mother lives in Hobart and visits at Christmas", "User's mother moved to Perth last month"],
  ])("finds %j replaced by %j, as it would in the first person", (older, newer) => {
    expect(replaces(older, newer)).toBe(true);
  });
});

describe("twin notes with another number", () => {
  it.each([
    ["a dose", "User takes sertraline 50 mg each morning", "User takes sertraline 100 mg each morning"],
    ["a dose with its unit joined", "Insulin 12u at night, glargine 20mg", "Insulin 12u at night, glargine 24mg"],
    ["a time", "The ferry to Hydra leaves at 07:40 from Piraeus", "The ferry to Hydra leaves at 09:15 from Piraeus"],
    ["a price", "Netflix standard plan costs $15.49 a month", "Netflix standard plan costs $17.99 a month"],
  ])("%s", (_why, older, newer) => {
    expect(replaces(older, newer)).toBe(true);
  });

  it.each([
    ["a number that names the thing", "Room 12 is booked for the offsite", "Room 14 is booked for the offsite"],
    ["a locker", "Locker 212 holds the spare laptop chargers", "Locker 214 holds the spare laptop chargers"],
    ["a logged run", "Ran 5k along the canal today", "Ran 8k along the canal today"],
    ["logged spending", "Spent $45 on groceries at Aldi", "Spent $62 on groceries at Aldi"],
    ["other words too", "Dentist at 3pm on Tuesday", "Haircut at 5pm on Tuesday"],
    ["an additive cue", "Vitamin D 1000 IU daily", "Vitamin D 2000 IU daily as well"],
    ["a bare count that numbers the thing", "Sample jar 3 from the north field", "Sample jar 4 from the north field"],
  ])("leaves alone: %s", (_why, older, newer) => {
    expect(replaces(older, newer)).toBe(false);
  });
});

describe("through the store", () => {
  const tempDir = useTempDirs();
  const opened: Context[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((c) => c.close()));
  });

  it("finds the older memory by its frame's keys and marks only it", async () => {
    let t = Date.parse("2026-01-01T00:00:00.000Z");
    const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder(), clock: () => new Date((t += 1000)) });
    opened.push(ctx);
    const netflix = await createMemory(ctx, { content: "Netflix costs me 10.99 a month.", userId: "u" });
    const spotify = await createMemory(ctx, { content: "Spotify is 11.99 a month.", userId: "u" });
    const email = await createMemory(ctx, { content: "My email is ana.r@gmail.com.", userId: "u" });
    const raised = await createMemory(ctx, { content: "Netflix went up to 12.99 a month.", userId: "u" });
    expect(raised.supersedes).toEqual([netflix.id]);
    const moved = await createMemory(ctx, { content: "Use ana.rossi@proton.me for me from now on.", userId: "u" });
    expect(moved.supersedes).toEqual([email.id]);
    expect((await getMemory(ctx, spotify.id)).supersededBy).toBeUndefined();
    expect((await getMemory(ctx, email.id)).supersededBy).toBe(moved.id);
    // Another user's memory with the same frame is never a candidate.
    const other = await createMemory(ctx, { content: "Netflix went up to 13.99 a month.", userId: "v" });
    expect(other.supersedes).toBeUndefined();
  });
});
