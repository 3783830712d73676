import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/http-server.js";

/**
 * What reaches `mm serve` below the API: oversized bodies from Node's own fetch, HTTP that Node or
 * the adapter refuse before the app sees it, and clients that send slowly or not at all. Every
 * answer must be the JSON envelope, every common client must be able to read it, and slow clients
 * must neither be held long nor stop others.
 */

const TIMEOUTS = { headersMs: 1_000, requestMs: 2_000, keepAliveMs: 1_000 };

let server: TestServer;
let key: string;
beforeAll(async () => {
  server = await startTestServer({ timeouts: TIMEOUTS });
  key = (await server.account("transport")).key;
});
afterAll(async () => server?.close());

interface RawAnswer {
  /** Everything the server sent before it closed (or before we gave up). */
  text: string;
  status: number | undefined;
  headers: Record<string, string>;
  body: string;
  closedAfterMs: number;
}

/** Writes `request` (all at once, or through `drip`) on a raw socket and reads until the server closes. */
function raw(request: string, options: { drip?: (socket: Socket) => void; giveUpMs?: number } = {}): Promise<RawAnswer> {
  const { port } = new URL(server.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), "127.0.0.1");
    const started = Date.now();
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => (text += d));
    socket.on("error", () => undefined);
    const giveUp = setTimeout(() => socket.destroy(), options.giveUpMs ?? 5_000);
    socket.on("close", () => {
      clearTimeout(giveUp);
      const [head, ...rest] = text.split("\r\n\r\n");
      const lines = head.split("\r\n");
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) headers[l.slice(0, l.indexOf(":")).toLowerCase()] = l.slice(l.indexOf(":") + 1).trim();
      const status = /^HTTP\/1\.1 (\d{3})/.exec(lines[0])?.[1];
      resolve({ text, status: status ? Number(status) : undefined, headers, body: rest.join("\r\n\r\n"), closedAfterMs: Date.now() - started });
    });
    if (request) socket.write(request);
    options.drip?.(socket);
  });
}

/** The answer is the JSON envelope with this status and code (chunked bodies are de-chunked). */
function expectEnvelope(a: RawAnswer, status: number, code: string): void {
  expect(a.status, a.text).toBe(status);
  expect(a.headers["content-type"], a.text).toMatch(/^application\/json/);
  const body = a.headers["transfer-encoding"] === "chunked" ? a.body.replace(/^[0-9a-f]+\r\n/, "").replace(/\r\n0\r\n\r\n$/, "") : a.body;
  const parsed = JSON.parse(body);
  expect(Object.keys(parsed), a.text).toEqual(["error"]);
  expect(parsed.error.code, a.text).toBe(code);
  expect(typeof parsed.error.message).toBe("string");
}

describe("oversized bodies (finding 4)", () => {
  const oversized = JSON.stringify({ name: "x".repeat(1.25 * 1024 * 1024), type: "PERSON" });
  const post = (path: string, body: BodyInit, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...headers },
      body,
      ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
    } as RequestInit);

  it("Node's fetch reads a 413 with Connection: close, every time, and the next request on the pool works", async () => {
    for (let i = 0; i < 12; i++) {
      const res = await post("/v1/entities", oversized);
      expect(res.status, `attempt ${i}`).toBe(413);
      expect(res.headers.get("connection")).toBe("close");
      expect((await res.json()).error).toMatchObject({ code: "PAYLOAD_TOO_LARGE", limit: 1024 * 1024 });
      const next = await fetch(`${server.url}/v1/entities`, { headers: { Authorization: `Bearer ${key}` } });
      expect(next.status, `request after attempt ${i}`).toBe(200);
      await next.arrayBuffer();
    }
  });

  it("a chunked oversized body (no Content-Length), several at once, and to PATCH: 413 read by fetch each time", async () => {
    const chunked = () =>
      new ReadableStream({
        start(controller) {
          for (let i = 0; i < 20; i++) controller.enqueue(new TextEncoder().encode("x".repeat(64 * 1024)));
          controller.close();
        },
      });
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all([
        post("/v1/memories", chunked()),
        post("/v1/entities", oversized),
        fetch(`${server.url}/v1/memories/mem_x`, { method: "PATCH", headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" }, body: oversized }),
        post("/v1/relations", oversized, { Authorization: "" }),
      ]);
      for (const res of answers) {
        expect(res.status).toBe(413);
        expect((await res.json()).error.code).toBe("PAYLOAD_TOO_LARGE");
      }
    }
    // Nothing was stored.
    const list = await fetch(`${server.url}/v1/entities`, { headers: { Authorization: `Bearer ${key}` } });
    expect((await list.json()).pagination.total).toBe(0);
  });

  it("large bodies to routes that never read them (unknown route, 405, 401) still get their envelope through fetch", async () => {
    for (let i = 0; i < 4; i++) {
      const notFound = await post("/v1/nowhere", oversized);
      expect([notFound.status, (await notFound.json()).error.code]).toEqual([404, "NOT_FOUND"]);
      const wrongMethod = await fetch(`${server.url}/v1/memories/search`, { method: "PUT", headers: { "Content-Type": "application/json" }, body: oversized });
      expect([wrongMethod.status, (await wrongMethod.json()).error.code]).toEqual([405, "METHOD_NOT_ALLOWED"]);
      const noKey = await post("/v1/memories/search", JSON.stringify({ query: "y".repeat(900_000) }), { Authorization: "Bearer nope" });
      expect([noKey.status, (await noKey.json()).error.code]).toEqual([401, "UNAUTHORIZED"]);
    }
  });

  it("a large body sent slowly to a route that never reads it: the whole body is read before the answer and the close (found by the fuzzer)", async () => {
    const { port } = new URL(server.url);
    const body = Buffer.alloc(3 * 1024 * 1024, "z");
    let at = 0;
    const result = await new Promise<{ writeError?: string; text: string }>((resolve) => {
      const socket = connect(Number(port), "127.0.0.1");
      let text = "";
      let writeError: string | undefined;
      socket.setEncoding("utf8").on("data", (d: string) => (text += d));
      socket.on("error", (e: NodeJS.ErrnoException) => (writeError ??= e.code));
      socket.on("close", () => resolve({ writeError, text }));
      socket.write(`POST /v1/nowhere HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
      // 3 MiB over about 1.5 s: longer than any fixed grace period after an early answer.
      const step = () => {
        if (socket.destroyed) return;
        socket.write(body.subarray(at, at + 100 * 1024));
        at += 100 * 1024;
        if (at < body.length) setTimeout(step, 50);
      };
      step();
    });
    expect(result.writeError, result.text).toBeUndefined();
    // The connection stayed open until the last byte was sent.
    expect(at).toBeGreaterThanOrEqual(body.length);
    expect(result.text).toMatch(/^HTTP\/1\.1 404 /);
    expect(result.text).toContain('"code":"NOT_FOUND"');
  });
});

describe("HTTP the app never sees (finding 5)", () => {
  it("no Host header, OPTIONS *, CONNECT, a bad Host, a backslash path: each answered with the envelope", async () => {
    expectEnvelope(await raw("GET /v1/memories HTTP/1.1\r\nAuthorization: Bearer x\r\n\r\n"), 400, "VALIDATION_ERROR");
    expectEnvelope(await raw("OPTIONS * HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), 400, "VALIDATION_ERROR");
    expectEnvelope(await raw("CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n"), 405, "METHOD_NOT_ALLOWED");
    expectEnvelope(await raw("GET /v1/memories HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n"), 400, "VALIDATION_ERROR");
    expectEnvelope(await raw("GET /v1/mem\\ories HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), 400, "VALIDATION_ERROR");
    expectEnvelope(await raw("NONSENSE\r\n\r\n"), 400, "VALIDATION_ERROR");
    // HTTP/1.0 needs no Host; it reaches the API.
    expectEnvelope(await raw("GET /v1/memories HTTP/1.0\r\n\r\n"), 401, "UNAUTHORIZED");
  });

  it("a good request with a malformed one pipelined behind it: the good one is answered first, then a 400 envelope", async () => {
    const body = '{"name":"Pipelined","type":"OTHER"}';
    const good = `POST /v1/entities HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const a = await raw(`${good}GET /v1/has space HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    const answers = a.text.split(/(?=HTTP\/1\.1 \d{3})/);
    expect(answers.map((t) => t.slice(9, 12)), a.text).toEqual(["201", "400"]);
    expect(answers[1]).toContain('"code":"VALIDATION_ERROR"');
  });

  it("a chunked body with a broken chunk: 400 with the envelope at once, and nothing logged as an internal error", async () => {
    const logged: Record<string, unknown>[] = [];
    const s = await startTestServer({ log: (e) => logged.push(e) });
    try {
      const { port } = new URL(s.url);
      const a = await new Promise<string>((resolve) => {
        const socket = connect(Number(port), "127.0.0.1");
        let text = "";
        socket.setEncoding("utf8").on("data", (d: string) => (text += d));
        socket.on("close", () => resolve(text));
        socket.write("POST /v1/memories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer mm_x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n");
      });
      expect(a).toMatch(/^HTTP\/1\.1 400 /);
      expect(a).toContain('"code":"VALIDATION_ERROR"');
      await new Promise((r) => setTimeout(r, 100));
      expect(logged.filter((e) => e.level === "error")).toEqual([]);
    } finally {
      await s.close();
    }
  });
});

describe("slow clients (finding 6)", () => {
  it("a connection that sends nothing, or headers one at a time, is closed after the header timeout with a 408 envelope", async () => {
    const [silent, dripping, slowBody] = await Promise.all([
      raw(""),
      raw("GET /v1/memories HTTP/1.1\r\n", {
        drip: (s) => {
          const t = setInterval(() => (s.writable ? s.write("X-Slow: 1\r\n") : clearInterval(t)), 200);
          s.on("close", () => clearInterval(t));
        },
      }),
      raw(`POST /v1/memories HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`, {
        drip: (s) => {
          const t = setInterval(() => (s.writable ? s.write(" ") : clearInterval(t)), 200);
          s.on("close", () => clearInterval(t));
        },
      }),
    ]);
    for (const a of [silent, dripping]) {
      expect(a.closedAfterMs).toBeGreaterThanOrEqual(TIMEOUTS.headersMs - 50);
      expect(a.closedAfterMs).toBeLessThan(TIMEOUTS.headersMs + 3_000);
      expectEnvelope(a, 408, "REQUEST_TIMEOUT");
    }
    // A body that trickles is cut at the request timeout.
    expect(slowBody.closedAfterMs).toBeGreaterThanOrEqual(TIMEOUTS.requestMs - 50);
    expect(slowBody.closedAfterMs).toBeLessThan(TIMEOUTS.requestMs + 3_000);
  });

  it("200 slow-loris connections don't stop a normal client: its requests all succeed, promptly", async () => {
    const { port } = new URL(server.url);
    const slow: Socket[] = [];
    const cut = new Set<Socket>();
    for (let i = 0; i < 200; i++) {
      const s = connect(Number(port), "127.0.0.1");
      s.on("error", () => undefined);
      s.on("end", () => cut.add(s));
      s.on("close", () => cut.add(s));
      s.resume();
      s.write("GET /v1/memories HTTP/1.1\r\nHost: localhost\r\n");
      slow.push(s);
    }
    const drip = setInterval(() => slow.forEach((s) => s.writable && s.write("X-Slow: 1\r\n")), 100);
    try {
      await new Promise((r) => setTimeout(r, 200));
      const started = Date.now();
      for (let i = 0; i < 20; i++) {
        const t = Date.now();
        const res = await fetch(`${server.url}/v1/memories`, { headers: { Authorization: `Bearer ${key}` } });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        // Generous for a loaded 2-core machine; a server stuck behind the slow clients takes seconds.
        expect(Date.now() - t, `request ${i}`).toBeLessThan(2_000);
      }
      expect(Date.now() - started).toBeLessThan(10_000);
      // And the slow ones are all gone once the header timeout has passed.
      for (let waited = 0; cut.size < 200 && waited < TIMEOUTS.headersMs + 4_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
      expect(cut.size).toBe(200);
    } finally {
      clearInterval(drip);
      slow.forEach((s) => s.destroy());
    }
  });

  it("by default: 10 s for headers, 30 s for a whole request, 5 s for an idle keep-alive connection", async () => {
    const plain = await startTestServer();
    try {
      expect(plain.timeouts).toEqual({ headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000 });
    } finally {
      await plain.close();
    }
  });
});
