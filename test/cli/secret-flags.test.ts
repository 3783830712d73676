import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestAccount, type TestServer } from "../helpers/http-server.js";
import { runMm } from "../helpers/spawn-mm.js";
import { runInTerminal } from "../helpers/terminal.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * Secrets on the command line show in `ps` to every local user: the real `mm` warns on a terminal
 * when one comes by flag (`--key`, `--redis` with a password), and takes the key from a file or
 * stdin instead.
 */
const tempDir = useTempDirs();
let server: TestServer;
let acme: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  acme = await server.account("acme");
});
afterAll(() => server.close());

const env = { MM_URL: "", MM_API_KEY: "" };

describe("secrets by flag", () => {
  it("takes the key from --key-file or --key - (stdin), without a warning; refuses an unreadable or empty one naming the flag", async () => {
    const file = join(await tempDir(), "key.txt");
    await writeFile(file, `${acme.key}\n`, { mode: 0o600 });
    const fromFile = await runMm(["--remote", server.url, "--key-file", file, "memories", "list"], { env });
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(JSON.parse(fromFile.stdout).pagination.total).toBe(0);
    const fromStdin = await runMm(["--remote", server.url, "--key", "-", "memories", "list"], { env, input: `${acme.key}\n` });
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    for (const r of [fromFile, fromStdin]) expect(r.stderr).not.toMatch(/warning/);

    const missing = await runMm(["--remote", server.url, "--key-file", join(file, "..", "nope.txt"), "memories", "list"], { env });
    expect([missing.code, JSON.parse(missing.stderr).error.message]).toEqual([2, expect.stringMatching(/^--key-file: can't read .*nope\.txt \(ENOENT\)\.$/)]);
    const empty = await runMm(["--remote", server.url, "--key", "-", "memories", "list"], { env, input: "\n" });
    expect([empty.code, JSON.parse(empty.stderr).error.message]).toEqual([2, "--key - gave an empty key."]);
    const both = await runMm(["--remote", server.url, "--key", acme.key, "--key-file", file, "memories", "list"], { env });
    expect([both.code, JSON.parse(both.stderr).error.message]).toEqual([2, "Give the API key one way: --key or --key-file, not both."]);
  });

  it("warns on a terminal, and only there, when --key carries the key; the command still runs", async () => {
    const piped = await runMm(["--remote", server.url, "--key", acme.key, "memories", "list"], { env });
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stderr).toBe("");
    const tty = await runInTerminal(["--remote", server.url, "--key", acme.key, "memories", "list"], { env, cols: 400 });
    const screen = tty.screen.join("\n");
    expect(tty.code, screen).toBe(0);
    expect(screen).toContain("mm: warning: --key puts a secret on the command line, where `ps` and your shell's history show it; set MM_API_KEY, or pass --key-file <path> or --key - (stdin), or save it once with `mm login`.");
    const viaFile = await runInTerminal(["--remote", server.url, "--key-file", await keyFile(), "memories", "list"], { env, cols: 400 });
    expect(viaFile.screen.join("\n")).not.toContain("warning");
  });

  it("warns on a terminal when --redis carries a password, pointing to MM_REDIS_URL", async () => {
    const store = join(await tempDir(), "store");
    expect((await runMm(["init"], { store })).code).toBe(0);
    const tty = await runInTerminal(["serve", "--port", "0", "--redis", "redis://:hunter2@127.0.0.1:1"], { store, cols: 400 });
    const screen = tty.screen.join("\n");
    expect(screen).toContain("mm: warning: --redis with a password puts a secret on the command line, where `ps` and your shell's history show it; set MM_REDIS_URL instead.");
    expect(tty.code).not.toBe(0); // nothing listens on port 1
    const noPassword = await runInTerminal(["serve", "--port", "0", "--redis", "redis://127.0.0.1:1"], { store, cols: 400 });
    expect(noPassword.screen.join("\n")).not.toContain("warning");
  });
});

async function keyFile(): Promise<string> {
  const file = join(await tempDir(), "key.txt");
  await writeFile(file, acme.key, { mode: 0o600 });
  return file;
}
