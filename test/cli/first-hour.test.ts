import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/run-cli.js";
import { json, runMm } from "../helpers/spawn-mm.js";
import { runInTerminal } from "../helpers/terminal.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const ESC = "\u001b[";

/** A store with a few memories, made through the CLI (test embedder). */
async function storeWith(contents: string[], user = "alice"): Promise<{ store: string; ids: string[] }> {
  const store = join(await tempDir(), "store");
  const ids: string[] = [];
  for (const content of contents) ids.push(JSON.parse((await runCli(store, ["memories", "add", content, "--user", user])).stdout).id);
  return { store, ids };
}

describe("Ctrl-C at a prompt", () => {
  it.each([
    ["mm init", ["init"], "Embedding provider"],
    ["a missing --user", ["memories", "add", "some text"], "User id"],
    ["missing content", ["memories", "add", "--user", "alice"], "Memory"],
  ])("%s: exits 130 quietly, no stack trace", async (_name, args, prompt) => {
    const store = join(await tempDir(), "store");
    const r = await runInTerminal(args, { store, keys: [{ waitFor: prompt, send: "\u0003" }] });
    expect(r.code, r.raw).toBe(130);
    expect(r.raw).not.toMatch(/ExitPromptError|internal error|\bat .+:\d+:\d+/);
  });
});

describe("errors a user makes, on a terminal", () => {
  it("--store pointing at a file is a STORE_ERROR naming the path (exit 6), with no stack trace", async () => {
    const dir = await tempDir();
    const file = join(dir, "notes.txt");
    await writeFile(file, "hello\n");
    for (const args of [["memories", "list"], ["memories", "add", "x", "--user", "a"], ["accounts", "list"], ["store", "stats"]]) {
      const r = await runMm([...args, "--store", file]);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(6);
      expect(JSON.parse(r.stderr).error.code).toBe("STORE_ERROR");
      expect(r.stderr).toContain(file);
      expect(r.stderr).not.toMatch(/\bat .+:\d+:\d+|ENOTDIR/);
    }
    const under = await runMm(["memories", "list", "--store", join(file, "deeper")]);
    expect(under.code).toBe(6);
    expect(JSON.parse(under.stderr).error.message).toContain(`${file} is a file`);
  });

  it("reading commands never create a store: they say there is none and how to make one", async () => {
    const base = await tempDir();
    const typo = join(base, "nonexist", "deep", "x");
    for (const args of [
      ["memories", "list"],
      ["memories", "search", "tea"],
      ["memories", "get", "mem_01M80JM828M4632K32S3QPJX"],
      ["entities", "list"],
      ["relations", "list"],
      ["graph", "export"],
      ["store", "stats"],
      ["usage"],
      ["keys", "list"],
      ["accounts", "list"],
      ["serve", "--port", "0"],
    ]) {
      const r = await runCli(typo, args, { tty: true });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(6);
      expect(r.stderr, args.join(" ")).toMatch(/no mm store at .*nonexist.*mm init/s);
      expect(existsSync(join(base, "nonexist")), args.join(" ")).toBe(false);
    }
    // A write creates it, as the message says.
    expect((await runCli(typo, ["memories", "add", "first", "--user", "a"])).code).toBe(0);
    expect((await runCli(typo, ["memories", "list"])).code).toBe(0);
  });

  it("an unexpected error shows no stack unless --debug or MM_DEBUG=1 asks for it", async () => {
    const { store } = await storeWith(["one"]);
    await rm(join(store, "db", "memories.lance"), { recursive: true, force: true });
    const plain = await runCli(store, ["memories", "list"], { tty: true, env: { NO_COLOR: "1" } });
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/^mm: something went wrong inside mm: /);
    expect(plain.stderr).toContain("--debug");
    expect(plain.stderr).not.toMatch(/\n\s+at |Caused by|\.rs:\d+/);
    expect(plain.stderr.trim().split("\n")).toHaveLength(2);
    for (const debug of [["--debug"], []]) {
      const r = await runCli(store, ["memories", "list", ...debug], { tty: true, env: debug.length ? {} : { MM_DEBUG: "1" } });
      expect(r.stderr).toMatch(/^mm: internal error: .*Caused by/s);
    }
  });

  it("a second mm serve on a busy port says so at once, before loading the model", async () => {
    const store = join(await tempDir(), "store");
    await runMm(["init", "--store", store]);
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    const port = (busy.address() as { port: number }).port;
    try {
      const started = Date.now();
      const r = await runMm(["serve", "--port", String(port)], { store, env: { MM_TRACE_IMPORTS: "1" } });
      const ms = Date.now() - started;
      expect(r.code).toBe(6);
      const error = JSON.parse(r.stderr.trim().split("\n").at(-1)!).error;
      expect(error.code).toBe("LISTEN_ERROR");
      expect(error.message).toContain(`port ${port} is in use`);
      expect(r.stderr).not.toMatch(/EADDRINUSE|\bat .+:\d+:\d+/);
      expect(ms).toBeLessThan(5_000);
    } finally {
      busy.close();
    }
  });

  it("speaks in flags, once, without zod's words; JSON keeps the API's body", async () => {
    const store = join(await tempDir(), "store");
    await runCli(store, ["memories", "add", "x", "--user", "a"]);
    const cases: [string[], RegExp][] = [
      [["memories", "search", "tea", "--limit", "abc"], /^mm: --limit must be a number\.$/],
      [["memories", "search", "tea", "--threshold", "2"], /^mm: --threshold must be between 0 and 1\.$/],
      [["accounts", "create", "x", "--plan", "gold"], /^mm: --plan must be one of free, hobby or enterprise\.$/],
      [["memories", "add", "hello"], /^mm: --user \(or MM_USER\) is required/],
      [["memories", "list", "--page", "0"], /^mm: --page must be an integer of at least 1\.$/],
      [["entities", "create", "Ada", "--type", "person"], /^mm: --type must be one of PERSON.*Did you mean PERSON\?$/],
      [["relations", "create", "--source", "ent_01M80JM828M4632K32S3QPJX", "--target", "ent_01M80JM828M4632K32S3QPJX", "--type", "works_for"], /^mm: --type .*Did you mean WORKS_FOR\?$/],
    ];
    for (const [args, expected] of cases) {
      const r = await runCli(store, args, { tty: true });
      expect(r.code, args.join(" ")).toBe(2);
      const lines = r.stderr.trim().split("\n");
      expect(lines, args.join(" ")).toHaveLength(1);
      expect(lines[0].replaceAll(`${ESC}31m`, "").replaceAll(`${ESC}39m`, ""), args.join(" ")).toMatch(expected);
      expect(r.stderr, args.join(" ")).not.toMatch(/Invalid input|Invalid option|expected one of|received|userId/);
    }
    const piped = await runCli(store, ["memories", "add", "hello"]);
    expect(JSON.parse(piped.stderr).error).toEqual({ code: "INVALID_USER_ID", message: "userId is required and must not be empty." });
  });

  it("refuses conflicting input with a usage error instead of dropping half of it", async () => {
    const { store, ids } = await storeWith(["a memory"]);
    await writeFile(join(store, "..", "lines.jsonl"), '"one"\n');
    const ent = JSON.parse((await runCli(store, ["entities", "create", "Ada", "--type", "PERSON"])).stdout).id;
    for (const args of [
      ["memories", "update", ids[0], "--clear-tags", "--tag", "x"],
      ["memories", "update", ids[0], "--clear-metadata", "--metadata", "{}"],
      ["memories", "update", ids[0], "--clear-agent", "--agent", "bot"],
      ["memories", "update", ids[0], "--clear-entities", "--entity", ent],
      ["entities", "update", ent, "--clear-description", "--description", "d"],
      ["memories", "add", "--batch", join(store, "..", "lines.jsonl"), "text", "--user", "a"],
      ["memories", "list", "--json", "--format", "table"],
    ]) {
      const r = await runCli(store, args, { tty: true });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(/can't be used with|not both/);
    }
    expect(JSON.parse((await runCli(store, ["memories", "list"])).stdout).pagination.total).toBe(1);
  });

  it("a flag that needs a value, followed by another flag, is named instead of misread", async () => {
    const { store } = await storeWith(["a memory"]);
    for (const [args, flag, next] of [
      [["memories", "add", "--batch", "--user", "u"], "--batch", "--user"],
      [["memories", "add", "some text", "--tag", "--user", "u"], "--tag", "--user"],
      [["memories", "search", "tea", "--user", "--limit", "3"], "--user", "--limit"],
      [["--store", "--json", "memories", "list"], "--store", "--json"],
    ] as const) {
      const r = await runCli(store, [...args]);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(JSON.parse(r.stderr).error.message).toBe(`${flag} needs a value, but the next word is the flag ${next}: put the value right after ${flag} (or write ${flag}=${next} if that is the value).`);
    }
    // A value that starts with dashes, given with "=", is a value; a flag without a value (--json) takes no word.
    expect((await runCli(store, ["memories", "list", "--user=--odd", "--json"])).code).toBe(0);
    expect(JSON.parse((await runCli(store, ["memories", "list", "--json", "--user", "alice"])).stdout).pagination.total).toBe(1);
    expect(JSON.parse((await runCli(store, ["memories", "list"])).stdout).pagination.total).toBe(1);
  });

  it("suggests the command a top-level word belongs to, and takes the singular group names", async () => {
    const store = join(await tempDir(), "store");
    const r = await runCli(store, ["search", "tea"], { tty: true });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("`mm memories search`");
    expect(r.stderr).not.toContain("serve");
    await runCli(store, ["memories", "add", "x", "--user", "a"]);
    for (const group of ["memory", "entity", "relation"]) expect((await runCli(store, [group, "list"])).code, group).toBe(0);
  });

  it("takes an entity's name where an id is expected, and says when the name is ambiguous or unknown", async () => {
    const store = join(await tempDir(), "store");
    const make = async (name: string, type: string) => JSON.parse((await runCli(store, ["entities", "create", name, "--type", type])).stdout).id as string;
    const ada = await make("Ada Lovelace", "PERSON");
    const engine = await make("Analytical Engine", "PRODUCT");
    await make("Mercury", "LOCATION");
    await make("Mercury", "PRODUCT");
    expect((await runCli(store, ["relations", "create", "--source", "Ada Lovelace", "--target", "analytical engine", "--type", "CREATED"])).code).toBe(0);
    const around = JSON.parse((await runCli(store, ["graph", "neighbors", "Ada Lovelace"])).stdout);
    expect(around.root.id).toBe(ada);
    expect(around.nodes.map((n: { id: string }) => n.id)).toEqual([engine]);
    const path = JSON.parse((await runCli(store, ["graph", "path", "Ada Lovelace", "Analytical Engine"])).stdout);
    expect(path.found).toBe(true);
    expect(JSON.parse((await runCli(store, ["entities", "get", "ada lovelace"])).stdout).id).toBe(ada);
    const ambiguous = await runCli(store, ["graph", "neighbors", "Mercury"], { tty: true });
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/2 entities are named "Mercury": ent_\w+ \(LOCATION\), ent_\w+ \(PRODUCT\)/);
    const unknown = await runCli(store, ["graph", "neighbors", "Grace Hopper"], { tty: true });
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toContain('No entity is named "Grace Hopper"');
  });

  it("mm init on an existing store shows its set-up instead of trying to change it", async () => {
    const { store } = await storeWith(["kept"]);
    const r = await runCli(store, ["init"], { tty: true, env: { NO_COLOR: "1" } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/uses test:bag-of-words \(64 dims\) and holds 1 memory/);
    const piped = JSON.parse((await runCli(store, ["init"])).stdout);
    expect(piped).toMatchObject({ created: false, changed: false, memories: 1, embedder: { provider: "test" } });
  });

  it("interactive mm init offers defaults (Enter takes them) and asks again after bad input", async () => {
    const store = join(await tempDir(), "store");
    const enter = await runInTerminal(["init"], { store, keys: [{ waitFor: "Embedding provider", send: "\r" }] });
    expect(enter.code, enter.raw).toBe(0);
    expect(enter.raw).toContain("Created a store");
    expect(enter.raw).toContain("use-lite");
    const other = join(await tempDir(), "store");
    const again = await runInTerminal(["init"], {
      store: other,
      keys: [
        { waitFor: "Embedding provider", send: "\u001b[B\u001b[B\r" },
        { waitFor: "Base URL", send: "\u0015not a url\r" },
        { waitFor: "a URL starting with http", send: "\u0003" },
      ],
    });
    expect(again.code, again.raw).toBe(130);
    expect(again.raw).toContain("http://127.0.0.1:11434/v1");
    expect(existsSync(join(other, "config.json"))).toBe(false);
  });

  it("asks before deleting on a terminal; --yes skips it; scripts are never asked", async () => {
    const { store, ids } = await storeWith(["keep me", "delete me", "script delete"]);
    const no = await runInTerminal(["memories", "delete", ids[0]], { store, keys: [{ waitFor: "can't be undone", send: "n\r" }] });
    expect(no.code, no.raw).toBe(0);
    expect(no.raw).toContain('Delete memory');
    expect(no.raw).toContain('"keep me"');
    expect(no.raw).toContain("Nothing deleted");
    const yes = await runInTerminal(["memories", "delete", ids[1], "--yes"], { store });
    expect(yes.code, yes.raw).toBe(0);
    expect(yes.raw).not.toContain("can't be undone");
    expect((await runMm(["memories", "delete", ids[2], "--yes"], { store })).code).toBe(0);
    const left = json(await runMm(["memories", "list"], { store })).items.map((m: { id: string }) => m.id);
    expect(left).toEqual([ids[0]]);
    const ent = JSON.parse((await runCli(store, ["entities", "create", "Ada", "--type", "PERSON"])).stdout).id;
    const asked = await runInTerminal(["entities", "delete", "Ada"], { store, keys: [{ waitFor: "can't be undone", send: "n\r" }] });
    expect(asked.raw).toContain('PERSON "Ada"');
    expect(JSON.parse((await runCli(store, ["entities", "get", ent])).stdout).id).toBe(ent);
  });

  it("a memory of another account is 'not found' with a pointer to --account", async () => {
    const { store } = await storeWith(["a default memory"]);
    await runCli(store, ["accounts", "create", "acme"]);
    const id = JSON.parse((await runCli(store, ["memories", "add", "acme's memory", "--user", "a", "--account", "acme"])).stdout).id;
    const r = await runCli(store, ["memories", "get", id], { tty: true });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`Memory ${id} does not exist`);
    expect(r.stderr).toContain("--account acme");
    expect((await runCli(store, ["memories", "get", id, "--account", "acme"])).code).toBe(0);
  });
});

describe("terminal output", () => {
  const long = "A long memory about the trip to Lisbon with my sister Maya, the tram to Belém, pastéis de nata and the view from the castle at sunset. ".repeat(2);

  it("fits the terminal's width, gives content the room left, and draws no rule between rows", async () => {
    const { store } = await storeWith([long, "short one"]);
    for (const [args, columns] of [
      [["memories", "list"], 80],
      [["memories", "search", "Lisbon", "--threshold", "0"], 80],
      [["memories", "list"], 160],
    ] as const) {
      const r = await runCli(store, [...args], { tty: true, columns });
      const lines = r.stdout.trimEnd().split("\n");
      for (const line of lines) expect(line.replace(/\u001b\[[0-9;]*m/g, "").length, line).toBeLessThanOrEqual(columns);
      expect(r.stdout).not.toMatch(/[─┼├┤]/);
      const shown = lines.find((l) => l.includes("A long memory"))!;
      if (columns === 160) expect(shown).toContain("with my sister Maya, the tram to Belém, pastéis de nata");
    }
  });

  it("honours NO_COLOR, --no-color and FORCE_COLOR", async () => {
    const { store } = await storeWith(["colourful"]);
    expect((await runCli(store, ["memories", "list"], { tty: true })).stdout).toContain(ESC);
    expect((await runCli(store, ["memories", "list"], { tty: true, env: { NO_COLOR: "1" } })).stdout).not.toContain(ESC);
    expect((await runCli(store, ["memories", "list", "--no-color"], { tty: true })).stdout).not.toContain(ESC);
    expect((await runCli(store, ["memories", "list", "--format", "table"], { env: { FORCE_COLOR: "1" } })).stdout).toContain(ESC);
    expect((await runCli(store, ["memories", "get", "mem_01M80JM828M4632K32S3QPJX", "--no-color"], { tty: true })).stderr).not.toContain(ESC);
  });

  it("shows human units in store stats, and no 'page 5 of 1'", async () => {
    const { store } = await storeWith(["one"]);
    const stats = await runCli(store, ["store", "stats"], { tty: true, env: { NO_COLOR: "1" } });
    expect(stats.stdout).toMatch(/on disk\s+\d+(\.\d)? (KiB|MiB)/);
    expect(stats.stdout).not.toMatch(/\b\d{5,}\b/);
    const past = await runCli(store, ["memories", "list", "--page", "5"], { tty: true });
    expect(past.stdout).not.toContain("page 5 of 1");
    expect(past.stdout).toContain("Page 5 is past the end: 1 memory on 1 page.");
  });

  it("subcommand help lists the global options, and mm help walks down to the right page", async () => {
    const store = join(await tempDir(), "store");
    const help = await runCli(store, ["memories", "search", "--help"]);
    for (const flag of ["--threshold", "--json", "--format", "--store"]) expect(help.stdout, flag).toContain(flag);
    const walked = await runCli(store, ["help", "memories", "search"]);
    expect(walked.code).toBe(0);
    expect(walked.stdout).toContain("--threshold");
    expect(walked.stdout).toContain("Usage: mm memories search");
  });

  it("a batch shows the total, the model loading, errors above the bar and an intact summary", async () => {
    const dir = await tempDir();
    const file = join(dir, "notes.jsonl");
    await writeFile(file, ['"first note"', "not json", '"third note"', '{"content":""}', '"fifth note"'].join("\n") + "\n");
    const r = await runInTerminal(["memories", "add", "--batch", file, "--user", "alice"], { store: join(dir, "store") });
    expect(r.code).toBe(2);
    expect(r.raw).toContain("loading the model");
    expect(r.raw).toMatch(/\/5 lines/);
    const screen = r.screen.filter(Boolean);
    expect(screen, screen.join("\n")).toContain("line 2: the line is not valid JSON.");
    expect(screen, screen.join("\n")).toContain("line 4: content must not be empty.");
    expect(screen.some((l) => l === "Added 3 memories; 2 lines failed."), screen.join("\n")).toBe(true);
  });
});

describe("after Ctrl-C in a batch", () => {
  it("says where to resume, and --skip resumes without adding any line twice", async () => {
    const dir = await tempDir();
    const store = join(dir, "store");
    const file = join(dir, "many.jsonl");
    await writeFile(file, Array.from({ length: 400 }, (_, i) => JSON.stringify(`note number ${i + 1}`)).join("\n") + "\n");
    const first = await runInTerminal(["memories", "add", "--batch", file, "--user", "a", "--batch-size", "16"], {
      store,
      keys: [{ waitFor: /\d+\/400 lines/, send: "\u0003" }],
    });
    expect(first.code, first.raw).toBe(130);
    const skip = Number(/--skip (\d+)/.exec(first.raw)?.[1]);
    expect(skip).toBeGreaterThan(0);
    expect(skip).toBeLessThan(400);
    const added = json(await runMm(["memories", "list", "--limit", "1"], { store })).pagination.total;
    expect(added).toBe(skip);
    const rest = await runMm(["memories", "add", "--batch", file, "--user", "a", "--skip", String(skip)], { store });
    expect(rest.code, rest.stderr).toBe(0);
    const all = json(await runMm(["memories", "list", "--limit", "1"], { store })).pagination.total;
    expect(all).toBe(400);
    const lines = rest.stdout.trim().split("\n").map((l) => JSON.parse(l).line);
    expect(lines[0]).toBe(skip + 1);
    expect(lines.at(-1)).toBe(400);
  });
});

describe("the walkthroughs", () => {
  it("npm start prints commands a shell can run as printed", async () => {
    const store = join(await tempDir(), "store");
    const out = execFileSync(process.execPath, [join(root, "scripts", "quickstart.mjs")], { env: { ...process.env, MM_STORE: store, LANCEDB_LOG: "error" }, encoding: "utf8" });
    const commands = out.split("\n").filter((l) => l.startsWith("$ mm "));
    expect(commands.length).toBeGreaterThanOrEqual(3);
    // The first search finds its note at the default threshold: a newcomer's first search isn't a miss.
    const firstSearch = out.slice(out.indexOf("$ mm memories search")).split("\n$ ")[0];
    expect(firstSearch).toMatch(/\n0\.\d{3}\s+I drink green tea in the mornings/);
    expect(firstSearch).not.toContain("No memory scored");
    const bin = join(await tempDir(), "bin");
    await mkdir(bin);
    await writeFile(join(bin, "mm"), `#!/bin/sh\nexec "${process.execPath}" "${join(root, "bin", "mm.js")}" "$@"\n`, { mode: 0o755 });
    for (const command of commands) {
      const r = execFileSync("bash", ["-c", `${command.slice(2)} --json`], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, MM_STORE: store }, encoding: "utf8" });
      expect(() => JSON.parse(r), command).not.toThrow();
    }
  });

  it("mm serve says which accounts it serves, with their memories and keys", async () => {
    const store = join(await tempDir(), "store");
    await runCli(store, ["memories", "add", "a default memory", "--user", "alice"]);
    await runCli(store, ["accounts", "create", "acme"]);
    await runCli(store, ["keys", "create", "--account", "acme", "--name", "laptop"]);
    const { spawnMm, collect } = await import("../helpers/spawn-mm.js");
    const child = spawnMm(["serve", "--port", "0", "--no-warm"], { store });
    const done = collect(child);
    let listening: { accounts: { name: string; memories: number; keys: number }[] } | undefined;
    await new Promise<void>((resolve) => {
      child.stderr!.on("data", (d: Buffer) => {
        for (const line of d.toString().split("\n")) {
          if (line.includes('"listening"')) {
            listening = JSON.parse(line);
            resolve();
          }
        }
      });
    });
    child.kill("SIGTERM");
    await done;
    expect(listening!.accounts).toEqual([
      expect.objectContaining({ name: "default", memories: 1, keys: 0 }),
      expect.objectContaining({ name: "acme", memories: 0, keys: 1 }),
    ]);
  });
});

describe("install", () => {
  it("npm prints no warning about the project's own config, and every install script is decided on", async () => {
    const r = execFileSync("npm", ["pkg", "get", "name"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    expect(r).toContain('"mm-semantic-memory"');
    expect(existsSync(join(root, ".npmrc"))).toBe(false);
    const pkg = JSON.parse(execFileSync("npm", ["pkg", "get", "allowScripts"], { cwd: root, encoding: "utf8" }));
    const { readdirSync, readFileSync } = await import("node:fs");
    const withScripts: string[] = [];
    const scan = (dir: string) => {
      for (const name of readdirSync(dir)) {
        if (name.startsWith(".")) continue;
        if (name.startsWith("@")) {
          scan(join(dir, name));
          continue;
        }
        const manifest = join(dir, name, "package.json");
        if (!existsSync(manifest)) continue;
        const m = JSON.parse(readFileSync(manifest, "utf8"));
        if (m.scripts && ["preinstall", "install", "postinstall"].some((s) => m.scripts[s])) withScripts.push(m.name);
        if (existsSync(join(dir, name, "node_modules"))) scan(join(dir, name, "node_modules"));
      }
    };
    scan(join(root, "node_modules"));
    expect(withScripts.length).toBeGreaterThan(0);
    for (const name of withScripts) expect(Object.keys(pkg), name).toContain(name);
  });
});
