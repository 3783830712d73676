import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { json, runMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

describe("entity delete is crash-safe", () => {
  it("killed between the graph commit and the memory unlink: no relation or link to the entity is ever visible", async () => {
    const store = join(await tempDir(), "store");
    const mm = (args: string[], env?: Record<string, string>) => runMm(args, { store, env });
    const ada = json(await mm(["entities", "create", "Ada", "--type", "PERSON"])).id;
    const bob = json(await mm(["entities", "create", "Bob", "--type", "PERSON"])).id;
    await mm(["relations", "create", "--source", ada, "--target", bob, "--type", "KNOWS"]);
    await mm(["relations", "create", "--source", bob, "--target", ada, "--type", "KNOWS"]);
    const kept = json(await mm(["relations", "create", "--source", bob, "--target", bob, "--type", "RELATED_TO"])).id;
    const memory = json(await mm(["memories", "add", "Ada and Bob met", "--user", "u", "--entity", ada, "--entity", bob])).id;

    const crashed = await mm(["entities", "delete", ada, "--yes"], { MM_TEST_CRASH_AT: "entity-delete:after-graph-commit" });
    expect(crashed.signal).toBe("SIGKILL");
    expect(crashed.stdout).toBe("");

    expect((await mm(["entities", "get", ada])).code).toBe(3);
    const relations = json(await mm(["relations", "list"]));
    expect(relations.items.map((r: { id: string }) => r.id)).toEqual([kept]);
    expect(relations.pagination.total).toBe(1);
    expect(json(await mm(["memories", "get", memory])).entityIds).toEqual([bob]);
    expect((await mm(["entities", "memories", ada])).code).toBe(3);
    // The store still takes writes (the dead process's lock is taken over).
    expect((await mm(["entities", "delete", bob, "--yes"])).code).toBe(0);
    expect(json(await mm(["memories", "get", memory]))).not.toHaveProperty("entityIds");
  });
});
