import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TOOLS } from "../../src/mcp/tools.js";
import { codeBlocks, ROOT } from "../helpers/doc-examples.js";
import { ok, stdioClient } from "../helpers/mcp-client.js";
import { runMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

/** The pages' ```sh examples run, and their output is checked, in test/docs/examples.test.ts with every other page's. */
describe("docs/agents.md's client configurations", () => {
  it("count the tools the server lists", async () => {
    const page = await readFile(join(ROOT, "docs/agents.md"), "utf8");
    const counts = [...page.matchAll(/\((\d+) tools\b/g)].map((m) => Number(m[1]));
    expect(counts.length).toBeGreaterThan(0);
    for (const n of counts) expect(n).toBe(TOOLS.length);
  });

  it("find the person's own notes, added with mm memories add --user", async () => {
    const configs = (await codeBlocks("docs/agents.md", "json"))
      .map((b) => JSON.parse(b.code))
      .filter((c) => c.mcpServers ?? c.servers)
      .map((c) => Object.values((c.mcpServers ?? c.servers) as Record<string, { command?: string; args?: string[] }>)[0])
      .filter((c) => c.command === "mm");
    expect(configs.length).toBe(3); // Claude Desktop, Cursor, VS Code
    const store = join(await tempDir(), "store");
    const user = configs[0].args![configs[0].args!.indexOf("--user") + 1];
    const note = json(await runMm(["memories", "add", "I live in Lisbon, near the river", "--user", user], { store }));
    for (const { args } of configs) {
      expect(args![0]).toBe("mcp");
      const { client } = await stdioClient(args!.slice(1), { MM_STORE: store });
      try {
        const found = await ok(client, "memories_search", { query: "where do I live?", threshold: 0 });
        expect(found.results.map((r: { id: string }) => r.id), args!.join(" ")).toContain(note.id);
      } finally {
        await client.close();
      }
    }
  });
});

const json = (r: { stdout: string }) => JSON.parse(r.stdout);

describe("docs/agents.md's hooks", () => {
  it("show exactly what mm hooks install claude-code writes in a settings file that had none", async () => {
    const [shown] = (await codeBlocks("docs/agents.md", "json")).map((b) => JSON.parse(b.code)).filter((c) => c.hooks);
    const home = join(await tempDir(), "home");
    const env = { HOME: home, MM_STORE: "", MM_ACCOUNT: "" };
    const r = json(await runMm(["hooks", "install", "claude-code", "--user", "me", "--json"], { env }));
    const written = (await readFile(join(home, ".claude", "settings.json"), "utf8")).replaceAll(r.command, "/usr/bin/node /home/me/mm/bin/mm.js hook claude-code --user me");
    expect(JSON.parse(written)).toEqual(shown);
    expect(r.command).toBe(`${process.execPath} ${join(ROOT, "bin", "mm.js")} hook claude-code --user me`);
  });
});
