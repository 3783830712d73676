// `--project <name|path>` on the CLI: in-process for the flags and their errors, and a real spawned
// `mm` run from inside two repositories of the same folder name for `--project .`.
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findProject } from "../../src/core/project.js";
import { runCli } from "../helpers/run-cli.js";
import { json, runMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

async function twoRepositories(): Promise<{ a: string; b: string }> {
  const root = await tempDir();
  const a = join(root, "work", "app");
  const b = join(root, "play", "app");
  for (const repo of [a, b]) await mkdir(join(repo, ".git"), { recursive: true });
  await mkdir(join(a, "src"), { recursive: true });
  return { a, b };
}

describe("mm memories --project", () => {
  it("adds to a project by name or folder, and lists and searches its view", async () => {
    const store = join(await tempDir(), "store");
    const { a, b } = await twoRepositories();
    const add = async (content: string, ...flags: string[]) => JSON.parse((await runCli(store, ["--json", "memories", "add", content, "--user", "me", ...flags])).stdout);
    const global = await add("I prefer tabs over spaces");
    const inA = await add("the app deploys with fly.io", "--project", join(a, "src"));
    const inB = await add("the app deploys with netlify", "--project", b);
    const named = await add("the blog is written in Hugo", "--project", "blog");
    expect(inA.project).toBe(findProject(a)!.name);
    expect(inB.project).toBe(findProject(b)!.name);
    expect(inA.project).not.toBe(inB.project);
    expect(named.project).toBe("blog");

    const listed = JSON.parse((await runCli(store, ["--json", "memories", "list", "--user", "me", "--project", a])).stdout);
    expect(listed.items.map((m: { id: string }) => m.id).sort()).toEqual([global.id, inA.id].sort());
    const only = JSON.parse((await runCli(store, ["--json", "memories", "list", "--project", a, "--project-only"])).stdout);
    expect(only.items.map((m: { id: string }) => m.id)).toEqual([inA.id]);
    const found = JSON.parse((await runCli(store, ["--json", "memories", "search", "how does the app deploy?", "--project", b, "--threshold", "0"])).stdout);
    expect(found.results.map((h: { id: string }) => h.id).sort()).toEqual([global.id, inB.id].sort());

    // The table says which memory is whose once a project is in the list.
    const table = await runCli(store, ["memories", "list", "--user", "me"], { columns: 200 });
    expect(table.stdout).toMatch(/project/);
    expect(table.stdout).toContain("blog");

    const moved = JSON.parse((await runCli(store, ["--json", "memories", "update", named.id, "--clear-project"])).stdout);
    expect(moved).not.toHaveProperty("project");
  });

  it("refuses a bad --project or a lone --project-only in the flag's words, and stores nothing", async () => {
    const store = join(await tempDir(), "store");
    const outside = await tempDir();
    const cases: [string[], RegExp][] = [
      [["memories", "add", "x", "--user", "me", "--project", "a b"], /--project may hold only letters/],
      [["memories", "add", "x", "--user", "me", "--project", join(outside, "nope")], /--project .*: no such folder/],
      [["memories", "add", "x", "--user", "me", "--project", outside], /that folder is in no project/],
      [["memories", "list", "--project-only"], /--project-only needs --project/],
      [["memories", "search", "x", "--project-only"], /--project-only needs --project/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(store, args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(message);
      expect(r.stderr).not.toMatch(/\bat .*\.(ts|js):\d+/);
    }
    // Refused before the store opened: none was even created.
    expect(existsSync(store)).toBe(false);
  });

  it("reads --project . from the folder a real mm runs in", async () => {
    const store = join(await tempDir(), "store");
    const { a, b } = await twoRepositories();
    const added = await runMm(["--json", "memories", "add", "tests run with vitest here", "--user", "me", "--project", "."], { store, cwd: join(a, "src") });
    expect(added.code, added.stderr).toBe(0);
    expect(json(added).project).toBe(findProject(a)!.name);
    const fromB = await runMm(["--json", "memories", "search", "how do the tests run?", "--user", "me", "--project", ".", "--threshold", "0"], { store, cwd: b });
    expect(fromB.code, fromB.stderr).toBe(0);
    expect(json(fromB).results).toEqual([]);
    const fromA = await runMm(["--json", "memories", "search", "how do the tests run?", "--user", "me", "--project", ".", "--threshold", "0"], { store, cwd: a });
    expect(json(fromA).results.map((h: { id: string }) => h.id)).toEqual([json(added).id]);
  });
});
