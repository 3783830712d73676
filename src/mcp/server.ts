import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { VERSION } from "../cli/version.js";
import type { Context } from "../core/context.js";
import { errorDetail, forClient, MmError, toMmError, validationError } from "../errors.js";
import { isQuotaExceeded, type OperationMeter } from "../limits/ledger.js";
import { renderResult } from "./render.js";
import { TOOLS, type McpTool, type ToolScope } from "./tools.js";

export interface McpServerOptions {
  /** The context calls run in. Asked for on the first tool call, so `tools/list` opens no store and loads no model. */
  context(): Promise<Context>;
  scope?: ToolScope;
  /**
   * Admits a call (rate limits; throws RATE_LIMIT_EXCEEDED to refuse it) and gives the meter that
   * bills it as the REST endpoint it mirrors is billed: refused early when the quota is spent,
   * charged by its commits, else once it has answered (limits/ledger.ts).
   */
  meter?(tool: McpTool, ctx: Context): Promise<OperationMeter>;
  /** Told of a call that `meter` admitted but that was then refused for quota (it lost the race for the last units). */
  refund?(tool: McpTool): void | Promise<void>;
  /** Told of every call as it starts, so a closing server can let running calls answer first. */
  track?(call: Promise<unknown>): void;
  /**
   * A remote client (/mcp) sees what a /v1 client sees: operator-only errors (the embedding
   * service's, the store's) answer generically, their details go only to `log`.
   */
  remote?: boolean;
  /** Where unexpected errors are reported (never stdout: on stdio that is the protocol's). */
  log?(entry: Record<string, unknown>): void;
}

const INSTRUCTIONS =
  "mm is a long-term memory. Save facts worth remembering with memories_add (or the reference " +
  "memory server's create_entities / add_observations), and look them up by meaning with " +
  "memories_search (or search_nodes) before answering. Entities and relations form a knowledge graph.";

/**
 * The JSON Schema validator every server of the process shares. Left to itself, the SDK gives each
 * `Server` its own Ajv instance, with its meta-schemas and formats added: about 70 KB of garbage a
 * server, and /mcp builds a server per request (a fifth of what an MCP request allocated, which
 * lifted the heap's peaks under MCP traffic, docs/safety.md). The validator only checks the answers
 * to elicitation requests, which mm never sends, so nothing is ever compiled into the shared one.
 */
const VALIDATOR = new AjvJsonSchemaValidator();

/**
 * An MCP server over the tool table (tools.ts). It uses the SDK's low-level `Server`, not
 * `McpServer`: McpServer validates arguments itself and answers a bad one with a bare message,
 * while here every call goes to the core service raw, which answers with the API's own error
 * codes (INVALID_USER_ID, CONTENT_TOO_LONG, …), exactly as over REST and the CLI.
 *
 * Results carry the REST body as `structuredContent` and a short rendering as text. Errors are
 * tool errors (`isError`) with the API's envelope as `structuredContent`; tools therefore declare
 * no `outputSchema`, which a client would hold the error envelope to.
 */
export function createMcpServer(options: McpServerOptions): Server {
  const server = new Server({ name: "mm", title: "mm semantic memory", version: VERSION }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator: VALIDATOR });
  const byName = new Map(TOOLS.map((t) => [t.name, t]));
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.map(({ name, title, description, inputSchema, annotations }) => ({ name, title, description, inputSchema: inputSchema as never, annotations })),
  }));
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    const call = callTool(request.params.name, request.params.arguments);
    options.track?.(call);
    return call;
  });
  // The SDK checks `arguments` against its own schema before any handler runs, and answers a
  // non-object with a JSON-RPC error holding a zod dump. Such a value is moved aside on its way in
  // (see connect below), so the call is answered as a tool error like any other bad argument.
  const connect = server.connect.bind(server);
  server.connect = async (transport) => {
    await connect(transport);
    const receive = transport.onmessage;
    transport.onmessage = (message, extra) => receive?.(setAsideBadArguments(message), extra);
  };
  const callTool = async (name: string, args: Record<string, unknown> | undefined): Promise<CallToolResult> => {
    const tool = byName.get(name);
    try {
      if (args && BAD_PARAMS in args) {
        const { field, value } = args[BAD_PARAMS] as { field: string; value: unknown };
        const got = value === undefined ? "nothing" : value === null ? "null" : Array.isArray(value) ? "a list" : `a ${typeof value}`;
        throw validationError(field, field === "name" ? `must be a tool's name (tools/list names them), got ${got}` : `must be an object of the tool's arguments (tools/list gives each tool's inputSchema), got ${got}`);
      }
      if (!tool) throw new MmError("NOT_FOUND", `Unknown tool ${name}; tools/list names them.`);
      const ctx = await options.context();
      const meter = await options.meter?.(tool, ctx);
      const run = () => tool.run(meter ? { ...ctx, meter } : ctx, args ?? {}, options.scope ?? {});
      const body = meter
        ? await meter.run(run).catch(async (err) => {
            if (isQuotaExceeded(err)) await options.refund?.(tool);
            throw err;
          })
        : await run();
      return { content: [{ type: "text", text: renderResult(body) }], structuredContent: body as Record<string, unknown> };
    } catch (err) {
      const mm = toMmError(err);
      const answer = options.remote ? forClient(mm) : mm;
      if (mm.code === "INTERNAL_ERROR" || answer !== mm) options.log?.({ level: "error", tool: name, code: mm.code, error: errorDetail(err) });
      return { isError: true, content: [{ type: "text", text: `${answer.code}: ${answer.message}` }], structuredContent: answer.toBody() };
    }
  };
  return server;
}

/** Where a tools/call's `name` that isn't text, or `arguments` that isn't an object, travels past the SDK's schema check. */
const BAD_PARAMS = "\u0000mm:bad-params";

function setAsideBadArguments(message: JSONRPCMessage): JSONRPCMessage {
  const m = message as { method?: unknown; params?: unknown };
  if (m.method !== "tools/call") return message;
  const params = (m.params && typeof m.params === "object" && !Array.isArray(m.params) ? m.params : {}) as { name?: unknown; arguments?: unknown };
  const args = params.arguments;
  const aside = (field: string, value: unknown) => ({ ...message, params: { ...params, name: typeof params.name === "string" ? params.name : "", arguments: { [BAD_PARAMS]: { field, value } } } }) as JSONRPCMessage;
  if (typeof params.name !== "string") return aside("name", params.name);
  if (args !== undefined && (typeof args !== "object" || args === null || Array.isArray(args))) return aside("arguments", args);
  return params === m.params ? message : ({ ...message, params: { ...params } } as JSONRPCMessage);
}
