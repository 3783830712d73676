import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expect } from "vitest";
import { MM_BIN } from "./spawn-mm.js";

/** The parts of a tool result the tests read. */
export interface ToolResult {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent?: any;
}

/**
 * A client of a spawned `mm mcp` (with `nodeArgs` before the script, e.g. an import tracer), or
 * of another `mm` executable (an installed one).
 */
export async function stdioClient(args: string[], env: Record<string, string>, nodeArgs: string[] = [], executable?: string): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: executable ?? process.execPath,
    args: executable ? ["mcp", ...args] : [...nodeArgs, MM_BIN, "mcp", ...args],
    env: { ...(process.env as Record<string, string>), LANCEDB_LOG: "error", ...env },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: "mm-tests", version: "1.0.0" });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

/** A client of `/mcp` on a running server, with a Bearer key (or none), or the headers a client's config gives. */
export async function httpClient(url: string, key?: string, headers?: Record<string, string>): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", url), {
    requestInit: key ? { headers: { Authorization: `Bearer ${key}` } } : headers ? { headers } : {},
  });
  const client = new Client({ name: "mm-tests", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

/** A successful call's JSON body (its structuredContent), after checking its text rendering exists. */
export async function ok(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const r = await call(client, name, args);
  expect(r.isError, `${name}: ${r.content?.[0]?.text}`).toBeFalsy();
  expect(r.content[0].type).toBe("text");
  expect(r.content[0].text.length).toBeGreaterThan(0);
  return r.structuredContent;
}

/** A failed call: a tool error whose text and structuredContent carry the API's code and message. */
export async function fails(client: Client, name: string, args: Record<string, unknown>, code: string): Promise<Record<string, any>> {
  const r = await call(client, name, args);
  expect(r.isError, `${name} ${JSON.stringify(args).slice(0, 200)} should fail with ${code}: ${JSON.stringify(r).slice(0, 300)}`).toBe(true);
  expect(Object.keys(r.structuredContent)).toEqual(["error"]);
  const error = r.structuredContent.error;
  expect(error.code, r.content[0].text).toBe(code);
  expect(r.content[0].text).toBe(`${code}: ${error.message}`);
  expect(error.message).not.toMatch(/\bat .*\.(ts|js):\d+|node_modules/);
  return error;
}
