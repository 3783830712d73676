import { describe, expect, it } from "vitest";
import { conversationOf, speakerOf } from "../../src/core/conversation.js";

describe("conversationOf", () => {
  it.each([
    ['{"sessionId":"s1"}', [], "sessionid=s1"],
    ['{"session_id":"s1"}', [], "sessionid=s1"],
    ['{"Session":3}', [], "session=3"],
    ['{"dia_id":"D1:3","session":1,"date_time":"x"}', [], "session=1"],
    ['{"thread-id":"t-19"}', [], "threadid=t-19"],
    ['{"conversationId":"c"}', ["session_9"], "conversationid=c"],
    [null, ["locomo", "session_2"], "tag=session_2"],
    [null, ["Conversation:7"], "tag=conversation:7"],
  ])("%s with tags %j is conversation %s", (metadata, tags, key) => {
    expect(conversationOf(metadata, tags)).toBe(key);
  });

  it.each([
    [null, []],
    ['{"topic":"health"}', ["prefs"]],
    ['{"session":""}', []],
    ['{"session":null}', []],
    ['{"session":{"id":1}}', []],
    ['["session", 1]', []],
    ["not json", ["sessions"]],
    [null, ["session"]],
  ])("%s with tags %j is no conversation", (metadata, tags) => {
    expect(conversationOf(metadata, tags)).toBeNull();
  });
});

describe("speakerOf", () => {
  it.each([
    ["Caroline: I went to a support group yesterday", "Caroline"],
    ["Mary Ann O'Neil: see you Friday", "Mary Ann O'Neil"],
    ["Zoë: merci!", "Zoë"],
    ["Dr. Okafor: take two a day", "Dr. Okafor"],
  ])("%j is spoken by %j", (content, speaker) => {
    expect(speakerOf(content)).toBe(speaker);
  });

  it.each([
    ["I went to a support group yesterday"],
    ["Things to buy this weekend: milk, eggs"], // five words before the colon: not a name
    ["[10:32] Bob: hi"],
    ["Meeting at 10:30 with Sam"],
    [": nothing before the colon"],
    ["Caroline:no space after the colon"],
  ])("%j names no speaker", (content) => {
    expect(speakerOf(content)).toBeNull();
  });
});
