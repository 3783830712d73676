import { describe, expect, it } from "vitest";
import { runShell, shellBlocks } from "../helpers/doc-examples.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

describe("docs/safety.md", () => {
  it("every sh example runs as printed and shows what the text says", async () => {
    const blocks = await shellBlocks("docs/safety.md");
    expect(blocks.length).toBe(3);
    const outputs: string[] = [];
    for (const block of blocks) {
      const r = await runShell(block.code, await tempDir());
      expect(r.code, `${block.heading} (line ${block.line}): ${r.stderr}`).toBe(0);
      outputs.push(r.stdout);
    }
    const [modes, billing, depth] = outputs;
    expect(modes.trim().split("\n")).toEqual([expect.stringMatching(/^700 .*\/store$/), expect.stringMatching(/^600 .*config\.json$/), expect.stringMatching(/^700 .*ledger$/), "0"]);
    expect(JSON.parse(billing.trim().split("\n").pop()!)).toMatchObject({ name: "docs-demo", used: 2, limit: 1000 });
    expect(depth.trim()).toBe("refused, exit 2");
  }, 120_000);
});
