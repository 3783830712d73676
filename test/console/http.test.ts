import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConsoleAccess, SESSION_TTL_MS, signInUrl } from "../../src/core/console-access.js";
import { client, startTestServer, type TestServer } from "../helpers/http-server.js";

/**
 * The console's HTTP surface without a browser: headers, cookies, CSRF refusals, and that its
 * actions are counted like the endpoints they mirror. (test/console/browser.test.ts drives it in
 * chromium.)
 */

let server: TestServer;
let access: ConsoleAccess;

beforeAll(async () => {
  server = await startTestServer({ rateLimits: { read: 100_000, write: 100_000, search: 2 } });
  access = new ConsoleAccess(server.storeDir, server.clock);
});
afterAll(() => server?.close());

async function signIn(account: string, headers: Record<string, string> = {}): Promise<{ cookie: string; setCookie: string }> {
  const res = await fetch(signInUrl(server.url, (await access.createLink(account)).token), { redirect: "manual", headers });
  expect(res.status).toBe(303);
  expect(res.headers.get("location")).toBe("/console/");
  const setCookie = res.headers.get("set-cookie")!;
  return { cookie: setCookie.split(";")[0], setCookie };
}

async function page(path: string, cookie?: string, init: RequestInit = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(`${server.url}${path}`, { redirect: "manual", ...init, headers: { ...(cookie ? { Cookie: cookie } : {}), ...(init.headers as Record<string, string>) } });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

async function csrfOf(cookie: string): Promise<string> {
  return /name="csrf" value="([^"]+)"/.exec((await page("/console/keys", cookie)).text)![1];
}

function post(path: string, cookie: string, form: Record<string, string>, headers: Record<string, string>) {
  return page(path, cookie, { method: "POST", body: new URLSearchParams(form), headers });
}

describe("the console's memory detail", () => {
  it("shows a replaced memory's replacement, and every memory's versions and chain", async () => {
    const globex = await server.account("globex");
    const api = client(server.url, globex.key);
    const old = (await api.post("/v1/memories", { body: { content: "I work at Acme Robotics", userId: "hank" } })).body;
    await api.patch(`/v1/memories/${old.id}`, { body: { tags: ["work"] } });
    const newer = (await api.post("/v1/memories", { body: { content: "I joined Globex as a designer", userId: "hank" } })).body;
    expect(newer.supersedes).toEqual([old.id]);
    const { cookie } = await signIn("globex");
    const detail = await page(`/console/memories/${old.id}`, cookie);
    expect(detail.status).toBe(200);
    expect(detail.text).toContain('data-testid="superseded"');
    expect(detail.text).toContain(`/console/memories/${newer.id}`);
    expect(detail.text).toMatch(/<section[^>]*data-testid="history"/);
    expect(detail.text).toContain("v2");
    expect(detail.text).toContain("Replaced by");
    const current = await page(`/console/memories/${newer.id}`, cookie);
    expect(current.text).not.toContain('data-testid="superseded"');
    expect(current.text).toContain("It replaced");
  });
});

describe("the console's projects", () => {
  it("filters the memory list by project (with the global memories), and shows each memory's project", async () => {
    const umbrella = await server.account("umbrella");
    const api = client(server.url, umbrella.key);
    const shop = (await api.post("/v1/memories", { body: { content: "the shop deploys with fly.io", userId: "ivy", project: "shop" } })).body;
    const global = (await api.post("/v1/memories", { body: { content: "ivy prefers tabs", userId: "ivy" } })).body;
    const blog = (await api.post("/v1/memories", { body: { content: "the blog deploys with netlify", userId: "ivy", project: "blog" } })).body;
    const { cookie } = await signIn("umbrella");
    const listed = await page("/console/memories?project=shop", cookie);
    expect(listed.status).toBe(200);
    expect(listed.text).toContain(`/console/memories/${shop.id}`);
    expect(listed.text).toContain(`/console/memories/${global.id}`);
    expect(listed.text).not.toContain(`/console/memories/${blog.id}`);
    expect(listed.text).toContain("project shop");
    const bad = await page("/console/memories?project=..%2Fx", cookie);
    expect(bad.status).toBe(400);
    expect((await page(`/console/memories/${shop.id}`, cookie)).text).toMatch(/<dt>project<\/dt>\s*<dd>shop<\/dd>/);
  });
});

describe("the console over HTTP", () => {
  it("sends a strict CSP and no-store on pages; serves its scripts from the package with long caching", async () => {
    await server.account("acme");
    const { cookie } = await signIn("acme");
    const res = await page("/console/graph", cookie);
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy")!;
    for (const directive of ["default-src 'self'", "script-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"]) expect(csp).toContain(directive);
    expect(csp).not.toContain("unsafe-inline");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.text).not.toMatch(/<script>|<script(?![^>]*\bsrc=)[^>]*>|\son\w+=|style="/); // no inline script, handler or style
    const scripts = [...res.text.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts.map((s) => s.split("/").pop())).toEqual(["console.js", "cytoscape.min.js", "graph.js"]);
    for (const src of scripts) {
      expect(src).toMatch(/^\/console\/assets\/[0-9a-f]{12}\//);
      const asset = await fetch(`${server.url}${src}`, { headers: { "Accept-Encoding": "gzip" } });
      expect(asset.status).toBe(200);
      expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(asset.headers.get("content-type")).toMatch(/^text\/javascript/);
    }
    expect((await page(scripts[1].replace(/[0-9a-f]{12}/, "000000000000"))).status).toBe(404);
  });

  it("sets the session cookie HttpOnly, SameSite=Strict, path /console; Secure when served over HTTPS", async () => {
    const plain = await signIn("acme");
    expect(plain.setCookie).toMatch(/HttpOnly/);
    expect(plain.setCookie).toMatch(/SameSite=Strict/);
    expect(plain.setCookie).toMatch(/Path=\/console/);
    expect(plain.setCookie).not.toMatch(/Secure/);
    expect(plain.setCookie).toMatch(/Max-Age=43(19\d|200);/); // 12 hours, by the server's clock
    const tls = await signIn("acme", { "X-Forwarded-Proto": "https" });
    expect(tls.setCookie).toMatch(/; Secure/);
  });

  it("asks before signing in from a link followed on another site, and takes the answer only from this origin", async () => {
    const { token } = await access.createLink("acme");
    const asked = await page(`/console/signin?token=${token}`, undefined, { headers: { "Sec-Fetch-Site": "cross-site" } });
    expect(asked.status).toBe(200);
    expect(asked.headers.get("set-cookie")).toBeNull();
    expect(asked.text).toContain("Sign in to acme");
    expect((await access.checkLink(token)).name).toBe("acme"); // not used up by looking
    const forged = await page("/console/signin", undefined, { method: "POST", body: new URLSearchParams({ token }), headers: { Origin: "http://evil.example", "Sec-Fetch-Site": "cross-site" } });
    expect(forged.status).toBe(403);
    const ok = await page("/console/signin", undefined, { method: "POST", body: new URLSearchParams({ token }), headers: { Origin: server.url, "Sec-Fetch-Site": "same-origin" } });
    expect(ok.status).toBe(303);
    expect(ok.headers.get("set-cookie")).toMatch(/^mm_console=/);
  });

  it("refuses every state-changing request without this origin and the session's CSRF token", async () => {
    const { cookie } = await signIn("acme");
    const csrf = await csrfOf(cookie);
    const same = { Origin: server.url, "Sec-Fetch-Site": "same-origin" };
    const attempts: [Record<string, string>, Record<string, string>][] = [
      [{ name: "x1", csrf }, { Origin: "http://evil.example" }],
      [{ name: "x2", csrf }, { "Sec-Fetch-Site": "cross-site" }],
      [{ name: "x3", csrf }, { Origin: server.url.replace(/:\d+$/, ":1"), "Sec-Fetch-Site": "same-site" }],
      [{ name: "x4", csrf }, { Origin: "null" }],
      [{ name: "x5" }, same],
      [{ name: "x6", csrf: "forged" }, same],
    ];
    for (const [form, headers] of attempts) {
      const res = await post("/console/keys", cookie, form, headers);
      expect(res.status, JSON.stringify([form, headers])).toBe(403);
      expect(res.text).toContain("Refused");
    }
    expect((await post("/console/signout", cookie, {}, same)).status).toBe(403);
    const other = await signIn("acme");
    expect((await post("/console/keys", cookie, { name: "x7", csrf: await csrfOf(other.cookie) }, same)).status).toBe(403);

    const ok = await post("/console/keys", cookie, { name: "made-here", csrf }, same);
    expect(ok.status).toBe(200);
    const acme = (await server.accounts.list()).items.find((a) => a.name === "acme")!;
    expect((await server.accounts.listKeys(acme.id)).items.map((k) => k.name).filter((n) => n !== "acme-key")).toEqual(["made-here"]);

    const empty = await post("/console/keys", cookie, { name: "  ", csrf }, same);
    expect(empty.status).toBe(400);
    expect(empty.text).toContain('aria-invalid="true"');
  });

  it("counts the console's reads and searches like their endpoints, in the same buckets; keys and usage count nothing", async () => {
    const initech = await server.account("initech", "free");
    await client(server.url, initech.key).post("/v1/memories", { body: { content: "the stapler is red", userId: "milton" } });
    const used = async () => (await server.ledger.usage(initech.id, 1000)).used;
    expect(await used()).toBe(1);
    const { cookie } = await signIn("initech");
    expect(await used()).toBe(1);
    for (const path of ["/console/keys", "/console/usage", "/console/keys"]) expect((await page(path, cookie)).status).toBe(200);
    expect(await used()).toBe(1);
    const list = await page("/console/memories", cookie);
    expect(list.headers.get("x-ratelimit-limit")).toBe("100000");
    expect(await used()).toBe(2);
    expect((await page("/console/graph", cookie)).status).toBe(200);
    expect(await used()).toBe(3);

    // Search is the search bucket (2 a minute here), separate from the key's own.
    for (let i = 0; i < 2; i++) expect((await page("/console/memories?q=stapler", cookie)).status).toBe(200);
    const limited = await page("/console/memories?q=stapler", cookie);
    expect(limited.status).toBe(429);
    expect(limited.text).toContain("Too many search requests");
    expect(await used()).toBe(5);
    expect((await client(server.url, initech.key).post("/v1/memories/search", { body: { query: "stapler" } })).status).toBe(200);

    // Quota: once the month's operations are used up, reads are refused; keys and usage still open.
    await server.ledger.charge(initech.id, null, "read", 1000 - (await used()));
    const refused = await page("/console/memories", cookie);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain("Monthly quota of 1000 operations exceeded");
    // Quota is checked before the rate limit, as on /v1: over quota, a search is 403, never 429, and takes no rate allowance.
    for (let i = 0; i < 3; i++) expect((await page("/console/memories?q=stapler", cookie)).text).toContain("Monthly quota of 1000 operations exceeded");
    expect((await page("/console/usage", cookie)).status).toBe(200);
    expect((await page("/console/keys", cookie)).status).toBe(200);
  });

  it("spends no quota or rate for a request from another site or port (an <img> on 127.0.0.1:OTHER); read-only pages still open from a link", async () => {
    const acct = await server.account("hooli", "free");
    const used = async () => (await server.ledger.usage(acct.id, 1000)).used;
    const { cookie } = await signIn("hooli");
    const otherPort = new URL(server.url);
    otherPort.port = String(Number(otherPort.port) + 1);
    const img = { "Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image" };
    const link = { "Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document" };
    for (const headers of [img, link, { "Sec-Fetch-Site": "cross-site" }, { Origin: otherPort.origin }]) {
      for (const path of ["/console/memories?q=anything", "/console/memories", "/console/graph", "/console/api/entities/ent_x"]) {
        const res = await page(path, cookie, { headers });
        expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(403);
        expect(res.text).toMatch(/another (site|origin)/);
      }
    }
    expect(await used()).toBe(0);
    // Nothing was taken from the search bucket (2 a minute here): two searches still pass.
    for (const headers of [{ "Sec-Fetch-Site": "same-origin" }, { "Sec-Fetch-Site": "none" }]) {
      expect((await page("/console/memories?q=anything", cookie, { headers })).status).toBe(200);
    }
    expect(await used()).toBe(2);
    // Pages that spend nothing still open from a link on another site.
    for (const path of ["/console/keys", "/console/usage"]) expect((await page(path, cookie, { headers: link })).status).toBe(200);
  });

  it("ends sessions at expiry and on revocation; unknown paths answer 404 pages, the panel's JSON a 401 envelope", async () => {
    const { cookie } = await signIn("acme");
    expect((await page("/console/keys", cookie)).status).toBe(200);
    await access.revoke("acme");
    const revoked = await page("/console/keys", cookie);
    expect(revoked.status).toBe(401);
    expect(revoked.text).toContain("mm console link --account");

    const again = await signIn("acme");
    server.clock.advance(SESSION_TTL_MS + 1);
    expect((await page("/console/keys", again.cookie)).status).toBe(401);

    const api = await page("/console/api/entities/ent_x");
    expect(api.status).toBe(401);
    expect(JSON.parse(api.text).error.code).toBe("UNAUTHORIZED");
    const fresh = await signIn("acme");
    const missing = await page("/console/nowhere", fresh.cookie);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toMatch(/^text\/html/);
    expect((await page("/console/", fresh.cookie)).headers.get("location")).toBe("/console/memories");
    // The API is untouched: JSON errors as before, on / too.
    for (const path of ["/v1/nowhere", "/"]) expect((await page(path)).headers.get("content-type")).toMatch(/^application\/json/);
  });
});

describe("an empty search in the console (issue 26)", () => {
  it("shows the closest score and the threshold that would show it, as the CLI does", async () => {
    const { key } = await server.account("closest");
    const api = client(server.url, key);
    await api.post("/v1/memories", { body: { content: "Bob prefers green tea in the morning", userId: "bob" } });
    const { cookie } = await signIn("closest");
    const res = await page("/console/memories?q=green+coffee+evening&mode=semantic&threshold=0.99", cookie);
    expect(res.status).toBe(200);
    const closest = /data-testid="closest">([\s\S]*?)<\/p>/.exec(res.text)?.[1].replace(/\s+/g, " ").replace(/&quot;|&#x27;/g, "'");
    expect(closest).toMatch(/^Nothing scored 0\.99 or more\. The closest scored 0\.\d{3}: “Bob prefers green tea in the morning”\. A threshold of 0\.\d+ shows it\.$/);
  });
});
