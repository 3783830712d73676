import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Accounts } from "../../src/core/accounts.js";
import { openContext } from "../../src/core/context.js";
import { ConsoleAccess, signInUrl } from "../../src/core/console-access.js";
import { startServer, type RunningServer } from "../../src/http/server.js";
import { QuotaLedger } from "../../src/limits/ledger.js";
import { call, httpClient } from "../helpers/mcp-client.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * A failing `openai` embedder behind `mm serve`: the client gets a generic EMBEDDER_UNAVAILABLE
 * (no internal URL, no environment variable name, no upstream text), and the server log gets the
 * details with the API key masked in every form the upstream may echo it in.
 */

const tempDir = useTempDirs();
const KEY = "sk-proj-Zq8Xv3Lp0Tn7Rk2Wm5Yb9Hc4Jd6Fg1Ks";
const KEY_ENV = "MM_TEST_UPSTREAM_KEY";

/** Every form of the key that must never reach a client or the log. */
const LEAKS = [
  KEY,
  KEY.slice(0, 6),
  KEY.slice(0, 12),
  KEY.slice(-8),
  Buffer.from(KEY).toString("base64").replace(/=+$/, ""),
  Buffer.from(`Bearer ${KEY}`).toString("base64").slice(12, -4),
  Buffer.from(`user:${KEY}`).toString("base64url").slice(8, -4),
  encodeURIComponent(`${KEY}/+=`).slice(0, -9),
  Buffer.from(KEY).toString("hex"),
  Buffer.from(KEY).toString("hex").toUpperCase(),
  KEY.toLowerCase(),
  KEY.toUpperCase(),
  KEY.slice(14, 23),
];

const upstreams: Server[] = [];
const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await Promise.all(upstreams.splice(0).map((s) => new Promise((r) => (s.closeAllConnections(), s.close(r)))));
});

/** An embeddings endpoint that refuses every request, echoing the key it got back in many forms. */
async function echoingUpstream(status: number): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    const sent = String(req.headers.authorization ?? "").replace(/^Bearer /, "");
    const message = [
      `Incorrect API key provided: ${sent}.`,
      `You can find your key at https://platform.example/account (prefix ${sent.slice(0, 12)}…${sent.slice(-8)}).`,
      `Debug: authorization=${Buffer.from(`Bearer ${sent}`).toString("base64")}`,
      `basic=${Buffer.from(`user:${sent}`).toString("base64url")}`,
      `raw=${Buffer.from(sent).toString("base64")}`,
      `query=?key=${encodeURIComponent(`${sent}/+=`)}`,
      `short=${sent.slice(0, 6)}`,
      `hex=${Buffer.from(sent).toString("hex")} HEX=${Buffer.from(sent).toString("hex").toUpperCase()}`,
      `folded=${sent.toLowerCase()} shouted=${sent.toUpperCase()}`,
      `fingerprint=${sent.slice(14, 23)}`,
    ].join(" ");
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message, type: "invalid_request_error" } }));
  });
  upstreams.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function serveWithOpenAi(url: string): Promise<{ url: string; key: string; log: string[]; storeDir: string }> {
  const storeDir = join(await tempDir(), "store");
  const env = { [KEY_ENV]: KEY };
  await (await openContext({ storeDir, env, createWith: { provider: "openai", model: "m", dims: 8, options: { url, apiKeyEnv: KEY_ENV } } })).close();
  const { key } = await new Accounts(storeDir).createKey({ account: "default", name: "t" });
  const log: string[] = [];
  const server = await startServer({ storeDir, port: 0, env, warm: false, log: (e) => log.push(JSON.stringify(e)) });
  servers.push(server);
  return { url: server.url, key, log, storeDir };
}

async function expectGeneric503(res: Response, upstream: string): Promise<void> {
  const text = await res.text();
  expect(res.status, text).toBe(503);
  expect(JSON.parse(text)).toEqual({ error: { code: "EMBEDDER_UNAVAILABLE", message: "The embedding service is unavailable; try again later." } });
  for (const internal of [upstream, "127.0.0.1", "/v1/embeddings", KEY_ENV, "Incorrect API key", "Debug"]) expect(text).not.toContain(internal);
  for (const leak of LEAKS) expect(text).not.toContain(leak);
}

describe("embedder failures over HTTP", () => {
  it("a 401 echoing the key: the client gets a generic 503; the log has the upstream's words with every form of the key masked", async () => {
    const upstream = await echoingUpstream(401);
    const { url, key, log } = await serveWithOpenAi(upstream);
    const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };
    await expectGeneric503(await fetch(`${url}/v1/memories`, { method: "POST", headers, body: JSON.stringify({ content: "hello", userId: "u" }) }), upstream);
    await expectGeneric503(await fetch(`${url}/v1/memories/search`, { method: "POST", headers, body: JSON.stringify({ query: "hello", mode: "semantic" }) }), upstream);

    const detailed = log.filter((l) => l.includes('"EMBEDDER_UNAVAILABLE"'));
    expect(detailed).toHaveLength(2);
    for (const line of detailed) {
      expect(line).toContain(`${upstream}/v1/embeddings`);
      expect(line).toContain("Incorrect API key provided");
      expect(line).toContain(KEY_ENV);
    }
    const all = log.join("\n");
    for (const leak of LEAKS) expect(all, `log leaks ${leak}`).not.toContain(leak);
  });

  it("/mcp's memories_search and the console's search answer like /v1: the generic message, the details only in the log", async () => {
    const upstream = await echoingUpstream(401);
    const { url, key, log, storeDir } = await serveWithOpenAi(upstream);
    const mcp = await httpClient(url, key);
    const result = await call(mcp, "memories_search", { query: "hello", mode: "semantic" });
    await mcp.close();
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toEqual({ error: { code: "EMBEDDER_UNAVAILABLE", message: "The embedding service is unavailable; try again later." } });
    const mcpText = JSON.stringify(result);
    for (const internal of [upstream, "/v1/embeddings", KEY_ENV, "Incorrect API key"]) expect(mcpText).not.toContain(internal);
    for (const leak of LEAKS) expect(mcpText, `MCP answer leaks ${leak}`).not.toContain(leak);

    const { token } = await new ConsoleAccess(storeDir).createLink("default");
    const signedIn = await fetch(signInUrl(url, token), { redirect: "manual" });
    const cookie = signedIn.headers.get("set-cookie")!.split(";")[0];
    const page = await fetch(`${url}/console/memories?q=hello&mode=semantic`, { headers: { Cookie: cookie } });
    const html = await page.text();
    expect(page.status).toBe(503);
    expect(html).toContain("The embedding service is unavailable; try again later.");
    for (const internal of [upstream, "/v1/embeddings", KEY_ENV, "Incorrect API key"]) expect(html).not.toContain(internal);
    for (const leak of LEAKS) expect(html, `console page leaks ${leak}`).not.toContain(leak);

    const detailed = log.filter((l) => l.includes("Incorrect API key provided"));
    expect(detailed.length).toBeGreaterThanOrEqual(2);
    expect(detailed.some((l) => l.includes('"/mcp"'))).toBe(true);
    expect(detailed.some((l) => l.includes("/console/memories"))).toBe(true);
    for (const leak of LEAKS) expect(log.join("\n"), `log leaks ${leak}`).not.toContain(leak);
  });

  it("an endpoint answering vectors float32 can't hold (values around 1e300): a 503, not a 400, and not billed", async () => {
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        const input = (JSON.parse(body) as { input: string[] }).input;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ data: input.map((_, index) => ({ index, embedding: Array.from({ length: 8 }, (_, i) => (i % 2 ? -1e300 : 1e300)) })) }));
      });
    });
    upstreams.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { url, key, storeDir } = await serveWithOpenAi(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };
    for (const [path, body] of [["/v1/memories", { content: "hello", userId: "u" }], ["/v1/memories/search", { query: "hello", mode: "semantic" }]] as const) {
      const res = await fetch(`${url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
      expect(res.status, await res.clone().text()).toBe(503);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("EMBEDDER_UNAVAILABLE");
    }
    expect((await new QuotaLedger(join(storeDir, "ledger")).usage("acct_default", null)).used).toBe(0);
  });

  it("an unreachable endpoint and a 500: the same generic 503, no URL in the body", async () => {
    const upstream = await echoingUpstream(500);
    const failing = await serveWithOpenAi(upstream);
    const unreachable = await serveWithOpenAi("http://127.0.0.1:9");
    for (const { url, key } of [failing, unreachable]) {
      const res = await fetch(`${url}/v1/memories`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify({ content: "hello", userId: "u" }),
      });
      await expectGeneric503(res, url === unreachable.url ? "http://127.0.0.1:9" : upstream);
    }
    for (const leak of LEAKS) expect(failing.log.join("\n")).not.toContain(leak);
    expect(unreachable.log.join("\n")).toContain("http://127.0.0.1:9/v1/embeddings");
  }, 30_000);
});
