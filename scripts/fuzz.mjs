#!/usr/bin/env node
// `npm run fuzz`: a seeded HTTP fuzzer for `mm serve`. Starts a real server (the real model) on a
// fresh store on 127.0.0.1, sends it fuzzed requests (methods, paths, query strings, headers,
// bodies, encodings, nesting, sizes, and HTTP that is malformed outright; MCP messages and
// JSON-RPC batches on /mcp; console pages and forms, signed in or not, from this site or another)
// over raw sockets and Node's fetch, and fails (exit 1) on any 5xx, any error answer without the
// JSON envelope (an HTML page for the console), any internal error (a JSON-RPC -32603, a tool's
// INTERNAL_ERROR), any request left unanswered (a hang), or the server dying. Then it imports
// fuzzed files in each format (`mm import`), and fails on an internal error or a stack trace.
// Prints a table and writes JSON.
//   --requests 100000  how many (npm test runs 5,000)
//   --import-lines 60  lines per fuzzed import file (one file per format; 0: no import phase)
//   --seed 1           the same seed sends the same requests
//   --concurrency 8
//   --out bench-results/fuzz.json
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { gzipSync } from "node:zlib";
import { join } from "node:path";
import { startMmServe } from "./mm-serve.mjs";
import { BIN, consoleSession, machine, MCP_HEADERS, newStore, parseArgs, printTable, rng, rssMb, root, writeJson } from "./suite-kit.mjs";

const opts = parseArgs({ requests: 100_000, seed: 1, concurrency: 8, out: join(root, "bench-results", "fuzz.json"), "answer-ms": 15_000, "import-lines": 60 });

let store, server, port, session, serverExited = false;
const ids = { mem: ["mem_00000000000000000000000000"], ent: ["ent_00000000000000000000000000"], rel: ["rel_00000000000000000000000000"] };

// ---------------------------------------------------------------------------------------------

/** What every answer must be: under 500, the envelope for errors, JSON for successes, no stack trace. */
function judge(req, answers) {
  if (!answers.length) return answers.error ?? "no answer";
  if (req.judge) return req.judge(answers, req);
  for (const a of answers) {
    if (a.status === undefined) return `unparseable answer: ${JSON.stringify(a.raw.slice(0, 200))}`;
    if (a.status >= 500) return `${a.status}: ${a.body.slice(0, 300)}`;
    if (/\bat .+\.(js|ts|mjs|cjs):\d+/.test(a.body) || /node_modules/.test(a.body)) return `internals in the body: ${a.body.slice(0, 300)}`;
    if (req.method === "HEAD" || a.status === 100) continue;
    if (!/^application\/json\b/i.test(a.headers["content-type"] ?? "")) return `${a.status} without a JSON Content-Type: ${JSON.stringify(a.headers)} ${a.body.slice(0, 200)}`;
    let body;
    try {
      body = JSON.parse(a.body);
    } catch {
      return `${a.status} body is not JSON: ${a.body.slice(0, 200)}`;
    }
    if (a.status >= 400) {
      const e = body?.error;
      if (Object.keys(body ?? {}).join() !== "error" || typeof e?.code !== "string" || typeof e?.message !== "string" || !e.message) {
        return `${a.status} without the envelope: ${a.body.slice(0, 300)}`;
      }
    }
  }
  if (req.expectAnswers && answers.length < req.expectAnswers) return `${answers.length} answers for ${req.expectAnswers} pipelined requests`;
  return undefined;
}

function learnIds(answers) {
  for (const a of answers) {
    if (a.status !== 201) continue;
    const id = /"id":"((mem|ent|rel)_[0-9A-Z]{24,})"/.exec(a.body);
    if (id && ids[id[2]].length < 200) ids[id[2]].push(id[1]);
  }
}

function preview(req) {
  const text = req.raw ? req.raw.toString("latin1") : `${req.method} ${req.path} ${JSON.stringify(req.headers)} ${String(req.body ?? "").slice(0, 200)}`;
  return JSON.stringify(text.length > 400 ? `${text.slice(0, 400)}… (${text.length} bytes)` : text);
}

// --- sending ---------------------------------------------------------------------------------

/** Writes the raw request, reads until the server closes (or the deadline), parses every answer. */
function viaSocket(req) {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const chunks = [];
    let done = false;
    const finish = (error) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      socket.destroy();
      const answers = parseAnswers(Buffer.concat(chunks));
      if (error && !answers.length) answers.error = error;
      resolve(answers);
    };
    const deadline = setTimeout(() => finish(`no answer within ${opts["answer-ms"]} ms (hang)`), opts["answer-ms"]);
    socket.on("data", (d) => {
      chunks.push(d);
      // Done once every expected answer is complete: a kept-alive connection needn't wait for its timeout.
      const final = parseAnswers(Buffer.concat(chunks)).filter((a) => a.complete && a.status !== 100);
      if (final.length >= (req.expectAnswers ?? 1)) finish();
    });
    socket.on("error", (e) => finish(`socket error ${e.code}`));
    socket.on("close", () => finish("closed without an answer"));
    socket.on("end", () => finish("closed without an answer"));
    socket.write(req.raw);
  });
}

async function viaFetch(req) {
  try {
    const res = await fetch(`${server.url}${req.path}`, { method: req.method, headers: req.headers, body: req.body, signal: AbortSignal.timeout(opts["answer-ms"]) });
    const headers = Object.fromEntries(res.headers);
    return [{ status: res.status, headers, body: await res.text(), raw: "" }];
  } catch (e) {
    const answers = [];
    answers.error = `fetch failed: ${e.cause?.code ?? e.name ?? e.message}`;
    return answers;
  }
}

/** HTTP/1.1 answers from a byte stream: status, headers, and the body by Content-Length or chunks. */
function parseAnswers(buf) {
  const out = [];
  let at = 0;
  while (at < buf.length) {
    const headEnd = buf.indexOf("\r\n\r\n", at);
    if (headEnd === -1) {
      out.push({ raw: buf.subarray(at).toString("latin1"), body: "", headers: {} });
      break;
    }
    const lines = buf.subarray(at, headEnd).toString("latin1").split("\r\n");
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
    const headers = {};
    for (const l of lines.slice(1)) headers[l.slice(0, l.indexOf(":")).trim().toLowerCase()] = l.slice(l.indexOf(":") + 1).trim();
    let bodyStart = headEnd + 4;
    let body;
    let complete = true;
    if (!status) {
      out.push({ raw: buf.subarray(at).toString("latin1"), body: "", headers });
      break;
    }
    if (status[1] === "100" || status[1] === "204" || status[1] === "304") body = Buffer.alloc(0);
    else if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
      const parts = [];
      complete = false;
      for (;;) {
        const lineEnd = buf.indexOf("\r\n", bodyStart);
        if (lineEnd === -1) break;
        const size = parseInt(buf.subarray(bodyStart, lineEnd).toString("latin1"), 16);
        bodyStart = lineEnd + 2;
        if (!size) {
          bodyStart += 2;
          complete = bodyStart <= buf.length;
          break;
        }
        parts.push(buf.subarray(bodyStart, bodyStart + size));
        bodyStart += size + 2;
      }
      body = Buffer.concat(parts);
    } else if (headers["content-length"] !== undefined) {
      body = buf.subarray(bodyStart, bodyStart + Number(headers["content-length"]));
      complete = body.length === Number(headers["content-length"]);
      bodyStart += body.length;
    } else {
      // Delimited by the close: complete only once the server has closed.
      body = buf.subarray(bodyStart);
      bodyStart = buf.length;
      complete = false;
    }
    out.push({ status: Number(status[1]), headers, body: body.toString("utf8"), raw: "", complete });
    at = bodyStart;
  }
  return out;
}

// --- generating ------------------------------------------------------------------------------

function generate(r) {
  const kind = r.pick(["api", "api", "api", "api", "api", "query", "query", "headers", "body", "body", "body", "nesting", "size", "encoding", "malformed", "malformed", "pipelined", "fetch", "mcp", "mcp", "mcp", "mcpBatch", "console", "console", "consoleForm"]);
  return GENERATORS[kind](r);
}

/** Common to every answer: under 500, no stack trace or module path in it. */
function sound(a) {
  if (a.status === undefined) return `unparseable answer: ${JSON.stringify(a.raw.slice(0, 200))}`;
  if (a.status >= 500) return `${a.status}: ${a.body.slice(0, 300)}`;
  if (/\bat .+\.(js|ts|mjs|cjs):\d+/.test(a.body) || /node_modules/.test(a.body)) return `internals in the body: ${a.body.slice(0, 300)}`;
  return undefined;
}

/** /mcp: JSON (JSON-RPC answers, or the API's envelope before MCP: 401, 400, 413, 429), 202 for notifications alone; no internal error anywhere. */
function judgeMcp(answers) {
  for (const a of answers) {
    const bad = sound(a);
    if (bad) return bad;
    if (a.status === 202 && !a.body) continue;
    let body;
    try {
      body = JSON.parse(a.body);
    } catch {
      return `${a.status} /mcp body is not JSON: ${a.body.slice(0, 200)}`;
    }
    if (a.status >= 400 && body?.error && typeof body.error.code === "string" && typeof body.error.message === "string") continue; // the API's envelope
    for (const m of Array.isArray(body) ? body : [body]) {
      if (m?.error?.code === -32603) return `JSON-RPC internal error: ${JSON.stringify(m).slice(0, 300)}`;
      if (m?.result?.structuredContent?.error?.code === "INTERNAL_ERROR") return `tool INTERNAL_ERROR: ${JSON.stringify(m).slice(0, 300)}`;
    }
  }
  return undefined;
}

/** Console pages: HTML (or a redirect); its panel's JSON: the envelope for errors. */
function judgeConsole(answers, req) {
  for (const a of answers) {
    const bad = sound(a);
    if (bad) return bad;
    if ((a.status >= 300 && a.status < 400) || req.method === "HEAD") continue;
    const type = a.headers["content-type"] ?? "";
    if (/^application\/json\b/i.test(type)) {
      if (a.status >= 400 && !/^\{"error":\{"code":"[A-Z_]+","message":"[^"]/.test(a.body)) return `${a.status} without the envelope: ${a.body.slice(0, 200)}`;
    } else if (!/^text\/(html|css|javascript)\b/i.test(type) && a.status !== 413 && a.status !== 404) return `${a.status} console answer of type ${type}: ${a.body.slice(0, 200)}`;
  }
  return undefined;
}

const MCP_TOOLS = [
  "memories_add", "memories_search", "memories_list", "memories_get", "memories_update", "memories_delete", "entities_create", "entities_list",
  "relations_create", "graph_neighbors", "graph_path", "graph_export", "create_entities", "create_relations", "add_observations",
  "delete_entities", "delete_observations", "delete_relations", "read_graph", "search_nodes", "open_nodes", "no_such_tool",
];

function mcpArgs(r) {
  const entity = () => ({ name: field(r, `E ${r.int(40)}`), entityType: field(r, r.pick(["person", "company", "thing"])), observations: field(r, [`obs ${r.int(9)}`]) });
  return pickFields(
    r,
    {
      id: id(r, r.pick(["mem", "ent", "rel"])),
      content: field(r, `note ${r.int(100)}`),
      query: field(r, r.pick(["tea", "who is E 1?"])),
      userId: field(r, "alice"),
      limit: field(r, r.pick([1, 5, 100])),
      entities: field(r, Array.from({ length: r.int(4) }, entity)),
      relations: field(r, [{ from: `E ${r.int(40)}`, to: `E ${r.int(40)}`, relationType: field(r, "knows") }]),
      observations: field(r, [{ entityName: `E ${r.int(40)}`, contents: field(r, ["more"]) }]),
      names: field(r, [`E ${r.int(40)}`]),
      entityNames: field(r, [`E ${r.int(40)}`]),
      name: field(r, `N ${r.int(100)}`),
      type: field(r, r.pick(["PERSON", "KNOWS", "x"])),
      sourceId: field(r, r.pick(ids.ent)),
      targetId: field(r, r.pick(ids.ent)),
    },
    [],
  );
}

function mcpMessage(r, n) {
  const method = r.pick(["tools/call", "tools/call", "tools/call", "tools/call", "tools/list", "initialize", "ping", "notifications/initialized", "resources/list", "nope", 42]);
  const msg = { jsonrpc: r.chance(0.95) ? "2.0" : r.pick(["1.0", 2]), method };
  if (!String(method).startsWith("notifications/")) msg.id = r.chance(0.9) ? n : r.pick([`s${n}`, null, {}]);
  if (method === "tools/call") msg.params = { name: r.chance(0.95) ? r.pick(MCP_TOOLS) : VALUES(r), ...(r.chance(0.9) ? { arguments: r.chance(0.9) ? mcpArgs(r) : VALUES(r) } : {}) };
  if (method === "initialize") msg.params = { protocolVersion: r.pick(["2025-06-18", "2025-03-26", "1999-01-01"]), capabilities: {}, clientInfo: { name: "fuzz", version: "1" } };
  return msg;
}

function mcpRequest(r, kind, body) {
  const headers = { Host: "127.0.0.1", Authorization: `Bearer ${r.pick(KEYS())}`, ...MCP_HEADERS };
  if (r.chance(0.05)) delete headers.Accept;
  if (r.chance(0.03)) headers["Content-Type"] = "text/plain";
  return toRaw({ kind, method: "POST", path: "/mcp", headers, body, judge: judgeMcp });
}

const CONSOLE_PAGES = () => ["/console/", "/console/memories", "/console/graph", "/console/usage", "/console/keys", `/console/memories/${r0(ids.mem)}`, `/console/graph/entities/${r0(ids.ent)}`, `/console/api/entities/${r0(ids.ent)}`, "/console/keys/key_x/revoke", "/console/nowhere", "/console/signin?token=x", "/console/signed-out"];
const r0 = (list) => list[list.length - 1];
const SITES = ["same-origin", "same-origin", "none", "same-site", "cross-site", undefined];

const KEYS = () => [store.accounts.main.key, store.accounts.main.key, store.accounts.other.key, store.accounts.tight.key, store.accounts.gone.key];
const ROUTES = [
  ["POST", "/v1/memories", "memory"],
  ["POST", "/v1/memories/search", "search"],
  ["GET", "/v1/memories"],
  ["GET", "/v1/memories/:mem"],
  ["PATCH", "/v1/memories/:mem", "memoryPatch"],
  ["DELETE", "/v1/memories/:mem"],
  ["POST", "/v1/entities", "entity"],
  ["GET", "/v1/entities"],
  ["GET", "/v1/entities/:ent"],
  ["PATCH", "/v1/entities/:ent", "entityPatch"],
  ["DELETE", "/v1/entities/:ent"],
  ["GET", "/v1/entities/:ent/memories"],
  ["POST", "/v1/relations", "relation"],
  ["GET", "/v1/relations"],
  ["GET", "/v1/relations/:rel"],
  ["DELETE", "/v1/relations/:rel"],
  ["GET", "/v1/openapi.json"],
  // The URL hook (http/hooks.ts): an agent's event, with a userId in the query.
  ["POST", "/hooks/claude-code?userId=alice", "hookEvent"],
  ["POST", "/hooks/:hookAgent", "hookEvent"],
];

const STRINGS = [
  "alice",
  "",
  "   ",
  "x".repeat(300),
  "😀🎉 emoji",
  "\u202eRTL override",
  "zero\u200bwidth",
  "' OR 1=1 --",
  "u' OR accountId != 'x",
  "`accountId` = 'acct_default'",
  "%00",
  "\u0000nul",
  "line\nbreak",
  "\\",
  "mem_00000000000000000000000000",
  "../../etc/passwd",
  "<script>alert(1)</script>",
  "a,b,c",
  "ÅÄÖ çà",
  "null",
];
const VALUES = (r) => r.pick([r.pick(STRINGS), r.int(1e9) - 5e8, 1.5, -1, 0, 1e308, true, false, null, [], {}, [r.pick(STRINGS)], { a: r.pick(STRINGS) }, "y".repeat(r.pick([10_001, 70_000]))]);
const field = (r, good) => (r.chance(0.7) ? good : VALUES(r));

function id(r, kind) {
  return r.chance(0.8) ? r.pick(ids[kind]) : r.pick([`${kind}_${"Z".repeat(24)}`, r.pick(STRINGS), "search", "%2e%2e%2f", "%ff", "a".repeat(5000), "__proto__"]);
}

const BODIES = {
  memory: (r) => pickFields(r, { content: field(r, `note ${r.int(1000)} about ${r.pick(["tea", "Berlin", "the project"])}`), userId: field(r, r.pick(["alice", "bob"])), agentId: field(r, "agent"), tags: field(r, ["t", r.pick(["a", "b"])]), metadata: field(r, { n: r.int(10) }), entityIds: field(r, [r.pick(ids.ent)]), project: field(r, r.pick(["shop", "my-app.2", ".hidden", "a/b", "../x"])) }, ["content", "userId"]),
  search: (r) => pickFields(r, { query: field(r, r.pick(["tea", "what does alice drink?", "Berlin"])), userId: field(r, "alice"), tags: field(r, ["t"]), limit: field(r, r.pick([1, 10, 100, 500])), threshold: field(r, r.pick([0, 0.3, 0.5, 1])), mode: field(r, r.pick(["hybrid", "semantic", "keyword", "other"])), asOf: field(r, r.pick(["2026-03-01", "2026-12-07T10:00Z", "2026-02-30", "2026-12-07 10:00", "2026-12-07T24:00Z", "2026-12-07T10:00+25:00"])), project: field(r, r.pick(["shop", "../x"])), projectOnly: field(r, r.pick([true, false, "true"])) }, ["query"]),
  hookEvent: (r) =>
    pickFields(r, {
      session_id: field(r, `s${r.int(20)}`),
      transcript_path: field(r, "/tmp/t.jsonl"),
      cwd: field(r, r.pick([process.cwd(), "/", "/nonexistent", "relative/dir", tmpdir()])),
      hook_event_name: field(r, r.pick(["SessionStart", "UserPromptSubmit", "Stop", "BeforeAgent"])),
      source: field(r, r.pick(["startup", "resume", "clear"])),
      prompt: field(r, r.pick(["how do we deploy?", "remember that the build uses node 22", "#remember tea", "note: x", "\u0000binary", "x".repeat(10_001)])),
    }, ["hook_event_name", "cwd"]),
  memoryPatch: (r) => pickFields(r, { content: field(r, "patched"), tags: field(r, null), metadata: field(r, { p: 1 }), agentId: field(r, null) }, []),
  entity: (r) => pickFields(r, { name: field(r, `Name ${r.int(300)}`), type: field(r, r.pick(["PERSON", "ORGANIZATION", "person", "ALIEN"])), description: field(r, "d"), metadata: field(r, { k: "v" }) }, ["name", "type"]),
  entityPatch: (r) => pickFields(r, { name: field(r, `Renamed ${r.int(300)}`), type: field(r, "PLACE"), description: field(r, null) }, []),
  relation: (r) => pickFields(r, { sourceId: field(r, r.pick(ids.ent)), targetId: field(r, r.pick(ids.ent)), type: field(r, r.pick(["KNOWS", "works_for", "RELATED_TO", "X".repeat(70), "9BAD"])), metadata: field(r, {}) }, ["sourceId", "targetId", "type"]),
};

function pickFields(r, all, required) {
  const out = {};
  for (const [k, v] of Object.entries(all)) if (required.includes(k) ? r.chance(0.92) : r.chance(0.5)) out[k] = v;
  if (r.chance(0.05)) out[r.pick(["unknown", "user_id", "__proto__", "constructor", "id"])] = r.pick(STRINGS);
  return out;
}

function nested(depth, r) {
  const open = r.chance(0.5) ? '{"a":' : "[";
  const close = open === "[" ? "]" : "}";
  return open.repeat(depth) + "1" + close.repeat(depth);
}

function apiRequest(r, overrides = {}) {
  const [method, template, body] = r.pick(ROUTES);
  const path = template.replace(/:(mem|ent|rel)/, (_, k) => id(r, k)).replace(":hookAgent", () => r.pick(["claude-code", "gemini-cli", "cursor", "%2e%2e", "claude-code?userId=", "claude-code?budget=0", "claude-code?userId=a&budget=99"]));
  const headers = { Host: "127.0.0.1", Authorization: `Bearer ${r.pick(KEYS())}` };
  let payload;
  if (body) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(BODIES[body](r));
  }
  return { kind: "api", method, path, headers, body: payload, ...overrides };
}

/** A request as bytes; `Connection: close` unless told otherwise, Content-Length unless chunked. */
function toRaw(req, { close = true, version = "HTTP/1.1" } = {}) {
  const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body);
  const headers = { ...req.headers };
  if (body && !Object.keys(headers).some((h) => /^transfer-encoding$/i.test(h)) && !Object.keys(headers).some((h) => /^content-length$/i.test(h))) headers["Content-Length"] = String(body.length);
  if (close) headers.Connection = "close";
  const head = `${req.method} ${req.path} ${version}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join("\r\n")}\r\n\r\n`;
  return { ...req, raw: Buffer.concat([Buffer.from(head, "latin1"), body ?? Buffer.alloc(0)]) };
}

const GENERATORS = {
  api: (r) => toRaw({ ...apiRequest(r), method: r.chance(0.9) ? apiRequest(r).method : r.pick(["PUT", "HEAD", "OPTIONS", "TRACE", "FOO", "PATCH"]) }),
  query: (r) => {
    const path = r.pick(["/v1/memories", "/v1/entities", "/v1/relations", `/v1/entities/${r.pick(ids.ent)}/memories`]);
    const params = [];
    for (let i = r.int(5); i >= 0; i--) {
      const name = r.pick(["page", "limit", "userId", "agentId", "tags", "type", "search", "sourceId", "__proto__", "constructor", "x", "limit"]);
      const value = r.pick(["0", "-1", "1", "2", "100", "500", "abc", "1.5", "1e2", "", "%zz", "%", "a%2Cb", "PERSON", "KNOWS", encodeURIComponent(r.pick(STRINGS)), "x".repeat(r.pick([10, 3000]))]);
      params.push(`${name}=${value}`);
    }
    return toRaw({ kind: "query", method: "GET", path: `${path}?${params.join("&")}`, headers: { Host: "localhost", Authorization: `Bearer ${r.pick(KEYS())}` } });
  },
  headers: (r) => {
    const req = apiRequest(r, { kind: "headers" });
    const variant = r.int(10);
    if (variant === 0) delete req.headers.Authorization;
    if (variant === 1) req.headers.Authorization = r.pick(["Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer mm_short", `Bearer ${"mm_" + "a".repeat(5000)}`, "bearer  mm_x y", `Bearer ${store.accounts.main.key}x`]);
    if (variant === 2) req.headers["X-Big"] = "b".repeat(r.pick([4_000, 20_000]));
    if (variant === 3) for (let i = 0; i < 120; i++) req.headers[`X-H${i}`] = String(i);
    if (variant === 4) req.headers.Expect = "100-continue";
    if (variant === 5) req.headers.Host = r.pick(["", "a b", "[::1", "example.com:99999", "x".repeat(300)]);
    if (variant === 6) delete req.headers.Host;
    if (variant === 7) req.headers["Content-Type"] = r.pick(["text/plain", "application/json; charset=utf-16", "application/vnd.api+json", "application/json, text/html", "", "application/x-www-form-urlencoded"]);
    if (variant === 8) req.headers["Accept-Encoding"] = "gzip, br";
    // Read-your-writes tokens (docs/scale-out.md): malformed ones are 400, versions the store has are met at once.
    if (variant === 9) req.headers["X-MM-Consistency"] = r.pick(["", ",", "memories", "memories:", "memories:-1", "memories:1e3", "MEMORIES:1", "__proto__:1", "constructor:0", "memories:1,,graph:1", "memories:99999999999999999999", "ledger:1", `memories:1,${"graph:1,".repeat(600)}`, "a".repeat(5000), "memories:0", "memories:1,graph:0", " memories:1 , graph:1 "]);
    return toRaw(req);
  },
  body: (r) => {
    const req = apiRequest(r, { kind: "body" });
    req.method = r.pick(["POST", "PATCH"]);
    req.path = r.pick(["/v1/memories", "/v1/memories/search", "/v1/entities", "/v1/relations", `/v1/memories/${r.pick(ids.mem)}`, `/v1/entities/${r.pick(ids.ent)}`]);
    if (req.method === "PATCH" && !/\/(mem|ent)_/.test(req.path)) req.path += `/${r.pick(ids.mem)}`;
    req.headers["Content-Type"] = "application/json";
    const good = JSON.stringify(BODIES.memory(r));
    req.body = r.pick([
      "",
      " ",
      "{",
      `${good}garbage`,
      good.slice(0, r.int(good.length)),
      `\ufeff${good}`,
      '{"content":"x","userId":"u","content":"dup"}',
      '{"content":"\\ud800","userId":"\\udfff"}',
      '{"content":1e999,"userId":"u"}',
      "[]",
      "null",
      '"string"',
      "123",
      Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
      Buffer.from('{"content":"nul\u0000byte","userId":"u"}'),
      '{"__proto__":{"polluted":true},"content":"x","userId":"u"}',
      '{"constructor":{"prototype":{"x":1}},"content":"x","userId":"u"}',
    ]);
    return toRaw(req);
  },
  nesting: (r) => {
    const req = apiRequest(r, { kind: "nesting" });
    const depth = r.pick([10, 31, 32, 33, 100, 4_400, 50_000, 200_000]);
    const [method, path, fields] = r.pick([
      ["POST", "/v1/memories", '"content":"deep","userId":"u",'],
      ["PATCH", `/v1/memories/${r.pick(ids.mem)}`, ""],
      ["POST", "/v1/entities", '"name":"Deep","type":"OTHER",'],
      ["PATCH", `/v1/entities/${r.pick(ids.ent)}`, ""],
      ["POST", "/v1/relations", `"sourceId":"${r.pick(ids.ent)}","targetId":"${r.pick(ids.ent)}","type":"KNOWS",`],
      ["POST", "/v1/memories/search", '"query":"deep",'],
    ]);
    const where = r.pick(["metadata", "tags", "content", "unknown"]);
    Object.assign(req, { method, path, body: `{${fields}"${where}":${nested(depth, r)}}` });
    req.headers["Content-Type"] = "application/json";
    return toRaw(req);
  },
  size: (r) => {
    const req = apiRequest(r, { kind: "size" });
    req.method = "POST";
    req.path = r.pick(["/v1/memories", "/v1/entities", "/v1/memories/search", "/v1/nowhere"]);
    req.headers["Content-Type"] = "application/json";
    const n = r.pick([1_000_000, 1_048_500, 1_048_577, 1_300_000, 1_300_000, 3_000_000]);
    req.body = `{"content":"${"z".repeat(n)}","userId":"u"}`;
    if (r.chance(0.3)) req.headers["Transfer-Encoding"] = "chunked";
    const raw = toRaw(req);
    if (req.headers["Transfer-Encoding"]) raw.raw = Buffer.concat([raw.raw.subarray(0, raw.raw.indexOf("\r\n\r\n") + 4), chunk(Buffer.from(req.body), r)]);
    return raw;
  },
  encoding: (r) => {
    const req = apiRequest(r, { kind: "encoding" });
    req.method = "POST";
    req.path = r.pick(["/v1/memories", "/v1/entities"]);
    req.headers["Content-Type"] = r.pick(["application/json", "application/json; charset=utf-8", "application/json; charset=latin1"]);
    const body = Buffer.from(JSON.stringify(BODIES[req.path.endsWith("memories") ? "memory" : "entity"](r)));
    const variant = r.int(4);
    if (variant === 0) {
      req.headers["Content-Encoding"] = r.pick(["gzip", "br", "deflate"]);
      req.body = gzipSync(body);
    } else if (variant === 1) {
      req.body = Buffer.from(body.toString("utf8"), "utf16le");
    } else if (variant === 2) {
      req.headers["Transfer-Encoding"] = "chunked";
      const raw = toRaw({ ...req, body: undefined });
      raw.raw = Buffer.concat([raw.raw, chunk(body, r)]);
      return raw;
    } else {
      req.body = Buffer.from(body.toString("latin1"), "latin1");
    }
    return toRaw(req);
  },
  malformed: (r) => {
    const key = store.accounts.main.key;
    const raw = r.pick([
      "GARBAGE\r\n\r\n",
      "GET /v1/memories HTTP/9.9\r\nHost: x\r\n\r\n",
      "GET /v1/memories\r\n\r\n",
      "get /v1/memories HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /v1/memories HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
      "GET /v1/memories HTTP/1.1\r\nHost: x\r\nX: a\u0000b\r\n\r\n",
      "GET /v1/memories HTTP/1.1\r\n\r\n",
      `GET /v1/memories HTTP/1.1\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      "OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      "CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n",
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
      `GET http://evil.example/v1/memories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`,
      "GET /v1/mem\\ories HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      `GET /v1/memories HTTP/1.0\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      "POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
      "POST /v1/memories HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n",
      "POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
      `GET /v1/memories?userId=${"u".repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      "GET /v1/memories HTTP/1.1\nHost: x\nConnection: close\n\n",
      "GET /%ff%fe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      "GET //v1//memories HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      "DELETE /v1/memories HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      `GET /v1/memories HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nAuthorization: Bearer ${key}\r\n\r\n`,
    ]);
    return { kind: "malformed", method: raw.split(" ")[0], raw: Buffer.from(raw, "latin1") };
  },
  pipelined: (r) => {
    const a = toRaw(apiRequest(r), { close: false });
    const b = toRaw(apiRequest(r), { close: true });
    // After a malformed request (a space, a control or non-ASCII byte, or a backslash in its
    // target) the server answers 400 and closes: the request behind it gets no answer.
    const wellFormed = !/[\s\x00-\x1f\x7f-\uffff\\]/.test(a.path);
    return { kind: "pipelined", method: a.method === "HEAD" || b.method === "HEAD" ? "HEAD" : "GET", raw: Buffer.concat([a.raw, b.raw]), expectAnswers: wellFormed ? 2 : 1 };
  },
  fetch: (r) => {
    const req = apiRequest(r, { kind: "fetch", fetch: true });
    delete req.headers.Host;
    if (r.chance(0.2)) req.body = `{"name":"${"n".repeat(1_300_000)}","type":"PERSON"}`;
    if (req.body === undefined && req.method !== "GET" && req.method !== "DELETE") req.body = "{}";
    if (req.body !== undefined && (req.method === "GET" || req.method === "HEAD")) req.body = undefined;
    return req;
  },
};

Object.assign(GENERATORS, {
  mcp: (r) => mcpRequest(r, "mcp", r.chance(0.95) ? JSON.stringify(mcpMessage(r, r.int(1e6))) : r.pick(["", "{", "[]", "null", '{"jsonrpc":"2.0"}', "[1,2]"])),
  mcpBatch: (r) => {
    const n = r.pick([0, 1, 2, 5, 16, 17, 40, 100]);
    // A byte-order mark in front: the batch cap and the rate count must read it as the handler does.
    const bom = r.chance(0.1) ? "\uFEFF" : "";
    const req = mcpRequest(r, "mcpBatch", bom + JSON.stringify(Array.from({ length: n }, (_, i) => (r.chance(0.8) ? { jsonrpc: "2.0", id: i, method: "tools/list" } : mcpMessage(r, i)))));
    return bom ? { ...req, judge: (answers) => judgeMcp(answers) ?? (answers.some((a) => a.status === 200) ? `a batch behind a byte-order mark ran: ${answers[0].body.slice(0, 200)}` : undefined) } : req;
  },
  console: (r) => {
    const query = r.chance(0.5) ? `?${["q", "mode", "threshold", "limit", "page", "tags", "userId", "entityType", "type"].filter(() => r.chance(0.3)).map((k) => `${k}=${encodeURIComponent(String(r.chance(0.7) ? r.pick(["tea", "semantic", "0.3", "5", "2", "a,b", "alice", "PERSON", "KNOWS"]) : r.pick(STRINGS)))}`).join("&")}` : "";
    const headers = { Host: "127.0.0.1" };
    if (r.chance(0.85)) headers.Cookie = r.chance(0.9) ? session.cookie : `mm_console=${r.pick(STRINGS)}`;
    const site = r.pick(SITES);
    if (site) headers["Sec-Fetch-Site"] = site;
    if (r.chance(0.1)) headers.Origin = r.pick(["http://127.0.0.1:1", "null", `http://127.0.0.1:${port}`]);
    return toRaw({ kind: "console", method: r.chance(0.95) ? "GET" : r.pick(["PUT", "DELETE", "HEAD"]), path: `${r.pick(CONSOLE_PAGES())}${query}`, headers, judge: judgeConsole });
  },
  consoleForm: (r) => {
    const path = r.pick(["/console/keys", "/console/keys", "/console/keys/key_x/revoke", "/console/signout", "/console/signin"]);
    // The real token only where it changes nothing for later requests (never on signout).
    const csrf = path !== "/console/signout" && r.chance(0.5) ? session.csrf : r.pick(STRINGS);
    const form = new URLSearchParams({ csrf, ...(r.chance(0.8) ? { name: r.chance(0.7) ? `fuzz ${r.int(100)}` : r.pick(STRINGS) } : {}), ...(r.chance(0.2) ? { token: r.pick(STRINGS) } : {}) });
    const headers = { Host: "127.0.0.1", Cookie: session.cookie, "Content-Type": r.chance(0.9) ? "application/x-www-form-urlencoded" : r.pick(["multipart/form-data", "application/json", "text/plain"]) };
    const site = r.pick(SITES);
    if (site) headers["Sec-Fetch-Site"] = site;
    if (r.chance(0.5)) headers.Origin = r.chance(0.7) ? `http://127.0.0.1:${port}` : "http://127.0.0.1:1";
    const body = r.chance(0.05) ? "x".repeat(20_000) : form.toString();
    return toRaw({ kind: "consoleForm", method: "POST", path, headers, body, judge: judgeConsole });
  },
});

// --- import lines ------------------------------------------------------------------------------

const T = "2026-01-01T00:00:00.000Z";
const DATES = [T, T, T, "2026-13-45T99:99:99.999Z", "9999-12-31T23:59:59.999Z", "2026-02-30T00:00:00.000Z", "yesterday", 1e20, -1, null];
const VECTORS = (r) => r.pick([undefined, undefined, Array(512).fill(1e39), Array(512).fill(1e-50), Array(512).fill(0), Array(512).fill(5), Array(3).fill(0.1), ["a"], "vec"]);

/** One fuzzed line of `format`. */
function importLine(r, format, n) {
  if (r.chance(0.05)) return r.pick(["{", "", "null", "[]", "\u0000", '"x"', "{}"]);
  const date = () => (r.chance(0.8) ? T : r.pick(DATES));
  if (format === "mcp-memory") {
    return JSON.stringify(
      r.chance(0.7)
        ? pickFields(r, { type: field(r, "entity"), name: field(r, `E ${r.int(30)}`), entityType: field(r, "person"), observations: field(r, [`fact ${n}`, field(r, "more")]) }, ["type", "name", "entityType"])
        : pickFields(r, { type: field(r, "relation"), from: field(r, `E ${r.int(30)}`), to: field(r, `E ${r.int(30)}`), relationType: field(r, "knows") }, ["type", "from", "to", "relationType"]),
    );
  }
  if (format === "mem0") {
    return JSON.stringify(pickFields(r, { id: field(r, `m${n}`), memory: field(r, `mem0 note ${n}`), user_id: field(r, "alice"), agent_id: field(r, "bot"), created_at: r.chance(0.7) ? r.pick(["2026-01-01T10:00:00", "2026-01-01T10:00:00+02:00", 1767261600]) : r.pick(DATES), updated_at: r.pick(DATES), categories: field(r, ["a", "b"]), metadata: field(r, { k: 1 }) }, ["id", "memory"]));
  }
  const kind = r.pick(["memory", "memory", "memory", "entity", "relation", "account", "spaceship"]);
  const idOf = (p) => (r.chance(0.9) ? `${p}_${String(n).padStart(24, "0")}` : r.pick(STRINGS));
  const common = { kind, ...(r.chance(0.3) ? { accountId: r.pick(["acct_fuzz_a", "acct_fuzz_b", "acct_default", r.pick(STRINGS)]) } : {}) };
  if (kind === "account") return JSON.stringify({ ...common, id: r.pick(["acct_fuzz_a", "acct_fuzz_b", r.pick(STRINGS)]), name: field(r, `fuzz ${r.int(3)}`), plan: field(r, r.pick(["free", "hobby", "enterprise"])), createdAt: date() });
  if (kind === "entity") return JSON.stringify(pickFields(r, { ...common, id: idOf("ent"), name: field(r, `E ${n}`), type: field(r, "PERSON"), createdAt: date(), updatedAt: date() }, ["kind", "id", "name", "type", "createdAt", "updatedAt"]));
  if (kind === "relation") return JSON.stringify(pickFields(r, { ...common, id: idOf("rel"), sourceId: field(r, `ent_${String(r.int(n + 1)).padStart(24, "0")}`), targetId: field(r, `ent_${String(r.int(n + 1)).padStart(24, "0")}`), type: field(r, "KNOWS"), createdAt: date() }, ["kind", "id", "sourceId", "targetId", "type", "createdAt"]));
  const vector = VECTORS(r);
  return JSON.stringify(pickFields(r, { ...common, id: idOf("mem"), content: field(r, `imported note ${n}`), userId: field(r, "u"), entityIds: field(r, [`ent_${String(r.int(n + 1)).padStart(24, "0")}`]), createdAt: date(), updatedAt: date(), ...(vector !== undefined ? { vector } : {}) }, ["kind", "id", "content", "userId", "createdAt", "updatedAt"]));
}

/** `mm import` of one fuzzed file per format, into a store of its own: no internal error, no stack, one result per line. */
async function fuzzImports(seed) {
  const failures = [];
  const runs = [];
  const dir = join(store.dir, "imports");
  for (const [i, format] of ["mm", "mcp-memory", "mem0"].entries()) {
    const r = rng(seed * 7919 + i);
    const lines = Array.from({ length: opts["import-lines"] }, (_, n) => importLine(r, format, n + 1));
    if (format === "mm") lines.unshift(JSON.stringify({ format: "mm-export", version: 1, exportedAt: T, embedder: null, scope: { allAccounts: true }, vectors: true }));
    const file = join(store.dir, `fuzz.${format}.jsonl`);
    writeFileSync(file, format === "mem0" && r.chance(0.5) ? JSON.stringify({ results: lines.map((l) => { try { return JSON.parse(l); } catch { return l; } }) }) : lines.join("\n") + "\n");
    const args = ["import", "--from", format, file, "--json", ...(format === "mm" ? ["--all-accounts"] : [])];
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...store.env, MM_STORE: dir }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const code = await new Promise((resolve) => child.on("close", (c, signal) => resolve(signal ?? c)));
    const results = out.trim() ? out.trim().split("\n").map((l) => { try { return JSON.parse(l); } catch { return { unparsed: l }; } }) : [];
    const statuses = {};
    for (const x of results) statuses[x.status ?? "other"] = (statuses[x.status ?? "other"] ?? 0) + 1;
    runs.push({ format, lines: lines.length, exit: code, statuses });
    const problem =
      code === 1 || typeof code === "string" ? `exit ${code}` : /\n\s+at |RangeError|INTERNAL_ERROR/.test(err + out) ? "an internal error or a stack trace" : results.some((x) => x.unparsed) ? "output that isn't JSON" : undefined;
    if (problem) failures.push({ kind: `import ${format}`, problem, request: JSON.stringify((err || out).slice(0, 400)) });
  }
  return { runs, failures };
}

/** A body in chunks of random sizes, sometimes with chunk extensions. */
function chunk(body, r) {
  const parts = [];
  for (let at = 0; at < body.length; ) {
    const n = Math.min(body.length - at, 1 + r.int(body.length > 10_000 ? 200_000 : 64));
    parts.push(Buffer.from(`${n.toString(16)}${r.chance(0.1) ? ";ext=1" : ""}\r\n`), body.subarray(at, at + n), Buffer.from("\r\n"));
    at += n;
  }
  parts.push(Buffer.from("0\r\n\r\n"));
  return Buffer.concat(parts);
}

async function main() {
  store = await newStore({ main: "enterprise", other: "hobby", tight: "free", gone: "enterprise" });
  await store.revoke(store.accounts.gone.keyId);
  const log = [];
  server = await startMmServe(BIN, store.env, { rateLimit: 1_000_000, onLog: (e) => e.level === "error" && log.push(e) });
  port = Number(new URL(server.url).port);
  server.child.once("exit", () => (serverExited = true));
  session = await consoleSession(store.store, server.url, "main");

  const stats = { sent: 0, byKind: {}, ms: {}, byStatus: {}, failures: [], rssStart: rssMb(server.pid), rssPeak: 0 };
  const started = performance.now();

  let next = 0;
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      while (next < opts.requests && !serverExited && stats.failures.length < 50) {
        const index = next++;
        const r = rng(opts.seed * 1_000_003 + index);
        const req = generate(r);
        const t = performance.now();
        const answers = req.fetch ? await viaFetch(req) : await viaSocket(req);
        stats.ms[req.kind] = (stats.ms[req.kind] ?? 0) + performance.now() - t;
        stats.sent++;
        stats.byKind[req.kind] = (stats.byKind[req.kind] ?? 0) + 1;
        const problem = judge(req, answers);
        for (const a of answers) stats.byStatus[a.status ?? "none"] = (stats.byStatus[a.status ?? "none"] ?? 0) + 1;
        if (problem) stats.failures.push({ index, kind: req.kind, problem, request: preview(req) });
        else learnIds(answers);
        if (index % 500 === 0) stats.rssPeak = Math.max(stats.rssPeak, rssMb(server.pid));
      }
    }),
  );

  const seconds = (performance.now() - started) / 1000;
  const alive = !serverExited && (await fetch(`${server.url}/v1/openapi.json`).then((r) => r.status === 200, () => false));
  if (!alive) stats.failures.push({ problem: serverExited ? "the server died" : "the server stopped answering" });
  const rssEnd = rssMb(server.pid);
  await server.stop();
  const imports = opts["import-lines"] > 0 ? await fuzzImports(opts.seed) : { runs: [], failures: [] };
  stats.failures.push(...imports.failures);
  store.cleanup();

  const result = {
    machine: machine(),
    seed: opts.seed,
    requests: stats.sent,
    seconds: Math.round(seconds * 10) / 10,
    perSecond: Math.round(stats.sent / seconds),
    statuses: stats.byStatus,
    kinds: stats.byKind,
    msByKind: Object.fromEntries(Object.entries(stats.ms).map(([k, ms]) => [k, Math.round(ms / stats.byKind[k])])),
    serverRssMb: { start: stats.rssStart, peak: Math.max(stats.rssPeak, rssEnd), end: rssEnd },
    imports: imports.runs,
    serverErrorsLogged: log.length,
    serverErrors: log.slice(0, 20),
    failures: stats.failures,
  };
  printTable(
    `mm fuzz · seed ${opts.seed} · ${result.requests} requests in ${result.seconds} s (${result.perSecond}/s) · ${machine().cpus} cores`,
    ["figure", "value"],
    [
      ["requests", result.requests],
      ...Object.entries(result.kinds).sort().map(([k, n]) => [`  ${k}`, n]),
      ["answers by status", Object.entries(result.statuses).map(([s, n]) => `${s}:${n}`).join(" ")],
      ["server RSS start / peak / end (MB)", `${result.serverRssMb.start} / ${result.serverRssMb.peak} / ${result.serverRssMb.end}`],
      ...imports.runs.map((run) => [`import --from ${run.format} (${run.lines} lines)`, `exit ${run.exit}; ${Object.entries(run.statuses).map(([k, n]) => `${k}:${n}`).join(" ")}`]),
      ["errors in the server log", result.serverErrorsLogged],
      ["failures", result.failures.length],
    ],
  );
  for (const f of result.failures.slice(0, 10)) console.log(`FAIL #${f.index} ${f.kind}: ${f.problem}\n  ${f.request}`);
  writeJson(opts.out, result);
  process.exit(result.failures.length ? 1 : 0);
}

await main();
