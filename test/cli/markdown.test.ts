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
  await id(["memories", "add", "The build runs with npm test", "--user", "ada", "--project", "mm-app", "--tag", "Build"]);
  const berlin = await id(["memories", "add", "I moved to Berlin", "--user", "ada", "--no-detect"]);
  const escape = await id(["memories", "add", "A first version", "--user", "../../escape", "--agent", "no"]);
  // An edited memory: its history holds the first version.
  await id(["memories", "update", escape, "Tab\there, \"quotes\", --- and a backslash \\\nsecond line", "--metadata", '{"k":"v"}']);
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
    expect([...files].find(([p]) => p.startsWith("memories/ada/mm-app/the-build-runs-with-npm-test-"))![1]).toMatch(/\nproject: mm-app\n/);
    const adaFile = [...files].find(([p]) => p.startsWith("entities/ada-lovelace-"))![1];
    expect(adaFile).toContain("- CREATED [[analytical-engine-");
    expect([...files].find(([p]) => p.startsWith("memories/ada/ada-wrote"))![1]).toMatch(/\nlinks:\n  - "\[\[ada-lovelace-[0-9a-z]{8}\|Ada Lovelace\]\]"\n/);
    expect(adaFile).toContain(`id: ${ada}`);
    expect([...files].find(([, t]) => t.includes(`id: ${paris}`))![1]).toMatch(/supersededBy: mem_/);

    const imported = await runCli(b, ["import", "--format", "markdown", join(dir, "md1")]);
    ok(imported);
    ok(await runCli(b, ["export", "--format", "markdown", join(dir, "md2")]));
    expect(await tree(join(dir, "md2"))).toEqual(files);

    // A second export into the same folder writes nothing.
    const again = await runCli(a, ["export", "--format", "markdown", join(dir, "md1")]);
    expect(again.stderr).toMatch(/0 files written, 7 files unchanged, 0 files removed/);
  });
});

const used = async (store: string) => JSON.parse((await runCli(store, ["usage"])).stdout).used as number;
const memoryCount = async (store: string) => lines((await runCli(store, ["export"])).stdout).filter((r) => r.kind === "memory").length;

describe("mm import --format markdown on a store that has the records", () => {
  it("applies an edited body through the ordinary update (history keeps the old text), creates a file without an id and gives it one, deletes only with --delete-missing, and bills each change once", async () => {
    const dir = await tempDir();
    const store = join(dir, "s");
    const md = join(dir, "md");
    const { paris, berlin } = await small(store);
    ok(await runCli(store, ["export", "--format", "markdown", md]));
    const files = await tree(md);
    const [adaPath, adaText] = [...files].find(([p]) => p.startsWith("memories/ada/ada-wrote"))!;
    await writeFile(join(md, adaPath), adaText.replace("Ada wrote the first program 🧮", "Ada wrote the first published program").replace("  - history\n", "  - history\n  - computing\n"));
    await writeFile(join(md, "memories/ada/new-note.md"), "Ada's notes on Menabrea ran to three times his paper\n");
    const gone = [...files.keys()].find((p) => p.includes("escape/"))!;
    await rm(join(md, gone));

    const before = await used(store);
    const plan = await runCli(store, ["import", "--format", "markdown", md, "--dry-run"]);
    ok(plan);
    expect(lines(plan.stdout).map((c) => `${c.action} ${c.kind} ${c.file}`).sort()).toEqual([`create memory memories/ada/new-note.md`, `update memory ${adaPath}`]);
    expect(plan.stderr).toMatch(/Dry run, nothing changed: would create 1, update 1, delete 0; 6 unchanged/);
    expect(await memoryCount(store)).toBe(5);
    expect(await used(store)).toBe(before);

    const applied = await runCli(store, ["import", "--format", "markdown", md]);
    ok(applied);
    expect(lines(applied.stdout).find((c) => c.action === "update")).toMatchObject({ fields: ["content", "tags"] });
    expect(await used(store)).toBe(before + 2);
    const id = lines(applied.stdout).find((c) => c.action === "update").id;
    const history = JSON.parse((await runCli(store, ["memories", "history", id])).stdout);
    expect(JSON.stringify(history)).toContain("Ada wrote the first program 🧮");
    expect(JSON.parse((await runCli(store, ["memories", "get", id])).stdout)).toMatchObject({ content: "Ada wrote the first published program", tags: ["history", "computing"] });
    const created = lines(applied.stdout).find((c) => c.action === "create").id as string;
    expect(await readFile(join(md, "memories/ada/new-note.md"), "utf8")).toMatch(new RegExp(`^---\\nid: ${created}\\nuserId: ada\\n`));
    expect(await memoryCount(store)).toBe(6);

    // Applied: a second import changes nothing, and a re-export keeps the new file's name.
    const again = await runCli(store, ["import", "--format", "markdown", md]);
    expect(again.stderr).toMatch(/Created 0, updated 0, deleted 0; 8 unchanged/);
    ok(await runCli(store, ["export", "--format", "markdown", md, "--user", "ada"]));
    expect((await tree(md)).has("memories/ada/new-note.md")).toBe(true);

    // The missing file's memory goes only when asked, billed as one delete.
    const before2 = await used(store);
    const deleted = await runCli(store, ["import", "--format", "markdown", md, "--delete-missing"]);
    ok(deleted);
    expect(lines(deleted.stdout)).toEqual([{ action: "delete", kind: "memory", id: expect.stringMatching(/^mem_/) }]);
    expect(await memoryCount(store)).toBe(5);
    expect(await used(store)).toBe(before2 + 1);

    // supersededBy edited away: the memory is restored (current again).
    const parisPath = [...(await tree(md))].find(([, t]) => t.includes(`id: ${paris}`))!;
    await writeFile(join(md, parisPath[0]), parisPath[1].replace(/supersededBy: .*\n|supersededAt: .*\n/g, ""));
    ok(await runCli(store, ["import", "--format", "markdown", md]));
    expect(JSON.parse((await runCli(store, ["memories", "get", paris])).stdout).supersededBy).toBeUndefined();
    expect(berlin).toMatch(/^mem_/);
  });
});

describe("bad folders", () => {
  it("refuses each bad file by name before writing anything: not YAML, a YAML bomb, 50 MB, `..` in a name, a symlink out, another account's id, a link to a missing entity", async () => {
    const dir = await tempDir();
    const store = join(dir, "s");
    await small(store);
    ok(await runCli(store, ["accounts", "create", "acme"]));
    const theirs = JSON.parse((await runCli(store, ["--account", "acme", "memories", "add", "Acme's own memory", "--user", "ada"])).stdout).id as string;
    const outside = join(dir, "outside.md");
    await writeFile(outside, "---\nuserId: ada\n---\nsecret from outside\n");
    const snapshot = async () => lines((await runCli(store, ["export"])).stdout).slice(1);
    const before = await snapshot();

    const bomb = ["---", 'a: &a ["lol","lol"]', "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]", "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]", "d: [*c,*c,*c,*c,*c,*c,*c,*c,*c]", "---", "boom", ""].join("\n");
    const cases: [string, (md: string) => Promise<void>, RegExp][] = [
      ["not YAML", (md) => writeFile(join(md, "memories/ada/bad.md"), "---\ntags: [unclosed\n---\nbody\n"), /memories\/ada\/bad\.md.*flow value/],
      ["no colon", (md) => writeFile(join(md, "memories/ada/bad.md"), "---\nid mem_x\n---\nbody\n"), /memories\/ada\/bad\.md, line 2: not YAML/],
      ["YAML bomb", (md) => writeFile(join(md, "memories/ada/bomb.md"), bomb), /memories\/ada\/bomb\.md, line 2: YAML anchors and aliases/],
      ["50 MB", (md) => writeFile(join(md, "memories/ada/huge.md"), Buffer.alloc(50 * 1024 * 1024, 0x61)), /memories\/ada\/huge\.md is 50\.0 MiB/],
      ["`..` in a name", (md) => writeFile(join(md, "memories/ada/x..md"), "hello\n"), /memories\/ada\/x\.\.md.*`\.\.`/],
      ["a symlinked file", (md) => symlink(outside, join(md, "memories/ada/link.md")), /memories\/ada\/link\.md is a symbolic link/],
      ["a symlinked folder", (md) => symlink(dir, join(md, "memories/eve")), /memories\/eve is a symbolic link/],
      ["another account's id", (md) => writeFile(join(md, "memories/ada/theirs.md"), `---\nid: ${theirs}\nuserId: ada\ncreatedAt: "2026-01-01T00:00:00.000Z"\nupdatedAt: "2026-01-01T00:00:00.000Z"\n---\nmine now\n`), /memories\/ada\/theirs\.md: the id .* belongs to another account/],
      ["a missing entity", (md) => writeFile(join(md, "memories/ada/link.md"), "---\nentityIds:\n  - ent_00000000000000000000000000\n---\nlinked\n"), /memories\/ada\/link\.md: links to entity ent_0+, which is neither/],
      ["an unknown field", (md) => writeFile(join(md, "memories/ada/odd.md"), "---\ncolour: blue\n---\nodd\n"), /memories\/ada\/odd\.md.*colour/],
    ];
    for (const [name, mutate, message] of cases) {
      const md = join(dir, `md-${name.replace(/\W+/g, "-")}`);
      ok(await runCli(store, ["export", "--format", "markdown", md]));
      // A good new file and a good edit beside the bad one: neither may be applied.
      await writeFile(join(md, "memories/ada/good-new.md"), "A good new memory\n");
      const [path, text] = [...(await tree(md))].find(([p]) => p.includes("i-moved-to-berlin"))!;
      await writeFile(join(md, path), text.replace("I moved to Berlin", "I moved to Hamburg"));
      await mutate(md);
      const r = await runCli(store, ["import", "--format", "markdown", md]);
      expect(r.code, `${name}: ${r.stderr}`).not.toBe(0);
      expect(r.stderr, name).toMatch(message);
      expect(await snapshot(), name).toEqual(before);
      expect(await readFile(join(md, "memories/ada/good-new.md"), "utf8"), name).toBe("A good new memory\n");
    }
    expect(await readFile(outside, "utf8")).toBe("---\nuserId: ada\n---\nsecret from outside\n");
  }, 120_000);

  it("never writes through a symbolic link: an export into a folder whose user folder links out is refused, and the place it points to stays as it was", async () => {
    const dir = await tempDir();
    const store = join(dir, "s");
    await small(store);
    const md = join(dir, "md");
    const elsewhere = join(dir, "elsewhere");
    await mkdir(join(md, "memories"), { recursive: true });
    await mkdir(elsewhere);
    await symlink(elsewhere, join(md, "memories/ada"));
    const r = await runCli(store, ["export", "--format", "markdown", md]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/memories\/ada is a symbolic link/);
    expect(await readdir(elsewhere)).toEqual([]);
    expect((await lstat(join(md, "memories/ada"))).isSymbolicLink()).toBe(true);
    // Nothing was written: every path is checked before the first write.
    expect((await readdir(join(md, "memories"))).sort()).toEqual(["ada"]);
    expect(await readdir(md).then((d) => d.sort())).toEqual(["memories"]);
  });
});

/** `count` memories of five users with unicode, tags, metadata and links, 1 in 100 replacing an earlier one; two entities and a relation. */
async function large(store: string, count: number): Promise<void> {
  const id = async (args: string[]) => JSON.parse((await runCli(store, args)).stdout).id as string;
  const ada = await id(["entities", "create", "Zoë Ada Lövelace 🧮", "--type", "PERSON", "--description", "line one\nline two \"quoted\"", "--metadata", '{"born":1815,"nested":{"x":null}}']);
  const bob = await id(["entities", "create", "Bob", "--type", "PERSON"]);
  ok(await runCli(store, ["relations", "create", "--source", ada, "--target", bob, "--type", "KNOWS", "--metadata", '{"since":"1833"}']));
  const ctx = await openContext({ storeDir: store, embedder: createTestEmbedder() });
  const line = (i: number, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      content: i % 3 === 0 ? `mémoire ${i}: 日本語, emoji 🎉, tab\there, "quotes", --- and \\ backslash\nsecond line` : `memory number ${i} about topic ${i % 17}`,
      userId: `user-${i % 5}`,
      ...(i % 2 ? { agentId: "agent-1" } : {}),
      ...(i % 4 === 0 ? { tags: ["t1", `t${i % 7}`] } : {}),
      ...(i % 5 === 0 ? { metadata: { i, float: i / 7, unicode: "ü→🚀", list: [1, "two", null] } } : {}),
      ...(i % 10 === 0 ? { entityIds: i % 20 === 0 ? [ada, bob] : [ada] } : {}),
      ...(i % 6 === 1 ? { project: `proj-${i % 4}` } : {}),
      dedupe: false,
      autoSupersede: false,
      ...extra,
    });
  const replacing = Math.floor(count / 100);
  const ids: string[] = [];
  const first = await addMemoriesFromLines(ctx, Array.from({ length: count - replacing }, (_, i) => line(i)), { batchSize: 2000, onResult: (r) => void ids.push(r.memory!.id) });
  // Each replaces a memory of its own user (i and i + 5 share one).
  const second = await addMemoriesFromLines(ctx, Array.from({ length: replacing }, (_, k) => line(count - replacing + k, { content: `replacement ${k}`, userId: `user-${(k * 5) % 5}`, supersedes: [ids[k * 5]] })), { batchSize: 2000 });
  await ctx.close();
  expect(first.failed + second.failed).toBe(0);
}

describe("10,000 memories", () => {
  it("round-trip through Markdown byte for byte, and a second export into the same folder writes nothing", async () => {
    const dir = await tempDir();
    const [a, b] = [join(dir, "a"), join(dir, "b")];
    await large(a, 10_000);
    let t = performance.now();
    ok(await runCli(a, ["export", "--format", "markdown", join(dir, "md1")]));
    const mdExport = performance.now() - t;
    t = performance.now();
    const imported = await runCli(b, ["import", "--format", "markdown", join(dir, "md1")]);
    const mdImport = performance.now() - t;
    ok(imported);
    expect(imported.stderr).toMatch(/Created 10,003, updated 0, deleted 0; 0 unchanged/);
    ok(await runCli(b, ["export", "--format", "markdown", join(dir, "md2")]));
    const [one, two] = [await tree(join(dir, "md1")), await tree(join(dir, "md2"))];
    expect(one.size).toBe(10_002);
    expect([...one.values()].filter((t) => t.includes("\nsupersededBy: ")).length).toBe(100);
    expect(two).toEqual(one);
    const again = await runCli(b, ["export", "--format", "markdown", join(dir, "md1")]);
    expect(again.stderr).toMatch(/0 files written, 10,002 files unchanged, 0 files removed/);
    const reimport = await runCli(b, ["import", "--format", "markdown", join(dir, "md1")]);
    expect(reimport.stderr).toMatch(/Created 0, updated 0, deleted 0; 10,003 unchanged/);

    t = performance.now();
    ok(await runCli(a, ["export", "-o", join(dir, "a.jsonl")]));
    const jsonExport = performance.now() - t;
    t = performance.now();
    ok(await runCli(join(dir, "c"), ["import", join(dir, "a.jsonl"), "--batch-size", "1000"]));
    const jsonImport = performance.now() - t;
    console.log(`10,000 memories: Markdown export ${Math.round(mdExport)} ms, import ${Math.round(mdImport)} ms; JSON Lines export ${Math.round(jsonExport)} ms, import ${Math.round(jsonImport)} ms`);
  }, 600_000);
});

describe("a concurrent writer", () => {
  it("loses nothing: memories added while an import of 2,000 files runs are all there, and so are the 2,000", async () => {
    const dir = await tempDir();
    const [a, b] = [join(dir, "a"), join(dir, "b")];
    await large(a, 2000);
    ok(await runCli(a, ["export", "--format", "markdown", join(dir, "md")]));
    ok(await runCli(b, ["memories", "add", "the store exists", "--user", "zed"]));
    const importing = runCli(b, ["import", "--format", "markdown", join(dir, "md"), "--batch-size", "200"]);
    const added: string[] = [];
    let done = false;
    void importing.then(() => (done = true));
    for (let i = 0; i < 40 && (!done || i < 5); i++) {
      const r = await runCli(b, ["memories", "add", `concurrent note ${i}`, "--user", "zed", "--no-dedupe"]);
      ok(r);
      added.push(JSON.parse(r.stdout).id);
    }
    ok(await importing);
    const stored = new Set(lines((await runCli(b, ["export"])).stdout).filter((r) => r.kind === "memory").map((r) => r.id));
    expect(stored.size).toBe(2000 + 1 + added.length);
    for (const id of added) expect(stored.has(id)).toBe(true);
  }, 300_000);
});

describe("the quota", () => {
  it("refuses the whole import when the account's quota can't take every change, before the first", async () => {
    const dir = await tempDir();
    const store = join(dir, "s");
    ok(await runCli(store, ["memories", "add", "the store is made with the test embedder", "--user", "zed"]));
    ok(await runCli(store, ["accounts", "create", "tiny", "--plan", "free"]));
    ok(await runCli(store, ["--account", "tiny", "memories", "add", "the first note", "--user", "ada"]));
    const md = join(dir, "md");
    ok(await runCli(store, ["--account", "tiny", "export", "--format", "markdown", md]));
    for (const n of [1, 2, 3]) await writeFile(join(md, `memories/ada/new-${n}.md`), `new note ${n}\n`);
    const tiny = JSON.parse((await runCli(store, ["--account", "tiny", "usage"])).stdout);
    const { QuotaLedger } = await import("../../src/limits/ledger.js");
    // Two operations left: three creates don't fit.
    await new QuotaLedger(join(store, "ledger")).charge(tiny.accountId, 1000, "write", 1000 - tiny.used - 2);
    const r = await runCli(store, ["--account", "tiny", "import", "--format", "markdown", md]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/QUOTA_EXCEEDED/);
    expect(JSON.parse((await runCli(store, ["--account", "tiny", "memories", "list", "--user", "ada"])).stdout).pagination.total).toBe(1);
  });
});

describe("flags", () => {
  it("keeps --format markdown to export and import, and --dry-run and --delete-missing to the formats that plan", async () => {
    const dir = await tempDir();
    const store = join(dir, "s");
    ok(await runCli(store, ["memories", "add", "a memory", "--user", "ada"]));
    const cases: [string[], RegExp][] = [
      [["memories", "list", "--format", "markdown"], /--format markdown is only for `mm export` and `mm import`/],
      [["export", "--format", "markdown"], /folder is required/],
      [["export", join(dir, "out")], /path is for --format markdown \(a folder\) or --to agents-md \(a file\)/],
      [["export", "--format", "markdown", join(dir, "out"), "--vectors"], /--vectors applies to JSON Lines only/],
      [["export", "--to", "agents-md", join(dir, "AGENTS.md")], /--user is required with --to agents-md/],
      [["import", join(dir, "x.jsonl"), "--dry-run"], /--dry-run applies to --format markdown and --from agents-md/],
      [["import", "--format", "markdown", join(dir, "nowhere")], /is not a folder/],
      [["export", "--format", "markdown", join(dir, "s", "config.json")], /is a file, or a file stands on its path/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(store, args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(message);
    }
  });
});
