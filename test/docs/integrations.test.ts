import { execFile } from "node:child_process";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { codeBlocks, ROOT, showsOutput } from "../helpers/doc-examples.js";
import { startTestServer, type TestAccount, type TestServer } from "../helpers/http-server.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { call, httpClient } from "../helpers/mcp-client.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * The JavaScript examples of docs/client.md and docs/integrations.md run as printed, as files of an
 * app that installed mm-semantic-memory beside `ai` and `@langchain/core`, against a real server
 * with the real model and a real key; no language model is called. The MCP client configurations
 * are read from the page and used to connect.
 */
const tempDir = useTempDirs();
const FILES = ["docs/client.md", "docs/integrations.md"];
const examples = (await Promise.all(FILES.map((f) => codeBlocks(f, "js")))).flat();

let server: TestServer;
let account: TestAccount;
let accounts = 0;
beforeAll(async () => {
  server = await startTestServer({ realModel: true });
  account = await server.account("acme", "hobby");
}, 60_000);
afterAll(() => server.close());

/** A directory that resolves `mm-semantic-memory` to this checkout and the frameworks to its node_modules. */
async function app(): Promise<string> {
  const dir = await tempDir();
  await mkdir(join(dir, "node_modules", "@langchain"), { recursive: true });
  await symlink(ROOT, join(dir, "node_modules", "mm-semantic-memory"));
  for (const pkg of ["ai", "zod", "@langchain/core"]) await symlink(join(ROOT, "node_modules", pkg), join(dir, "node_modules", pkg));
  return dir;
}

function runNode(file: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [file], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("JavaScript examples", () => {
  it("exist: the client, the AI SDK tools and LangChain.js", () => {
    expect(examples.map((b) => b.file)).toEqual(["docs/client.md", "docs/integrations.md", "docs/integrations.md"]);
    for (const b of examples) expect(b.output, `${b.file}:${b.line} shows its output`).toBeDefined();
  });

  it.each(examples.map((b) => [`${b.file}:${b.line} (${b.heading})`, b] as const))("%s", async (_name, block) => {
    const dir = await app();
    await writeFile(join(dir, "example.mjs"), block.code);
    // An account of its own, so that one example's memories can't answer another's searches.
    const own = await server.account(`app${++accounts}`, "hobby");
    const r = await runNode(join(dir, "example.mjs"), { MM_URL: server.url, MM_API_KEY: own.key });
    expect(r.code, `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`).toBe(0);
    const shown = showsOutput(r.stdout, block.output!);
    expect(shown.ok, `missing line: ${shown.missing}\n--- stdout\n${r.stdout}`).toBe(true);
  });
});

describe("MCP client configurations", () => {
  const configs = async () => {
    const blocks = await codeBlocks("docs/integrations.md", "json");
    const at = (heading: string) => {
      const b = blocks.find((x) => x.heading === heading);
      expect(b, heading).toBeDefined();
      // The page's server and placeholder key, made this test's.
      return JSON.parse(b!.code.replaceAll("http://127.0.0.1:8080", server.url).replaceAll("mm_…", account.key));
    };
    return { cursor: at("Cursor"), vscode: at("VS Code"), claude: at("Claude Desktop") };
  };

  it("Cursor's and VS Code's connect to /mcp with their headers, list the tools and call one", async () => {
    const { cursor, vscode } = await configs();
    const vsServer = vscode.servers.memory;
    expect(vsServer.type).toBe("http");
    expect(vscode.inputs.map((i: { id: string; password: boolean }) => [i.id, i.password])).toEqual([["mm-key", true]]);
    // What VS Code does with ${input:mm-key}: asks once, then substitutes the answer.
    const vsHeaders = JSON.parse(JSON.stringify(vsServer.headers).replaceAll("${input:mm-key}", account.key));
    for (const { url, headers } of [cursor.mcpServers.memory, { url: vsServer.url, headers: vsHeaders }]) {
      expect(new URL(url).pathname).toBe("/mcp");
      const client = await httpClient(url, undefined, headers);
      try {
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["memories_add", "memories_search", "search_nodes"]));
        const listed = await call(client, "memories_list", { userId: "nobody" });
        expect(listed.isError).toBeFalsy();
      } finally {
        await client.close();
      }
    }
    // And without the key, the same URL is refused.
    await expect(httpClient(cursor.mcpServers.memory.url)).rejects.toThrow();
  });

  it("Claude Desktop's starts mcp-remote, which bridges stdio to /mcp with the key's header", async () => {
    const { claude } = await configs();
    const memory = claude.mcpServers.memory;
    expect(memory.args.slice(0, 3)).toEqual(["-y", "mcp-remote", `${server.url}/mcp`]);
    // As Claude Desktop runs it; npx finds mcp-remote among this checkout's dev dependencies, offline.
    const transport = new StdioClientTransport({
      command: memory.command,
      args: memory.args,
      env: { ...(process.env as Record<string, string>), ...memory.env, MCP_REMOTE_CONFIG_DIR: await tempDir() },
      cwd: ROOT,
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    const client = new Client({ name: "claude-desktop-config", version: "1.0.0" });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name), stderr).toEqual(expect.arrayContaining(["memories_add", "memories_search", "search_nodes"]));
      expect((await call(client, "memories_list", { userId: "nobody" })).isError).toBeFalsy();
    } finally {
      await client.close();
    }
  }, 60_000);

});
