import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { json, runMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

/** A replacement is one row in one commit: killed anywhere, both memories stay readable and it is recorded whole or not at all. */
describe("replacements are crash-safe", () => {
  it("a create that replaces a memory is one commit with the mark: killed before it, neither; after it, both whole", async () => {
    const store = join(await tempDir(), "store");
    const mm = (args: string[], env?: Record<string, string>) => runMm(args, { store, env });
    const paris = json(await mm(["memories", "add", "I live in Paris", "--user", "u"])).id;
    const york = json(await mm(["memories", "add", "Our office is in York", "--user", "u"])).id;
    const before = await mm(["memories", "add", "I moved to Berlin", "--user", "u"], { MM_TEST_CRASH_AT: "billed-commit:before" });
    expect(before.signal).toBe("SIGKILL");
    expect(json(await mm(["memories", "list", "--user", "u"])).items.map((m: { content: string }) => m.content).sort()).toEqual(["I live in Paris", "Our office is in York"]);
    expect(json(await mm(["memories", "get", paris]))).not.toHaveProperty("supersededBy");

    // No point lies between the insert and the mark: the one a sealed segment needs is never reached.
    const between = await mm(["memories", "add", "Our office moved to Leeds", "--user", "u"], { MM_TEST_CRASH_AT: "supersede:after-insert" });
    expect(between.signal).toBeNull();
    expect(between.code).toBe(0);
    expect(json(between).supersedes).toEqual([york]);

    const after = await mm(["memories", "add", "I moved to Berlin", "--user", "u"], { MM_TEST_CRASH_AT: "billed-commit:after" });
    expect(after.signal).toBe("SIGKILL");
    const old = json(await mm(["memories", "get", paris]));
    const berlin = json(await mm(["memories", "get", old.supersededBy]));
    expect(berlin.content).toBe("I moved to Berlin");
    expect(berlin.supersedes).toEqual([paris]);
    expect(json(await mm(["memories", "history", paris])).events.map((e: { type: string }) => e.type)).toEqual(["superseded"]);
  });

  it("killed between a create's insert and the mark on a memory a sealed segment holds: both readable, the older one current", async () => {
    const store = join(await tempDir(), "store");
    // One memory per segment: the older memory is in a sealed segment when the newer is added.
    const tuning = { MM_TEST_TUNING: JSON.stringify({ segmentRows: 1 }) };
    const mm = (args: string[], env?: Record<string, string>) => runMm(args, { store, env: { ...tuning, ...env } });
    const paris = json(await mm(["memories", "add", "I live in Paris", "--user", "u"])).id;
    const crashed = await mm(["memories", "add", "I moved to Berlin", "--user", "u"], { MM_TEST_CRASH_AT: "supersede:after-insert" });
    expect(crashed.signal).toBe("SIGKILL");
    expect(crashed.stdout).toBe("");

    const items = json(await mm(["memories", "list", "--user", "u"])).items;
    const berlin = items.find((m: { content: string }) => m.content === "I moved to Berlin");
    expect(berlin).toBeDefined();
    expect(berlin).not.toHaveProperty("supersedes");
    const old = json(await mm(["memories", "get", paris]));
    expect(old).not.toHaveProperty("supersededBy");
    expect(json(await mm(["memories", "history", paris])).events).toEqual([]);
    // The store takes writes, and the replacement can be recorded now.
    expect(json(await mm(["memories", "supersede", paris, berlin.id])).supersededBy).toBe(berlin.id);
  });

  it("killed before or after the commit of mm memories supersede: not recorded, or recorded whole", async () => {
    const store = join(await tempDir(), "store");
    const mm = (args: string[], env?: Record<string, string>) => runMm(args, { store, env });
    const a = json(await mm(["memories", "add", "Lunch is on Thursday", "--user", "u"])).id;
    const b = json(await mm(["memories", "add", "Lunch moved to the canteen terrace", "--user", "u", "--no-detect"])).id;

    const before = await mm(["memories", "supersede", a, b], { MM_TEST_CRASH_AT: "billed-commit:before" });
    expect(before.signal).toBe("SIGKILL");
    expect(json(await mm(["memories", "get", a]))).not.toHaveProperty("supersededBy");
    expect(json(await mm(["memories", "history", a])).events).toEqual([]);

    const after = await mm(["memories", "supersede", a, b], { MM_TEST_CRASH_AT: "billed-commit:after" });
    expect(after.signal).toBe("SIGKILL");
    const old = json(await mm(["memories", "get", a]));
    expect(old.supersededBy).toBe(b);
    expect(old.supersededAt).toMatch(/Z$/);
    expect(json(await mm(["memories", "history", a])).events.map((e: { type: string; memoryId: string }) => [e.type, e.memoryId])).toEqual([["superseded", b]]);
    expect(json(await mm(["memories", "get", b])).supersedes).toEqual([a]);
  });
});

describe("entity merge is crash-safe", () => {
  it("killed after the relations moved: no reference to a missing entity, and merging again finishes", async () => {
    const store = join(await tempDir(), "store");
    const mm = (args: string[], env?: Record<string, string>) => runMm(args, { store, env });
    const keep = json(await mm(["entities", "create", "Acme Robotics", "--type", "ORGANIZATION"])).id;
    const other = json(await mm(["entities", "create", "ACME Robotix", "--type", "ORGANIZATION"])).id;
    const ada = json(await mm(["entities", "create", "Ada", "--type", "PERSON"])).id;
    const rel = json(await mm(["relations", "create", "--source", ada, "--target", other, "--type", "WORKS_FOR"])).id;
    const memory = json(await mm(["memories", "add", "Ada joined ACME Robotix", "--user", "u", "--entity", other])).id;

    const crashed = await mm(["entities", "merge", keep, other], { MM_TEST_CRASH_AT: "entity-merge:after-relations" });
    expect(crashed.signal).toBe("SIGKILL");
    expect(json(await mm(["relations", "get", rel])).targetId).toBe(keep);
    expect(json(await mm(["memories", "get", memory])).entityIds).toEqual([other]); // still a live entity
    expect((await mm(["entities", "get", other])).code).toBe(0);

    const done = json(await mm(["entities", "merge", keep, other]));
    expect(done).toMatchObject({ movedLinks: 1, merged: { id: other } });
    expect(json(await mm(["memories", "get", memory])).entityIds).toEqual([keep]);
    expect((await mm(["entities", "get", other])).code).toBe(3);
  });
});
