/**
 * `mm memories search --explain` (a spawned mm, the real model): each hit's signals and what each
 * added, in the JSON a script reads and under the table a person reads.
 */
import { describe, expect, it } from "vitest";
import { json, runMm } from "../helpers/spawn-mm.js";
import { runInTerminal } from "../helpers/terminal.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

describe("mm memories search --explain", () => {
  it("adds each hit's explanation to the JSON, and prints why under the table on a terminal", async () => {
    const store = `${await tempDir()}/store`;
    expect((await runMm(["memories", "add", "My passport expires in August 2028", "--user", "me"], { store })).code).toBe(0);
    expect((await runMm(["memories", "add", "The home wifi password is tangerine-42", "--user", "me"], { store })).code).toBe(0);

    const body = json(await runMm(["memories", "search", "when does my passport expire?", "--user", "me", "--threshold", "0", "--explain"], { store }));
    expect(body.results[0].content).toBe("My passport expires in August 2028");
    for (const h of body.results) {
      const { contributions: c, signals, score, model } = h.explanation;
      expect(score).toBe(h.score);
      expect(model).toBe("use-lite:universal-sentence-encoder-lite");
      expect(h.score).toBeCloseTo(1 / (1 + Math.exp(-(c.bias + c.cosine + c.keyword))), 12);
      expect(signals.cosine).toBeGreaterThanOrEqual(0);
    }
    expect(body.results[0].explanation.signals.keyword).toBe(1);
    // Without the flag, no explanation.
    const plain = json(await runMm(["memories", "search", "when does my passport expire?", "--user", "me"], { store }));
    expect(plain.results[0]).not.toHaveProperty("explanation");

    const shown = await runInTerminal(["memories", "search", "when does my passport expire?", "--user", "me", "--threshold", "0", "--explain", "--no-color"], { store, cols: 100 });
    const text = shown.screen.join("\n");
    expect(text).toContain("why: each signal");
    expect(text).toMatch(/1 {2}0\.\d{3} {2}cosine 0\.\d\d \(\+\d+\.\d\d\) {2}keyword 1\.00 \(\+\d+\.\d\d\) {2}bias −\d+\.\d\d {2}→ logit -?\d+\.\d\d/);
  });
});

describe("mm memories search --all", () => {
  it("shows the replaced memories that match at the default threshold, each marked with what replaced it", async () => {
    const store = `${await tempDir()}/store`;
    const old = json(await runMm(["memories", "add", "My phone number is 555-0142", "--user", "me"], { store }));
    const now = json(await runMm(["memories", "add", "Got a new phone, my number is 555-0199 now", "--user", "me"], { store }));
    expect(now.supersedes).toEqual([old.id]);
    const current = json(await runMm(["memories", "search", "what's my phone number?", "--user", "me"], { store }));
    expect(current.results.map((h: { id: string }) => h.id)).toEqual([now.id]);
    const all = json(await runMm(["memories", "search", "what's my phone number?", "--user", "me", "--all"], { store }));
    expect(all.results.map((h: { id: string }) => h.id)).toEqual([now.id, old.id]);
    expect(all.results[1].supersededBy).toBe(now.id);
    expect(all.results[1].score).toBeGreaterThanOrEqual(0.5);
    const shown = await runInTerminal(["memories", "search", "what's my phone number?", "--user", "me", "--all", "--no-color"], { store, cols: 120 });
    expect(shown.screen.join("\n")).toContain(`(replaced by ${now.id}`);
  });
});
