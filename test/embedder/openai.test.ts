import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { MmError } from "../../src/errors.js";
import { openaiProvider } from "../../src/embedder/openai.js";
import type { EmbedderConfig, Env } from "../../src/embedder/index.js";

const DIMS = 8;
const MODEL = "test-embed";

interface Recorded {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: { model?: string; input?: string[]; encoding_format?: string };
}

/** Return true when the response was written (or deliberately left hanging). */
type Behaviour = (req: Recorded, res: ServerResponse, n: number) => boolean | void;

interface FakeServer {
  url: string;
  requests: Recorded[];
}

function fnv(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Deterministic and deliberately not unit length, so the client's normalisation is visible. */
function fakeVector(text: string, dims = DIMS): number[] {
  const v = new Array<number>(dims).fill(0);
  for (const word of text.toLowerCase().split(/\s+/).filter(Boolean)) {
    for (let i = 0; i < dims; i++) v[i] += ((fnv(`${word}#${i}`) % 2001) - 1000) / 100;
  }
  return v;
}

function unit(v: number[]): number[] {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): true {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
  return true;
}

const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((resolve) => {
          s.closeAllConnections();
          s.close(() => resolve());
        }),
    ),
  );
});

async function startServer(opts: { dims?: number; shuffle?: boolean; behave?: Behaviour } = {}): Promise<FakeServer> {
  const requests: Recorded[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const rec: Recorded = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: raw ? (JSON.parse(raw) as Recorded["body"]) : {},
      };
      requests.push(rec);
      if (opts.behave?.(rec, res, requests.length)) return;
      if (rec.method !== "POST" || rec.path !== "/v1/embeddings") {
        sendJson(res, 404, { error: { message: `no route ${rec.method} ${rec.path}` } });
        return;
      }
      const data = (rec.body.input ?? []).map((text, index) => ({
        object: "embedding",
        index,
        embedding: fakeVector(text, opts.dims),
      }));
      if (opts.shuffle) data.reverse();
      sendJson(res, 200, { object: "list", model: rec.body.model, data });
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, requests };
}

function config(url: string, options: Record<string, unknown> = {}, dims = DIMS): EmbedderConfig {
  return { provider: "openai", model: MODEL, dims, options: { url, ...options } };
}

async function caught(p: Promise<unknown> | (() => unknown)): Promise<MmError> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (err) {
    expect(err).toBeInstanceOf(MmError);
    return err as MmError;
  }
  throw new Error("expected an MmError");
}

describe("openai provider: requests", () => {
  it.each([
    ["bare origin", ""],
    ["origin with slash", "/"],
    ["with /v1", "/v1"],
    ["with /v1/", "/v1/"],
    ["with /v1//", "/v1//"],
    ["full endpoint", "/v1/embeddings"],
  ])("normalises the base URL (%s) to POST /v1/embeddings once", async (_name, suffix) => {
    const server = await startServer();
    const embedder = openaiProvider.create(config(server.url + suffix), {});
    await embedder.embed(["hello world"]);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ method: "POST", path: "/v1/embeddings" });
  });

  it("keeps a path prefix in front of /v1", async () => {
    const server = await startServer({
      behave: (req, res) =>
        req.path === "/api/v1/embeddings" &&
        sendJson(res, 200, { data: [{ index: 0, embedding: fakeVector("x") }] }),
    });
    const cfg = await openaiProvider.configure({ url: `${server.url}/api/v1/`, model: MODEL, env: {} });
    expect(cfg.options).toMatchObject({ url: `${server.url}/api/v1` });
    expect(server.requests.map((r) => r.path)).toEqual(["/api/v1/embeddings"]);
  });

  it("sends model, input and encoding_format as JSON", async () => {
    const server = await startServer();
    await openaiProvider.create(config(server.url), {}).embed(["a", "b"]);
    const [req] = server.requests;
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.body).toEqual({ model: MODEL, input: ["a", "b"], encoding_format: "float" });
  });

  it("sends the key from the default env var as a bearer token", async () => {
    const server = await startServer();
    await openaiProvider.create(config(server.url), { OPENAI_API_KEY: "sk-test-123" }).embed(["hi"]);
    expect(server.requests[0].headers.authorization).toBe("Bearer sk-test-123");
  });

  it("reads the key from a custom env var at embed time, not at create time", async () => {
    const server = await startServer();
    const env: Env = {};
    const embedder = openaiProvider.create(config(server.url, { apiKeyEnv: "MY_EMBED_KEY" }), env);
    env.MY_EMBED_KEY = "local-key";
    env.OPENAI_API_KEY = "wrong-key";
    await embedder.embed(["hi"]);
    expect(server.requests[0].headers.authorization).toBe("Bearer local-key");
  });

  it("sends no Authorization header when the key is unset or empty", async () => {
    const server = await startServer();
    await openaiProvider.create(config(server.url), {}).embed(["hi"]);
    await openaiProvider.create(config(server.url), { OPENAI_API_KEY: "" }).embed(["hi"]);
    expect(server.requests).toHaveLength(2);
    for (const r of server.requests) expect(r.headers.authorization).toBeUndefined();
  });

  it("batches 150 texts into 64 + 64 + 22 and keeps input order when data comes back shuffled", async () => {
    const server = await startServer({ shuffle: true });
    const texts = Array.from({ length: 150 }, (_, i) => `memory number ${i} about topic ${i % 7}`);
    const vectors = await openaiProvider.create(config(server.url), {}).embed(texts);
    expect(server.requests.map((r) => r.body.input?.length)).toEqual([64, 64, 22]);
    expect(server.requests.flatMap((r) => r.body.input)).toEqual(texts);
    expect(vectors).toHaveLength(150);
    vectors.forEach((v, i) => {
      const expected = unit(fakeVector(texts[i]));
      expect(Array.from(v).map((x, j) => Math.abs(x - expected[j]))).toSatisfy((d: number[]) =>
        d.every((x) => x < 1e-6),
      );
    });
  });

  it("honours a configured batchSize", async () => {
    const server = await startServer();
    await openaiProvider.create(config(server.url, { batchSize: 2 }), {}).embed(["a", "b", "c", "d", "e"]);
    expect(server.requests.map((r) => r.body.input)).toEqual([["a", "b"], ["c", "d"], ["e"]]);
  });

  it("returns unit-length Float32Arrays of the configured dims", async () => {
    const server = await startServer();
    const embedder = openaiProvider.create(config(server.url), {});
    expect(embedder).toMatchObject({ id: `openai:${MODEL}`, provider: "openai", model: MODEL, dims: DIMS });
    const vectors = await embedder.embed(["the quick brown fox", "jumps over", "the lazy dog"]);
    for (const v of vectors) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(DIMS);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    }
  });

  it("makes no request for an empty input", async () => {
    const server = await startServer();
    expect(await openaiProvider.create(config(server.url), {}).embed([])).toEqual([]);
    expect(server.requests).toHaveLength(0);
  });

  it("create() makes no request until the first embed", async () => {
    const server = await startServer();
    const embedder = openaiProvider.create(config(server.url), {});
    await new Promise((r) => setTimeout(r, 50));
    expect(server.requests).toHaveLength(0);
    await embedder.embed(["now"]);
    expect(server.requests).toHaveLength(1);
  });

  it("create() succeeds for an unreachable URL: nothing is contacted", () => {
    expect(() => openaiProvider.create(config("http://127.0.0.1:9"), {})).not.toThrow();
  });
});

describe("openai provider: configure", () => {
  it("learns dims by probing once and writes the canonical URL and env var name, never the key", async () => {
    const server = await startServer({ dims: 12 });
    const cfg = await openaiProvider.configure({
      url: `${server.url}/v1/`,
      model: MODEL,
      env: { OPENAI_API_KEY: "sk-secret-value" },
    });
    expect(cfg).toEqual({
      provider: "openai",
      model: MODEL,
      dims: 12,
      options: { url: `${server.url}/v1`, apiKeyEnv: "OPENAI_API_KEY" },
    });
    expect(JSON.stringify(cfg)).not.toContain("sk-secret-value");
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0].headers.authorization).toBe("Bearer sk-secret-value");
    // The written config round-trips through create().
    const vectors = await openaiProvider.create(cfg, {}).embed(["x"]);
    expect(vectors[0].length).toBe(12);
  });

  it("keeps a custom apiKeyEnv and accepts matching dims", async () => {
    const server = await startServer();
    const cfg = await openaiProvider.configure({
      url: server.url,
      model: MODEL,
      apiKeyEnv: "LMSTUDIO_KEY",
      dims: DIMS,
      env: { LMSTUDIO_KEY: "k" },
    });
    expect(cfg.options).toEqual({ url: `${server.url}/v1`, apiKeyEnv: "LMSTUDIO_KEY" });
    expect(server.requests[0].headers.authorization).toBe("Bearer k");
  });

  it("rejects dims that differ from the probed ones with EMBEDDER_MISMATCH", async () => {
    const server = await startServer();
    const err = await caught(openaiProvider.configure({ url: server.url, model: MODEL, dims: 768, env: {} }));
    expect(err.code).toBe("EMBEDDER_MISMATCH");
    expect(err.message).toContain("768");
    expect(err.message).toContain(String(DIMS));
  });

  it("fails at configure time for a wrong URL path (404) with the server's message", async () => {
    const server = await startServer();
    // A base URL whose /v1/embeddings does not exist on the server.
    const err = await caught(openaiProvider.configure({ url: `${server.url}/nope`, model: MODEL, env: {} }));
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
    expect(err.message).toContain(`${server.url}/nope/v1/embeddings`);
    expect(err.message).toContain("404");
    expect(err.message).toContain("no route POST /nope/v1/embeddings");
  });

  it("requires a model, before any request", async () => {
    const server = await startServer();
    for (const model of [undefined, "", "   "]) {
      const err = await caught(openaiProvider.configure({ url: server.url, model, env: {} }));
      expect(err.code).toBe("VALIDATION_ERROR");
      expect(err.extra.details).toEqual([expect.objectContaining({ field: "model" })]);
    }
    expect(server.requests).toHaveLength(0);
  });

  it.each([
    ["missing", undefined],
    ["empty", ""],
    ["not a URL", "not a url"],
    ["no scheme", "localhost:11434"],
    ["ftp", "ftp://example.com/v1"],
    ["query string", "http://localhost:11434/v1?x=1"],
  ])("rejects a bad URL (%s) with VALIDATION_ERROR", async (_name, url) => {
    const err = await caught(openaiProvider.configure({ url, model: MODEL, env: {} }));
    expect(err.code).toBe("VALIDATION_ERROR");
    expect(err.extra.details).toEqual([expect.objectContaining({ field: "url" })]);
  });

  it("rejects credentials in the URL without echoing them", async () => {
    const err = await caught(openaiProvider.configure({ url: "https://user:hunter2@example.com/v1", model: MODEL, env: {} }));
    expect(err.code).toBe("VALIDATION_ERROR");
    expect(err.message).not.toContain("hunter2");
  });

  it("rejects a key pasted as apiKeyEnv without echoing it", async () => {
    const err = await caught(
      openaiProvider.configure({ url: "http://127.0.0.1:9", model: MODEL, apiKeyEnv: "sk-proj-abc123", env: {} }),
    );
    expect(err.code).toBe("VALIDATION_ERROR");
    expect(err.extra.details).toEqual([expect.objectContaining({ field: "apiKeyEnv" })]);
    expect(err.message).not.toContain("sk-proj-abc123");
  });

  it("rejects bad dims, timeoutMs and batchSize", async () => {
    const e1 = await caught(openaiProvider.configure({ url: "http://127.0.0.1:9", model: MODEL, dims: 0, env: {} }));
    expect(e1.extra.details).toEqual([expect.objectContaining({ field: "dims" })]);
    for (const [field, value] of [
      ["timeoutMs", 0],
      ["timeoutMs", "300"],
      ["batchSize", 0],
      ["batchSize", 1.5],
      ["batchSize", 5000],
    ] as const) {
      const err = await caught(() => openaiProvider.create(config("http://127.0.0.1:9", { [field]: value }), {}));
      expect(err.code).toBe("VALIDATION_ERROR");
      expect(err.extra.details).toEqual([expect.objectContaining({ field })]);
    }
    const e2 = await caught(() => openaiProvider.create({ ...config("http://127.0.0.1:9"), dims: -1 }, {}));
    expect(e2.code).toBe("VALIDATION_ERROR");
  });
});

describe("openai provider: failures", () => {
  it("rejects vectors whose dimension differs from the configured dims with EMBEDDER_MISMATCH", async () => {
    const server = await startServer({ dims: 16 });
    const err = await caught(openaiProvider.create(config(server.url), {}).embed(["hi"]));
    expect(err.code).toBe("EMBEDDER_MISMATCH");
    expect(err.message).toContain("16");
    expect(err.message).toContain(`openai:${MODEL} (${DIMS} dims)`);
  });

  it("maps 401 to EMBEDDER_UNAVAILABLE with the server's message but never the key, without retrying", async () => {
    const key = "sk-very-secret-key-0001";
    const server = await startServer({
      behave: (req, res) =>
        sendJson(res, 401, {
          error: { message: `Incorrect API key provided: ${String(req.headers.authorization).slice(7)}.`, type: "invalid_request_error" },
        }),
    });
    const err = await caught(openaiProvider.create(config(server.url), { OPENAI_API_KEY: key }).embed(["hi"]));
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
    expect(err.message).toContain(`${server.url}/v1/embeddings`);
    expect(err.message).toContain("401");
    expect(err.message).toContain("Incorrect API key provided");
    expect(err.message).toContain("OPENAI_API_KEY");
    expect(err.message).not.toContain(key);
    expect(JSON.stringify(err.toBody())).not.toContain(key);
    expect(server.requests).toHaveLength(1);
  });

  it("masks the key in every form the server echoes it in: truncated, base64 of the header, URL-encoded", async () => {
    const key = "sk-proj-7Hq2Lx9Vt4Rb8Mn3Kc6Wd1Zf5";
    const server = await startServer({
      behave: (req, res) => {
        const sent = String(req.headers.authorization).slice(7);
        const echoed = `bad key ${sent.slice(0, 10)}...${sent.slice(-6)}; header=${Buffer.from(String(req.headers.authorization)).toString("base64")}; q=${encodeURIComponent(sent + "/")}`;
        return sendJson(res, 401, { error: { message: echoed } });
      },
    });
    const err = await caught(openaiProvider.create(config(server.url), { OPENAI_API_KEY: key }).embed(["hi"]));
    expect(err.message).toContain("bad key ***...***");
    for (const leak of [key.slice(0, 6), key.slice(-6), Buffer.from(key).toString("base64").slice(8, 20), Buffer.from(`Bearer ${key}`).toString("base64").slice(12, -4)]) {
      expect(err.message).not.toContain(leak);
    }
  });

  it("does not retry other 4xx", async () => {
    const server = await startServer({
      behave: (_req, res) => sendJson(res, 400, { error: { message: "input must not be empty" } }),
    });
    const err = await caught(openaiProvider.create(config(server.url), {}).embed([""]));
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
    expect(err.message).toContain("400");
    expect(err.message).toContain("input must not be empty");
    expect(server.requests).toHaveLength(1);
  });

  it("retries a 429 after Retry-After and succeeds", async () => {
    const server = await startServer({
      behave: (_req, res, n) =>
        n === 1 && sendJson(res, 429, { error: { message: "slow down" } }, { "retry-after": "0" }),
    });
    const vectors = await openaiProvider.create(config(server.url), {}).embed(["hi there"]);
    expect(vectors).toHaveLength(1);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1].body).toEqual(server.requests[0].body);
  });

  it("backs off exponentially on 5xx without Retry-After", async () => {
    const server = await startServer({
      behave: (_req, res, n) => n === 1 && sendJson(res, 503, { error: { message: "loading model" } }),
    });
    const started = Date.now();
    await openaiProvider.create(config(server.url), {}).embed(["hi"]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    expect(server.requests).toHaveLength(2);
  });

  it("gives up after 3 tries of HTTP 500, reporting status and message", async () => {
    const server = await startServer({
      behave: (_req, res) => sendJson(res, 500, { error: { message: "model crashed" } }, { "retry-after": "0" }),
    });
    const err = await caught(openaiProvider.create(config(server.url), {}).embed(["hi"]));
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
    expect(err.message).toContain("500");
    expect(err.message).toContain("model crashed");
    expect(err.message).toContain("3 tries");
    expect(server.requests).toHaveLength(3);
  });

  it("gives up at once when Retry-After asks for a long wait", async () => {
    const server = await startServer({
      behave: (_req, res) => sendJson(res, 429, { error: { message: "quota exceeded" } }, { "retry-after": "3600" }),
    });
    const err = await caught(openaiProvider.create(config(server.url), {}).embed(["hi"]));
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
    expect(err.message).toContain("quota exceeded");
    expect(server.requests).toHaveLength(1);
  });

  it("times out a server that never answers", async () => {
    const server = await startServer({ behave: () => true });
    const started = Date.now();
    const err = await caught(openaiProvider.create(config(server.url, { timeoutMs: 300 }), {}).embed(["hi"]));
    expect(Date.now() - started).toBeLessThan(2000);
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
    expect(err.message).toContain("300 ms");
    expect(err.message).toContain(`${server.url}/v1/embeddings`);
    expect(server.requests).toHaveLength(1);
  });

  it("maps a closed port to EMBEDDER_UNAVAILABLE, at configure and at embed", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const url = `http://127.0.0.1:${port}/v1`;

    const e1 = await caught(openaiProvider.configure({ url, model: MODEL, env: {} }));
    expect(e1.code).toBe("EMBEDDER_UNAVAILABLE");
    expect(e1.message).toContain(`${url}/embeddings`);
    expect(e1.message).toContain("ECONNREFUSED");

    const e2 = await caught(openaiProvider.create(config(url), {}).embed(["hi"]));
    expect(e2.code).toBe("EMBEDDER_UNAVAILABLE");
  });

  it.each([
    ["not JSON", (res: ServerResponse) => (res.writeHead(200, { "content-type": "text/plain" }), res.end("ok"), true)],
    ["no data", (res: ServerResponse) => sendJson(res, 200, { object: "list" })],
    ["too few rows", (res: ServerResponse) => sendJson(res, 200, { data: [{ index: 0, embedding: fakeVector("a") }] })],
    [
      "repeated index",
      (res: ServerResponse) =>
        sendJson(res, 200, {
          data: [
            { index: 0, embedding: fakeVector("a") },
            { index: 0, embedding: fakeVector("b") },
          ],
        }),
    ],
    [
      "base64 embedding",
      (res: ServerResponse) =>
        sendJson(res, 200, {
          data: [
            { index: 0, embedding: "AAAA" },
            { index: 1, embedding: "AAAA" },
          ],
        }),
    ],
  ])("rejects a malformed response (%s) with EMBEDDER_UNAVAILABLE", async (_name, reply) => {
    const server = await startServer({ behave: (_req, res) => reply(res) });
    const err = await caught(openaiProvider.create(config(server.url), {}).embed(["a", "b"]));
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
    expect(err.message).toContain(`${server.url}/v1/embeddings`);
  });
});
