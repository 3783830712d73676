import { Option, type Command } from "commander";
import type { Entity, EntityListItem } from "../../core/entities.js";
import type { MemoryListItem, Page } from "../../core/memories.js";
import { ENTITY_TYPES } from "../../schemas/enums.js";
import { confirmedDelete, entityRef, withContext } from "../context.js";
import { defined, jsonFlag } from "../flags.js";
import type { CliApp } from "../main.js";
import { pageLine, when, type TableKit } from "../output.js";
import { canPrompt, promptSelect } from "../prompt.js";
import { service } from "../remote.js";

const core = service("entities", () => import("../../core/entities.js"));
const graph = service("graph", () => import("../../core/graph.js"));

export function registerEntities(program: Command, app: CliApp): void {
  const entities = program.command("entities").aliases(["entity", "ent"]).description("people, organizations, places… in the knowledge graph");

  entities
    .command("create")
    .description("create an entity (an existing one with the same name and type is returned instead)")
    .argument("<name>", "entity name")
    .option("--type <type>", `one of ${ENTITY_TYPES.join(", ")}`)
    .option("-d, --description <text>", "description")
    .option("-m, --metadata <json>", "metadata, a JSON object")
    .addHelpText("after", '\nExample:\n  mm entities create "Ada Lovelace" --type PERSON --description "mathematician"')
    .action(async (name: string, opts: { type?: string; description?: string; metadata?: string }, cmd: Command) => {
      let type = opts.type;
      if (type === undefined && canPrompt(app.io)) {
        type = await promptSelect(app.io, "Entity type", ENTITY_TYPES.map((t) => ({ value: t, name: t })));
      }
      const raw = defined({ name, type, description: opts.description, metadata: jsonFlag("metadata", opts.metadata) });
      await withContext(
        app,
        cmd,
        async (ctx) => {
          const { entity, created } = await (await core()).createEntity(ctx, raw);
          if (!created) app.output.warn(`${entity.type} "${entity.name}" already exists (${entity.id}); returned it unchanged.`);
          await app.output.result(entity, (t) => renderEntity(t, entity));
        },
        { create: true },
      );
    });

  entities
    .command("list")
    .description("list entities, newest first; --search matches names ignoring case and accents, best matches first")
    .option("--type <type>", "only this entity type")
    .option("-s, --search <text>", "name contains this")
    .option("-p, --page <n>", "page number (default 1)")
    .option("-l, --limit <n>", "page size (default 20, at most 100)")
    .action((opts: { type?: string; search?: string; page?: string; limit?: string }, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).listEntities(ctx, defined({ type: opts.type, search: opts.search, page: opts.page, limit: opts.limit }));
        await app.output.result(body, (t) => renderList(t, body));
      }),
    );

  entities
    .command("get")
    .description("show one entity with its metadata")
    .argument("<id>", "entity id (ent_…) or name")
    .action((id: string, _opts: unknown, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).getEntity(ctx, (await entityRef(ctx, id))!);
        await app.output.result(body, (t) => renderEntity(t, body));
      }),
    );

  entities
    .command("update")
    .description("change an entity's name, type, description or metadata")
    .argument("<id>", "entity id (ent_…) or name")
    .option("--name <name>", "new name")
    .option("--type <type>", "new type")
    .option("-d, --description <text>", "new description")
    .addOption(new Option("--clear-description", "remove the description").conflicts("description"))
    .option("-m, --metadata <json>", "replace the metadata with this JSON object")
    .addOption(new Option("--clear-metadata", "remove the metadata").conflicts("metadata"))
    .action(
      (
        id: string,
        opts: { name?: string; type?: string; description?: string; clearDescription?: boolean; metadata?: string; clearMetadata?: boolean },
        cmd: Command,
      ) =>
        withContext(app, cmd, async (ctx) => {
          const patch = defined({
            name: opts.name,
            type: opts.type,
            description: opts.clearDescription ? null : opts.description,
            metadata: opts.clearMetadata ? null : jsonFlag("metadata", opts.metadata),
          });
          const body = await (await core()).updateEntity(ctx, (await entityRef(ctx, id))!, patch);
          await app.output.result(body, (t) => renderEntity(t, body));
        }),
    );

  entities
    .command("delete")
    .alias("rm")
    .description("delete an entity and every relation that starts or ends at it")
    .argument("<id>", "entity id (ent_…) or name")
    .option("-y, --yes", "don't ask for confirmation (required without a terminal, e.g. in scripts)")
    .action((ref: string, opts: { yes?: boolean }, cmd: Command) =>
      confirmedDelete(
        app,
        cmd,
        opts.yes,
        async (ctx) => {
          const id = (await entityRef(ctx, ref))!;
          const [entity, around] = await Promise.all([(await core()).getEntity(ctx, id), (await graph()).neighbors(ctx, id, {})]);
          const n = around.edges.length;
          return `${entity.type} "${entity.name}" (${id})${n ? ` and the ${n} relation${n === 1 ? "" : "s"} that start or end at it` : ""}`;
        },
        async (ctx) => (await core()).deleteEntity(ctx, (await entityRef(ctx, ref))!),
        (body) => `Deleted ${body.id} and ${body.deletedRelations} relation${body.deletedRelations === 1 ? "" : "s"}`,
      ),
    );

  entities
    .command("merge")
    .description("merge OTHER into KEEP: its relations and memory links move to KEEP, its name becomes an alias, then it is deleted")
    .argument("<keep>", "the entity kept: id (ent_…) or name")
    .argument("<other>", "the entity merged in and deleted: id (ent_…) or name")
    .action((keep: string, other: string, _opts: unknown, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).mergeEntities(ctx, (await entityRef(ctx, keep))!, { other: (await entityRef(ctx, other))! });
        await app.output.result(
          body,
          () =>
            `Merged ${body.merged.id} ("${body.merged.name}") into ${body.entity.id} ("${body.entity.name}"): ${body.movedRelations} relation${body.movedRelations === 1 ? "" : "s"} moved` +
            `${body.droppedRelations ? `, ${body.droppedRelations} it already had dropped` : ""}, ${body.movedLinks} memory link${body.movedLinks === 1 ? "" : "s"} moved.`,
        );
      }),
    );

  entities
    .command("memories")
    .description("list the memories linked to an entity (see memories add --entity / --extract)")
    .argument("<id>", "entity id (ent_…) or name")
    .option("-p, --page <n>", "page number (default 1)")
    .option("-l, --limit <n>", "page size (default 20, at most 100)")
    .action((id: string, opts: { page?: string; limit?: string }, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const body = await (await core()).listEntityMemories(ctx, (await entityRef(ctx, id))!, defined({ page: opts.page, limit: opts.limit }));
        await app.output.result(body, (t) => renderMemories(t, body));
      }),
    );
}

function renderEntity(t: TableKit, e: Entity): string {
  return t.record([
    ["id", e.id],
    ["name", e.name],
    ["type", e.type],
    ["description", e.description],
    ["metadata", e.metadata],
    ["createdAt", e.createdAt],
    ["updatedAt", e.updatedAt],
  ]);
}

function renderList(t: TableKit, page: Page<EntityListItem>): string {
  const line = pageLine(t, page.pagination, "entity", "entities", !page.items.length);
  if (!page.items.length) return line;
  return `${t.table(
    ["id", "name", "type", "description", "created"],
    page.items.map((e) => [e.id, e.name, e.type, e.description ?? "", when(e.createdAt)]),
    { flex: 3, ids: [0], drop: [4] },
  )}\n${line}`;
}

function renderMemories(t: TableKit, page: Page<MemoryListItem>): string {
  if (!page.items.length && page.pagination.total === 0) return "No memories are linked to this entity.";
  const line = pageLine(t, page.pagination, "memory", "memories", !page.items.length);
  if (!page.items.length) return line;
  return `${t.table(["id", "content", "user", "created"], page.items.map((m) => [m.id, m.content, m.userId, when(m.createdAt)]), { flex: 1, ids: [0] })}\n${line}`;
}
