import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/run-cli.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * mm import --from agents-md and mm export --to agents-md (core/agents-md.ts): items of an
 * AGENTS.md become memories of its project, a re-import after an edit updates instead of
 * duplicating, and the export's block leaves the rest of the file byte for byte.
 */

const tempDir = useTempDirs();
const ok = (r: { code: number; stderr: string }) => expect(r.code, r.stderr).toBe(0);
const lines = (s: string) => s.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));

const AGENTS = `# Shop

The shop is a Next.js app.

## Build

- Run \`npm test\` before pushing
- Deploy with fly.io
  only from main

## Style
- Tabs, not spaces
`;

async function repo(): Promise<{ dir: string; store: string; file: string }> {
  const dir = await tempDir();
  await mkdir(join(dir, "shop"));
  await writeFile(join(dir, "shop/.mm-project"), "shop\n");
  await writeFile(join(dir, "shop/AGENTS.md"), AGENTS);
  return { dir, store: join(dir, "store"), file: join(dir, "shop/AGENTS.md") };
}

const list = async (store: string) =>
  JSON.parse((await runCli(store, ["memories", "list", "--user", "me", "--project", "shop", "--project-only", "--limit", "100"])).stdout).items as { id: string; content: string; tags?: string[]; project?: string }[];

describe("mm import --from agents-md", () => {
  it("stores each bullet and paragraph under its heading as a memory of the file's project, and a re-import after edits updates instead of duplicating", async () => {
    const { store, file } = await repo();
    const first = await runCli(store, ["import", "--from", "agents-md", file, "--user", "me"]);
    ok(first);
    expect(lines(first.stdout).map((c) => c.action)).toEqual(["create", "create", "create", "create"]);
    const stored = await list(store);
    expect(stored.map((m) => [m.content, m.tags, m.project]).sort()).toEqual([
      ["Deploy with fly.io\nonly from main", ["Build"], "shop"],
      ["Run `npm test` before pushing", ["Build"], "shop"],
      ["Tabs, not spaces", ["Style"], "shop"],
      ["The shop is a Next.js app.", ["Shop"], "shop"],
    ]);
    const again = await runCli(store, ["import", "--from", "agents-md", file, "--user", "me"]);
    expect(again.stderr).toMatch(/Created 0, updated 0, deleted 0; 4 unchanged/);

    // An edited item, an item moved under another heading, a new one, a removed one.
    await writeFile(
      file,
      AGENTS.replace("- Run `npm test` before pushing", "- Run `npm test` and `npm run lint` before pushing\n- Tabs, not spaces")
        .replace("## Style\n- Tabs, not spaces\n", "## Style\n- Prettier formats on save\n")
        .replace("- Deploy with fly.io\n  only from main\n", ""),
    );
    const plan = await runCli(store, ["import", "--from", "agents-md", file, "--user", "me", "--dry-run"]);
    expect(lines(plan.stdout).map((c) => `${c.action} ${c.fields?.join(",") ?? ""}`).sort()).toEqual(["create ", "update content", "update tags,metadata"]);
    expect((await list(store)).length).toBe(4);
    ok(await runCli(store, ["import", "--from", "agents-md", file, "--user", "me"]));
    const after = await list(store);
    expect(after.map((m) => m.content).sort()).toEqual(["Deploy with fly.io\nonly from main", "Prettier formats on save", "Run `npm test` and `npm run lint` before pushing", "Tabs, not spaces", "The shop is a Next.js app."]);
    const edited = after.find((m) => m.content.includes("lint"))!;
    expect(JSON.stringify(JSON.parse((await runCli(store, ["memories", "history", edited.id])).stdout))).toContain("Run `npm test` before pushing");
    expect(after.find((m) => m.content === "Tabs, not spaces")!.tags).toEqual(["Build"]);

    const removed = await runCli(store, ["import", "--from", "agents-md", file, "--user", "me", "--delete-missing"]);
    expect(lines(removed.stdout).map((c) => c.action)).toEqual(["delete"]);
    expect((await list(store)).length).toBe(4);
  });
});

describe("mm export --to agents-md", () => {
  it("appends a marked block of the project's other memories, leaves every other byte, and a second run changes nothing", async () => {
    const { dir, store, file } = await repo();
    ok(await runCli(store, ["import", "--from", "agents-md", file, "--user", "me"]));
    ok(await runCli(store, ["memories", "add", "The staging site is staging.shop.test", "--user", "me", "--project", "shop", "--tag", "Deploy"]));
    ok(await runCli(store, ["memories", "add", "I prefer short answers", "--user", "me"]));
    ok(await runCli(store, ["export", "--to", "agents-md", file, "--user", "me"]));
    const text = await readFile(file, "utf8");
    expect(text.startsWith(AGENTS)).toBe(true);
    expect(text.slice(AGENTS.length)).toBe(
      "\n<!-- mm:begin -->\n<!-- Written by mm export --to agents-md: edit the memories (or this file outside the block), not the block. -->\n\n## Deploy\n\n- The staging site is staging.shop.test\n\n<!-- mm:end -->\n",
    );
    const second = await runCli(store, ["export", "--to", "agents-md", file, "--user", "me"]);
    expect(second.stderr).toMatch(/Unchanged/);
    expect(await readFile(file, "utf8")).toBe(text);
    // Re-importing the file skips mm's own block.
    const reimport = await runCli(store, ["import", "--from", "agents-md", file, "--user", "me"]);
    expect(reimport.stderr).toMatch(/Created 0, updated 0, deleted 0; 4 unchanged/);

    // Text written after the block, and a new memory: the block is replaced where it is.
    await writeFile(file, `${text}\nAfter the block.\n`);
    ok(await runCli(store, ["memories", "add", "Releases are tagged vX.Y.Z", "--user", "me", "--project", "shop", "--tag", "Deploy"]));
    ok(await runCli(store, ["export", "--to", "agents-md", file, "--user", "me"]));
    const third = await readFile(file, "utf8");
    expect(third.startsWith(AGENTS)).toBe(true);
    expect(third.endsWith("- Releases are tagged vX.Y.Z\n\n<!-- mm:end -->\n\nAfter the block.\n")).toBe(true);

    // CLAUDE.md and a Cursor rule: the same, an .mdc file's front matter kept and skipped on import.
    const claude = join(dir, "shop/CLAUDE.md");
    ok(await runCli(store, ["export", "--to", "agents-md", claude, "--user", "me"]));
    expect(await readFile(claude, "utf8")).toMatch(/^<!-- mm:begin -->\n[\s\S]*- The staging site is staging\.shop\.test\n[\s\S]*<!-- mm:end -->\n$/);
    await mkdir(join(dir, "shop/.cursor/rules"), { recursive: true });
    const rule = join(dir, "shop/.cursor/rules/style.mdc");
    const front = "---\ndescription: Code style\nglobs: *.ts\nalwaysApply: false\n---\n\n- Prefer named exports\n";
    await writeFile(rule, front);
    const imported = await runCli(store, ["import", "--from", "agents-md", rule, "--user", "me"]);
    expect(lines(imported.stdout)).toEqual([{ action: "create", kind: "memory", file: ".cursor/rules/style.mdc:7", id: expect.stringMatching(/^mem_/) }]);
    ok(await runCli(store, ["export", "--to", "agents-md", rule, "--user", "me"]));
    expect((await readFile(rule, "utf8")).startsWith(`${front}\n<!-- mm:begin -->`)).toBe(true);
  });

  it("refuses a file in no project, and a block whose end marker is missing", async () => {
    const dir = await tempDir();
    const store = join(dir, "store");
    await writeFile(join(dir, "AGENTS.md"), "- an item\n");
    const r = await runCli(store, ["import", "--from", "agents-md", join(dir, "AGENTS.md"), "--user", "me"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/is in no project/);
    await writeFile(join(dir, ".mm-project"), "p\n");
    await writeFile(join(dir, "AGENTS.md"), "- an item\n<!-- mm:begin -->\n- half\n");
    const half = await runCli(store, ["export", "--to", "agents-md", join(dir, "AGENTS.md"), "--user", "me"]);
    expect(half.code).not.toBe(0);
    expect(half.stderr).toMatch(/without the other/);
    expect(await readFile(join(dir, "AGENTS.md"), "utf8")).toBe("- an item\n<!-- mm:begin -->\n- half\n");
  });
});
