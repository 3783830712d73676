import { describe, expect, it } from "vitest";
import { runShell, shellBlocks } from "../helpers/doc-examples.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

describe("the README's first example", () => {
  it("adds a memory and finds it again at the default threshold, run exactly as printed", async () => {
    const blocks = await shellBlocks("README.md");
    const first = blocks.find((b) => /mm memories add/.test(b.code) && /mm memories search/.test(b.code));
    expect(first, "a README block that adds and searches").toBeDefined();
    const added = first!.code.match(/mm memories add "([^"]+)"/)![1];
    const r = await runShell(first!.code, await tempDir());
    expect(r.code, r.stderr).toBe(0);
    // Piped, every search prints the API's JSON; the block's searches each find the memory.
    const searches = r.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .filter((body) => "results" in body);
    expect(searches.length).toBeGreaterThan(0);
    for (const body of searches) expect(body.results.map((h: { content: string }) => h.content)).toContain(added);
  });
});
