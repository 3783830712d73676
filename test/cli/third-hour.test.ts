import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runMm } from "../helpers/spawn-mm.js";
import { runInTerminal } from "../helpers/terminal.js";
import { useTempDirs } from "../helpers/temp.js";

/** Issue #58: what a newcomer met in their third hour, each checked the way they met it. */

const tempDir = useTempDirs();

describe("progress lines in a real terminal", () => {
  it("end before anything else is printed: the new store's note and an import's refusal stand on lines of their own", async () => {
    const dir = await tempDir();
    const batch = join(dir, "notes.jsonl");
    await writeFile(batch, `${JSON.stringify({ content: "I keep bees", userId: "u" })}\n`);
    const store = join(dir, "store");
    const added = await runInTerminal(["memories", "add", "--batch", batch, "--no-color"], { store });
    expect(added.code, added.raw).toBe(0);
    expect(added.screen, added.raw).toContain(`mm: created a new store at ${store} (from MM_STORE)`);
    expect(added.screen).toContain("Added 1 memory.");

    const exported = join(dir, "export.jsonl");
    expect((await runMm(["export", "-o", exported], { store })).code).toBe(0);
    const other = join(dir, "other");
    const refused = await runInTerminal(["import", "--from", "mcp-memory", exported, "--no-color"], { store: other });
    expect(refused.code, refused.raw).toBe(2);
    expect(refused.screen, refused.raw).toContain(`mm: created a new store at ${other} (from MM_STORE)`);
    expect(refused.screen.some((l) => l.startsWith("mm: This file is an mm export"))).toBe(true);
    for (const run of [added, refused]) expect(run.screen.filter((l) => l.includes("loading the model")), run.raw).toEqual([]);
  });
});
