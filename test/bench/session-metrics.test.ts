import { describe, expect, it } from "vitest";
import { sessionMetrics } from "../../scripts/session-metrics.mjs";

/** LoCoMo's turn ids name their session: "D3:12" is turn 12 of session 3. */
const sessionOf = (id: string) => Number(/^D(\d+):/.exec(id)![1]);
const metrics = (retrieved: (string | null)[], evidence: string[]) => sessionMetrics(retrieved, evidence, sessionOf) as { hit1: number; ndcg5: number };

describe("session-level Hit@1 and NDCG@5 of a turn ranking (npm run bench:locomo)", () => {
  it("ranks sessions by their best turn: the evidence's session second gives no hit and 1 / log2(3)", () => {
    const m = metrics(["D1:1", "D2:3", "D1:5", "D3:2"], ["D2:3"]);
    expect(m.hit1).toBe(0);
    expect(m.ndcg5).toBeCloseTo(1 / Math.log2(3), 10);
  });

  it("a session counts once, however many of its turns rank: the evidence's session first is a hit and 1", () => {
    expect(metrics(["D1:1", "D1:2", "D2:3"], ["D1:9"])).toEqual({ hit1: 1, ndcg5: 1 });
  });

  it("evidence in two sessions is measured against their ideal order", () => {
    const m = metrics(["D1:1", "D2:3", "D3:2"], ["D1:4", "D3:2"]);
    expect(m.hit1).toBe(1);
    expect(m.ndcg5).toBeCloseTo((1 + 1 / Math.log2(4)) / (1 + 1 / Math.log2(3)), 10);
  });

  it("only the first five sessions count, and hits that map to no turn are skipped", () => {
    const seven = ["D1:1", null, "D2:1", "D3:1", "D4:1", "D5:1", "D6:1", "D7:1"];
    expect(metrics(seven, ["D6:2"])).toEqual({ hit1: 0, ndcg5: 0 });
    expect(metrics(seven, ["D5:2"]).ndcg5).toBeCloseTo(1 / Math.log2(6), 10);
  });

  it("nothing retrieved is no hit and 0", () => {
    expect(metrics([], ["D1:1"])).toEqual({ hit1: 0, ndcg5: 0 });
    expect(metrics([null, null], ["D1:1"])).toEqual({ hit1: 0, ndcg5: 0 });
  });
});
