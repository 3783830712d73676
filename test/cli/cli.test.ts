import { createServer, type Server } from "node:http";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { run } from "../../src/cli/main.js";
import { VERSION } from "../../src/cli/version.js";
import { runCli, Capture, stdinOf, type CliResult } from "../helpers/run-cli.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();



const mm = runCli;

const parse = (r: CliResult) => JSON.parse(r.stdout);

describe("mm memories (in-process)", () => {
  it("prints JSON when piped, a table on a terminal, and JSON on a terminal with --json", async () => {
    const store = await tempDir();
    const piped = await mm(store, ["memories", "add", "tea with lemon", "--user", "u"]);
    expect(piped.code).toBe(0);
    expect(parse(piped)).toMatchObject({ content: "tea with lemon", userId: "u" });

    const table = await mm(store, ["memories", "list"], { tty: true });
    expect(table.code).toBe(0);
    expect(table.stdout).toContain("tea with lemon");
    expect(table.stdout).toMatch(/id\S*\s+content\s+user/);
    expect(table.stdout).toContain("page 1 of 1 · 1 memory");
    expect(() => JSON.parse(table.stdout)).toThrow();

    const forced = await mm(store, ["memories", "list", "--json"], { tty: true });
    expect(parse(forced).pagination.total).toBe(1);
  });

  it("reads content from stdin with '-', keeping newlines, emoji and quotes exactly", async () => {
    const store = await tempDir();
    const content = "línea 1\nline \"2\" 'quoted' \\ back\r\n😀👩‍👩‍👧 مرحبا\tend";
    const r = await mm(store, ["memories", "add", "-", "--user", "u"], { input: content + "\n" });
    expect(r.code, r.stderr).toBe(0);
    const id = parse(r).id;
    expect(parse(await mm(store, ["memories", "get", id])).content).toBe(content);
  });

  it("takes the user from MM_USER when --user is absent", async () => {
    const store = await tempDir();
    const r = await mm(store, ["memories", "add", "hello"], { env: { MM_USER: "from-env" } });
    expect(parse(r).userId).toBe("from-env");
    const flag = await mm(store, ["memories", "add", "hello", "--user", "flag"], { env: { MM_USER: "from-env" } });
    expect(parse(flag).userId).toBe("flag");
  });

  it("passes every field flag through: agent, repeated tags, metadata", async () => {
    const store = await tempDir();
    const r = await mm(store, ["memories", "add", "x", "-u", "u", "-a", "bot", "-t", "a", "-t", "b", "-m", '{"k":[1,{"n":null}]}']);
    expect(parse(r)).toMatchObject({ userId: "u", agentId: "bot", tags: ["a", "b"], metadata: { k: [1, { n: null }] } });
    const filtered = parse(await mm(store, ["memories", "list", "--tag", "a", "--tag", "b", "--agent", "bot"]));
    expect(filtered.items).toHaveLength(1);
    expect(parse(await mm(store, ["memories", "list", "--tag", "a", "--tag", "zzz"])).items).toHaveLength(0);
  });

  it("rejects bad flags with the spec's codes and exit 2, storing nothing", async () => {
    const store = await tempDir();
    const cases: [string[], string][] = [
      [["memories", "add", "x", "--user", "u", "--metadata", "{not json"], "VALIDATION_ERROR"],
      [["memories", "add", "x", "--user", "u", "--metadata", "[1,2]"], "VALIDATION_ERROR"],
      [["memories", "add", "x", "--user", ""], "INVALID_USER_ID"],
      [["memories", "add", "x", "--user", "u", "--tag", ""], "VALIDATION_ERROR"],
      [["memories", "add", "x", "--user", "u", "--tag", "a,b"], "VALIDATION_ERROR"],
      [["memories", "add", "", "--user", "u"], "VALIDATION_ERROR"],
      [["memories", "add", "x".repeat(10_001), "--user", "u"], "CONTENT_TOO_LONG"],
      [["memories", "search", "x", "--limit", "0"], "VALIDATION_ERROR"],
      [["memories", "search", "x", "--limit", "ten"], "VALIDATION_ERROR"],
      [["memories", "search", "x", "--threshold", "1.5"], "VALIDATION_ERROR"],
      [["memories", "search", "x", "--threshold", "high"], "VALIDATION_ERROR"],
      [["memories", "search", "x", "--mode", "fuzzy"], "VALIDATION_ERROR"],
      [["memories", "list", "--page", "0"], "VALIDATION_ERROR"],
      [["memories", "list", "--limit", "2.5"], "VALIDATION_ERROR"],
      [["memories", "list", "--format", "xml"], "VALIDATION_ERROR"],
      [["memories", "add", "x", "--user", "u", "--bogus"], "VALIDATION_ERROR"],
    ];
    for (const [args, code] of cases) {
      const r = await mm(store, args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(JSON.parse(r.stderr).error.code, args.join(" ")).toBe(code);
      expect(r.stdout, args.join(" ")).toBe("");
    }
    expect(parse(await mm(store, ["memories", "list"])).pagination.total).toBe(0);
  });

  it("prints one plain line on stderr for an error on a terminal", async () => {
    const store = await tempDir();
    await mm(store, ["memories", "add", "something", "--user", "u"]);
    const r = await mm(store, ["memories", "get", "mem_missing"], { tty: true });
    expect(r.code).toBe(3);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("mm: Memory mem_missing does not exist.");
    expect(r.stdout).toBe("");
  });

  it("searches in each --mode", async () => {
    const store = await tempDir();
    const m = parse(await mm(store, ["memories", "add", "walrus colony on the ice", "--user", "u"]));
    for (const mode of ["hybrid", "semantic", "keyword"]) {
      const r = parse(await mm(store, ["memories", "search", "walrus", "--mode", mode, "--threshold", "0"]));
      expect(r.results.map((h: { id: string }) => h.id), mode).toEqual([m.id]);
    }
  });

  it("clamps list and search limits above 100 and reports the size used", async () => {
    const store = await tempDir();
    await mm(store, ["memories", "add", "x", "--user", "u"]);
    expect(parse(await mm(store, ["memories", "list", "--limit", "500"])).pagination.limit).toBe(100);
    expect(parse(await mm(store, ["memories", "search", "x", "--limit", "500", "--threshold", "0"])).results).toHaveLength(1);
  });

  it("updates with PATCH semantics and clears fields with --clear-*", async () => {
    const store = await tempDir();
    const m = parse(await mm(store, ["memories", "add", "old text", "-u", "u", "-a", "bot", "-t", "t1", "-m", '{"a":1}']));
    const u1 = parse(await mm(store, ["memories", "update", m.id, "-t", "t2", "-t", "t3"]));
    expect(u1).toMatchObject({ content: "old text", agentId: "bot", tags: ["t2", "t3"], metadata: { a: 1 } });
    const u2 = parse(await mm(store, ["memories", "update", m.id, "-"], { input: "new text\n" }));
    expect(u2.content).toBe("new text");
    const u3 = parse(await mm(store, ["memories", "update", m.id, "--clear-agent", "--clear-tags", "--clear-metadata"]));
    expect(Object.keys(u3)).toEqual(["id", "content", "userId", "createdAt", "updatedAt"]);
    const none = await mm(store, ["memories", "update", m.id]);
    expect(none.code).toBe(2);
    const missing = await mm(store, ["memories", "update", "mem_nope", "x"]);
    expect(missing.code).toBe(3);
    expect(JSON.parse(missing.stderr).error.code).toBe("MEMORY_NOT_FOUND");
  });

  it("deletes, then answers not found with exit 3", async () => {
    const store = await tempDir();
    const m = parse(await mm(store, ["memories", "add", "x", "-u", "u"]));
    expect(parse(await mm(store, ["memories", "delete", m.id, "--yes"]))).toEqual({ success: true, id: m.id });
    const again = await mm(store, ["memories", "rm", m.id, "--yes"]);
    expect(again.code).toBe(3);
  });
});

describe("mm memories add --batch", () => {
  it("adds the good lines, reports each bad line with its number, and exits non-zero", async () => {
    const dir = await tempDir();
    const file = join(dir, "in.jsonl");
    await writeFile(
      file,
      [
        JSON.stringify({ content: "first", userId: "a" }),
        "{broken json",
        "",
        JSON.stringify({ content: "no user" }),
        JSON.stringify("a bare string is content"),
        JSON.stringify({ content: "y".repeat(10_001), userId: "a" }),
        JSON.stringify({ content: "tagged", userId: "b", tags: ["own"] }),
      ].join("\n"),
    );
    const r = await mm(dir + "/store", ["memories", "add", "--batch", file, "--user", "default-user", "--tag", "imported", "--batch-size", "2"]);
    expect(r.code).toBe(2);
    const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.line, l.memory ? "ok" : l.error.code])).toEqual([
      [1, "ok"],
      [2, "VALIDATION_ERROR"],
      [4, "ok"],
      [5, "ok"],
      [6, "CONTENT_TOO_LONG"],
      [7, "ok"],
    ]);
    expect(lines[2].memory).toMatchObject({ userId: "default-user", tags: ["imported"] });
    expect(lines[3].memory.content).toBe("a bare string is content");
    expect(lines[5].memory).toMatchObject({ userId: "b", tags: ["own"] });
    expect(JSON.parse(r.stderr.trim().split("\n").pop()!).error).toMatchObject({ code: "VALIDATION_ERROR", added: 4, failed: 2 });
    expect(parse(await mm(dir + "/store", ["memories", "list"])).pagination.total).toBe(4);
  });

  it("reads the batch from stdin with '-', and prints a summary in table mode", async () => {
    const dir = await tempDir();
    const input = Array.from({ length: 5 }, (_, i) => JSON.stringify({ content: `line ${i}`, userId: "u" })).join("\n");
    const r = await mm(dir, ["memories", "add", "--batch", "-", "--format", "table"], { input });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("Added 5 memories.");
  });

  it("fails clearly on a missing file and a bad batch size", async () => {
    const dir = await tempDir();
    const missing = await mm(dir, ["memories", "add", "--batch", join(dir, "nope.jsonl")]);
    expect(missing.code).toBe(2);
    expect(JSON.parse(missing.stderr).error.message).toContain("nope.jsonl");
    const size = await mm(dir, ["memories", "add", "--batch", "-", "--batch-size", "0"], { input: "" });
    expect(size.code).toBe(2);
  });
});

describe("mm store and mm init", () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

  it("bills a read once, and the one that takes the last unit of a quota still answers", async () => {
    const store = await tempDir();
    await mm(store, ["memories", "add", "made with the test embedder", "-u", "u"]);
    await mm(store, ["accounts", "create", "tight", "--plan", "free"]);
    await mm(store, ["memories", "add", "hello", "-u", "u", "--account", "tight"]);
    const { QuotaLedger } = await import("../../src/limits/ledger.js");
    const id = parse(await mm(store, ["accounts", "list"])).items.find((a: { name: string }) => a.name === "tight").id;
    const ledger = new QuotaLedger(join(store, "ledger"));
    await ledger.charge(id, 1000, "read", 1000 - 1 - (await ledger.usage(id, 1000)).used); // one operation left
    const last = await mm(store, ["memories", "list", "--account", "tight"]);
    expect(last.code, last.stderr).toBe(0);
    expect(parse(last).items.map((m: { content: string }) => m.content)).toEqual(["hello"]);
    expect((await ledger.usage(id, 1000)).used).toBe(1000);
    const refused = await mm(store, ["memories", "list", "--account", "tight"]);
    expect(refused.stderr).toContain("QUOTA_EXCEEDED");
    expect((await ledger.usage(id, 1000)).used).toBe(1000);
  });

  it("shows the store path, stats and optimizes", async () => {
    const store = await tempDir();
    expect(parse(await mm(store, ["store", "path"])).path).toBe(store);
    for (let i = 0; i < 3; i++) await mm(store, ["memories", "add", `m${i}`, "-u", "u"]);
    const stats = parse(await mm(store, ["store", "stats"]));
    expect(stats).toMatchObject({ path: store, embedder: { provider: "test", dims: 64 }, memories: { rows: 3 } });
    const opt = parse(await mm(store, ["store", "optimize", "--keep-minutes", "0"]));
    expect(opt).toMatchObject({ fragmentsRemoved: 3, matchKeysRefreshed: 0 }); // memories this mm stored have today's keys
    expect(parse(await mm(store, ["store", "stats"])).memories.fragments).toBe(1);
    expect((await mm(store, ["store", "optimize", "--keep-minutes", "-1"])).code).toBe(2);
  });

  it("init creates a use-lite store without loading the model, and is idempotent", async () => {
    const store = join(await tempDir(), "s");
    const stdout = new Capture(false);
    const stderr = new Capture(false);
    const stdin = stdinOf();
    const code = await run(["init", "--store", store], { stdout, stderr, stdin, env: {} });
    expect(code, stderr.text).toBe(0);
    expect(JSON.parse(stdout.text)).toEqual({
      store,
      embedder: { provider: "use-lite", model: "universal-sentence-encoder-lite", dims: 512 },
      created: true,
      changed: false,
    });
    const config = JSON.parse(await readFile(join(store, "config.json"), "utf8"));
    expect(config.embedder.provider).toBe("use-lite");
    const again = new Capture(false);
    expect(await run(["init", "--store", store], { stdout: again, stderr, stdin, env: {} })).toBe(0);
    expect(JSON.parse(again.text).created).toBe(false);
  });

  it("init with the openai provider probes the endpoint, and refuses to switch a store that holds memories", async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d)).on("end", () => {
        const { input } = JSON.parse(body) as { input: string[] };
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ data: input.map((_, index) => ({ index, embedding: [1, index + 1, 0, 2] })) }));
      });
    });
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", () => r()));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
    const io = () => ({ stdout: new Capture(false), stderr: new Capture(false), stdin: stdinOf(), env: {} });

    const fresh = join(await tempDir(), "s");
    const a = io();
    expect(await run(["init", "--store", fresh, "--provider", "openai", "--url", url, "--model", "tiny"], a), a.stderr.text).toBe(0);
    expect(JSON.parse(a.stdout.text).embedder).toMatchObject({ provider: "openai", model: "tiny", dims: 4 });
    const added = io();
    expect(await run(["memories", "add", "hello", "--user", "u", "--store", fresh], added), added.stderr.text).toBe(0);

    const populated = await tempDir();
    await mm(populated, ["memories", "add", "kept", "-u", "u"]);
    const b = io();
    const code = await run(["init", "--store", populated, "--provider", "openai", "--url", url, "--model", "tiny"], b);
    expect(code).toBe(6);
    const err = JSON.parse(b.stderr.text).error;
    expect(err.code).toBe("EMBEDDER_MISMATCH");
    expect(err.message).toContain("test:bag-of-words (64 dims)");
    expect(err.message).toContain("openai:tiny (4 dims)");
    expect(parse(await mm(populated, ["memories", "list"])).items[0].content).toBe("kept");

    const c = io();
    expect(await run(["init", "--store", join(populated, "x"), "--provider", "nope"], c)).toBe(2);
  });

  it("prints help and version with exit 0", async () => {
    const store = await tempDir();
    const help = await mm(store, ["memories", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("search");
    const version = await mm(store, ["--version"]);
    expect(version.stdout.trim()).toBe(VERSION);
    const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8"));
    expect(VERSION).toBe(pkg.version);
  });
});
