import { describe, expect, it } from "vitest";
import { FREQUENT_SESSIONS, frequentlyRecalled } from "../../src/core/recall.js";

describe("frequentlyRecalled", () => {
  it("counts sessions, not prompts: a memory recalled in FREQUENT_SESSIONS sessions or more, most sessions first", () => {
    expect(FREQUENT_SESSIONS).toBe(2);
    const sessions = [["a", "b", "a", "a"], ["b", "c"], ["b", "a"], ["d"]];
    expect(frequentlyRecalled(sessions)).toEqual(["b", "a"]);
    // One session, however many prompts recalled it in it, is not frequent.
    expect(frequentlyRecalled([["x", "x", "x"]])).toEqual([]);
    expect(frequentlyRecalled([])).toEqual([]);
  });
});
