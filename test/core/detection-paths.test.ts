import { describe, expect, it, vi } from "vitest";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createMemory } from "../../src/core/memories.js";
import { NEAR_SCAN } from "../../src/core/validity.js";
import { useModelStore } from "../helpers/model-store.js";

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "supersede");
const lines = async (name: string) => (await readFile(join(FIXTURES, name), "utf8")).split("\n").filter(Boolean).map((l) => JSON.parse(l) as { id?: string; facts?: string[]; content?: string });

/**
 * Detection reads a user's every current memory in one query when the user has few (core/validity.ts,
 * scannedUsers), and otherwise asks for candidates and searches by vector. The two must decide the
 * same: the real model (use-lite) on a real local store, scenarios of the development set, each
 * replayed by two users, one of whom is said to have too many to read whole.
 */
describe("detection decides the same whether it reads a user's memories whole or searches them", () => {
  const ctx = useModelStore("mm-detection-paths-");

  it("the same older facts marked replaced, by the same newer ones, in 24 scenarios", async () => {
    // A "searched" user is said to have more memories than detection reads whole.
    const atMost = ctx().store.memoriesAtMost.bind(ctx().store);
    vi.spyOn(ctx().store, "memoriesAtMost").mockImplementation(async (accountId, userIds) => {
      const most = await atMost(accountId, userIds);
      for (const u of userIds) if (u.startsWith("searched")) most.set(u, NEAR_SCAN + 1);
      return most;
    });
    const wholeReads = vi.spyOn(ctx().store, "currentMemoriesOf");
    const searches = vi.spyOn(ctx().store, "searchMemories");
    const fillers = (await lines("fillers.jsonl")).slice(0, 2).map((f) => f.content!);
    const scenarios = [...(await lines("replaced-dev.jsonl")).slice(0, 16), ...(await lines("both-true-dev.jsonl")).slice(0, 8)];

    /** Each fact's fate: the index of the fact that replaced it, or -1. */
    const replay = async (userId: string, facts: string[]) => {
      for (const content of fillers) await createMemory(ctx(), { content, userId });
      const ids: string[] = [];
      for (const content of facts) ids.push((await createMemory(ctx(), { content, userId })).id);
      return Promise.all(ids.map(async (id) => ids.indexOf((await ctx().store.getMemory(ctx().accountId, id))!.supersededBy ?? "")));
    };
    let marked = 0;
    for (const [n, s] of scenarios.entries()) {
      const read = await replay(`read${n}`, s.facts!);
      const searched = await replay(`searched${n}`, s.facts!);
      expect({ id: s.id, fates: searched }).toEqual({ id: s.id, fates: read });
      marked += read.filter((i) => i >= 0).length;
    }
    // Both ways were taken, and they had something to decide.
    expect(wholeReads.mock.calls.length).toBeGreaterThan(10);
    expect(searches.mock.calls.length).toBeGreaterThan(10);
    // Each search for the nearest may be approximate above NEAR_SCAN memories (through a vector
    // index, once the segment has one: storage/memories.ts segmentPlan); this store has none.
    expect(searches.mock.calls.map(([, , , options]) => options?.approximateAbove)).toEqual(searches.mock.calls.map(() => NEAR_SCAN));
    expect(marked).toBeGreaterThan(10);
  }, 300_000);
});
