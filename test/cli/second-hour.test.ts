import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/run-cli.js";
import { collect, runMm, spawnMm } from "../helpers/spawn-mm.js";
import { runInTerminal } from "../helpers/terminal.js";
import { useTempDirs } from "../helpers/temp.js";

/** Issue #26: what a newcomer met in their second hour, each checked the way they met it. */

const tempDir = useTempDirs();
const STACK = /\bat .+:\d+:\d+|Unhandled 'error' event|INTERNAL_ERROR|internal error/;

/** A store with `n` memories of about `size` characters each, added as one batch (test embedder). */
async function storeWith(n: number, size = 40): Promise<string> {
  const store = join(await tempDir(), "store");
  const lines = Array.from({ length: n }, (_, i) => JSON.stringify({ content: `Note ${i} ${"about the garden and the weather ".repeat(Math.ceil(size / 32))}`.slice(0, size), userId: "alice" }));
  const r = await runCli(store, ["memories", "add", "--batch", "-"], { input: lines.join("\n") + "\n" });
  expect(r.code, r.stderr).toBe(0);
  return store;
}

describe("mm export: the person's mistakes and pipes", () => {
  it("-o naming a directory or a file in a missing directory: a message about --output, no crash", async () => {
    const store = await storeWith(2);
    const dir = await tempDir();
    for (const [target, why] of [
      [dir, `it is a directory; name a file in it, e.g. ${dir}/export.jsonl`],
      [join(dir, "nodir", "x.jsonl"), `there is no directory ${join(dir, "nodir")}`],
    ]) {
      for (const json of [true, false]) {
        const r = await runMm(["export", "-o", target, ...(json ? [] : ["--format", "table"])], { store });
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).not.toMatch(STACK);
        if (json) expect(JSON.parse(r.stderr).error).toMatchObject({ code: "VALIDATION_ERROR", message: `--output ${target} can't be written: ${why}.` });
        else expect(r.stderr).toBe(`mm: --output ${target} can't be written: ${why}.\n`);
      }
    }
  });

  it("`mm export | head -2` stops quietly with exit 0, like `mm memories list | head`", async () => {
    const store = await storeWith(300, 2000);
    const child = spawnMm(["export"], { store });
    child.stdin!.end();
    let seen = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      seen += d;
      if (seen.split("\n").length > 2) child.stdout!.destroy(); // head -2 has its lines and exits
    });
    let stderr = "";
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
    expect(stderr).not.toMatch(/EPIPE|INTERNAL_ERROR|internal error/);
    expect(code, stderr).toBe(0);
    expect(JSON.parse(seen.split("\n")[0])).toHaveProperty("format");
  });
});

describe("deletes without a terminal", () => {
  it("refuse without --yes, saying so (exit 2, nothing deleted); --yes deletes", async () => {
    const store = join(await tempDir(), "store");
    const id = JSON.parse((await runCli(store, ["entities", "create", "Marcus", "--type", "PERSON"])).stdout).id;
    const mem = JSON.parse((await runCli(store, ["memories", "add", "Marcus likes tea", "--user", "u"])).stdout).id;
    for (const [args, command] of [
      [["entities", "delete", "Marcus"], "mm entities delete"],
      [["memories", "rm", mem], "mm memories delete"],
    ] as const) {
      const r = await runMm([...args, "--format", "table"], { store });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe(`mm: \`${command}\` deletes for good and can't ask for confirmation without a terminal; add --yes to go ahead.\n`);
    }
    expect(JSON.parse((await runCli(store, ["entities", "get", id])).stdout).id).toBe(id);
    expect(JSON.parse((await runCli(store, ["memories", "get", mem])).stdout).id).toBe(mem);
    expect(JSON.parse((await runMm(["entities", "delete", "Marcus", "--yes"], { store })).stdout)).toMatchObject({ success: true, id });
  });
});

describe("the first write to a store that isn't there", () => {
  it("says on stderr that it created a new store, where, and from which setting; later writes don't", async () => {
    const store = join(await tempDir(), "typo-store");
    const first = await runMm(["memories", "add", "hello", "--user", "u", "--format", "table"], { store });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toBe(`mm: created a new store at ${store} (from MM_STORE)\n`);
    const second = await runMm(["memories", "add", "again", "--user", "u", "--store", store, "--format", "table"]);
    expect(second.stderr).toBe("");
    const other = join(await tempDir(), "keys-store");
    const key = await runMm(["accounts", "create", "acme", "--store", other, "--format", "table"]);
    expect(key.stderr).toBe(`mm: created a new store at ${other} (from --store)\n`);
  });

  it("on a terminal, also when stdout is piped to jq; never in a script's captured JSON stderr", async () => {
    const store = join(await tempDir(), "typo-store");
    const screen = await runInTerminal(["memories", "add", "hello", "--user", "u", "--json"], { store });
    expect(screen.raw).toContain(`mm: created a new store at ${store} (from MM_STORE)`);
    const other = join(await tempDir(), "other");
    const piped = await runMm(["memories", "add", "", "--user", "u"], { store: other });
    expect(JSON.parse(piped.stderr).error.code).toBe("VALIDATION_ERROR");
  });
});

describe("tables in a real terminal, 80 and 120 columns", () => {
  const LONG = "A rather long memory about the trip to Lisbon with my sister Maya, the tram to Belém and the view from the castle";
  const ID = /\b(mem|ent|rel|key|acct)_[0-9A-Z]+/g;

  async function seeded(): Promise<{ store: string; ids: Record<string, string> }> {
    const store = join(await tempDir(), "store");
    const ids: Record<string, string> = {};
    const run = async (args: string[]) => JSON.parse((await runMm(args, { store })).stdout);
    ids.mem = (await run(["memories", "add", LONG, "--user", "alice", "--tag", "travel"])).id;
    await run(["entities", "create", "Ada Lovelace", "--type", "PERSON", "--description", "mathematician"]);
    await run(["entities", "create", "Analytical Engine", "--type", "PRODUCT"]);
    ids.rel = (await run(["relations", "create", "--source", "Ada Lovelace", "--target", "Analytical Engine", "--type", "CREATED"])).id;
    await run(["accounts", "create", "acme"]);
    ids.key = (await run(["keys", "create", "--account", "acme", "--name", "laptop"])).id;
    return { store, ids };
  }

  it("content gets the room, ids are whole or left out (with a line saying how to see them), and no row wraps", async () => {
    const { store, ids } = await seeded();
    const commands = [["memories", "list"], ["memories", "search", "Lisbon tram", "--user", "alice", "--threshold", "0"], ["relations", "list"], ["keys", "list"], ["entities", "list"], ["graph", "neighbors", "Ada Lovelace"]];
    for (const cols of [80, 120]) {
      // Each command's screen at this width, in order, for the checks after the loop (they read an unchanged store).
      const screens: string[] = [];
      for (const args of commands) {
        const r = await runInTerminal([...args, "--no-color"], { store, cols });
        screens.push(r.screen.join("\n"));
        const what = `${args.join(" ")} at ${cols}: \n${r.screen.join("\n")}`;
        expect(r.code, what + r.raw).toBe(0);
        for (const line of r.screen) expect(line.length, what).toBeLessThanOrEqual(cols);
        // An id is never cut: every id on screen is a whole one from the store.
        for (const line of r.screen) expect(line, what).not.toMatch(/\b(mem|ent|rel|key|acct)_[0-9A-Z]*…/);
        const shown = r.screen.join("\n");
        const leftOut = /left out to fit; --wide or --format json shows/.test(shown);
        if (!leftOut) for (const id of shown.match(ID) ?? []) expect(id.length, what).toBeGreaterThanOrEqual(12);
      }
      const [list, search, relations] = screens;
      // More of the content than of anything else: at least 40 characters of it at 80 columns.
      expect(list).toContain(LONG.slice(0, 40));
      expect(search).toContain(LONG.slice(0, 50));
      if (cols === 80) {
        expect(list).toContain("id left out to fit; --wide or --format json shows ids");
        expect(list).not.toContain(ids.mem);
      }
      if (cols === 120) {
        expect(list).toContain(ids.mem);
        expect(relations).toContain(ids.rel);
      }
    }
    const wide = (await runInTerminal(["relations", "list", "--wide", "--no-color"], { store, cols: 80 })).screen.join("\n");
    expect(wide).toContain(ids.rel);
    const keysWide = (await runInTerminal(["keys", "list", "--wide", "--no-color"], { store, cols: 80 })).screen.join("\n");
    expect(keysWide).toContain(ids.key);
  });
});

describe("a batch that runs into the monthly quota", () => {
  it("stores exactly up to the limit (1,000 of 1,005 lines on a free account) and says so", async () => {
    const store = join(await tempDir(), "store");
    expect((await runCli(store, ["memories", "add", "the store's first memory", "--user", "u"])).code).toBe(0); // the test embedder's store
    expect((await runCli(store, ["accounts", "create", "fresh", "--plan", "free"])).code).toBe(0);
    const lines = Array.from({ length: 1005 }, (_, i) => JSON.stringify({ content: `note number ${i}`, userId: "u" })).join("\n") + "\n";
    const r = await runCli(store, ["memories", "add", "--batch", "-", "--account", "fresh", "--format", "table"], { input: lines });
    expect(r.code, r.stderr).toBe(4);
    expect(r.stdout).toContain("Added 1,000 memories; 5 lines failed.");
    expect(r.stderr).toMatch(
      /mm: The monthly quota of 1,000 operations is used up \(1,000 of 1,000\): 1,000 memories were added, up to the limit, and 5 lines were not stored\. The quota resets at \d{4}-\d\d-01T00:00:00\.000Z\.\n$/,
    );
    const usage = JSON.parse((await runCli(store, ["usage", "--account", "fresh"])).stdout);
    expect(usage).toMatchObject({ used: 1000, limit: 1000 });
    // Stored: the default account's one memory and the batch's 1,000 (a read as "fresh" is refused now).
    expect(JSON.parse((await runCli(store, ["store", "stats"])).stdout).memories.rows).toBe(1001);
  });
});

describe("mm serve on a terminal, and mm console finding it", () => {
  it("the banner and readable log lines, no raw JSON; mm console links to the port the server really uses", async () => {
    const store = join(await tempDir(), "store");
    expect((await runCli(store, ["memories", "add", "a memory", "--user", "alice"])).code).toBe(0);
    const serving = runInTerminal(["serve", "--port", "0", "--no-warm"], { store, keys: [{ waitFor: /GET \/console\/ +\d{3}/, send: "\u0003" }], timeoutMs: 40_000 });
    const record = join(store, "serve.json");
    for (let i = 0; i < 300 && !existsSync(record); i++) await new Promise((r) => setTimeout(r, 100));
    const { url } = JSON.parse(await readFile(record, "utf8")) as { url: string };
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(url).not.toBe("http://127.0.0.1:8080");
    const link = JSON.parse((await runMm(["console", "link"], { store })).stdout);
    expect(new URL(link.url).origin).toBe(url);
    const opened = await runMm(["console"], { store, env: { DISPLAY: "", WAYLAND_DISPLAY: "" } });
    expect(opened.stdout).toContain(`${url}/console/signin?token=`);
    expect(opened.stderr).not.toContain("no mm serve answers");
    const screen = await serving;
    const text = screen.screen.join("\n");
    expect(text).toContain(`mm serve: listening on ${url}`);
    expect(text).toMatch(/\d\d:\d\d:\d\d  GET \/console\/ +\d{3}  [\d.]+ ms/);
    for (const line of screen.screen) expect(line, text).not.toMatch(/^\{"/);
    // Stopped: the record is gone, and links go back to the configured default.
    expect(existsSync(record)).toBe(false);
    expect(new URL(JSON.parse((await runMm(["console", "link"], { store })).stdout).url).origin).toBe("http://127.0.0.1:8080");
    // --url given once in help, for the command that has it.
    const help = await runMm(["console", "link", "--help"], { store });
    expect(help.stdout.match(/--url <url>/g)).toHaveLength(1);
  });
});

describe("mm relations update", () => {
  it("changes the type and metadata as PATCH /v1/relations/:id does, and refuses to move the ends", async () => {
    const store = join(await tempDir(), "store");
    const run = async (args: string[]) => runCli(store, args);
    await run(["entities", "create", "Sam Rivera", "--type", "PERSON"]);
    await run(["entities", "create", "Acme", "--type", "ORGANIZATION"]);
    const rel = JSON.parse((await run(["relations", "create", "--source", "Sam Rivera", "--target", "Acme", "--type", "WORKS_FOR"])).stdout);
    const updated = await run(["relations", "update", rel.id, "--type", "MANAGES", "--metadata", '{"since":2024}']);
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ id: rel.id, type: "MANAGES", metadata: { since: 2024 }, source: { name: "Sam Rivera" }, target: { name: "Acme" } });
    const cleared = JSON.parse((await run(["relations", "update", rel.id, "--clear-metadata"])).stdout);
    expect(cleared.metadata ?? null).toBeNull();
    const bad = await runCli(store, ["relations", "update", rel.id, "--type", "manages"], { tty: true });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("MANAGES");
    const none = await runCli(store, ["relations", "update", rel.id], { tty: true });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/--type|--metadata/);
  });
});

describe("filters by metadata and by linked entity", () => {
  it("--meta key=value (repeatable) and --entity NAME on search and list; the same over HTTP", async () => {
    const store = join(await tempDir(), "store");
    const run = async (args: string[]) => {
      const r = await runCli(store, args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      return JSON.parse(r.stdout);
    };
    await run(["entities", "create", "Ada Lovelace", "--type", "PERSON"]);
    const a = await run(["memories", "add", "tea notes from the archive", "--user", "u", "--metadata", '{"source":"notes","year":1843}', "--entity", "Ada Lovelace"]);
    const b = await run(["memories", "add", "tea notes from a letter", "--user", "u", "--metadata", '{"source":"letters","year":18430}']);
    const c = await run(["memories", "add", "tea notes, undated", "--user", "u", "--metadata", '{"note":{"source":"notes"},"tricky":"50%_off"}']);
    const ids = (body: { items?: { id: string }[]; results?: { id: string }[] }) => (body.items ?? body.results ?? []).map((m) => m.id).sort();
    const search = (...extra: string[]) => run(["memories", "search", "tea notes", "--user", "u", "--threshold", "0", ...extra]);
    expect(ids(await run(["memories", "list", "--meta", "source=notes"]))).toEqual([a.id, c.id].sort());
    expect(ids(await run(["memories", "list", "--meta", "source=notes", "--meta", "year=1843"]))).toEqual([a.id]);
    expect(ids(await run(["memories", "list", "--meta", "year=18430"]))).toEqual([b.id]);
    expect(ids(await run(["memories", "list", "--meta", "tricky=50%_off"]))).toEqual([c.id]);
    expect(ids(await run(["memories", "list", "--meta", "tricky=50%"]))).toEqual([]);
    expect(ids(await run(["memories", "list", "--entity", "Ada Lovelace"]))).toEqual([a.id]);
    expect(ids(await search("--meta", "source=letters"))).toEqual([b.id]);
    expect(ids(await search("--entity", "Ada Lovelace"))).toEqual([a.id]);
    expect(ids(await search("--meta", "year=1843", "--meta", "source=notes"))).toEqual([a.id]);
    const bad = await runCli(store, ["memories", "list", "--meta", "source"], { tty: true });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--meta must be key=value, e.g. --meta source=notes (got "source")');
    // HTTP: `metadata` in the search body, `metadata.KEY` in the list query, `entityId` in both.
    const { startServer } = await import("../../src/http/server.js");
    const { createTestEmbedder } = await import("../helpers/test-embedder.js");
    const server = await startServer({ storeDir: store, port: 0, env: {}, embedder: createTestEmbedder(), warm: false });
    try {
      const key = JSON.parse((await runCli(store, ["keys", "create", "--name", "t"])).stdout).key;
      const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };
      const listed = await (await fetch(`${server.url}/v1/memories?metadata.source=notes&metadata.year=1843`, { headers })).json();
      expect(ids(listed)).toEqual([a.id]);
      const found = await (await fetch(`${server.url}/v1/memories/search`, { method: "POST", headers, body: JSON.stringify({ query: "tea notes", userId: "u", threshold: 0, metadata: { year: 1843 } }) })).json();
      expect(ids(found)).toEqual([a.id]);
      const byEntity = await (await fetch(`${server.url}/v1/memories?entityId=${a.entityIds[0]}`, { headers })).json();
      expect(ids(byEntity)).toEqual([a.id]);
    } finally {
      await server.close();
    }
  });
});

describe("messages on a terminal", () => {
  it("break at spaces to the terminal's width, never mid-word", async () => {
    const store = join(await tempDir(), "a-store-path-that-is-rather-long", "and-deeper-still");
    const r = await runInTerminal(["memories", "list", "--no-color"], { store, cols: 60 });
    expect(r.code).toBe(6);
    const lines = r.screen.filter((l) => l !== "");
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(line.length, lines.join("\n")).toBeLessThanOrEqual(Math.max(60, ...line.split(" ").map((w) => w.length)));
    // Joined at the breaks with spaces, the lines are the one message: no word was cut.
    expect(lines.join(" ")).toBe(`mm: There is no mm store at ${store} (from MM_STORE). Create it with \`mm init\`, or by adding something to it (\`mm memories add "…" --user you\`).`);
  });

  it("a mistyped subcommand gets the nearest one of its group", async () => {
    const r = await runCli(join(await tempDir(), "store"), ["memories", "serach", "tea"], { tty: true, env: { NO_COLOR: "1" } });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("mm: unknown command 'serach' for `mm memories`. Did you mean `mm memories search`? See `mm memories --help`.\n");
  });
});
