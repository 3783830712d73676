import { spawn } from "node:child_process";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer } from "node:net";
import { createClient, MmApiError } from "../../src/client/index.js";
import { nodeFetch } from "../../src/cli/http-fetch.js";
import { rejection } from "../helpers/errors.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestServer, type TestAccount, type TestServer } from "../helpers/http-server.js";
import { collect, json, MM_BIN, runMm } from "../helpers/spawn-mm.js";
import { runInTerminal } from "../helpers/terminal.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * `mm --remote`: the same commands, through a real server on a real port, print what they print on
 * the server's store itself, in every format; commands without an endpoint refuse clearly; and
 * `mm login` keeps the key in a private file, read from stdin, never from the command line.
 */
const tempDir = useTempDirs();
let server: TestServer;
let acme: TestAccount;
let ada: string;
let memory: string;

beforeAll(async () => {
  server = await startTestServer();
  acme = await server.account("acme");
  const mm = createClient({ baseUrl: server.url, apiKey: acme.key });
  const a = await mm.entities.create({ name: "Ada Lovelace", type: "PERSON", description: "mathematician" });
  const b = await mm.entities.create({ name: "Charles Babbage", type: "PERSON" });
  await mm.relations.create({ sourceId: a.id, targetId: b.id, type: "KNOWS" });
  memory = (await mm.memories.create({ content: "Ada wrote the first program", userId: "ada", tags: ["history"], entityIds: [a.id] })).id;
  await mm.memories.create({ content: "Ada prefers green tea", userId: "ada" });
  ada = a.id;
});
afterAll(() => server.close());

const local = (args: string[], tty = false) => runCli(server.storeDir, ["--account", acme.id, ...args], { tty, columns: 120, clock: server.clock });
// The key comes by MM_API_KEY: given as --key on a terminal it would add a warning to the output compared.
const remote = (args: string[], opts: { tty?: boolean; env?: Record<string, string> } = {}) =>
  runCli(join(server.storeDir, "not-used"), ["--remote", server.url, ...args], { tty: opts.tty, columns: 120, env: { MM_API_KEY: acme.key, ...opts.env } });

describe("the same output as on the store itself", () => {
  const READS = [
    ["memories", "list", "--user", "ada"],
    ["memories", "get", "MEMORY"],
    ["memories", "search", "green tea", "--user", "ada", "--threshold", "0"],
    ["memories", "search", "quantum chromodynamics", "--user", "ada"],
    ["entities", "list"],
    ["entities", "get", "Ada Lovelace"],
    ["entities", "memories", "ADA"],
    ["relations", "list", "--source", "Ada Lovelace"],
    ["graph", "neighbors", "Ada Lovelace", "--depth", "2"],
    ["graph", "path", "Ada Lovelace", "Charles Babbage"],
    ["graph", "export", "--format", "mermaid"],
    ["memories", "get", "mem_00000000000000000000000000"],
    ["memories", "list", "--limit", "500"],
    ["entities", "get", "Nobody At All"],
  ];
  it.each(READS.map((args) => [args.join(" "), args] as const))("mm %s (JSON and table)", async (_name, template) => {
    const args = template.map((a) => (a === "MEMORY" ? memory : a === "ADA" ? ada : a));
    for (const tty of [false, true]) {
      const [l, r] = [await local(args, tty), await remote(args, { tty })];
      expect(r.code, r.stderr).toBe(l.code);
      expect(r.stdout).toBe(l.stdout);
      expect(r.stderr).toBe(l.stderr);
      expect(l.stdout + l.stderr).not.toBe("");
    }
  });

  it("writes through the server: add, update, create an entity twice, delete", async () => {
    const added = await remote(["memories", "add", "Ada met Mary Somerville", "--user", "ada", "--tag", "people"]);
    expect(added.code, added.stderr).toBe(0);
    const id = JSON.parse(added.stdout).id;
    expect(JSON.parse((await local(["memories", "get", id])).stdout).content).toBe("Ada met Mary Somerville");
    expect(JSON.parse((await remote(["memories", "update", id, "--tag", "friends"])).stdout).tags).toEqual(["friends"]);
    const again = await remote(["entities", "create", "ada lovelace", "--type", "PERSON"]);
    expect(JSON.parse(again.stdout).id).toBe(ada);
    expect(again.stderr).toContain("already exists");
    expect(JSON.parse((await remote(["memories", "delete", id, "--yes"])).stdout)).toEqual({ success: true, id });
    expect((await local(["memories", "get", id])).code).toBe(3);

    const mary = JSON.parse((await remote(["entities", "create", "Mary Somerville", "--type", "PERSON"])).stdout);
    expect(JSON.parse((await remote(["entities", "update", "Mary Somerville", "--description", "scientist"])).stdout).description).toBe("scientist");
    const rel = JSON.parse((await remote(["relations", "create", "--source", "Mary Somerville", "--target", "Ada Lovelace", "--type", "KNOWS"])).stdout);
    expect(rel).toMatchObject({ sourceId: mary.id, targetId: ada, type: "KNOWS" });
    expect((await remote(["relations", "get", rel.id])).stdout).toBe((await local(["relations", "get", rel.id])).stdout);
    expect(JSON.parse((await remote(["relations", "delete", rel.id, "--yes"])).stdout)).toEqual({ success: true, id: rel.id });
    expect(JSON.parse((await remote(["entities", "delete", mary.id, "--yes"])).stdout)).toMatchObject({ success: true, id: mary.id });
    expect((await local(["entities", "get", mary.id])).code).toBe(3);
  });

  it("adds a batch line by line, reporting each line and the failures as a local batch does", async () => {
    const input = ['{"content":"batch one"}', "not json", '"batch two"', `{"content":"${"x".repeat(10_001)}"}`, "", '{"content":"batch three","tags":["b"]}'].join("\n") + "\n";
    const args = ["memories", "add", "--batch", "-", "--user", "batcher"];
    const l = await runCli(server.storeDir, ["--account", acme.id, ...args], { input, clock: server.clock });
    const r = await runCli("unused", ["--remote", server.url, "--key", acme.key, ...args], { input });
    const plain = (s: string) => s.replace(/mem_[0-9A-Z]{24}/g, "mem_").replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<time>");
    expect(r.code).toBe(l.code);
    expect(plain(r.stdout)).toBe(plain(l.stdout));
    expect(plain(r.stderr)).toBe(plain(l.stderr));
    expect(r.stdout.split("\n").filter((x) => x.includes('"memory"'))).toHaveLength(3);
    expect(JSON.parse((await local(["memories", "list", "--user", "batcher"])).stdout).pagination.total).toBe(6);
  });

  it("takes the server and key from MM_URL and MM_API_KEY", async () => {
    const r = await runCli(join(server.storeDir, "not-used"), ["memories", "list", "--user", "ada"], { env: { MM_URL: server.url, MM_API_KEY: acme.key } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe((await local(["memories", "list", "--user", "ada"])).stdout);
  });
});

describe("a remote command's start-up", () => {
  it.each(
    [
      ["memories", "get", "MEMORY"],
      ["memories", "search", "green tea", "--user", "ada"],
      ["memories", "add", "Ada read Menabrea's paper", "--user", "ada"],
    ].map((args) => [args.slice(0, 2).join(" "), args] as const),
  )("mm --remote %s loads its own command group and the client, never the store, the model or zod", async (_name, template) => {
    const trace = join(await tempDir(), "trace.txt");
    const tracer = fileURLToPath(new URL("../helpers/trace-imports.mjs", import.meta.url));
    const args = template.map((a) => (a === "MEMORY" ? memory : a));
    // Spawned, not run: the server answers from this process.
    const child = spawn(process.execPath, ["--import", tracer, MM_BIN, "--remote", server.url, "--key", acme.key, ...args], {
      env: { ...process.env, MM_TRACE_FILE: trace, MM_URL: "", MM_STORE: join(server.storeDir, "not-used") },
    });
    const r = await collect(child);
    expect(r.code, r.stderr).toBe(0);
    expect(json(r)).toBeTruthy();
    const loaded = (await readFile(trace, "utf8")).trim().split("\n");
    // The trace sees CommonJS loads too: the CLI's chunks are listed, so the checks below can fail.
    expect(loaded.some((u) => u.includes("/dist/bundle/main.js"))).toBe(true);
    for (const heavy of ["lancedb", "apache-arrow", "@energetic-ai", "@inquirer", "code-cache"]) expect(loaded.filter((u) => u.includes(heavy)), heavy).toEqual([]);
    const bundled = (await Promise.all(loaded.filter((u) => u.includes("/dist/bundle/")).map((u) => readFile(fileURLToPath(u), "utf8")))).join("\n");
    expect(bundled, "zod was loaded").not.toContain('"ZodMini');
    expect(bundled, "the commands of other groups were loaded").not.toContain("inspect and maintain the store");
  });

  it("says what the whole CLI says when the command line is wrong, or asks for help", async () => {
    for (const args of [
      ["memories", "serach", "tea"],
      ["mem", "get"],
      ["memories", "list", "--bogus"],
      ["relations", "create", "a"],
      ["graph", "--help"],
      ["entities", "get", "--help"],
    ]) {
      const [l, r] = [await local(args), await remote(args)];
      expect([r.code, r.stdout, r.stderr], args.join(" ")).toEqual([l.code, l.stdout, l.stderr]);
    }
  });
});

describe("what can't run remotely, and what goes wrong", () => {
  // export and import go through the API record by record: test/cli/remote-transfer.test.ts.
  it.each([["init"], ["store", "path"], ["accounts", "list"], ["keys", "list"], ["serve"], ["mcp"], ["console", "link"]])(
    "mm --remote %s says it needs a local store",
    async (...args) => {
      const r = await remote(args);
      expect(r.code).toBe(2);
      const { error } = JSON.parse(r.stderr);
      expect(error.code).toBe("VALIDATION_ERROR");
      expect(error.message).toContain(`\`mm ${args.join(" ")}\` works on a local store, not through --remote`);
    },
  );

  it("refuses --extract, which has no endpoint", async () => {
    const extract = await remote(["memories", "add", "Ada met Babbage", "--user", "ada", "--extract"]);
    expect(JSON.parse(extract.stderr).error.message).toContain("`mm memories add --extract` works on a local store");
    const batch = await runCli("unused", ["--remote", server.url, "--key", acme.key, "memories", "add", "--batch", "-", "--extract"], { input: '{"content":"x","userId":"y"}\n' });
    expect(JSON.parse(batch.stderr).error.message).toContain("`mm memories add --batch --extract` works on a local store");
  });

  it("a wrong key, an unreachable server and a URL that isn't one each get their code and exit status", async () => {
    const wrong = await runCli("unused", ["--remote", server.url, "--key", `mm_${"A".repeat(40)}`, "memories", "list"]);
    expect([wrong.code, JSON.parse(wrong.stderr).error.code]).toEqual([5, "UNAUTHORIZED"]);
    const gone = await runCli("unused", ["--remote", "http://127.0.0.1:9", "--key", acme.key, "memories", "list"]);
    expect([gone.code, JSON.parse(gone.stderr).error.code]).toEqual([6, "REMOTE_UNAVAILABLE"]);
    expect(JSON.parse(gone.stderr).error.message).toContain("http://127.0.0.1:9");
    const bad = await runCli("unused", ["--remote", "ftp://x", "memories", "list"]);
    expect([bad.code, JSON.parse(bad.stderr).error.message]).toEqual([2, '--remote must be an http:// or https:// URL, not "ftp://x".']);
    const none = await runCli("unused", ["--remote", "memories", "list"], { env: { XDG_CONFIG_HOME: await tempDir() } });
    expect(JSON.parse(none.stderr).error.message).toContain("mm login <url>");
  });
});

describe("the CLI's fetch over node:http", () => {
  it("answers like fetch for the client, and gives up on a server that never answers (TIMEOUT)", async () => {
    const mm = createClient({ baseUrl: server.url, apiKey: acme.key, fetch: nodeFetch as typeof fetch });
    expect((await mm.memories.get(memory)).id).toBe(memory);
    expect((await rejection(mm.memories.get("mem_00000000000000000000000000"), MmApiError)).status).toBe(404);
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    try {
      const port = (silent.address() as { port: number }).port;
      const hung = createClient({ baseUrl: `http://127.0.0.1:${port}`, fetch: nodeFetch as typeof fetch, timeoutMs: 100, retries: 0 });
      expect((await rejection(hung.memories.create({ content: "x", userId: "y" }), MmApiError)).code).toBe("TIMEOUT");
    } finally {
      silent.close();
    }
  });
});

describe("mm login", () => {
  it("saves the key read from stdin in a file only its owner can read; --remote alone then uses it; logout forgets it", async () => {
    const config = await tempDir();
    const env = { XDG_CONFIG_HOME: config, MM_URL: "", MM_API_KEY: "" };
    const login = await runMm(["login", server.url], { input: `${acme.key}\n`, env });
    expect(login.code, login.stderr).toBe(0);
    const file = join(config, "mm", "remote.json");
    expect(json(login)).toEqual({ url: server.url, file });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(config, "mm"))).mode & 0o777).toBe(0o700);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual({ url: server.url, key: acme.key });

    const listed = await runMm(["--remote", "memories", "list", "--user", "ada"], { env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(json(listed).items.map((m: { id: string }) => m.id)).toContain(memory);
    // The saved key is for the saved server only.
    const elsewhere = await runMm(["--remote", "http://127.0.0.1:9", "memories", "list"], { env });
    expect(elsewhere.code).toBe(6);

    expect((await runMm(["logout"], { env })).code).toBe(0);
    await expect(stat(file)).rejects.toThrow();
  });

  it("on a terminal, asks for the key without showing it", async () => {
    const config = await tempDir();
    const r = await runInTerminal(["login", server.url], {
      env: { XDG_CONFIG_HOME: config, MM_URL: "", MM_API_KEY: "" },
      keys: [{ waitFor: "API key", send: `${acme.key}\r` }],
    });
    expect(r.code, r.screen.join("\n")).toBe(0);
    expect(r.raw).not.toContain(acme.key);
    expect(r.screen.join("\n")).toContain(`Logged in to ${server.url}`);
    expect(JSON.parse(await readFile(join(config, "mm", "remote.json"), "utf8")).key).toBe(acme.key);
  });

  it("checks the key with the server before saving it, and has no flag to pass it on the command line", async () => {
    const config = await tempDir();
    const env = { XDG_CONFIG_HOME: config, MM_URL: "", MM_API_KEY: "" };
    const wrong = await runMm(["login", server.url], { input: `mm_${"B".repeat(40)}\n`, env });
    expect([wrong.code, JSON.parse(wrong.stderr).error.code]).toEqual([5, "UNAUTHORIZED"]);
    const junk = await runMm(["login", server.url], { input: "hunter2\n", env });
    expect([junk.code, JSON.parse(junk.stderr).error.message]).toEqual([2, expect.stringContaining("not an mm API key")]);
    await expect(stat(join(config, "mm", "remote.json"))).rejects.toThrow();
    const flag = await runMm(["login", server.url, "--password", acme.key], { env });
    expect(flag.code).toBe(2);
  });
});
