import { chmod, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConsoleAccess } from "../../src/core/console-access.js";
import { runCli } from "../helpers/run-cli.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

async function storeWithAccount(): Promise<string> {
  const store = join(await tempDir(), "store");
  expect((await runCli(store, ["init"])).code).toBe(0);
  expect((await runCli(store, ["accounts", "create", "acme"])).code).toBe(0);
  return store;
}

/** A fake `xdg-open` that records the URL it was asked to open. */
async function fakeOpener(): Promise<{ bin: string; opened: () => Promise<string> }> {
  const bin = await tempDir();
  const log = join(bin, "opened.txt");
  await writeFile(join(bin, "xdg-open"), `#!/bin/sh\nprintf '%s' "$1" > '${log}'\n`);
  await chmod(join(bin, "xdg-open"), 0o755);
  return { bin, opened: () => readFile(log, "utf8").catch(() => "") };
}

describe("mm console", () => {
  it("link prints a one-time sign-in URL for the account: JSON when piped, the URL on a terminal", async () => {
    const store = await storeWithAccount();
    const piped = await runCli(store, ["console", "link", "--account", "acme"]);
    expect(piped.code, piped.stderr).toBe(0);
    const body = JSON.parse(piped.stdout);
    expect(body).toMatchObject({ account: { name: "acme" } });
    expect(body.url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/console\/signin\?token=[\w-]{43}$/);
    const token = new URL(body.url).searchParams.get("token")!;
    expect((await new ConsoleAccess(store).checkLink(token)).name).toBe("acme");

    const tty = await runCli(store, ["console", "link", "--account", "acme", "--url", "https://mm.example.com/"], { tty: true });
    expect(tty.stdout.split("\n")[0]).toMatch(/^https:\/\/mm\.example\.com\/console\/signin\?token=/);
    expect(tty.stdout).toContain("works once");
  });

  it("link takes the address from the store's server settings", async () => {
    const store = await storeWithAccount();
    const config = JSON.parse(await readFile(join(store, "config.json"), "utf8"));
    await writeFile(join(store, "config.json"), JSON.stringify({ ...config, server: { host: "0.0.0.0", port: 9123 } }));
    expect(JSON.parse((await runCli(store, ["console", "link", "--account", "acme"])).stdout).url).toMatch(/^http:\/\/127\.0\.0\.1:9123\//);
  });

  it("link refuses an unknown account and a bad --url with the usual errors", async () => {
    const store = await storeWithAccount();
    const unknown = await runCli(store, ["console", "link", "--account", "nobody"]);
    expect(unknown.code).toBe(3);
    expect(JSON.parse(unknown.stderr).error.code).toBe("NOT_FOUND");
    const bad = await runCli(store, ["console", "link", "--url", "javascript:alert(1)"]);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stderr).error.code).toBe("VALIDATION_ERROR");
    const missing = await runCli(join(await tempDir(), "none"), ["console", "link"]);
    expect(missing.code).not.toBe(0);
  });

  it("alone, opens the default account's link in the desktop's browser, or prints it when there is none", async () => {
    const store = await storeWithAccount();
    const { bin, opened } = await fakeOpener();
    const desktop = await runCli(store, ["console", "--url", "http://127.0.0.1:1"], { env: { DISPLAY: ":0", PATH: bin } });
    expect(desktop.code, desktop.stderr).toBe(0);
    await expect.poll(opened).not.toBe(""); // the opener runs on its own, detached
    const url = await opened();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:1\/console\/signin\?token=/);
    expect((await new ConsoleAccess(store).checkLink(new URL(url).searchParams.get("token")!)).name).toBe("default");
    expect(desktop.stderr).toContain("no mm serve answers at http://127.0.0.1:1");

    const headless = await runCli(store, ["console", "--url", "http://127.0.0.1:1"], { env: { PATH: bin } });
    expect(headless.code).toBe(0);
    expect(headless.stdout.trim()).toMatch(/^http:\/\/127\.0\.0\.1:1\/console\/signin\?token=[\w-]{43}$/);
    expect(headless.stderr).toContain("open this link");
  });

  it("revoke ends the account's sessions and voids its links", async () => {
    const store = await storeWithAccount();
    const access = new ConsoleAccess(store);
    const { secret } = await access.redeem((await access.createLink("acme")).token);
    await access.createLink("acme");
    const r = await runCli(store, ["console", "revoke", "--account", "acme"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ account: { name: "acme" }, sessions: 1, links: 1 });
    await expect(access.authenticate(secret)).rejects.toMatchObject({ code: "UNAUTHORIZED" });
  });
});
