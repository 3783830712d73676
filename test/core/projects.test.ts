// Projects (core/project.ts): a project's memories and the global ones are seen from inside it,
// another project's never; detection keeps projects apart; a store made before projects opens with
// every memory global. The test embedder keeps these fast; the scope is a filter, not a score.
import { mkdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { createMemory, getMemory, listMemories, memoryHistory, searchMemories, updateMemory } from "../../src/core/memories.js";
import { checkProjectName, findProject, projectFromArg } from "../../src/core/project.js";
import { exportStore, importExport, jsonLines } from "../../src/core/transfer.js";
import { MmError } from "../../src/errors.js";
import { loadLance } from "../../src/storage/lance.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const opened: Context[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

async function open(dir?: string): Promise<Context> {
  const ctx = await openContext({ storeDir: dir ?? (await tempDir()), embedder: createTestEmbedder() });
  opened.push(ctx);
  return ctx;
}

function refusal(fn: () => unknown): MmError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(MmError);
    return err as MmError;
  }
  throw new Error("expected a refusal");
}

async function rejection(p: Promise<unknown>): Promise<MmError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MmError);
  return err as MmError;
}

describe("finding a project", () => {
  it("names a git repository by its folder and its path, so two repositories of the same name are two projects", async () => {
    const root = await tempDir();
    for (const parent of ["a", "b"]) await mkdir(join(root, parent, "app", ".git"), { recursive: true });
    await mkdir(join(root, "a", "app", "src", "deep"), { recursive: true });
    const a = findProject(join(root, "a", "app", "src", "deep"))!;
    const b = findProject(join(root, "b", "app"))!;
    expect(a).toMatchObject({ root: await realpath(join(root, "a", "app")), from: "git" });
    expect(a.name).toMatch(/^app-[0-9a-f]{8}$/);
    expect(b.name).toMatch(/^app-[0-9a-f]{8}$/);
    expect(a.name).not.toBe(b.name);
    // The same repository, from anywhere inside it, is the same project.
    expect(findProject(join(root, "a", "app"))!.name).toBe(a.name);
  });

  it("takes the name in a .mm-project file, the nearest marker winning, and checks it", async () => {
    const root = await tempDir();
    await mkdir(join(root, "repo", ".git"), { recursive: true });
    await mkdir(join(root, "repo", "packages", "web"), { recursive: true });
    await writeFile(join(root, "repo", "packages", "web", ".mm-project"), "\n  shop-web  \n# a comment line is never reached\n");
    expect(findProject(join(root, "repo", "packages", "web"))).toMatchObject({ name: "shop-web", from: ".mm-project" });
    expect(findProject(join(root, "repo", "packages"))).toMatchObject({ from: "git" });
    // .mm-project beats .git in the same folder.
    await writeFile(join(root, "repo", ".mm-project"), "shop\n");
    expect(findProject(join(root, "repo"))).toMatchObject({ name: "shop", from: ".mm-project" });
    await writeFile(join(root, "repo", ".mm-project"), "../etc\n");
    const bad = refusal(() => findProject(join(root, "repo")));
    expect(bad.code).toBe("VALIDATION_ERROR");
    expect(bad.message).toContain(".mm-project");
  });

  it("finds no project outside any, and says so for a folder given as --project", async () => {
    const root = await tempDir();
    expect(findProject(root)).toBeNull();
    expect(findProject(join(root, "missing"))).toBeNull();
    expect(refusal(() => projectFromArg(".", root)).message).toMatch(/--project \.: that folder is in no project/);
    expect(refusal(() => projectFromArg("./missing", root)).message).toMatch(/no such folder/);
    expect(projectFromArg("my-app", root)).toBe("my-app");
    await mkdir(join(root, ".git"));
    expect(projectFromArg(".", root)).toBe(findProject(root)!.name);
  });

  it("refuses names that aren't plain, saying what is allowed", () => {
    for (const bad of ["", ".hidden", "a/b", "a b", "x".repeat(101), "naïve", "a\u0000b"]) {
      const err = refusal(() => checkProjectName(bad, "--project"));
      expect(err.code).toBe("VALIDATION_ERROR");
      expect(err.message).toMatch(/^--project /);
    }
    expect(checkProjectName("My_App-2.0")).toBe("My_App-2.0");
  });
});

describe("a project's view", () => {
  async function seeded() {
    const ctx = await open();
    const global = await createMemory(ctx, { content: "I prefer tabs over spaces", userId: "me" });
    const shop = await createMemory(ctx, { content: "the shop deploys with fly.io", userId: "me", project: "shop" });
    const blog = await createMemory(ctx, { content: "the blog deploys with netlify", userId: "me", project: "blog" });
    const other = await createMemory(ctx, { content: "the shop deploys on fridays", userId: "you", project: "shop" });
    return { ctx, global, shop, blog, other };
  }

  it("lists and searches the project's memories and the global ones, never another project's or user's", async () => {
    const { ctx, global, shop, blog, other } = await seeded();
    expect(shop.project).toBe("shop");
    expect(global).not.toHaveProperty("project");
    const ids = (items: { id: string }[]) => items.map((m) => m.id).sort();
    expect(ids((await listMemories(ctx, { userId: "me", project: "shop" })).items)).toEqual([global.id, shop.id].sort());
    expect(ids((await listMemories(ctx, { userId: "me", project: "shop", projectOnly: "true" })).items)).toEqual([shop.id]);
    expect(ids((await listMemories(ctx, { userId: "me" })).items)).toEqual([global.id, shop.id, blog.id].sort());
    const hits = (await searchMemories(ctx, { query: "how does it deploy?", userId: "me", project: "blog", threshold: 0, limit: 100 })).results;
    expect(ids(hits)).toEqual([global.id, blog.id].sort());
    expect(hits.find((h) => h.id === blog.id)?.project).toBe("blog");
    for (const mode of ["semantic", "keyword", "hybrid"]) {
      const found = (await searchMemories(ctx, { query: "shop deploys", userId: "me", project: "blog", projectOnly: true, threshold: 0, limit: 100, mode })).results;
      expect(found.map((h) => h.id), mode).not.toContain(shop.id);
      expect(found.map((h) => h.id), mode).not.toContain(other.id);
    }
    // Every user's memories of a project, when no user is named: still never another project's.
    const everyone = await listMemories(ctx, { project: "shop", projectOnly: true });
    expect(ids(everyone.items)).toEqual([shop.id, other.id].sort());
  });

  it("refuses a bad project, and projectOnly without a project, before reading anything", async () => {
    const { ctx } = await seeded();
    for (const call of [
      createMemory(ctx, { content: "x", userId: "me", project: "../etc" }),
      createMemory(ctx, { content: "x", userId: "me", project: 7 }),
      listMemories(ctx, { projectOnly: "true" }),
      listMemories(ctx, { project: "shop", projectOnly: "yes" }),
      searchMemories(ctx, { query: "x", projectOnly: true }),
      searchMemories(ctx, { query: "x", project: "" }),
    ]) {
      expect((await rejection(call)).code).toBe("VALIDATION_ERROR");
    }
    expect((await listMemories(ctx, {})).pagination.total).toBe(4);
  });

  it("moves a memory between projects by update, keeping the move in its history", async () => {
    const { ctx, shop } = await seeded();
    const moved = await updateMemory(ctx, shop.id, { project: "blog" });
    expect(moved.project).toBe("blog");
    const global = await updateMemory(ctx, shop.id, { project: null });
    expect(global).not.toHaveProperty("project");
    expect((await getMemory(ctx, shop.id)).project).toBeUndefined();
    const history = await memoryHistory(ctx, shop.id);
    expect(history.versions.map((v) => v.project)).toEqual(["shop", "blog", undefined]);
  });

  it("keeps projects apart in replaced-fact detection and duplicates", async () => {
    const ctx = await open();
    const shop = await createMemory(ctx, { content: "My home is in Paris", userId: "me", project: "shop" });
    const global = await createMemory(ctx, { content: "My home is in Paris", userId: "me" });
    expect(global.deduplicated).toBeUndefined();
    expect(global.id).not.toBe(shop.id);
    const moved = await createMemory(ctx, { content: "My home is in Berlin", userId: "me", project: "blog" });
    expect(moved.supersedes).toBeUndefined();
    const same = await createMemory(ctx, { content: "My home is in Berlin", userId: "me" });
    expect(same.supersedes).toEqual([global.id]);
    expect((await getMemory(ctx, shop.id)).supersededBy).toBeUndefined();
    const again = await createMemory(ctx, { content: "My home is in Paris", userId: "me", project: "shop" });
    expect(again).toMatchObject({ id: shop.id, deduplicated: true });
  });

  it("carries the project through export and import", async () => {
    const { ctx, shop, global } = await seeded();
    const lines: string[] = [];
    await exportStore(ctx, {}, (line) => void lines.push(line));
    expect(lines.filter((l) => l.includes('"project":"shop"'))).toHaveLength(2);
    const into = await open();
    await importExport(into, jsonLines(lines));
    expect((await getMemory(into, shop.id)).project).toBe("shop");
    expect(await getMemory(into, global.id)).not.toHaveProperty("project");
    expect((await listMemories(into, { userId: "me", project: "blog", projectOnly: true })).items).toHaveLength(1);
  });
});

describe("a store made before projects", () => {
  it("opens with every memory global, and takes project memories after", async () => {
    const dir = await tempDir();
    const before = await open(dir);
    const kept = await createMemory(before, { content: "written before projects", userId: "me" });
    await before.close();
    opened.splice(opened.indexOf(before), 1);
    const { lancedb } = loadLance();
    const db = await lancedb.connect(join(dir, "db"));
    await (await db.openTable("memories")).dropColumns(["project"]);

    const ctx = await open(dir);
    expect(await getMemory(ctx, kept.id)).not.toHaveProperty("project");
    const fresh = await createMemory(ctx, { content: "written after", userId: "me", project: "shop" });
    const seen = (await listMemories(ctx, { userId: "me", project: "shop" })).items.map((m) => m.id).sort();
    expect(seen).toEqual([kept.id, fresh.id].sort());
  });
});
