import type { Command } from "commander";
import type { GraphEdge, NeighborsResult, PathResult } from "../../core/graph.js";
import { entityRef, withContext } from "../context.js";
import { defined } from "../flags.js";
import type { CliApp } from "../main.js";
import type { TableKit } from "../output.js";
import { service } from "../remote.js";

const core = service("graph", () => import("../../core/graph.js"));
const formats = () => import("../../core/graph-format.js");

interface WalkFlags {
  type?: string;
  direction?: string;
}

export function registerGraph(program: Command, app: CliApp): void {
  const graph = program.command("graph").description("walk the knowledge graph: neighbours, shortest paths, export");

  graph
    .command("neighbors")
    .alias("neighbours")
    .description("entities within N hops of an entity, with the relations crossed")
    .argument("<id>", "entity id (ent_…) or name")
    .option("-d, --depth <n>", "hops to walk, 1 to 10 (default 1)")
    .option("-t, --type <TYPE>", "follow only relations of this type, e.g. WORKS_FOR")
    .option("--direction <dir>", "out (source→target), in, or both (default both)")
    .addHelpText(
      "after",
      "\nExamples:\n  mm graph neighbors ent_…\n  mm graph neighbors ent_… --depth 2 --direction out\n  mm graph neighbors ent_… --type WORKS_FOR --json",
    )
    .action((id: string, opts: WalkFlags & { depth?: string }, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).neighbors(ctx, (await entityRef(ctx, id))!, defined({ depth: opts.depth, type: opts.type, direction: opts.direction }));
        await app.output.result(body, (t) => renderNeighbors(t, body));
      }),
    );

  graph
    .command("path")
    .description("the shortest chain of relations between two entities")
    .argument("<from>", "start entity id (ent_…) or name")
    .argument("<to>", "end entity id (ent_…) or name")
    .option("-t, --type <TYPE>", "follow only relations of this type")
    .option("--direction <dir>", "out (follow arrows), in (against them), or both (default both)")
    .option("--max-depth <n>", "longest path searched, 1 to 10 hops (default 6)")
    .addHelpText(
      "after",
      "\nExamples:\n  mm graph path ent_alice… ent_acme…\n  mm graph path ent_… ent_… --direction out --max-depth 3\n  mm graph path ent_… ent_… --type KNOWS --json",
    )
    .action((from: string, to: string, opts: WalkFlags & { maxDepth?: string }, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const api = await core();
        const body = await api.shortestPath(ctx, (await entityRef(ctx, from))!, (await entityRef(ctx, to))!, defined({ type: opts.type, direction: opts.direction, maxDepth: opts.maxDepth }));
        await app.output.result(body, () => renderPath(body, `within ${Number(opts.maxDepth ?? api.DEFAULT_PATH_MAX_DEPTH)} hops, direction ${opts.direction ?? "both"}`));
      }),
    );

  graph
    .command("export")
    .description("the whole graph, or the part around --root, as Mermaid, DOT or JSON (choose with --format)")
    .option("-r, --root <entity>", "export only what is within --depth hops of this entity (id or name; included)")
    .option("-d, --depth <n>", "hops from --root, 1 to 10 (default 1)")
    .option("-t, --type <TYPE>", "only relations of this type")
    .option("--direction <dir>", "with --root: out, in or both (default both)")
    .addHelpText(
      "after",
      "\nOutput: --format mermaid | dot | json. On a terminal the default is Mermaid; piped, JSON.\n" +
        "\nExamples:\n  mm graph export --format mermaid > graph.mmd\n  mm graph export --format dot | dot -Tsvg > graph.svg\n  mm graph export --root ent_… --depth 2 --type KNOWS --format json",
    )
    .action((opts: WalkFlags & { root?: string; depth?: string }, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).exportGraph(ctx, defined({ root: await entityRef(ctx, opts.root), depth: opts.depth, type: opts.type, direction: opts.direction }));
        const format = app.output.format;
        if (format === "json" || format === "ndjson") return app.output.json(body);
        const { toDot, toMermaid } = await formats();
        app.output.out(format === "dot" ? toDot(body) : toMermaid(body));
      }),
    );
}

function renderNeighbors(t: TableKit, r: NeighborsResult): string {
  const footer = t.dim(
    `${r.nodes.length} entit${r.nodes.length === 1 ? "y" : "ies"}, ${r.edges.length} relation${r.edges.length === 1 ? "" : "s"} within ${r.depth} hop${r.depth === 1 ? "" : "s"} (${r.direction}) of ${r.root.name} (${r.root.type})`,
  );
  if (!r.nodes.length) return `No neighbours.\n${footer}`;
  const names = new Map([[r.root.id, r.root.name], ...r.nodes.map((n) => [n.id, n.name] as const)]);
  const nodes = t.table(
    ["depth", "name", "type", "id"],
    r.nodes.map((n) => [n.depth, n.name, n.type, n.id]),
    { flex: 1, ids: [3] },
  );
  const edges = t.table(
    ["source", "type", "target", "id"],
    r.edges.map((e) => [names.get(e.sourceId) ?? e.sourceId, e.type, names.get(e.targetId) ?? e.targetId, e.id]),
    { flex: 0, ids: [3] },
  );
  return `${nodes}\n${edges}\n${footer}`;
}

/** `Alice (PERSON) -[KNOWS]-> Bob (PERSON) <-[WORKS_FOR]- Acme (ORGANIZATION)`: arrows keep each relation's true direction. */
function renderPath(r: PathResult, searched: string): string {
  if (!r.found) return `No path from ${r.from.name} (${r.from.id}) to ${r.to.name} (${r.to.id}) ${searched}.`;
  const label = (i: number) => `${r.nodes[i].name} (${r.nodes[i].type})`;
  let line = label(0);
  r.edges.forEach((e: GraphEdge, i) => {
    line += e.sourceId === r.nodes[i].id ? ` -[${e.type}]-> ` : ` <-[${e.type}]- `;
    line += label(i + 1);
  });
  return `${line}\n${r.length} hop${r.length === 1 ? "" : "s"}`;
}
