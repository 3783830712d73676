import { describe, expect, it } from "vitest";
import { runShell, shellBlocks } from "../helpers/doc-examples.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

/** Every ```sh block of the agents and import/export pages runs exactly as printed, in a fresh store, and prints what the page says. */
const EXPECTED: Record<string, (RegExp | string)[]> = {
  "docs/agents.md": [/^33$/m, /^Alice switched from coffee to green tea$/m],
  "docs/import-export.md": ["identical but for the header's exportedAt", /^John_Smith: Speaks fluent Spanish$/m, /^2024-07-20T17:15:30\.123Z Prefers vegetarian food$/m],
};

describe.each(Object.keys(EXPECTED))("%s", (file) => {
  it("runs each shell example as printed", async () => {
    const blocks = await shellBlocks(file);
    expect(blocks.length).toBeGreaterThan(0);
    let stdout = "";
    for (const block of blocks) {
      const r = await runShell(block.code, await tempDir());
      expect(r.code, `${file}:${block.line} (${block.heading})\n${r.stderr}`).toBe(0);
      stdout += r.stdout;
    }
    for (const want of EXPECTED[file]) {
      if (typeof want === "string") expect(stdout).toContain(want);
      else expect(stdout).toMatch(want);
    }
  });
});
