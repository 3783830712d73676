import { describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { createEntity, deleteEntity, getEntity, listEntities, listEntityMemories, updateEntity } from "../../src/core/entities.js";
import { createMemory, getMemory, updateMemory } from "../../src/core/memories.js";
import { createRelation, getRelation, listRelations } from "../../src/core/relations.js";
import { ENTITY_TYPES } from "../../src/schemas/enums.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { codeOf } from "../helpers/errors.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

async function setup(options: { accountId?: string; storeDir?: string } = {}): Promise<Context & { tick(): void }> {
  let t = Date.parse("2026-01-01T00:00:00.000Z");
  const ctx = await openContext({ storeDir: options.storeDir ?? (await tempDir()), embedder: createTestEmbedder(), clock: () => new Date(t), accountId: options.accountId });
  return Object.assign(ctx, { tick: () => (t += 1000) });
}


async function entityCount(ctx: Context): Promise<number> {
  return (await listEntities(ctx, {})).pagination.total;
}

describe("entities", () => {
  it("creates with the spec's full shape; optional fields only when supplied", async () => {
    const ctx = await setup();
    const { entity, created } = await createEntity(ctx, { name: "Ada Lovelace", type: "PERSON", description: "mathematician", metadata: { born: 1815 } });
    expect(created).toBe(true);
    expect(Object.keys(entity)).toEqual(["id", "name", "type", "description", "metadata", "createdAt", "updatedAt"]);
    expect(entity.id).toMatch(/^ent_[0-9A-Z]{24}$/);
    expect(entity.updatedAt).toBe(entity.createdAt);
    const bare = (await createEntity(ctx, { name: "Lisbon", type: "LOCATION" })).entity;
    expect(Object.keys(bare)).toEqual(["id", "name", "type", "createdAt", "updatedAt"]);
    expect(await getEntity(ctx, entity.id)).toEqual(entity);
  });

  it("accepts every entity type", async () => {
    const ctx = await setup();
    for (const type of ENTITY_TYPES) expect((await createEntity(ctx, { name: `n ${type}`, type })).entity.type).toBe(type);
  });

  it("returns the existing entity instead of creating a twin (case- and accent-insensitive, same type)", async () => {
    const ctx = await setup();
    const first = (await createEntity(ctx, { name: "Zoë Saldaña", type: "PERSON" })).entity;
    const again = await createEntity(ctx, { name: "  zoe   SALDANA ", type: "PERSON", description: "ignored" });
    expect(again.created).toBe(false);
    expect(again.entity).toEqual(first);
    const otherType = await createEntity(ctx, { name: "Zoë Saldaña", type: "OTHER" });
    expect(otherType.created).toBe(true);
    expect(await entityCount(ctx)).toBe(2);
  });

  it.each([
    [{ type: "PERSON" }, "NAME_REQUIRED"],
    [{ name: "", type: "PERSON" }, "NAME_REQUIRED"],
    [{ name: "   ", type: "PERSON" }, "NAME_REQUIRED"],
    [{ name: null, type: "PERSON" }, "NAME_REQUIRED"],
    [{ name: "x" }, "INVALID_ENTITY_TYPE"],
    [{ name: "x", type: "person" }, "INVALID_ENTITY_TYPE"],
    [{ name: "x", type: "ANIMAL" }, "INVALID_ENTITY_TYPE"],
    [{ name: "x", type: 3 }, "INVALID_ENTITY_TYPE"],
    [{ name: 42, type: "PERSON" }, "VALIDATION_ERROR"],
    [{ name: "x".repeat(501), type: "PERSON" }, "VALIDATION_ERROR"],
    [{ name: "x", type: "PERSON", description: 5 }, "VALIDATION_ERROR"],
    [{ name: "x", type: "PERSON", metadata: [1] }, "VALIDATION_ERROR"],
    [{ name: "x", type: "PERSON", metadata: "{}" }, "VALIDATION_ERROR"],
    [{ name: "x", type: "PERSON", extra: 1 }, "VALIDATION_ERROR"],
    [[], "VALIDATION_ERROR"],
  ])("rejects %j with %s and stores nothing", async (raw, code) => {
    const ctx = await setup();
    await createEntity(ctx, { name: "kept", type: "OTHER" });
    expect(await codeOf(createEntity(ctx, raw))).toBe(code);
    expect(await entityCount(ctx)).toBe(1);
  });

  it("lists allowed types on INVALID_ENTITY_TYPE and suggests the upper-case form", async () => {
    const ctx = await setup();
    const err = await createEntity(ctx, { name: "x", type: "person" }).catch((e) => e);
    expect(err.extra.allowed).toEqual([...ENTITY_TYPES]);
    expect(err.message).toContain("Did you mean PERSON?");
  });

  it("lists newest first, stable across pages, with no metadata, and filters by type", async () => {
    const ctx = await setup();
    const made: string[] = [];
    for (let i = 0; i < 7; i++) {
      made.push((await createEntity(ctx, { name: `e${i}`, type: i % 2 ? "PERSON" : "LOCATION", metadata: { i } })).entity.id);
      if (i % 3 === 0) ctx.tick();
    }
    const pages = [];
    for (let p = 1; p <= 3; p++) pages.push(...(await listEntities(ctx, { page: p, limit: 3 })).items);
    expect(pages.map((e) => e.id)).toEqual([...made].reverse());
    expect(pages.every((e) => !("metadata" in e))).toBe(true);
    const people = await listEntities(ctx, { type: "PERSON" });
    expect(people.pagination.total).toBe(3);
    expect(people.items.every((e) => e.type === "PERSON")).toBe(true);
    const past = await listEntities(ctx, { page: 9, limit: 3 });
    expect(past).toEqual({ items: [], pagination: { page: 9, limit: 3, total: 7, totalPages: 3 } });
    expect(await codeOf(listEntities(ctx, { type: "person" }))).toBe("INVALID_ENTITY_TYPE");
    expect(await codeOf(listEntities(ctx, { limit: "0" }))).toBe("VALIDATION_ERROR");
    expect((await listEntities(ctx, { limit: 500 })).pagination.limit).toBe(100);
  });

  it("searches names ignoring case and accents, exact then prefix then word prefix then substring", async () => {
    const ctx = await setup();
    for (const name of ["Joanna", "Hannah Anna-Lee", "Annabel", "ANNA", "Bob", "Ånna Maria"]) {
      await createEntity(ctx, { name, type: "PERSON" });
      ctx.tick();
    }
    const names = (await listEntities(ctx, { search: "anna" })).items.map((e) => e.name);
    expect(names).toEqual(["ANNA", "Ånna Maria", "Annabel", "Hannah Anna-Lee", "Joanna"]);
    expect((await listEntities(ctx, { search: "ANNA", limit: 2, page: 2 })).items.map((e) => e.name)).toEqual(["Annabel", "Hannah Anna-Lee"]);
    expect((await listEntities(ctx, { search: "zzz" })).pagination.total).toBe(0);
    expect((await listEntities(ctx, { search: "o'b" })).pagination.total).toBe(0);
    expect((await listEntities(ctx, { search: "" })).pagination.total).toBe(6);
    expect((await listEntities(ctx, { search: "anna", type: "LOCATION" })).pagination.total).toBe(0);
  });

  it("updates with PATCH semantics and refuses a rename onto another entity", async () => {
    const ctx = await setup();
    const a = (await createEntity(ctx, { name: "Alpha", type: "CONCEPT", description: "d", metadata: { k: 1 } })).entity;
    await createEntity(ctx, { name: "Beta", type: "CONCEPT" });
    ctx.tick();
    const renamed = await updateEntity(ctx, a.id, { name: "Gamma", description: null });
    expect(renamed).toMatchObject({ id: a.id, name: "Gamma", type: "CONCEPT", metadata: { k: 1 }, createdAt: a.createdAt });
    expect(renamed).not.toHaveProperty("description");
    expect(renamed.updatedAt > a.updatedAt).toBe(true);
    expect(await codeOf(updateEntity(ctx, a.id, { name: "beta" }))).toBe("VALIDATION_ERROR");
    expect(await codeOf(updateEntity(ctx, a.id, { name: "" }))).toBe("NAME_REQUIRED");
    expect(await codeOf(updateEntity(ctx, a.id, { type: "THING" }))).toBe("INVALID_ENTITY_TYPE");
    expect(await codeOf(updateEntity(ctx, a.id, {}))).toBe("VALIDATION_ERROR");
    expect(await codeOf(updateEntity(ctx, "ent_missing", { name: "x" }))).toBe("ENTITY_NOT_FOUND");
    expect((await getEntity(ctx, a.id)).name).toBe("Gamma");
  });

  it("deletes an entity with every relation touching it, and unlinks memories", async () => {
    const ctx = await setup();
    const e = async (name: string) => (await createEntity(ctx, { name, type: "PERSON" })).entity.id;
    const [a, b, c] = [await e("A"), await e("B"), await e("C")];
    const out = await createRelation(ctx, { sourceId: a, targetId: b, type: "KNOWS" });
    const inbound = await createRelation(ctx, { sourceId: c, targetId: a, type: "KNOWS" });
    const loop = await createRelation(ctx, { sourceId: a, targetId: a, type: "RELATED_TO" });
    const kept = await createRelation(ctx, { sourceId: b, targetId: c, type: "KNOWS" });
    const m = await createMemory(ctx, { content: "A met B", userId: "u", entityIds: [a, b] });
    expect(await deleteEntity(ctx, a)).toEqual({ success: true, id: a, deletedRelations: 3 });
    for (const r of [out, inbound, loop]) expect(await codeOf(getRelation(ctx, r.id))).toBe("RELATION_NOT_FOUND");
    expect((await listRelations(ctx, {})).items.map((r) => r.id)).toEqual([kept.id]);
    expect((await getMemory(ctx, m.id)).entityIds).toEqual([b]);
    expect(await codeOf(deleteEntity(ctx, a))).toBe("ENTITY_NOT_FOUND");
    expect(await codeOf(getEntity(ctx, a))).toBe("ENTITY_NOT_FOUND");
    expect(await codeOf(listEntityMemories(ctx, a))).toBe("ENTITY_NOT_FOUND");
  });

  it("links memories to entities, validated to exist, and lists an entity's memories", async () => {
    const ctx = await setup();
    const ada = (await createEntity(ctx, { name: "Ada", type: "PERSON" })).entity.id;
    const m1 = await createMemory(ctx, { content: "Ada wrote notes", userId: "u", entityIds: [ada, ada] });
    expect(m1.entityIds).toEqual([ada]);
    ctx.tick();
    const m2 = await createMemory(ctx, { content: "unlinked", userId: "u" });
    expect(m2).not.toHaveProperty("entityIds");
    const err = await createMemory(ctx, { content: "x", userId: "u", entityIds: [ada, "ent_nope"] }).catch((e) => e);
    expect(err.code).toBe("ENTITY_NOT_FOUND");
    expect(err.extra.missing).toEqual(["ent_nope"]);
    const linked = await updateMemory(ctx, m2.id, { entityIds: [ada] });
    expect(linked.entityIds).toEqual([ada]);
    const page = await listEntityMemories(ctx, ada);
    expect(page.items.map((m) => m.id)).toEqual([m2.id, m1.id]);
    expect(page.items.every((m) => !("entityIds" in m) && !("metadata" in m))).toBe(true);
    expect(await codeOf(updateMemory(ctx, m2.id, { entityIds: ["ent_gone"] }))).toBe("ENTITY_NOT_FOUND");
    expect((await updateMemory(ctx, m2.id, { entityIds: null }))).not.toHaveProperty("entityIds");
    expect(await codeOf(listEntityMemories(ctx, "ent_nope"))).toBe("ENTITY_NOT_FOUND");
  });

  it("never shows another account's entities", async () => {
    const dir = await tempDir();
    const mine = await setup({ storeDir: dir });
    const theirs = await setup({ storeDir: dir, accountId: "acct_other" });
    const e = (await createEntity(mine, { name: "Secret", type: "CONCEPT" })).entity;
    expect(await codeOf(getEntity(theirs, e.id))).toBe("ENTITY_NOT_FOUND");
    expect(await codeOf(deleteEntity(theirs, e.id))).toBe("ENTITY_NOT_FOUND");
    expect(await codeOf(updateEntity(theirs, e.id, { name: "x" }))).toBe("ENTITY_NOT_FOUND");
    expect((await listEntities(theirs, { search: "secret" })).pagination.total).toBe(0);
    expect((await createEntity(theirs, { name: "Secret", type: "CONCEPT" })).created).toBe(true);
    expect(await codeOf(createMemory(theirs, { content: "x", userId: "u", entityIds: [e.id] }))).toBe("ENTITY_NOT_FOUND");
    expect((await getEntity(mine, e.id)).name).toBe("Secret");
  });
});
