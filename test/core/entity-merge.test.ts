import { afterEach, describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { createEntity, getEntity, listEntityMemories, mergeEntities } from "../../src/core/entities.js";
import { createMemory, getMemory } from "../../src/core/memories.js";
import { createRelation, listRelations } from "../../src/core/relations.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const opened: Context[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

async function open(): Promise<Context> {
  const ctx = await openContext({ storeDir: await tempDir(), embedder: createTestEmbedder() });
  opened.push(ctx);
  return ctx;
}

const codeOf = (p: Promise<unknown>) => p.then(() => "resolved", (e: { code?: string }) => e.code);

describe("mm entities merge", () => {
  it("moves relations and memory links to the kept entity, keeps the other's name as an alias, and deletes it", async () => {
    const ctx = await open();
    const keep = (await createEntity(ctx, { name: "Acme Robotics", type: "ORGANIZATION" })).entity;
    const other = (await createEntity(ctx, { name: "ACME Robotix", type: "ORGANIZATION", description: "robot maker", metadata: { ticker: "ACME" } })).entity;
    const ada = (await createEntity(ctx, { name: "Ada", type: "PERSON" })).entity;
    const bob = (await createEntity(ctx, { name: "Bob", type: "PERSON" })).entity;
    await createRelation(ctx, { sourceId: ada.id, targetId: keep.id, type: "WORKS_FOR" });
    const twin = await createRelation(ctx, { sourceId: ada.id, targetId: other.id, type: "WORKS_FOR" }); // the same once merged
    const moved = await createRelation(ctx, { sourceId: bob.id, targetId: other.id, type: "WORKS_FOR" });
    const between = await createRelation(ctx, { sourceId: other.id, targetId: keep.id, type: "PART_OF" });
    const both = await createMemory(ctx, { content: "Ada and Acme", userId: "u", entityIds: [keep.id, other.id] });
    const only = await createMemory(ctx, { content: "Acme Inc hired Bob", userId: "u", entityIds: [other.id, bob.id] });

    const result = await mergeEntities(ctx, keep.id, { other: other.id });
    expect(result).toMatchObject({ merged: { id: other.id, name: "ACME Robotix" }, movedRelations: 2, droppedRelations: 1, movedLinks: 2 });
    expect(result.entity).toMatchObject({ id: keep.id, description: "robot maker", metadata: { ticker: "ACME", aliases: ["ACME Robotix"] } });
    expect(await codeOf(getEntity(ctx, other.id))).toBe("ENTITY_NOT_FOUND");
    const relations = (await listRelations(ctx, { limit: 100 })).items;
    expect(relations.map((r) => r.id).sort()).toEqual(relations.map((r) => r.id).filter((id) => id !== twin.id).sort());
    expect(relations.find((r) => r.id === moved.id)).toMatchObject({ sourceId: bob.id, targetId: keep.id });
    expect(relations.find((r) => r.id === between.id)).toMatchObject({ sourceId: keep.id, targetId: keep.id });
    expect(relations.every((r) => r.sourceId !== other.id && r.targetId !== other.id)).toBe(true);
    expect((await getMemory(ctx, both.id)).entityIds).toEqual([keep.id]);
    expect((await getMemory(ctx, only.id)).entityIds).toEqual([keep.id, bob.id]);
    expect((await listEntityMemories(ctx, keep.id)).pagination.total).toBe(2);
  });

  it("refuses merging an entity into itself, unknown ids and another account's", async () => {
    const ctx = await open();
    const a = (await createEntity(ctx, { name: "A", type: "OTHER" })).entity;
    const b = (await createEntity(ctx, { name: "B", type: "OTHER" })).entity;
    expect(await codeOf(mergeEntities(ctx, a.id, { other: a.id }))).toBe("VALIDATION_ERROR");
    expect(await codeOf(mergeEntities(ctx, a.id, {}))).toBe("VALIDATION_ERROR");
    expect(await codeOf(mergeEntities(ctx, a.id, { other: "ent_000000000000000000000000" }))).toBe("ENTITY_NOT_FOUND");
    const stranger = { ...ctx, accountId: "acct_other" };
    expect(await codeOf(mergeEntities(stranger, a.id, { other: b.id }))).toBe("ENTITY_NOT_FOUND");
    expect((await getEntity(ctx, b.id)).name).toBe("B");
  });
});

describe("entity name variants", () => {
  it("an organisation with or without its legal form is one entity, on create and on extraction", async () => {
    const { createMemoryWithExtraction } = await import("../../src/core/memories.js");
    const ctx = await open();
    const acme = await createEntity(ctx, { name: "Acme Robotics", type: "ORGANIZATION" });
    const again = await createEntity(ctx, { name: "Acme Robotics Inc.", type: "ORGANIZATION" });
    expect(again).toMatchObject({ created: false, entity: { id: acme.entity.id } });
    expect((await createEntity(ctx, { name: "Acme Robotics Inc.", type: "PRODUCT" })).created).toBe(true);
    expect((await createEntity(ctx, { name: "Acme Robot", type: "ORGANIZATION" })).created).toBe(true);

    const marcus = await createEntity(ctx, { name: "Marcus Weber", type: "PERSON" });
    const { extracted } = await createMemoryWithExtraction(ctx, { content: "Marcus said Acme Robotics Ltd is hiring.", userId: "u" });
    const byType = Object.fromEntries(extracted.map((x) => [x.entity.type, x]));
    expect(byType.PERSON).toMatchObject({ created: false, entity: { id: marcus.entity.id } });
    expect(byType.ORGANIZATION).toMatchObject({ created: false, entity: { id: acme.entity.id } });
    // Two people with that first name: no guess.
    await createEntity(ctx, { name: "Marcus Lee", type: "PERSON" });
    const second = await createMemoryWithExtraction(ctx, { content: "Marcus called again today.", userId: "u" });
    const person = second.extracted.find((x) => x.entity.type === "PERSON");
    expect(person?.entity.id === marcus.entity.id).toBe(false);
  });
});
