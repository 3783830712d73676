import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { afterEach, describe, expect, it } from "vitest";
import { createMcpServer } from "../../src/mcp/server.js";
import { startTestServer, type TestServer } from "../helpers/http-server.js";

/**
 * What /mcp costs per request. It builds an MCP server and a transport for every POST (stateless
 * Streamable HTTP), so whatever a server makes for itself is made again per request, and whatever
 * one leaves behind piles up (docs/safety.md, "Memory under load").
 */

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe("/mcp memory per request", () => {
  it("gives every MCP server the same JSON Schema validator, not an Ajv instance of its own", () => {
    const context = async () => {
      throw new Error("no tool is called here");
    };
    const [a, b] = [createMcpServer({ context }), createMcpServer({ context, remote: true })];
    // The SDK's Server keeps it in a private field; left to itself it makes a new Ajv (with its
    // meta-schemas and formats) for each server: about 90 KB of garbage per /mcp request.
    const validator = (s: object) => Reflect.get(s, "_jsonSchemaValidator");
    expect(validator(a)).toBeInstanceOf(AjvJsonSchemaValidator);
    expect(validator(b)).toBe(validator(a));
  });

  it("leaves no timer, socket or handle behind after 60 requests: each request's server and transport are closed", async () => {
    const server = await startTestServer();
    servers.push(server);
    const { key } = await server.account("acme");
    const post = async (body: unknown) => {
      // Connection: close, so the client's own keep-alive sockets don't count as the server's.
      const res = await fetch(`${server.url}/mcp`, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", Authorization: `Bearer ${key}`, Connection: "close" }, body: JSON.stringify(body) });
      return { status: res.status, body: await res.json() };
    };
    const call = (id: number, name: string, args: object) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
    const added = await post(call(1, "memories_add", { content: "the first request warms the SDK up", userId: "u1" }));
    expect(added.status).toBe(200);
    const id = added.body.result.structuredContent.id;
    await new Promise((done) => setTimeout(done, 200));
    const before = resources();
    for (let i = 0; i < 20; i++) {
      const answers = [
        await post([1, 2].map((n) => ({ jsonrpc: "2.0", id: n, method: "tools/list" }))),
        await post(call(3, "memories_get", { id })),
        await post(call(4, "memories_get", { id: "mem_00000000000000000000000000" })),
      ];
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
      expect(answers[1].body.result.structuredContent.id).toBe(id);
      expect(answers[2].body.result.isError).toBe(true);
    }
    await new Promise((done) => setTimeout(done, 200));
    expect(resources()).toEqual(before);
  });
});

/** The process's active resources by kind (timers, sockets, file handles…), as counts. */
function resources(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) out[kind] = (out[kind] ?? 0) + 1;
  return out;
}
