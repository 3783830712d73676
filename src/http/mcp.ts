import type { Context as HonoContext, Hono, MiddlewareHandler } from "hono";
import type { Principal } from "../core/accounts.js";
import { MmError, validationError } from "../errors.js";
import type { Limiter } from "../limits/rate-limiter.js";
import type { AppDeps } from "./app.js";

/**
 * Messages one POST may carry. MCP's 2025-06-18 transport dropped JSON-RPC batching; older
 * clients may still batch, so a small batch is answered, each message counted.
 */
export const MAX_BATCH = 16;

/**
 * `/mcp`: the MCP tools (src/mcp/tools.ts) over Streamable HTTP, stateless (one JSON answer per
 * POST, no session), behind the same Bearer keys as /v1. Each message, not each HTTP request,
 * counts against the key's rate limits: a tool call in the bucket of the REST endpoint it mirrors
 * (and against the quota, as that endpoint is billed), any other request (`initialize`,
 * `tools/list`, `ping`) in the read bucket, without quota. A batch counts each of its messages.
 * The SDK loads on the first request.
 */
export function mountMcp(app: Hono<{ Variables: { principal?: Principal; body?: string } }>, deps: AppDeps, limitBody: MiddlewareHandler): void {
  app.post("/mcp", limitBody, async (c: HonoContext<{ Variables: { principal?: Principal; body?: string } }>) => {
    const principal = await deps.accounts.authenticate(c.req.header("Authorization"));
    c.set("principal", principal);
    // Parsed here, once, and handed to the SDK as parsed: if the SDK read the text again its own
    // way (its decoder drops a byte-order mark, JSON.parse doesn't), a body this count saw as
    // nothing could run as a batch of 100.
    const parsed = parseBody(c.get("body"));
    if (!parsed.ok) {
      const why = c.get("body")?.startsWith("\uFEFF") ? " (it starts with a byte-order mark; send it without one)" : "";
      return c.json({ jsonrpc: "2.0", error: { code: -32700, message: `Parse error: the body is not valid JSON${why}.` }, id: null }, 400);
    }
    await takeReads(deps.limiter, principal.keyId, parsed.value);
    const [{ createMcpServer }, { WebStandardStreamableHTTPServerTransport }] = await Promise.all([
      import("../mcp/server.js"),
      import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
    ]);
    const ctx = { ...deps.ctx, accountId: principal.account.id };
    const server = createMcpServer({
      context: async () => ctx,
      remote: true,
      meter: async (tool) => {
        const meter = deps.ledger.meter(principal.account.id, principal.account.quota, tool.bucket);
        // As on /v1: a call refused for quota takes no rate allowance.
        await meter.check(1);
        const rate = await deps.limiter.take(principal.keyId, tool.bucket);
        if (!rate.allowed) throw rateLimited(tool.bucket, rate.retryAfter);
        return meter;
      },
      // One that loses the race for the last units gets its allowance back, as on /v1.
      refund: (tool) => deps.limiter.refund(principal.keyId, tool.bucket),
      log: (entry) => deps.log?.({ time: new Date().toISOString(), path: "/mcp", account: principal.account.id, ...entry }),
    });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      // The body was read (and size-checked) by the app's body reader, and parsed above.
      const raw = c.req.raw;
      return await transport.handleRequest(new Request(raw.url, { method: raw.method, headers: raw.headers }), { parsedBody: parsed.value });
    } finally {
      await server.close();
    }
  });
  app.all("/mcp", (c) => {
    c.header("Allow", "POST");
    throw new MmError("METHOD_NOT_ALLOWED", `${c.req.method} is not allowed on /mcp: this server is stateless; POST each JSON-RPC message.`, { allowed: ["POST"] });
  });
}

function rateLimited(bucket: string, retryAfter: number): MmError {
  return new MmError("RATE_LIMIT_EXCEEDED", `Too many ${bucket} requests; retry in ${retryAfter} s.`, { retryAfter });
}

/** The body as JSON, read exactly as /v1 reads one: strict JSON.parse, no byte-order mark. */
function parseBody(body: string | undefined): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(body ?? "") };
  } catch {
    return { ok: false };
  }
}

/**
 * Takes one read from the key's rate limit for each request in the body that is not a tool call
 * (those take their own bucket when they run), all or none: a body whose requests don't all fit
 * in the minute's reads is refused whole with 429. A batch over MAX_BATCH messages is refused
 * with 400.
 */
async function takeReads(limiter: Limiter, keyId: string, parsed: unknown): Promise<void> {
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  if (messages.length > MAX_BATCH) {
    throw validationError("body", `a JSON-RPC batch may hold at most ${MAX_BATCH} messages; this one has ${messages.length}. Send them one per request.`);
  }
  const reads = messages.filter((m) => m && typeof m === "object" && typeof m.method === "string" && "id" in m && m.method !== "tools/call").length;
  if (!reads) return;
  const rate = await limiter.take(keyId, "read", reads);
  if (!rate.allowed) throw rateLimited("read", rate.retryAfter);
}
