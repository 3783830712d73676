import { describe, expect, it } from "vitest";
import { CALL_COST, planBatches } from "../../src/embedder/batching.js";

/** Texts of the given lengths ("xxx…"), each distinct by its length and position. */
const texts = (...lengths: number[]) => lengths.map((n, i) => `${i}`.padEnd(n, "x"));

/** What the plan costs the busiest of `parts` workers, handing calls out in order to the first free. */
function finish(plan: number[][], list: string[], parts: number): number {
  const busy = new Array<number>(parts).fill(0);
  for (const call of plan) {
    const cost = CALL_COST + call.length * Math.max(...call.map((i) => list[i]!.length));
    busy[busy.indexOf(Math.min(...busy))]! += cost;
  }
  return Math.max(...busy);
}

function expectEveryTextOnce(plan: number[][], count: number) {
  expect(plan.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: count }, (_, i) => i));
}

describe("planBatches", () => {
  it("a big batch: calls of at most the batch size, each of texts of about the same length, longest first", () => {
    const lengths = Array.from({ length: 200 }, (_, i) => 10 + ((i * 37) % 190));
    const list = texts(...lengths);
    const plan = planBatches(list, 2, 32);
    expectEveryTextOnce(plan, 200);
    expect(plan.map((c) => c.length)).toEqual([32, 32, 32, 32, 32, 32, 8]);
    const flat = plan.flat().map((i) => list[i]!.length);
    expect(flat).toEqual([...flat].sort((a, b) => b - a));
  });

  it("one thread: the same calls of the batch size", () => {
    const list = texts(5, 50, 20, 40, 30);
    expect(planBatches(list, 1, 2)).toEqual([[1, 3], [4, 2], [0]]);
  });

  it("a small group on two workers: cut so both finish about together, never worse than a call per worker", () => {
    // One long text and seven short ones: the long one alone, the short ones together.
    const list = texts(400, 60, 55, 50, 45, 40, 35, 30);
    const plan = planBatches(list, 2, 32);
    expectEveryTextOnce(plan, 8);
    expect(plan).toContainEqual([0]);
    expect(finish(plan, list, 2)).toBeLessThanOrEqual(CALL_COST + 400);
    // Against the best split into exactly two calls (what one call per worker would do).
    const sorted = list.map((t) => t.length).sort((a, b) => b - a);
    const twoCalls = Math.min(...sorted.slice(1).map((_, cut) => Math.max(CALL_COST + (cut + 1) * sorted[0]!, CALL_COST + (7 - cut) * sorted[cut + 1]!)));
    expect(finish(plan, list, 2)).toBeLessThanOrEqual(twoCalls);
  });

  it("texts of equal length on two workers: two even calls, not one call per text", () => {
    const list = texts(...new Array<number>(8).fill(100));
    const plan = planBatches(list, 2, 32);
    expect(plan.map((c) => c.length)).toEqual([4, 4]);
    expectEveryTextOnce(plan, 8);
  });

  it("costliest call first, and no more calls than texts", () => {
    const list = texts(10, 300);
    expect(planBatches(list, 4, 32)).toEqual([[1], [0]]);
    expect(planBatches(texts(42), 2, 32)).toEqual([[0]]);
    expect(planBatches([], 2, 32)).toEqual([]);
  });
});
