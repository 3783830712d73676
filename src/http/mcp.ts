import type { Context as HonoContext, Hono, MiddlewareHandler } from "hono";
import type { Principal } from "../core/accounts.js";
import { MmError } from "../errors.js";
import type { AppDeps } from "./app.js";

/**
 * `/mcp`: the MCP tools (src/mcp/tools.ts) over Streamable HTTP, stateless (one JSON answer per
 * POST, no session), behind the same Bearer keys as /v1. Each tool call, not each HTTP request,
 * takes the rate bucket of the REST endpoint it mirrors and counts one operation against the
 * account's quota; `initialize` and `tools/list` count nothing. The SDK loads on the first request.
 */
export function mountMcp(app: Hono<{ Variables: { principal?: Principal; body?: string } }>, deps: AppDeps, limitBody: MiddlewareHandler): void {
  app.post("/mcp", limitBody, async (c: HonoContext<{ Variables: { principal?: Principal; body?: string } }>) => {
    const principal = await deps.accounts.authenticate(c.req.header("Authorization"));
    c.set("principal", principal);
    const [{ createMcpServer }, { WebStandardStreamableHTTPServerTransport }] = await Promise.all([
      import("../mcp/server.js"),
      import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
    ]);
    const ctx = { ...deps.ctx, accountId: principal.account.id };
    const server = createMcpServer({
      context: async () => ctx,
      remote: true,
      meter: async (tool) => {
        const rate = deps.limiter.take(principal.keyId, tool.bucket);
        if (!rate.allowed) {
          throw new MmError("RATE_LIMIT_EXCEEDED", `Too many ${tool.bucket} requests; retry in ${rate.retryAfter} s.`, { retryAfter: rate.retryAfter });
        }
        return deps.ledger.meter(principal.account.id, principal.account.quota, tool.bucket);
      },
      log: (entry) => deps.log?.({ time: new Date().toISOString(), path: "/mcp", account: principal.account.id, ...entry }),
    });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      // The body was read (and size-checked) by the app's body reader: hand the SDK a copy of it.
      const raw = c.req.raw;
      return await transport.handleRequest(new Request(raw.url, { method: raw.method, headers: raw.headers, body: c.get("body") ?? "" }));
    } finally {
      await server.close();
    }
  });
  app.all("/mcp", (c) => {
    c.header("Allow", "POST");
    throw new MmError("METHOD_NOT_ALLOWED", `${c.req.method} is not allowed on /mcp: this server is stateless; POST each JSON-RPC message.`, { allowed: ["POST"] });
  });
}
