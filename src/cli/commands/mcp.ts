import type { Command } from "commander";
import type { CliApp } from "../main.js";
import { openCommandContext, type CommandContext } from "../context.js";
import { startUpkeep } from "../../core/upkeep.js";
import { projectFromArg } from "../../core/project.js";

/**
 * `mm mcp`: the MCP server over stdio. The SDK and the tool table load only here; the store opens
 * on the first tool call and the model on the first call that embeds, so `initialize` and
 * `tools/list` answer without either. Each call counts against the account's quota like the
 * command it mirrors. stdout carries the protocol alone; everything else goes to stderr.
 */
export function registerMcp(program: Command, app: CliApp): void {
  program
    .command("mcp")
    .description("serve mm's tools to an MCP client (Claude Desktop, Cursor, VS Code…) over stdio")
    .option("-u, --user <userId>", "the user this server acts for: fills and fences userId (default: $MM_USER)")
    .option("-a, --agent <agentId>", "the agent this server acts for: fills and fences agentId (default: $MM_AGENT)")
    .option("--project <name|path>", "the project this server works in ('.' for the folder it starts in): adds go to it, searches and lists see it and the global memories, unless a call names a project")
    .addHelpText(
      "after",
      '\nAn MCP client config:\n  {"mcpServers": {"memory": {"command": "npx", "args": ["-y", "mm-semantic-memory", "mcp", "--user", "me"]}}}\n\nSee docs/agents.md for the tools.',
    )
    .action(async (opts: { user?: string; agent?: string; project?: string }, cmd: Command) => {
      const { io } = app;
      const project = opts.project === undefined ? undefined : projectFromArg(opts.project, process.cwd());
      const [{ createMcpServer }, { StdioServerTransport }, { BATCH_REFUSAL, refuseBatches }] = await Promise.all([
        import("../../mcp/server.js"),
        import("@modelcontextprotocol/sdk/server/stdio.js"),
        import("../../mcp/stdio-batches.js"),
      ]);
      let opened: Promise<CommandContext> | undefined;
      let upkeep: ReturnType<typeof startUpkeep> | undefined;
      const context = () => {
        // An agent's memory starts empty: the first call creates the store if there is none.
        opened ??= openCommandContext(app, cmd, { create: true }).then((ctx) => {
          upkeep = startUpkeep(ctx, { ownWritesOnly: true, onError: (err) => io.stderr.write(`mm mcp: store upkeep failed (nothing is lost): ${err instanceof Error ? err.message : String(err)}\n`) });
          return ctx;
        });
        opened.catch(() => (opened = undefined)); // a store that failed to open is tried again on the next call
        return opened;
      };
      const userId = opts.user ?? (io.env.MM_USER || undefined);
      const agentId = opts.agent ?? (io.env.MM_AGENT || undefined);
      // Calls still running when stdin ends get to answer before the store closes.
      const inFlight = new Set<Promise<unknown>>();
      const server = createMcpServer({
        context,
        scope: { userId, agentId, project },
        meter: async (tool, ctx) => (ctx as CommandContext).meterFor(tool.bucket),
        track: (call) => {
          inFlight.add(call);
          void call.finally(() => inFlight.delete(call));
        },
        log: (entry) => io.stderr.write(`mm mcp: ${JSON.stringify(entry)}\n`),
      });
      const transport = new StdioServerTransport(refuseBatches(io.stdin, () => io.stdout.write(`${JSON.stringify(BATCH_REFUSAL)}\n`)), io.stdout);
      await server.connect(transport);
      io.stderr.write(`mm mcp: ready on stdio${userId ? ` for user ${userId}` : ""}${agentId ? `, agent ${agentId}` : ""}${project ? `, project ${project}` : ""}\n`);
      await new Promise<void>((resolve) => {
        io.stdin.once("end", resolve);
        io.stdin.once("close", resolve);
        transport.onclose = resolve;
      });
      await new Promise((r) => setTimeout(r, 0));
      await Promise.allSettled([...inFlight]);
      await server.close();
      const ctx = await opened?.catch(() => undefined);
      await upkeep?.stop();
      await ctx?.close();
    });
}
