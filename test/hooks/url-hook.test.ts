// The URL hook: Claude Code's http hook POSTs its event to a running mm serve (`/hooks/claude-code`),
// which answers what `mm hook claude-code` prints, with no process started. A real server on a
// real port with the real model; payloads shaped as Claude Code documents them; settings written
// by `mm hooks install --url` in a HOME of its own.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, expectError, startTestServer, type Client, type TestServer } from "../helpers/http-server.js";
import { promptSubmit, sessionStart, sharedDir } from "../helpers/hooks.js";
import { runCli } from "../helpers/run-cli.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const shared = sharedDir();

let server: TestServer;
let api: Client;
let key: string;
let project: string;
let elsewhere: string;

beforeAll(async () => {
  server = await startTestServer({ realModel: true });
  key = (await server.account("agents")).key;
  api = client(server.url, key);
  const dir = await shared();
  project = join(dir, "work", "shop");
  elsewhere = join(dir, "work", "blog");
  for (const [folder, name] of [[project, "shop"], [elsewhere, "blog"]]) {
    await mkdir(join(folder, ".git"), { recursive: true });
    await writeFile(join(folder, ".mm-project"), `${name}\n`);
  }
  const add = (content: string, extra: Record<string, unknown> = {}) => api.post("/v1/memories", { body: { content, userId: "me", ...extra } });
  await add("The shop's staging database is Postgres 16 on port 5433", { project: "shop" });
  await add("The blog's staging database is SQLite in data/blog.db", { project: "blog" });
  await add("Deploys of the shop go out with fly deploy --remote-only", { project: "shop", tags: ["pinned"] });
  await add("The staging database password is hunter2-staging", { project: "shop", tags: ["private"] });
  await add("I prefer small pull requests with one change each");
}, 120_000);
afterAll(() => server?.close());

const hook = (body: unknown, query = "?userId=me", k: string | null = key) =>
  fetch(`${server.url}/hooks/claude-code${query}`, { method: "POST", headers: { "Content-Type": "application/json", ...(k ? { Authorization: `Bearer ${k}` } : {}) }, body: JSON.stringify(body) });

describe("POST /hooks/claude-code on mm serve", () => {
  it("answers a prompt with the project's relevant memories, never another project's or a private one, and bills one search", async () => {
    const before = Number((await api.get("/v1/memories")).headers.get("x-quota-used"));
    const res = await hook(promptSubmit(project, "connect to the staging database and check the orders table"));
    expect(res.status).toBe(200);
    expect(Number(res.headers.get("x-quota-used"))).toBe(before + 1);
    const body = await res.json();
    expect(body.hookSpecificOutput.hookEventName).toBe("UserPromptSubmit");
    const context: string = body.hookSpecificOutput.additionalContext;
    expect(context).toContain("Postgres 16 on port 5433");
    expect(context).not.toContain("SQLite");
    expect(context).not.toContain("hunter2");
    expect(context).toMatch(/not instructions/);
  });

  it("starts a session with the pinned memory first, and shows a memory once per session", async () => {
    const session = `s-${Date.now()}`;
    const start = await (await hook(sessionStart(project, "startup", session))).json();
    const context: string = start.hookSpecificOutput.additionalContext;
    expect(context.indexOf("fly deploy")).toBeGreaterThan(-1);
    expect(context.indexOf("fly deploy")).toBeLessThan(context.indexOf("Postgres"));
    expect(context).not.toContain("blog");
    // Already shown in this session: the prompt adds nothing.
    const again = await hook(promptSubmit(project, "connect to the staging database", session));
    expect(await again.json()).toEqual({});
  });

  it("starts a session with what prompts of two sessions recalled, after the pinned and before the recent", async () => {
    // An account of its own: what the other tests' prompts recalled doesn't count here.
    const ownKey = (await server.account("frequent")).key;
    const own = client(server.url, ownKey);
    const ask = async (body: unknown, query: string) => (await hook(body, query, ownKey)).json();
    await own.post("/v1/memories", { body: { content: "The shop's staging database is Postgres 16 on port 5433", userId: "me", project: "shop" } });
    const recent = ["The CI pipeline runs on GitHub Actions with a self-hosted runner", "Feature flags live in config/flags.yaml, reviewed weekly", "Release notes are drafted in docs/changelog/next.md", "Code owners for the payments module are Ana and Kofi", "Integration tests need docker compose up before they run", "Sentry alerts for the API go to the #api-oncall channel"];
    for (const content of recent) await own.post("/v1/memories", { body: { content, userId: "me", project: "shop" } });
    const start = async () => (await ask(sessionStart(project), "?userId=me&budget=200")).hookSpecificOutput.additionalContext as string;
    const recall = async () => expect((await ask(promptSubmit(project, "connect to the staging database"), "?userId=me")).hookSpecificOutput.additionalContext).toContain("port 5433");
    expect(await start()).not.toContain("port 5433");
    await recall();
    expect(await start()).not.toContain("port 5433");
    await recall();
    const lines = (await start()).split("\n").filter((l) => l.startsWith("- "));
    expect(lines[0]).toContain("port 5433");
    expect(lines[1]).toContain(recent.at(-1));
    // Another project's memory, however often recalled there, never starts a session here.
    await own.post("/v1/memories", { body: { content: "The blog's staging database is SQLite in data/blog.db", userId: "me", project: "blog" } });
    for (let i = 0; i < 3; i++) expect((await ask(promptSubmit(elsewhere, "connect to the staging database"), "?userId=me")).hookSpecificOutput.additionalContext).toContain("SQLite");
    expect(await start()).not.toContain("SQLite");
  });

  it("stores what a prompt asks to remember, in the project", async () => {
    const res = await (await hook(promptSubmit(project, "remember that the shop's CI runs on Node 22"))).json();
    expect(res.hookSpecificOutput.additionalContext).toMatch(/stored the user's note .* in project shop/);
    const listed = await api.get("/v1/memories", { query: { userId: "me", project: "shop", projectOnly: "true" } });
    expect(listed.body.items.map((m: { content: string }) => m.content)).toContain("the shop's CI runs on Node 22");
  });

  it("answers {} when it has nothing to say or can't know the project, and refuses what the API refuses", async () => {
    expect(await (await hook(promptSubmit(elsewhere, "what time is the standup?"))).json()).toEqual({});
    expect(await (await hook(promptSubmit(join(project, "no-such-folder"), "connect to the staging database"))).json()).toEqual({});
    expect(await (await hook({ hook_event_name: "Stop", cwd: project })).json()).toEqual({});
    // A cwd the system refuses to look up (found by npm run fuzz: ENAMETOOLONG was a 500).
    for (const cwd of ["y".repeat(10_001), "a\u0000b", 42]) expect(await (await hook(promptSubmit(cwd as string, "connect to the staging database"))).json()).toEqual({});
    expect(await (await hook(promptSubmit(project, "\u0000\u0001binary"))).json()).toEqual({});
    expect(await (await hook(promptSubmit(project, "x".repeat(100_000)))).json()).toEqual({});
    expectError(await wrapped(hook(promptSubmit(project, "x"), "?userId=me", null)), 401, "UNAUTHORIZED");
    expectError(await wrapped(hook(promptSubmit(project, "x"), "?userId=me&budget=lots")), 400, "VALIDATION_ERROR");
    expectError(await wrapped(hook(promptSubmit(project, "x"), "?user=me")), 400, "VALIDATION_ERROR");
    const other = await fetch(`${server.url}/hooks/cursor?userId=me`, { method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${key}` }, body: "{}" });
    expect(other.status).toBe(404);
    const get = await fetch(`${server.url}/hooks/claude-code`, { headers: { Authorization: `Bearer ${key}` } });
    expect(get.status).toBe(405);
  });
});

/** A fetch Response as the helpers' expectError reads it. */
async function wrapped(p: Promise<Response>) {
  const res = await p;
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
}

describe("mm hooks install claude-code --url", () => {
  it("writes http hooks that call the server with the key from the environment, beside other hooks, and uninstall removes them alone", async () => {
    const home = await tempDir();
    const settings = join(home, ".claude", "settings.json");
    await mkdir(join(home, ".claude"));
    const mine = `{\n  "model": "opus",\n  "hooks": {\n    "UserPromptSubmit": [\n      { "hooks": [ { "type": "command", "command": "echo mine" } ] }\n    ]\n  }\n}\n`;
    await writeFile(settings, mine);
    const store = join(home, "store");
    const env = { HOME: home };
    const installed = await runCli(store, ["hooks", "install", "claude-code", "--url", "http://127.0.0.1:8080/", "--user", "ana"], { env });
    expect(installed.code, installed.stderr).toBe(0);
    const written = JSON.parse(await readFile(settings, "utf8"));
    const entry = {
      type: "http",
      url: "http://127.0.0.1:8080/hooks/claude-code?userId=ana",
      headers: { Authorization: "Bearer $MM_API_KEY" },
      allowedEnvVars: ["MM_API_KEY"],
      timeout: 5,
    };
    expect(written.hooks.SessionStart).toEqual([{ hooks: [entry] }]);
    expect(written.hooks.UserPromptSubmit).toEqual([{ hooks: [{ type: "command", command: "echo mine" }] }, { hooks: [entry] }]);
    expect(written.model).toBe("opus");
    // Twice: one entry; a command install replaces the http one.
    await runCli(store, ["hooks", "install", "claude-code", "--url", "http://127.0.0.1:8080"], { env });
    expect(JSON.parse(await readFile(settings, "utf8")).hooks.SessionStart).toHaveLength(1);
    const status = JSON.parse((await runCli(store, ["--json", "hooks", "status"], { env })).stdout);
    expect(status.hooks.find((h: { scope: string; agent: string }) => h.agent === "claude-code" && h.scope === "user").installed).toBe(true);
    const removed = await runCli(store, ["hooks", "uninstall", "claude-code"], { env });
    expect(removed.code, removed.stderr).toBe(0);
    expect(await readFile(settings, "utf8")).toBe(mine);
  });

  it("refuses --url for an agent without http hooks, or an address that isn't a server's, and changes nothing", async () => {
    const home = await tempDir();
    const env = { HOME: home };
    const store = join(home, "store");
    for (const [args, message] of [
      [["hooks", "install", "gemini-cli", "--url", "http://127.0.0.1:8080"], /--url is for claude-code only/],
      [["hooks", "install", "claude-code", "--url", "127.0.0.1:8080"], /--url must be a server's address/],
      [["hooks", "install", "claude-code", "--url", "http://u:p@127.0.0.1:8080"], /--url must be a server's address/],
    ] as const) {
      const r = await runCli(store, [...args], { env });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    await expect(readFile(join(home, ".claude", "settings.json"), "utf8")).rejects.toThrow();
  });
});
