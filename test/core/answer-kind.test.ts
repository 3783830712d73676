import { describe, expect, it } from "vitest";
import { answerKind, holdsKind } from "../../src/core/answer-kind.js";

describe("the kind of value a question asks for", () => {
  it.each([
    ["what time is the flu jab?", "time"],
    ["At what time does the pool open?", "time"],
    ["when is standup?", "when"],
    ["When does Max's internship end?", "when"],
    ["what day is bin collection?", "when"],
    ["what's the date of the wedding?", "when"],
    ["how often do I water the pelargoniums?", "often"],
    ["how long is the drive to Bergen?", "often"],
    ["how much was the electricity bill in February?", "amount"],
    ["how much does the gym cost?", "amount"],
    ["what's the rent on the studio?", "amount"],
    ["what's Priya Raman's day rate?", "amount"],
    ["what is the gym membership fee?", "amount"],
    ["whats my salary?", "amount"],
    ["what does the user charge for a half-day package?", "amount"],
    ["how much water have I been drinking?", "number"],
    ["how many cats do we have?", "number"],
    ["how old is Biscuit?", "number"],
    ["what dose of metoprolol am I on?", "number"],
    ["what's Arne's phone number?", "phone"],
    ["what's Arne's mobile?", "phone"],
    ["Jens Bauer's phone number", "phone"],
    ["what's Gary the plumber's email?", "email"],
    ["what's Sigrid's new address?", "address"],
    ["what's the new eftpos PIN?", "code"],
    ["what is the wifi password?", "code"],
  ])("%j asks for %s", (question, kind) => {
    expect(answerKind(question)).toBe(kind);
  });

  it.each([
    "when did I last back up my laptop?",
    "When was the smoke alarm replaced?",
    "which mobile handset do I use these days?",
    "what phone do I have?",
    "where does my sister live?",
    "who paid for dinner?",
    "which bank is my salary paid into?",
    "what email provider do I use?",
    "what code editor do I use at work?",
    "what's my favourite restaurant?",
    "what do I do when the alarm goes off?",
  ])("%j asks for no kind of value", (question) => {
    expect(answerKind(question)).toBeUndefined();
  });
});

describe("whether a note holds a value of a kind", () => {
  it.each([
    ["Flu jab at the health centre Nov 5, 11:15", "time"],
    ["Standup at 9.30 in the big room", "time"],
    ["Pickup at 6pm", "time"],
    ["Bin collection on Thursdays", "when"],
    ["Wedding is on the 14th", "when"],
    ["Dentist tomorrow", "when"],
    ["Visa expires 30/09/2026", "when"],
    ["Water the pelargoniums twice a week", "often"],
    ["Gym membership is €40 a month", "amount"],
    ["Studio costs AUD 1,100 per month", "amount"],
    ["Offer: 78k base", "amount"],
    ["Water intake today: 1.5 L", "number"],
    ["A third cat joined the household today", "number"],
    ["Taking metoprolol 25mg every morning", "number"],
    ["Randi's phone number 913 44 208", "phone"],
    ["ICU unit manager is Dev Patel, ext 4471", "phone"],
    ["Vendor contact: jens@maptiles.de", "email"],
    ["Sigrid lives in Bergen now, new address Nygårdsgaten 12", "address"],
    ["Mum moved to Rose Lane", "address"],
    ["The wifi password for the flat is otter-42", "code"],
    ["flat wifi: BT-Hub pw mangoJollof", "code"],
  ])("%j holds a %s", (text, kind) => {
    expect(holdsKind(text, kind as never)).toBe(true);
  });

  it.each([
    ["Abena graduates July 8 in Kumasi, need flights!!", "time"],
    ["Glasses prescription for the left eye", "when"],
    ["Barista shift at Grindsmith, tue/thu", "amount"],
    ["User has a rescue kelpie named Biscuit", "number"],
    ["User's accountant is Rhiannon Lee at Lee & Co", "phone"],
    ["Locker 7 at the gym", "phone"],
    ["Plumber = Gary Mills 027 431 889", "email"],
    ["Arne lives in the yellow house by the church", "address"],
    ["Bank changed the eftpos card, new PIN in the safe, not written down", "code"],
  ])("%j holds no %s", (text, kind) => {
    expect(holdsKind(text, kind as never)).toBe(false);
  });
});
