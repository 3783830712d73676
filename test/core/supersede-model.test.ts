import { describe, expect, it } from "vitest";
import { addMemoriesFromLines, createMemory } from "../../src/core/memories.js";
import { searchMemories } from "../../src/core/search.js";
import { changedByModel, endedReason, replacementReason, saysChanged, saysEnded, SAID_CHANGED } from "../../src/core/supersede.js";
import { useModelStore } from "../helpers/model-store.js";

describe("what a note says changed (no model)", () => {
  it("a word of change or a past-tense verb, in a note of its own that neither adds nor plans", () => {
    expect(saysChanged("Dana bought a two-bedroom in Astoria.")).toBe(true);
    expect(saysChanged("Promoted to Staff Product Designer today")).toBe(true);
    expect(saysChanged("Hana says her favourite colour is purple now.")).toBe(true);
    expect(saysChanged("My dentist is Dr. Smith.")).toBe(false);
    expect(saysChanged("My eye doctor is Dr. Ahmed.")).toBe(false); // "Dr." ends no sentence: "Ahmed" is no verb
    expect(saysChanged("We're flying to New York on the 20th.")).toBe(false); // "New York" says nothing
    expect(saysChanged("We also adopted a cat.")).toBe(false);
    expect(saysChanged("I'm also allergic to latex, found out last week.")).toBe(false);
    expect(saysChanged("Leo can't have eggs either, the doctor checked.")).toBe(false);
    expect(saysChanged("I might move to Rome now that the job is remote.")).toBe(false);
    expect(saysChanged("Caroline: I moved to Berlin last month!")).toBe(false);
    // A name or a state is no event: "called", "named", a participle after "is", "are" or "be".
    expect(saysChanged("Our cat is called Pepper.")).toBe(false);
    expect(saysChanged("My daughter has a hamster named Biscuit.")).toBe(false);
    expect(saysChanged("Release 2.5 is scheduled for 30 June.")).toBe(false);
    expect(saysChanged("Support tickets are tracked in Zendesk.")).toBe(false);
    expect(saysChanged("User's mother was discharged and is recovering at home.")).toBe(true);
    // A conversation or a thought reported is no event of what it is about.
    expect(saysChanged("Bo talked about the job offer on Monday.")).toBe(false);
    expect(saysChanged("My landlord told me the rent is now 1,500.")).toBe(true); // "now"
    // Taking something up begins a new thing; it ends nothing by itself.
    expect(saysChanged("Started vitamin D drops for the winter")).toBe(false);
    expect(saysChanged("Signed up for a pottery class on Thursdays")).toBe(false);
    expect(saysChanged("Ana picked up a Saturday job at the bakery")).toBe(false);
    expect(saysChanged("Vet added a joint supplement to Rufus's food")).toBe(false);
    expect(saysChanged("Signed the new contract at 52k")).toBe(true); // signed, not signed up
    // Booking adds an appointment or a plan; a plan that fell through is a change.
    expect(saysChanged("Booked the vet for Rex on March 3rd")).toBe(false);
    expect(saysChanged("Scheduled a call with the accountant")).toBe(false);
    expect(saysChanged("Venue double-booked us, wedding is 21 June 2027")).toBe(true);
    expect(saysChanged("Booked the dentist for March 10 instead")).toBe(true); // "instead"
    expect(saysChanged("Started vitamin D drops, switched from the tablets")).toBe(true); // "switched"
  });

  it("needs a word the older note doesn't say, and a cosine past SAID_CHANGED", () => {
    const high = SAID_CHANGED.near + 0.05;
    expect(changedByModel("Dana bought a two-bedroom in Astoria.", "Dana rents a studio in Williamsburg.", high, true)).toContain('"bought"');
    expect(changedByModel("Release 2.5 is scheduled for 30 June.", "Release 2.4 is scheduled for 12 May.", 0.97, true)).toBeUndefined();
    expect(changedByModel("Our cat is called Pepper.", "Our dog is called Bruno.", high, false)).toBeUndefined();
    expect(changedByModel("Dana bought a two-bedroom in Astoria.", "Dana rents a studio in Williamsburg.", SAID_CHANGED.keyed - 0.01, true)).toBeUndefined();
    expect(changedByModel("Dana bought a two-bedroom in Astoria.", "Dana rents a studio in Williamsburg.", SAID_CHANGED.near - 0.01, false)).toBeUndefined();
    expect(changedByModel("Dana bought a two-bedroom in Astoria.", "Dana rents a studio in Williamsburg.", SAID_CHANGED.near - 0.01, true)).toBeDefined();
    expect(changedByModel("I moved to Berlin.", "Caroline: I live in Paris.", 0.99, true)).toBeUndefined();
    // A labelled value ("Inhaler:", "Role:") is a note of its own, either side.
    expect(changedByModel("promoted!! mid-level FE now, still in payments", "Role: junior frontend dev, Payments team", 0.99, true)).toContain('"promoted"');
    expect(saysChanged("Inhaler: switched to Symbicort twice daily")).toBe(true);
    expect(saysChanged("Caroline: I switched to Symbicort")).toBe(false);
  });

  it.each([
    ["Biscuit got his rabies jab on 3 March", "Biscuit finished his kennel cough course on 17 March"],
    ["Ana talked about the garden on day 0, noting detail 0.", "Ana booked the garden on day 40, noting detail 66."],
    ["Watered the monstera on Sunday", "Repotted the fiddle-leaf fig on Sunday"],
    ["Emailed the plumber yesterday", "Booked the plumber for a visit on Friday"],
    // "new" both say names the thing: no word of change.
    ["Bo talked about the new job on day 5, noting detail 52.", "Bo booked the new job on day 26, noting detail 85."],
  ])("leaves two notes of what happened on days alone: %s / %s", (older, newer) => {
    expect(changedByModel(newer, older, 0.99, true)).toBeUndefined();
  });

  it.each([
    // A word of change in the newer note.
    ["Booked Dr Haddad for a filling on 3 March", "Rebooked the filling on 10 March"],
    ["Ran the team retro on Friday", "We moved the retro on Monday to the big room"],
    ["Had lunch at the canteen on Monday", "Had lunch at the new place on Friday"],
    ["I live in a flat in York", "Moved again, now in Leeds"],
    // A plan is no event that happened.
    ["Flight to Nairobi KQ101 departs 23:40 on the 4th", "Airline retimed KQ101, it leaves at 01:15 on the 5th"],
    // The newer note names no day.
    ["Had a check-up at the Elm Street clinic on 2 May", "Registered with the Riverside practice"],
  ])("still reads a change after a note of a day: %s / %s", (older, newer) => {
    expect(changedByModel(newer, older, 0.99, true)).toBeDefined();
  });
});

/** The real model (use-lite, bundled) on a real store: notes the patterns and frames don't read, each pair from test/fixtures/supersede. */
describe("what a note says ended (no model)", () => {
  it("a word of ending next to a name the older note carries", () => {
    expect(endedReason("Priya retired in March, Ledgerline gave us Tom instead", "Our accountant is Priya Shah at Ledgerline")).toBe('"retired" Priya');
    expect(endedReason("HipChat is read-only since the Slack move", "Team chat runs on HipChat")).toBe('"read-only" HipChat');
    expect(endedReason("Last day at Brightwell was Friday", "I work in procurement at Brightwell")).toBe('"last day at" Brightwell');
    expect(endedReason("cancelled the Spotify family plan", "We pay for Spotify Family")).toBe('"cancelled" Spotify');
    // The name must stand next to the word, and the older note must carry it.
    expect(endedReason("Amazon parcel delivered, left in the porch", "Amazon parcel delivered, left with the neighbour at no. 12")).toBeUndefined();
    expect(endedReason("Priya retired in March", "Our accountant is Tom Baker")).toBeUndefined();
    expect(endedReason("Tom said Priya's sister quit smoking", "Our accountant is Priya Shah")).toBeUndefined();
    // No wish, no transcript turn, and what happened on a day stays true.
    expect(endedReason("If Priya retired we would need a new accountant", "Our accountant is Priya Shah")).toBeUndefined();
    expect(endedReason("Priya retired last year.", "Caroline: Priya is our accountant")).toBeUndefined();
    // A labelled value is a note, not a turn, though SPEAKER takes its label for a name.
    expect(endedReason("Ended things with Marguerite. First session with Jonah went well", "Therapist: Marguerite, Tuesdays on Zoom")).toBe('"ended things with" Marguerite');
    expect(endedReason("Gary retired — new plumber is Ayesha at FlowRight", "Plumber: Gary, 07911 123456")).toBe('"retired" Gary');
    expect(endedReason("Gary's retired, Kasia runs the business now", "Gary fixed the boiler on Monday.")).toBeUndefined();
    expect(saysEnded("Gary's retired, Kasia runs the business now")).toBe(true);
    expect(saysEnded("I retired last year")).toBe(false); // no name
    expect(saysEnded("Caroline: Gary retired!")).toBe(false);
  });
});

describe("replaced facts read by the model", () => {
  const ctx = useModelStore("mm-supersede-model-");
  let user = 0;

  /** A user of its own with a few unrelated notes, then each fact in its own create; whether each fact ends replaced. */
  async function replayed(facts: string[]): Promise<boolean[]> {
    const userId = `u${++user}`;
    const add = async (content: string) => {
      let id = "";
      await addMemoriesFromLines(ctx(), [JSON.stringify({ content, userId })], { onResult: (r) => (id = r.memory!.id) });
      return id;
    };
    for (const note of ["Need to return the library books by Friday.", "The tomatoes on the balcony finally turned red.", "Bought new running shoes at the outlet on Saturday."]) await add(note);
    const ids = [];
    for (const f of facts) ids.push(await add(f));
    return Promise.all(ids.map(async (id) => (await ctx().store.getMemory(ctx().accountId, id))!.supersededBy !== null));
  }

  it("an older note found by a shared key, when the newer says what happened to it", async () => {
    const facts = ["Dana rents a studio in Williamsburg.", "Dana bought a two-bedroom in Astoria."];
    expect(replacementReason(facts[1], facts[0])).toBeUndefined(); // neither patterns nor frames
    expect(await replayed(facts)).toEqual([true, false]);
    expect(await replayed(["Taking sertraline 50mg once a day.", "Doctor upped the sertraline to 100mg."])).toEqual([true, false]);
  });

  it("an older note found by the model alone, sharing no key", async () => {
    expect(await replayed(["Hana's favourite colour is yellow.", "Hana says her favourite colour is purple now."])).toEqual([true, false]);
  });

  it("the same in a batch with several notes of one user (their vectors read once)", async () => {
    const userId = `u${++user}`;
    const ids: string[] = [];
    const add = (contents: string[]) => addMemoriesFromLines(ctx(), contents.map((content) => JSON.stringify({ content, userId })), { onResult: (r) => ids.push(r.memory!.id) });
    await add(["Hana's favourite colour is yellow.", "The tomatoes on the balcony finally turned red."]);
    await add(["Hana says her favourite colour is purple now.", "Moved the tomatoes to a bigger pot."]);
    const marked = await Promise.all(ids.map(async (id) => (await ctx().store.getMemory(ctx().accountId, id))!.supersededBy));
    expect(marked).toEqual([ids[2], null, null, null]);
  });

  it("an older note whose named thing a newer note says ended, found among the nearest by the model", async () => {
    expect(await replayed(["Our accountant is Priya Shah at Ledgerline.", "Priya retired in March, Ledgerline gave us Tom instead."])).toEqual([true, false]);
    expect(await replayed(["Team chat runs on HipChat.", "HipChat is read-only since the move to Slack."])).toEqual([true, false]);
    // An older note that states no fact the patterns read (no fact key) ends too.
    expect(await replayed(["FitHub membership, Aldgate branch", "cancelled FitHub, joined the climbing wall at Mile End"])).toEqual([true, false]);
    // An event stays true; a parcel left somewhere ends nothing.
    expect(await replayed(["Gary fixed the boiler on Monday.", "Gary's retired, Kasia runs the business now."])).toEqual([false, false]);
    expect(await replayed(["Amazon parcel delivered, left with the neighbour at no. 12", "Amazon parcel delivered, left in the porch"])).toEqual([false, false]);
  });

  it("search: a replaced memory is hidden and lends nothing; the memory that replaced it has its own score", async () => {
    const userId = `u${++user}`;
    for (const content of ["Need to return the library books by Friday.", "The tomatoes on the balcony finally turned red.", "Bought new running shoes at the outlet on Saturday."]) await createMemory(ctx(), { content, userId });
    const flat = await createMemory(ctx(), { content: "We live in the flat above the bakery on Rue Oberkampf, 3rd floor.", userId });
    const house = await createMemory(ctx(), { content: "Keys handed back to the agency this morning, we sleep in the Montreuil house tonight.", userId, supersedes: [flat.id] });
    const question = { query: "where do we live?", userId, threshold: 0, explain: true };
    // Asked for the replaced memories too, each has its own score; the flat is listed below the house that replaced it.
    const all = (await searchMemories(ctx(), { ...question, includeSuperseded: true })).results;
    const own = all.find((h) => h.id === house.id)!.explanation!.score;
    const flatOwn = all.find((h) => h.id === flat.id)!.explanation!.score;
    expect(own).toBeLessThan(flatOwn); // the house's words are far from the question: lending would have raised it
    // By default the flat is hidden, and the house keeps exactly its own score: a score is the query and the note only.
    const now = (await searchMemories(ctx(), question)).results;
    expect(now.map((h) => h.id)).not.toContain(flat.id);
    const hit = now.find((h) => h.id === house.id)!;
    expect(hit.score).toBe(own);
    expect(hit.explanation?.score).toBe(own);
    expect(Object.keys(hit.explanation!)).not.toContain("lentBy");
    // Semantic mode takes the `limit` nearest current memories, the replaced one not among them.
    const semantic = (await searchMemories(ctx(), { ...question, mode: "semantic", limit: 3 })).results;
    expect(semantic).toHaveLength(3);
    expect(semantic.map((h) => h.id)).not.toContain(flat.id);
  });

  it("leaves still-true pairs written to look like replacements", async () => {
    expect(await replayed(["Release 2.4 is scheduled for 12 May.", "Release 2.5 is scheduled for 30 June."])).toEqual([false, false]);
    expect(await replayed(["I visited Japan in 2019.", "I visited Peru in 2022."])).toEqual([false, false]);
    expect(await replayed(["Our dog is called Bruno.", "Our cat is called Pepper."])).toEqual([false, false]);
    expect(await replayed(["I'm allergic to penicillin.", "I'm also allergic to latex."])).toEqual([false, false]);
    expect(await replayed(["Flight to Madrid on June 12.", "Hotel in Madrid booked June 12-15."])).toEqual([false, false]);
    // A plan for something the older note names: both hold ("Rex" is a key of both).
    expect(await replayed(["We have a dog named Rex", "Booked the vet for Rex on March 3rd"])).toEqual([false, false]);
    // Two conversations about one thing: talking is no change of it.
    expect(await replayed(["Bo worried about the new job on day 5, noting detail 52.", "Bo talked about the new job on day 26, noting detail 85."])).toEqual([false, false]);
  });

  it("leaves a change said of something else", async () => {
    expect(await replayed(["My phone screen has a small crack in the corner.", "My new phone is a Pixel 8."])).toEqual([false, false]);
    // A bare "number" is a phone number: it replaces the phone's, not a number the older note names as something else.
    expect(await replayed(["My new library card number is 2290 4417", "Got a new number: 07700 900222"])).toEqual([false, false]);
    expect(await replayed(["My phone number is 07700 900123", "Got a new number: 07700 900222"])).toEqual([true, false]);
  });
});
