import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { json, runMm } from "../helpers/spawn-mm.js";
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

describe("at 80 columns", () => {
  /** Every line the screen shows fits: the terminal never had to break one, mid-word or not. */
  const fits = (screen: string[], raw: string) => {
    for (const line of screen) expect(line.length, raw).toBeLessThanOrEqual(80);
  };

  it("mm init breaks its sentences at spaces, never inside the model's name", async () => {
    const store = join(await tempDir(), "a-store-in-a-directory-with-a-rather-long-name", "store");
    for (const args of [["init", "--provider", "use-lite"], ["init"]]) {
      const r = await runInTerminal([...args, "--no-color"], { store, cols: 80 });
      expect(r.code, r.raw).toBe(0);
      fits(r.screen, r.raw);
      expect(r.screen.join("\n")).toContain("use-lite:universal-sentence-encoder-lite");
    }
  });

  it("the Ctrl-C hint of a batch breaks at a space, above the bar", async () => {
    const dir = await tempDir();
    const file = join(dir, "many.jsonl");
    await writeFile(file, Array.from({ length: 400 }, (_, i) => JSON.stringify(`note number ${i + 1}`)).join("\n") + "\n");
    const r = await runInTerminal(["memories", "add", "--batch", file, "--user", "a", "--batch-size", "16", "--no-color"], {
      store: join(dir, "store"),
      cols: 80,
      keys: [{ waitFor: /\d+\/400 lines/, send: "\u0003" }],
    });
    expect(r.code, r.raw).toBe(130);
    fits(r.screen, r.raw);
    expect(r.screen.join(" ")).toContain("(Ctrl-C again to quit at once).");
  });

  it("keys list shows each key's id as a start that keys revoke takes", async () => {
    const store = join(await tempDir(), "store");
    const made: string[] = [];
    for (const name of ["laptop", "work desktop"]) made.push(json(await runMm(["keys", "create", "--name", name], { store })).id);
    const r = await runInTerminal(["keys", "list", "--no-color"], { store, cols: 80 });
    fits(r.screen, r.raw);
    const shown = r.screen.map((l) => /^(key_\w+)\s+(laptop|work desktop)\b/.exec(l)).filter((m) => m !== null);
    expect(shown.map((m) => m[2])).toEqual(["laptop", "work desktop"]);
    for (const [i, m] of shown.entries()) {
      expect(made[i].startsWith(m[1])).toBe(true);
      expect(m[1].length).toBeGreaterThanOrEqual(12);
    }
    expect(r.screen.join("\n")).toContain("ids shortened: mm keys revoke takes them as shown");
    const wide = (await runInTerminal(["keys", "list", "--wide", "--no-color"], { store, cols: 80 })).screen.join("\n");
    for (const id of made) expect(wide).toContain(id);

    // A start that both ids share (ULIDs of this century begin 0) is refused, not guessed.
    const ambiguous = await runMm(["keys", "revoke", "key_0", "--format", "table"], { store });
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toBe("mm: <id> key_0 begins 2 keys' ids; give more of it.\n");
    const revoked = await runMm(["keys", "revoke", shown[1][1]], { store });
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(json(revoked)).toMatchObject({ id: made[1], revoked: true });
    expect(json(await runMm(["keys", "list"], { store })).items.map((k: { revoked: boolean }) => k.revoked)).toEqual([false, true]);
  });
});

describe("files and counts in the person's words", () => {
  it("a file that isn't there is 'no file …', not Node's ENOENT", async () => {
    const dir = await tempDir();
    const store = join(dir, "store");
    const missing = join(dir, "nope.jsonl");
    for (const args of [["import", missing], ["memories", "add", "--batch", missing, "--user", "u"]]) {
      const table = await runMm([...args, "--format", "table"], { store });
      expect(table.code, table.stderr).toBe(2);
      expect(table.stderr).toBe(`mm: no file ${missing}.\n`);
      const body = JSON.parse((await runMm(args, { store })).stderr);
      expect(body.error).toMatchObject({ code: "VALIDATION_ERROR", message: `no file ${missing}.` });
    }
  });

  it("an export of one memory, one entity and one relation says each in the singular", async () => {
    const store = join(await tempDir(), "store");
    for (const args of [
      ["memories", "add", "Ada wrote the first program", "--user", "u"],
      ["entities", "create", "Ada", "--type", "PERSON"],
      ["entities", "create", "Babbage", "--type", "PERSON"],
      ["relations", "create", "--source", "Ada", "--target", "Babbage", "--type", "KNOWS"],
    ])
      expect((await runMm(args, { store })).code).toBe(0);
    const r = await runMm(["export", "-o", join(store, "..", "out.jsonl")], { store });
    expect(r.stderr).toContain("Exported 1 memory, 2 entities, 1 relation to");
  });
});

describe("the default account", () => {
  it("is dated when its store was made, before and after auth.json is written, never 1970", async () => {
    const store = join(await tempDir(), "store");
    expect((await runMm(["init"], { store })).code).toBe(0);
    const made = JSON.parse(await readFile(join(store, "config.json"), "utf8")).createdAt as string;
    const dated = async () => json(await runMm(["accounts", "list"], { store })).items.find((a: { id: string }) => a.id === "acct_default").createdAt;
    expect(await dated()).toBe(made);
    expect((await runMm(["keys", "create", "--name", "laptop"], { store })).code).toBe(0); // writes auth.json
    expect(await dated()).toBe(made);
    const table = await runMm(["accounts", "list", "--format", "table"], { store });
    expect(table.stdout).toContain(`${made.slice(0, 10)} ${made.slice(11, 16)}`);
    expect(table.stdout).not.toContain("1970");
    expect(json(await runMm(["accounts", "set-plan", "default", "hobby"], { store })).createdAt).toBe(made);
  });
});

describe("an add that replaced something", () => {
  it("names what it replaced by its text, shortened, beside its id", async () => {
    const store = join(await tempDir(), "store");
    const paris = "I live in a small flat in Paris near the canal, on the fourth floor without a lift";
    const old = json(await runMm(["memories", "add", paris, "--user", "u"], { store })).id as string;
    const r = await runMm(["memories", "add", "I moved to Berlin last month", "--user", "u", "--format", "table"], { store });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`replaces ${old} ("${paris.slice(0, 49)}…") (mm memories restore <id> undoes it)`);
  });
});
