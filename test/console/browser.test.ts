import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConsoleAccess, signInUrl } from "../../src/core/console-access.js";
import { browserGate, checkScreen, launchBrowser, watchPage } from "../helpers/browser.js";
import { client, startTestServer, type TestAccount, type TestServer } from "../helpers/http-server.js";

/**
 * The management console in a real browser (Debian's chromium through playwright-core) against a
 * real server on a real port over a real store. One browser for the file; the tests run in order
 * and share the seeded store. Every screen is checked with axe-core and photographed at 1440 and
 * 375 pixels wide (test-results/console/).
 */

const XSS_CONTENT = `<script>window.__xss = "content"</script><img src=x onerror="window.__xss = 'img'"> tea time`;
const XSS_META = { note: `<img src=x onerror="window.__xss = 'meta'">`, "<b onmouseover=alert(1)>key</b>": "x" };
const XSS_ENTITY = `<img src=x onerror="window.__xss = 'entity'">`;

let server: TestServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let watch: { problems: string[] };
let acme: TestAccount;
let globex: TestAccount;
let access: ConsoleAccess;
const ids: Record<string, string> = {};

async function link(account: string): Promise<string> {
  return signInUrl(server.url, (await access.createLink(account)).token);
}

async function signIn(p: Page, account: string): Promise<void> {
  await p.goto(await link(account));
  expect(new URL(p.url()).pathname).toBe("/console/memories");
}

async function seed(): Promise<void> {
  acme = await server.account("acme", "hobby");
  globex = await server.account("globex", "hobby");
  const a = client(server.url, acme.key);
  const entity = async (name: string, type: string) => (await a.post("/v1/entities", { body: { name, type } })).body.id as string;
  ids.ada = await entity("Ada Lovelace", "PERSON");
  ids.babbage = await entity("Charles Babbage", "PERSON");
  ids.engine = await entity("Analytical Engine", "PRODUCT");
  ids.london = await entity("London", "LOCATION");
  ids.xssEntity = await entity(XSS_ENTITY, "CONCEPT");
  for (const [s, t, type] of [
    ["ada", "babbage", "KNOWS"],
    ["babbage", "engine", "CREATED"],
    ["ada", "london", "LOCATED_IN"],
    ["xssEntity", "ada", "RELATED_TO"],
  ]) {
    expect((await a.post("/v1/relations", { body: { sourceId: ids[s], targetId: ids[t], type } })).status).toBe(201);
  }
  for (let i = 1; i <= 22; i++) {
    await a.post("/v1/memories", { body: { content: `Note ${i}: planning the trip and packing list`, userId: "alice", tags: i % 2 ? ["travel"] : ["home"] } });
  }
  ids.adaMemory = (
    await a.post("/v1/memories", {
      body: { content: "Ada wrote the first program for the Analytical Engine", userId: "alice", agentId: "historian", tags: ["history"], metadata: { source: "notes", year: 1843 }, entityIds: [ids.ada, ids.engine] },
    })
  ).body.id;
  ids.xssMemory = (await a.post("/v1/memories", { body: { content: XSS_CONTENT, userId: "alice", metadata: XSS_META, entityIds: [ids.xssEntity] } })).body.id;
  await a.post("/v1/memories", { body: { content: "Bob prefers green tea in the morning", userId: "bob" } });

  const g = client(server.url, globex.key);
  ids.globexMemory = (await g.post("/v1/memories", { body: { content: "Globex secret zanzibar launch plan", userId: "hank" } })).body.id;
  ids.globexEntity = (await g.post("/v1/entities", { body: { name: "Hank Scorpio", type: "PERSON" } })).body.id;
  ids.globexKey = globex.keyId;
}

const gate = browserGate();
if (!gate.run) process.stderr.write(`${gate.reason}\n`);

beforeAll(async () => {
  if (!gate.run) return;
  server = await startTestServer({ rateLimits: {} }); // the spec's 100 / 50 / 30 a minute
  access = new ConsoleAccess(server.storeDir, server.clock);
  await seed();
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  context.setDefaultTimeout(5_000);
  page = await context.newPage();
  watch = watchPage(page);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe.runIf(gate.run)("the management console in a browser", () => {
  it("signs in with a one-time link: HttpOnly, SameSite=Strict cookie; the link can't be used again", async () => {
    const url = await link("acme");
    await page.goto(`${server.url}/console/`);
    expect(await page.locator("h1").textContent()).toBe("Sign in to the mm console");
    await checkScreen(page, "signin-needed");

    await page.goto(url);
    expect(new URL(page.url()).pathname).toBe("/console/memories");
    expect(await page.locator(".who .account").textContent()).toContain("acme");
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ name: "mm_console", httpOnly: true, sameSite: "Strict", secure: false, path: "/console" });
    expect(cookie.value).not.toContain(new URL(url).searchParams.get("token"));

    const again = await browser.newPage();
    const res = await again.goto(url);
    expect(res!.status()).toBe(401);
    expect(await again.locator("main").textContent()).toContain("already been used");
    await checkScreen(again, "link-used");
    await again.close();
  });

  it("refuses an expired link", async () => {
    const url = await link("acme");
    server.clock.advance(16 * 60_000);
    const other = await browser.newPage();
    const res = await other.goto(url);
    expect(res!.status()).toBe(401);
    expect(await other.locator("main").textContent()).toContain("has expired");
    expect(await other.context().cookies()).toEqual([]);
    await other.close();
  });

  it("creates a key shown once with a copy button, which then works against /v1; revoked, it is refused", async () => {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
    await page.goto(`${server.url}/console/keys`);
    await checkScreen(page, "keys");
    await page.getByLabel("Name").fill("browser-laptop");
    await page.getByRole("button", { name: "Create key" }).click();
    const key = await page.locator("#new-key").inputValue();
    expect(key).toMatch(/^mm_[0-9A-Za-z]{40}$/);
    expect(await page.locator(".new-key").textContent()).toContain("store it now, it can't be shown again.");
    await page.getByRole("button", { name: "Copy" }).click();
    await expect.poll(() => page.locator(".copied").textContent()).toBe("Copied.");
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await checkScreen(page, "key-created");
    expect(await page.locator("table").textContent()).toContain(key.slice(0, 8));

    // curl-like: the key, over plain HTTP.
    const api = client(server.url, key);
    expect((await api.post("/v1/memories", { body: { content: "written with a console key", userId: "carol" } })).status).toBe(201);
    expect((await api.get("/v1/memories", { query: { userId: "carol" } })).body.pagination.total).toBe(1);

    // Reloading shows the list, never the key again.
    await page.goto(`${server.url}/console/keys`);
    expect(await page.content()).not.toContain(key);
    await page.getByRole("link", { name: "Revoke browser-laptop" }).click();
    expect(await page.locator("h1").textContent()).toContain("Revoke the key “browser-laptop”?");
    await checkScreen(page, "key-revoke");
    await page.getByRole("button", { name: "Revoke key" }).click();
    expect(new URL(page.url()).pathname).toBe("/console/keys");
    expect(await page.locator("tr.revoked").textContent()).toContain("browser-laptop");
    const refused = await api.get("/v1/memories");
    expect(refused.status).toBe(401);
    expect(refused.body.error.message).toContain("revoked");
  });

  it("shows usage after a known number of API calls, per day, with the reset date and rate limits", async () => {
    const initech = await server.account("initech", "free");
    const api = client(server.url, initech.key);
    const now = server.clock.peek();
    server.clock.set("2026-03-02T10:00:00.000Z");
    await api.post("/v1/memories", { body: { content: "one", userId: "u" } });
    await api.get("/v1/memories");
    await api.post("/v1/memories/search", { body: { query: "one" } });
    server.clock.set(now);
    for (let i = 0; i < 4; i++) await api.get("/v1/memories");

    const p = await context.browser()!.newContext({ viewport: { width: 1440, height: 900 } }).then((c) => c.newPage());
    await signIn(p, "initech"); // the console's memories page: one read, as GET /v1/memories
    await p.goto(`${server.url}/console/usage`);
    expect(await p.getByTestId("used").textContent()).toBe("8");
    const main = (await p.locator("main").textContent())!;
    expect(main).toContain("of 1,000");
    expect(main).toContain("2026-04-01 00:00 UTC");
    const perDay = await p.locator("details table tbody tr").evaluateAll((rows) => rows.map((r) => r.textContent));
    expect(perDay).toHaveLength(15);
    expect(perDay[1]).toBe("2026-03-023");
    expect(perDay[14]).toBe("2026-03-155");
    expect(await p.locator("#usage-chart").getAttribute("data-ready")).toBe("15");
    expect(main).toMatch(/read\s*100\s*GET/);
    expect(main).toMatch(/search\s*30\s*memory search/);
    await p.locator("details summary").click();
    await checkScreen(p, "usage");
    await p.context().close();
  });

  it("lists memories with the API's filters and pages, searches with scores and the mode, and shows a memory's detail", async () => {
    await page.goto(`${server.url}/console/memories`);
    // 25 seeded, and one written with the key made in the browser.
    expect(await page.locator("#list-title").textContent()).toBe("26 memories");
    expect(await page.locator("li.memory").count()).toBe(20);
    expect(await page.locator(".pager").textContent()).toContain("Page 1 of 2");
    await checkScreen(page, "memories");
    await page.getByRole("link", { name: "Older →" }).click();
    expect(await page.locator("li.memory").count()).toBe(6);
    expect(await page.locator(".pager").textContent()).toContain("Page 2 of 2");

    await page.goto(`${server.url}/console/memories`);
    await page.getByLabel("User").fill("alice");
    await page.getByLabel("Tags").fill("travel");
    await page.getByRole("button", { name: "Search or filter" }).click();
    expect(await page.locator("#list-title").textContent()).toBe("11 memories");

    await page.goto(`${server.url}/console/memories`);
    await page.getByLabel("Search").fill("first program analytical engine");
    await page.getByRole("button", { name: "Search or filter" }).click();
    expect(await page.getByTestId("search-mode").textContent()).toContain("mode hybrid");
    const first = page.locator("li.memory").first();
    expect(await first.locator(".content").textContent()).toBe("Ada wrote the first program for the Analytical Engine");
    expect(await first.locator(".score").textContent()).toMatch(/^score (0|1)\.\d\d$/);
    await checkScreen(page, "search");
    await page.getByLabel("Mode").selectOption("keyword");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    expect(await page.getByTestId("search-mode").textContent()).toContain("mode keyword");

    await page.locator("li.memory .content").first().click();
    expect(new URL(page.url()).pathname).toBe(`/console/memories/${ids.adaMemory}`);
    expect(JSON.parse((await page.getByTestId("metadata").textContent())!)).toEqual({ source: "notes", year: 1843 });
    const linked = await page.locator("ul.chips a").allTextContents();
    expect(linked.map((t) => t.replace(/\s+/g, " ").trim()).sort()).toEqual(["Ada Lovelace PERSON", "Analytical Engine PRODUCT"]);
    expect(await page.locator("dl.fields").textContent()).toContain("historian");
    await checkScreen(page, "memory");

    await page.goto(`${server.url}/console/memories?page=0`);
    expect(await page.locator(".notice.error").textContent()).toContain("page");
  });

  it("draws the graph of the seeded store; clicking an entity shows its relations and memories; the type filters apply", async () => {
    await page.goto(`${server.url}/console/graph`);
    await expect.poll(() => page.locator("#graph").getAttribute("data-ready")).toBe("5");
    const names = await page.evaluate(() => (document.getElementById("graph") as any).cy.nodes().map((n: any) => n.data("name")).sort());
    expect(names).toEqual(["Ada Lovelace", "Analytical Engine", "Charles Babbage", "London", XSS_ENTITY].sort());
    expect(await page.evaluate(() => (document.getElementById("graph") as any).cy.edges().length)).toBe(4);
    await checkScreen(page, "graph");

    const at = await page.evaluate(() => {
      const el = document.getElementById("graph") as any;
      el.cy.resize(); // the screenshots resized the page
      el.cy.fit(undefined, 40);
      const node = el.cy.nodes().filter((n: any) => n.data("name") === "Ada Lovelace")[0];
      const box = el.getBoundingClientRect();
      return { x: box.left + node.renderedPosition().x, y: box.top + node.renderedPosition().y };
    });
    await page.mouse.click(at.x, at.y);
    await expect.poll(() => page.locator("#panel-title").textContent()).toContain("Ada Lovelace");
    const relations = await page.getByTestId("relations").locator("li").allTextContents();
    expect(relations.map((r) => r.replace(/\s+/g, " ").trim()).sort()).toEqual([`← RELATED_TO ${XSS_ENTITY}`, "→ KNOWS Charles Babbage", "→ LOCATED_IN London"]);
    expect(await page.locator("#entity-panel").textContent()).toContain("Ada wrote the first program");
    await checkScreen(page, "graph-entity");

    // Keyboard: the entity list opens the same panel.
    await page.locator(`ul.entity-list a[data-entity="${ids.babbage}"]`).focus();
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator("#panel-title").textContent()).toContain("Charles Babbage");

    await page.getByLabel("Entity type").selectOption("PERSON");
    await page.getByRole("button", { name: "Filter" }).click();
    await expect.poll(() => page.locator("#graph").getAttribute("data-ready")).toBe("2");
    await page.goto(`${server.url}/console/graph?type=CREATED`);
    await expect.poll(() => page.evaluate(() => (document.getElementById("graph") as any)?.cy?.edges().length)).toBe(1);

    await page.goto(`${server.url}/console/graph/entities/${ids.ada}`);
    expect(await page.locator("h1").textContent()).toContain("Ada Lovelace");
    await checkScreen(page, "entity");
  });

  it("shows XSS payloads in content, metadata and an entity name as text, never running them", async () => {
    for (const path of [`/console/memories/${ids.xssMemory}`, "/console/memories", "/console/memories?q=tea+time&threshold=0", "/console/graph", `/console/graph/entities/${ids.xssEntity}`]) {
      await page.goto(`${server.url}${path}`);
      await page.waitForLoadState("load");
      expect(await page.evaluate(() => (window as any).__xss), path).toBeUndefined();
      expect(await page.locator("main img").count(), path).toBe(0);
      expect(await page.locator("main script").count(), path).toBe(0);
    }
    await page.goto(`${server.url}/console/memories/${ids.xssMemory}`);
    expect(await page.getByTestId("content").textContent()).toBe(XSS_CONTENT);
    expect(JSON.parse((await page.getByTestId("metadata").textContent())!)).toEqual(XSS_META);
    expect(await page.locator("ul.chips").textContent()).toContain(XSS_ENTITY);

    // The graph's panel is built in the browser: also as text.
    await page.goto(`${server.url}/console/graph`);
    await page.locator(`ul.entity-list a[data-entity="${ids.xssEntity}"]`).click();
    await expect.poll(() => page.locator("#panel-title").textContent()).toContain(XSS_ENTITY);
    expect(await page.locator("#entity-panel").textContent()).toContain("tea time");
    expect(await page.evaluate(() => (window as any).__xss)).toBeUndefined();
    expect(await page.locator("main img").count()).toBe(0);
  });

  it("keeps account A's session out of account B's pages and data, whatever the URL", async () => {
    const notFound = [
      `/console/memories/${ids.globexMemory}`,
      `/console/graph/entities/${ids.globexEntity}`,
      `/console/keys/${ids.globexKey}/revoke`,
      `/console/api/entities/${ids.globexEntity}`,
    ];
    for (const path of notFound) {
      const res = await page.goto(`${server.url}${path}`);
      expect(res!.status(), path).toBe(404);
      const text = (await page.locator("body").textContent())!;
      expect(text, path).not.toMatch(/zanzibar|Hank Scorpio|globex-key/);
    }
    const lists = [
      "/console/memories?userId=hank",
      "/console/memories?account=globex",
      `/console/memories?accountId=${globex.id}`,
      "/console/memories?q=zanzibar+launch&threshold=0",
      `/console/graph?account=globex`,
      "/console/keys?account=globex",
      "/console/usage?account=globex",
    ];
    for (const path of lists) {
      const res = await page.goto(`${server.url}${path}`);
      expect(res!.status(), path).toBeLessThan(500);
      const text = (await page.locator("body").textContent())!;
      expect(text, path).not.toMatch(/zanzibar|Hank Scorpio|globex-key|hank/);
      expect(text, path).toContain("acme");
    }
    // Even with this session's own CSRF token, B's key can't be revoked from A's session.
    await page.goto(`${server.url}/console/keys`);
    const status = await page.evaluate(async (keyId) => {
      const csrf = (document.querySelector("input[name=csrf]") as HTMLInputElement).value;
      const res = await fetch(`/console/keys/${keyId}/revoke`, { method: "POST", body: new URLSearchParams({ csrf }) });
      return res.status;
    }, ids.globexKey);
    expect(status).toBe(404);
    expect((await client(server.url, globex.key).get("/v1/memories")).status).toBe(200);
  });

  it("refuses a cross-origin form post (CSRF), even from the same site on another port", async () => {
    const target = `${server.url}/console/keys`;
    const evil: Server = createServer((req, res) => {
      res.setHeader("Content-Type", "text/html");
      res.end(`<!DOCTYPE html><title>evil</title><form id="f" method="post" action="${target}"><input name="name" value="evil-key"><input name="csrf" value="guessed"></form><script>document.getElementById("f").submit()</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, "127.0.0.1", resolve));
    try {
      const [response] = await Promise.all([page.waitForResponse((r) => r.url() === target && r.request().method() === "POST"), page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`)]);
      expect(response.status()).toBe(403);
      await page.waitForLoadState("load");
      expect(await page.locator("h1").textContent()).toBe("Refused");
    } finally {
      await new Promise((resolve) => evil.close(resolve));
    }
    await page.goto(`${server.url}/console/keys`);
    expect(await page.locator("main").textContent()).not.toContain("evil-key");
    expect((await server.accounts.listKeys(acme.id)).items.map((k) => k.name)).not.toContain("evil-key");
  });

  it("signs out; the session is then refused", async () => {
    await page.goto(`${server.url}/console/keys`);
    await page.getByRole("button", { name: "Sign out" }).click();
    expect(new URL(page.url()).pathname).toBe("/console/signed-out");
    await checkScreen(page, "signed-out");
    expect(await context.cookies()).toEqual([]);
    const res = await page.goto(`${server.url}/console/keys`);
    expect(res!.status()).toBe(401);
    expect(watch.problems).toEqual([]);
  });
});
