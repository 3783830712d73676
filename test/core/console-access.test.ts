import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Accounts } from "../../src/core/accounts.js";
import { ConsoleAccess, consoleOrigin, LINK_TTL_MS, SESSION_TTL_MS } from "../../src/core/console-access.js";
import { createTestClock } from "../helpers/http-server.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

async function expectMmError(p: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: { code: string; message: string }) => e,
  );
  expect(err?.code).toBe(code);
  if (message) expect(err!.message).toMatch(message);
}

async function setup() {
  const dir = await tempDir();
  const clock = createTestClock();
  const accounts = new Accounts(dir, clock);
  const acme = await accounts.create({ name: "acme" });
  const globex = await accounts.create({ name: "globex" });
  return { dir, clock, access: new ConsoleAccess(dir, clock), acme, globex };
}

describe("console sign-in links and sessions", () => {
  it("stores only hashes, in a file of mode 600", async () => {
    const { dir, access } = await setup();
    const link = await access.createLink("acme");
    const { secret } = await access.redeem(link.token);
    const text = await readFile(join(dir, "console.json"), "utf8");
    expect(text).not.toContain(link.token);
    expect(text).not.toContain(secret);
    expect((await stat(join(dir, "console.json"))).mode & 0o777).toBe(0o600);
  });

  it("a link works once, for 15 minutes; unknown tokens are refused", async () => {
    const { clock, access, acme } = await setup();
    const link = await access.createLink("acme");
    expect(Date.parse(link.expiresAt) - clock.peek().getTime()).toBeGreaterThan(LINK_TTL_MS - 1_000);
    expect((await access.checkLink(link.token)).id).toBe(acme.id);
    const { session } = await access.redeem(link.token);
    expect(session.account.id).toBe(acme.id);
    await expectMmError(access.redeem(link.token), "UNAUTHORIZED", /already been used/);
    await expectMmError(access.checkLink(link.token), "UNAUTHORIZED", /already been used/);

    const late = await access.createLink("acme");
    clock.advance(LINK_TTL_MS + 1);
    await expectMmError(access.redeem(late.token), "UNAUTHORIZED", /expired/);
    await expectMmError(access.redeem("not-a-token"), "UNAUTHORIZED", /not valid/);
    await expectMmError(access.createLink("nobody"), "NOT_FOUND");
  });

  it("sessions act as one account, expire, sign out, and end when the account's access is revoked", async () => {
    const { clock, access, acme, globex } = await setup();
    const a = await access.redeem((await access.createLink("acme")).token);
    const b = await access.redeem((await access.createLink("globex")).token);
    expect((await access.authenticate(a.secret)).account.id).toBe(acme.id);
    expect((await access.authenticate(b.secret)).account.id).toBe(globex.id);
    await expectMmError(access.authenticate(undefined), "UNAUTHORIZED", /not signed in/);
    await expectMmError(access.authenticate("forged"), "UNAUTHORIZED");

    const unused = await access.createLink("acme");
    expect(await access.revoke("acme")).toMatchObject({ sessions: 1, links: 1 });
    await expectMmError(access.authenticate(a.secret), "UNAUTHORIZED", /ended/);
    await expectMmError(access.redeem(unused.token), "UNAUTHORIZED");
    expect((await access.authenticate(b.secret)).account.id).toBe(globex.id); // another account's untouched

    await access.signOut(b.secret);
    await expectMmError(access.authenticate(b.secret), "UNAUTHORIZED");

    const c = await access.redeem((await access.createLink("acme")).token); // a new link grants access again
    clock.advance(SESSION_TTL_MS - 60_000);
    await access.authenticate(c.secret);
    clock.advance(60_001);
    await expectMmError(access.authenticate(c.secret), "UNAUTHORIZED", /expired/);
  });

  it("derives a CSRF token per session, compared in constant time", async () => {
    const { access } = await setup();
    const a = await access.redeem((await access.createLink("acme")).token);
    const b = await access.redeem((await access.createLink("acme")).token);
    expect(a.session.csrf).not.toBe(b.session.csrf);
    expect(ConsoleAccess.csrfMatches(a.secret, a.session.csrf)).toBe(true);
    expect(ConsoleAccess.csrfMatches(a.secret, b.session.csrf)).toBe(false);
    expect(ConsoleAccess.csrfMatches(a.secret, undefined)).toBe(false);
    expect(ConsoleAccess.csrfMatches(a.secret, "")).toBe(false);
  });

  it("links name --url, else the store's server host and port, else 127.0.0.1:8080", async () => {
    const { dir } = await setup();
    expect(await consoleOrigin(dir)).toBe("http://127.0.0.1:8080");
    expect(await consoleOrigin(dir, "https://mm.example.com/some/path")).toBe("https://mm.example.com");
    await expectMmError(consoleOrigin(dir, "ftp://x"), "VALIDATION_ERROR");
    await expectMmError(consoleOrigin(dir, "not a url"), "VALIDATION_ERROR");
  });
});
