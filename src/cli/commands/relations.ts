import { Option, type Command } from "commander";
import type { Page } from "../../core/memories.js";
import type { Relation, RelationListItem, RelationWithEnds } from "../../core/relations.js";
import { confirmedDelete, entityRef, withContext } from "../context.js";
import { defined, jsonFlag } from "../flags.js";
import type { CliApp } from "../main.js";
import { pageLine, when, type TableKit } from "../output.js";
import { service } from "../remote.js";

const core = service("relations", () => import("../../core/relations.js"));

export function registerRelations(program: Command, app: CliApp): void {
  const relations = program.command("relations").aliases(["relation", "rel"]).description("typed, directed relations between entities");

  relations
    .command("create")
    .description("relate two existing entities: source -[TYPE]-> target")
    .requiredOption("--source <entity>", "source entity: id (ent_…) or name")
    .requiredOption("--target <entity>", "target entity: id (ent_…) or name")
    .requiredOption("--type <TYPE>", "upper snake case, e.g. WORKS_FOR, KNOWS, LOCATED_IN, PART_OF, CREATED, RELATED_TO")
    .option("-m, --metadata <json>", "metadata, a JSON object")
    .addHelpText("after", "\nExample:\n  mm relations create --source ent_… --target ent_… --type WORKS_FOR --metadata '{\"since\":2021}'")
    .action((opts: { source: string; target: string; type: string; metadata?: string }, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).createRelation(
          ctx,
          defined({ sourceId: await entityRef(ctx, opts.source), targetId: await entityRef(ctx, opts.target), type: opts.type, metadata: jsonFlag("metadata", opts.metadata) }),
        );
        await app.output.result(body, (t) => renderRelation(t, body));
      }),
    );

  relations
    .command("list")
    .description("list relations, newest first, with source and target names")
    .option("--source <entity>", "only relations from this entity (id or name)")
    .option("--target <entity>", "only relations to this entity (id or name)")
    .option("--type <TYPE>", "only this relation type")
    .option("-p, --page <n>", "page number (default 1)")
    .option("-l, --limit <n>", "page size (default 20, at most 100)")
    .action((opts: { source?: string; target?: string; type?: string; page?: string; limit?: string }, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).listRelations(
          ctx,
          defined({ sourceId: await entityRef(ctx, opts.source), targetId: await entityRef(ctx, opts.target), type: opts.type, page: opts.page, limit: opts.limit }),
        );
        await app.output.result(body, (t) => renderList(t, body));
      }),
    );

  relations
    .command("get")
    .description("show one relation with its endpoints and metadata")
    .argument("<id>", "relation id (rel_…)")
    .action((id: string, _opts: unknown, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).getRelation(ctx, id);
        await app.output.result(body, (t) => renderRelation(t, body));
      }),
    );

  relations
    .command("update")
    .description("change a relation's type or metadata (its ends can't change: create a new relation instead)")
    .argument("<id>", "relation id (rel_…)")
    .option("--type <TYPE>", "new type, upper snake case")
    .option("-m, --metadata <json>", "replace the metadata with this JSON object")
    .addOption(new Option("--clear-metadata", "remove the metadata").conflicts("metadata"))
    .addHelpText("after", "\nExample:\n  mm relations update rel_… --type MANAGES --metadata '{\"since\":2024}'")
    .action((id: string, opts: { type?: string; metadata?: string; clearMetadata?: boolean }, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const patch = defined({ type: opts.type, metadata: opts.clearMetadata ? null : jsonFlag("metadata", opts.metadata) });
        const body = await (await core()).updateRelation(ctx, id, patch);
        await app.output.result(body, (t) => renderRelation(t, body));
      }),
    );

  relations
    .command("delete")
    .alias("rm")
    .description("delete a relation permanently")
    .argument("<id>", "relation id (rel_…)")
    .option("-y, --yes", "don't ask for confirmation (required without a terminal, e.g. in scripts)")
    .action((id: string, opts: { yes?: boolean }, cmd: Command) =>
      confirmedDelete(
        app,
        cmd,
        opts.yes,
        async (ctx) => {
          const r = await (await core()).getRelation(ctx, id);
          return `relation ${r.source.name} -[${r.type}]-> ${r.target.name} (${id})`;
        },
        async (ctx) => (await core()).deleteRelation(ctx, id),
        (body) => `Deleted ${body.id}`,
      ),
    );
}

function renderRelation(t: TableKit, r: Relation | RelationWithEnds): string {
  const ends = "source" in r ? r : undefined;
  return t.record([
    ["id", r.id],
    ["source", ends ? `${ends.source.name} (${ends.source.type}, ${r.sourceId})` : r.sourceId],
    ["type", r.type],
    ["target", ends ? `${ends.target.name} (${ends.target.type}, ${r.targetId})` : r.targetId],
    ["metadata", r.metadata],
    ["createdAt", r.createdAt],
  ]);
}

function renderList(t: TableKit, page: Page<RelationListItem>): string {
  const line = pageLine(t, page.pagination, "relation", "relations", !page.items.length);
  if (!page.items.length) return line;
  return `${t.table(
    ["id", "source", "type", "target", "created"],
    page.items.map((r) => [r.id, `${r.source.name} (${r.source.type})`, r.type, `${r.target.name} (${r.target.type})`, when(r.createdAt)]),
    { flex: 1, ids: [0], drop: [4] },
  )}\n${line}`;
}
