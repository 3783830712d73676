import { lstat, mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openContext } from "../../src/core/context.js";
import { addMemoriesFromLines } from "../../src/core/memories.js";
import { runCli } from "../helpers/run-cli.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * mm export --format markdown and mm import --format markdown (core/markdown.ts), in-process with
 * the test embedder: a folder round-trips byte for byte, edits apply through the ordinary
 * services, and bad folders are refused before anything is written.
 */

const tempDir = useTempDirs();

/** Every file of a folder, by path relative to it. */
async function tree(dir: string, rel = ""): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const d of await readdir(join(dir, rel), { withFileTypes: true })) {
    const path = rel ? `${rel}/${d.name}` : d.name;
    if (d.isDirectory()) for (const [p, t] of await tree(dir, path)) out.set(p, t);
    else out.set(path, await readFile(join(dir, path), "utf8"));
  }
  return out;
}

const ok = (r: { code: number; stderr: string }) => expect(r.code, r.stderr).toBe(0);
const lines = (s: string) => s.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));

/** A small store: two entities and a relation, memories with tags, metadata, links, and a replaced fact. */
async function small(store: string): Promise<{ ada: string; engine: string; paris: string; berlin: string }> {
  const id = async (args: string[]) => JSON.parse((await runCli(store, args)).stdout).id as string;
  const ada = await id(["entities", "create", "Ada Lovelace", "--type", "PERSON", "--description", "mathematician", "--metadata", '{"born":1815}']);
  const engine = await id(["entities", "create", "Analytical Engine", "--type", "PRODUCT"]);
  ok(await runCli(store, ["relations", "create", "--source", ada, "--target", engine, "--type", "CREATED"]));
  await id(["memories", "add", "Ada wrote the first program 🧮", "--user", "ada", "--tag", "history", "--entity", ada, "--metadata", '{"z":1,"a":[1,"two",null]}']);
  const paris = await id(["memories", "add", "I live in Paris", "--user", "ada"]);
  const berlin = await id(["memories", "add", "I moved to Berlin", "--user", "ada", "--no-detect"]);
  await id(["memories", "add", "Tab\there, \"quotes\", --- and a backslash \\\nsecond line", "--user", "../../escape", "--agent", "no"]);
  ok(await runCli(store, ["memories", "supersede", paris, berlin]));
  return { ada, engine, paris, berlin };
}

describe("mm export --format markdown", () => {
  it("writes one file per memory under its user's folder and one per entity, and a round trip through an empty store gives the same bytes", async () => {
    const dir = await tempDir();
    const [a, b] = [join(dir, "a"), join(dir, "b")];
    const { ada, paris } = await small(a);
    ok(await runCli(a, ["export", "--format", "markdown", join(dir, "md1")]));
    const files = await tree(join(dir, "md1"));
    expect([...files.keys()].filter((p) => p.startsWith("entities/"))).toHaveLength(2);
    expect([...files.keys()].some((p) => p.startsWith("memories/ada/ada-wrote-the-first-program-"))).toBe(true);
    expect([...files.keys()].some((p) => p.startsWith("memories/%2E%2E%2F%2E%2E%2Fescape/"))).toBe(true);
    const adaFile = [...files].find(([p]) => p.startsWith("entities/ada-lovelace-"))![1];
    expect(adaFile).toContain("- CREATED [[analytical-engine-");
    expect(adaFile).toContain(`id: ${ada}`);
    expect([...files].find(([, t]) => t.includes(`id: ${paris}`))![1]).toMatch(/supersededBy: mem_/);

    const imported = await runCli(b, ["import", "--format", "markdown", join(dir, "md1")]);
    ok(imported);
    ok(await runCli(b, ["export", "--format", "markdown", join(dir, "md2")]));
    expect(await tree(join(dir, "md2"))).toEqual(files);

    // A second export into the same folder writes nothing.
    const again = await runCli(a, ["export", "--format", "markdown", join(dir, "md1")]);
    expect(again.stderr).toMatch(/0 files written, 6 files unchanged, 0 files removed/);
  });
});
