import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { contextOf, hook, newEnv, seed } from "../helpers/hooks.js";
import { json, runMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

/**
 * `mm hook gemini-cli` as Gemini CLI runs it: the base fields its hooks reference documents
 * (session_id, transcript_path, cwd, hook_event_name, timestamp), SessionStart's source and
 * BeforeAgent's prompt; the answer is hookSpecificOutput.additionalContext.
 */
const base = (cwd: string, hook_event_name: string) => ({ session_id: `s-${hook_event_name}`, transcript_path: "/home/me/.gemini/tmp/s1.json", cwd, hook_event_name, timestamp: "2026-12-07T10:00:00.000Z" });

describe("mm hook gemini-cli", () => {
  it("recalls at SessionStart and for a BeforeAgent prompt, and answers nothing to its other events", async () => {
    const e = await newEnv(tempDir);
    await seed(e, [
      { content: "The staging database is PostgreSQL 16, on port 5433", userId: "me", tags: ["pinned"] },
      { content: "My bank PIN is 4321", userId: "me", tags: ["private", "pinned"] },
    ]);
    const start = contextOf(await hook(e, { ...base(e.project, "SessionStart"), source: "startup" }, [], "gemini-cli"), "SessionStart");
    expect(start).toContain("port 5433");
    const prompt = contextOf(await hook(e, { ...base(e.project, "BeforeAgent"), prompt: "which port is the staging database on?" }, [], "gemini-cli"), "BeforeAgent");
    expect(prompt).toContain("port 5433");
    expect(start + prompt).not.toContain("4321");
    const other = await hook(e, { ...base(e.project, "AfterAgent"), prompt: "x", prompt_response: "y", stop_hook_active: false }, [], "gemini-cli");
    expect([other.code, other.stdout]).toEqual([0, ""]);
  }, 120_000);

  it("install merges into ~/.gemini/settings.json (timeout in milliseconds), uninstall leaves it byte for byte", async () => {
    const e = await newEnv(tempDir);
    const path = join(e.home, ".gemini", "settings.json");
    await mkdir(join(e.home, ".gemini"));
    const before = '{\n  "theme": "GitHub",\n  "hooks": {\n    "BeforeTool": [{ "matcher": "run_shell_command", "hooks": [{ "type": "command", "command": "./guard.sh" }] }]\n  }\n}\n';
    await writeFile(path, before);
    const r = json(await runMm(["hooks", "install", "gemini-cli", "--user", "me", "--json"], { env: e.env }));
    expect(r.events).toEqual(["SessionStart", "BeforeAgent"]);
    const s = JSON.parse(await readFile(path, "utf8"));
    expect(s.theme).toBe("GitHub");
    expect(s.hooks.BeforeTool).toHaveLength(1);
    expect(s.hooks.BeforeAgent).toEqual([{ hooks: [{ name: "mm", type: "command", command: r.command, timeout: 10_000 }] }]);
    expect(json(await runMm(["hooks", "uninstall", "gemini-cli", "--json"], { env: e.env })).restored).toBe(true);
    expect(await readFile(path, "utf8")).toBe(before);
  }, 60_000);
});
