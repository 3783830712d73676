import { describe, expect, it } from "vitest";
import { openContext, type Context } from "../../src/core/context.js";
import { createEntity, deleteEntity } from "../../src/core/entities.js";
import { createRelation, deleteRelation, getRelation, listRelations } from "../../src/core/relations.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { codeOf } from "../helpers/errors.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

async function setup(accountId?: string, storeDir?: string) {
  let t = Date.parse("2026-01-01T00:00:00.000Z");
  const ctx = await openContext({ storeDir: storeDir ?? (await tempDir()), embedder: createTestEmbedder(), clock: () => new Date((t += 10)), accountId });
  const person = async (name: string) => (await createEntity(ctx, { name, type: "PERSON" })).entity;
  return { ctx, person };
}


const count = async (ctx: Context) => (await listRelations(ctx, {})).pagination.total;

describe("relations", () => {
  it("creates without endpoint summaries; get adds source, target and metadata; list omits metadata", async () => {
    const { ctx, person } = await setup();
    const [a, b] = [await person("Ann"), await person("Ben")];
    const r = await createRelation(ctx, { sourceId: a.id, targetId: b.id, type: "KNOWS", metadata: { since: 2020 } });
    expect(Object.keys(r)).toEqual(["id", "sourceId", "targetId", "type", "metadata", "createdAt"]);
    expect(r.id).toMatch(/^rel_[0-9A-Z]{24}$/);
    const plain = await createRelation(ctx, { sourceId: b.id, targetId: a.id, type: "WORKS_FOR" });
    expect(Object.keys(plain)).toEqual(["id", "sourceId", "targetId", "type", "createdAt"]);
    const got = await getRelation(ctx, r.id);
    expect(got).toEqual({ ...r, source: { id: a.id, name: "Ann", type: "PERSON" }, target: { id: b.id, name: "Ben", type: "PERSON" }, metadata: { since: 2020 } });
    const list = await listRelations(ctx, {});
    expect(list.items.map((i) => i.id)).toEqual([plain.id, r.id]);
    expect(list.items[1]).toEqual({ id: r.id, sourceId: a.id, targetId: b.id, type: "KNOWS", source: got.source, target: got.target, createdAt: r.createdAt });
  });

  it("accepts custom upper-snake types and self-loops", async () => {
    const { ctx, person } = await setup();
    const a = await person("Solo");
    expect((await createRelation(ctx, { sourceId: a.id, targetId: a.id, type: "MENTORS_2" })).type).toBe("MENTORS_2");
    expect((await createRelation(ctx, { sourceId: a.id, targetId: a.id, type: "A" + "B".repeat(63) })).type).toHaveLength(64);
  });

  it.each([
    ["works_for", "INVALID_RELATION_TYPE"],
    ["Works For", "INVALID_RELATION_TYPE"],
    ["", "INVALID_RELATION_TYPE"],
    ["1ABC", "INVALID_RELATION_TYPE"],
    ["_ABC", "INVALID_RELATION_TYPE"],
    ["A".repeat(65), "INVALID_RELATION_TYPE"],
    ["KNOWS-WELL", "INVALID_RELATION_TYPE"],
    [7, "INVALID_RELATION_TYPE"],
    [undefined, "INVALID_RELATION_TYPE"],
  ])("rejects type %j with %s and stores nothing", async (type, code) => {
    const { ctx, person } = await setup();
    const [a, b] = [await person("A"), await person("B")];
    expect(await codeOf(createRelation(ctx, { sourceId: a.id, targetId: b.id, type }))).toBe(code);
    expect(await count(ctx)).toBe(0);
  });

  it("suggests the upper snake form without normalising", async () => {
    const { ctx, person } = await setup();
    const [a, b] = [await person("A"), await person("B")];
    const err = await createRelation(ctx, { sourceId: a.id, targetId: b.id, type: "works for" }).catch((e) => e);
    expect(err.message).toContain("Did you mean WORKS_FOR?");
    expect(err.extra.suggestion).toBe("WORKS_FOR");
  });

  it("answers SOURCE_/TARGET_ENTITY_NOT_FOUND (source checked first) and VALIDATION_ERROR for missing ids", async () => {
    const { ctx, person } = await setup();
    const a = await person("A");
    expect(await codeOf(createRelation(ctx, { sourceId: "ent_x", targetId: "ent_y", type: "KNOWS" }))).toBe("SOURCE_ENTITY_NOT_FOUND");
    expect(await codeOf(createRelation(ctx, { sourceId: a.id, targetId: "ent_y", type: "KNOWS" }))).toBe("TARGET_ENTITY_NOT_FOUND");
    expect(await codeOf(createRelation(ctx, { targetId: a.id, type: "KNOWS" }))).toBe("VALIDATION_ERROR");
    expect(await codeOf(createRelation(ctx, { sourceId: a.id, targetId: "", type: "KNOWS" }))).toBe("VALIDATION_ERROR");
    expect(await codeOf(createRelation(ctx, { sourceId: a.id, targetId: a.id, type: "KNOWS", metadata: [] }))).toBe("VALIDATION_ERROR");
    expect(await codeOf(createRelation(ctx, { sourceId: a.id, targetId: a.id, type: "KNOWS", weight: 1 }))).toBe("VALIDATION_ERROR");
    expect(await count(ctx)).toBe(0);
  });

  it("filters lists by source, target and type, paginates newest first", async () => {
    const { ctx, person } = await setup();
    const [a, b, c] = [await person("A"), await person("B"), await person("C")];
    const ids: string[] = [];
    for (const [s, t, type] of [
      [a, b, "KNOWS"],
      [a, c, "KNOWS"],
      [b, c, "WORKS_FOR"],
      [c, a, "KNOWS"],
      [a, b, "WORKS_FOR"],
    ] as const) {
      ids.push((await createRelation(ctx, { sourceId: s.id, targetId: t.id, type })).id);
    }
    expect((await listRelations(ctx, { sourceId: a.id })).items.map((r) => r.id)).toEqual([ids[4], ids[1], ids[0]]);
    expect((await listRelations(ctx, { targetId: c.id })).pagination.total).toBe(2);
    expect((await listRelations(ctx, { type: "WORKS_FOR" })).items.map((r) => r.id)).toEqual([ids[4], ids[2]]);
    expect((await listRelations(ctx, { sourceId: a.id, targetId: b.id, type: "KNOWS" })).items.map((r) => r.id)).toEqual([ids[0]]);
    const paged = [...(await listRelations(ctx, { limit: 2, page: 1 })).items, ...(await listRelations(ctx, { limit: 2, page: 2 })).items, ...(await listRelations(ctx, { limit: 2, page: 3 })).items];
    expect(paged.map((r) => r.id)).toEqual([...ids].reverse());
    expect((await listRelations(ctx, { limit: 2, page: 4 })).items).toEqual([]);
    expect(await codeOf(listRelations(ctx, { type: "knows" }))).toBe("INVALID_RELATION_TYPE");
    expect(await codeOf(listRelations(ctx, { page: "x" }))).toBe("VALIDATION_ERROR");
  });

  it("deletes permanently", async () => {
    const { ctx, person } = await setup();
    const a = await person("A");
    const r = await createRelation(ctx, { sourceId: a.id, targetId: a.id, type: "KNOWS" });
    expect(await deleteRelation(ctx, r.id)).toEqual({ success: true, id: r.id });
    expect(await codeOf(getRelation(ctx, r.id))).toBe("RELATION_NOT_FOUND");
    expect(await codeOf(deleteRelation(ctx, r.id))).toBe("RELATION_NOT_FOUND");
  });

  it("never links to or shows another account's entities and relations", async () => {
    const dir = await tempDir();
    const mine = await setup(undefined, dir);
    const theirs = await setup("acct_other", dir);
    const [a, b] = [await mine.person("A"), await mine.person("B")];
    const r = await createRelation(mine.ctx, { sourceId: a.id, targetId: b.id, type: "KNOWS" });
    const x = await theirs.person("X");
    expect(await codeOf(createRelation(theirs.ctx, { sourceId: a.id, targetId: x.id, type: "KNOWS" }))).toBe("SOURCE_ENTITY_NOT_FOUND");
    expect(await codeOf(createRelation(theirs.ctx, { sourceId: x.id, targetId: b.id, type: "KNOWS" }))).toBe("TARGET_ENTITY_NOT_FOUND");
    expect(await codeOf(getRelation(theirs.ctx, r.id))).toBe("RELATION_NOT_FOUND");
    expect(await codeOf(deleteRelation(theirs.ctx, r.id))).toBe("RELATION_NOT_FOUND");
    expect((await listRelations(theirs.ctx, { sourceId: a.id })).pagination.total).toBe(0);
    expect((await getRelation(mine.ctx, r.id)).id).toBe(r.id);
  });

  it("a reader never sees a relation whose endpoint is gone while entities are being deleted", async () => {
    const dir = await tempDir();
    const writer = await setup(undefined, dir);
    const reader = await openContext({ storeDir: dir, embedder: createTestEmbedder() });
    const hub = await writer.person("Hub");
    const spokes = [];
    for (let i = 0; i < 12; i++) {
      const s = await writer.person(`S${i}`);
      spokes.push(s);
      await createRelation(writer.ctx, { sourceId: hub.id, targetId: s.id, type: "KNOWS" });
      await createRelation(writer.ctx, { sourceId: s.id, targetId: hub.id, type: "KNOWS" });
    }
    let done = false;
    let checks = 0;
    const reading = (async () => {
      while (!done) {
        const page = await listRelations(reader, { limit: 100 });
        // Every listed relation came with both endpoint summaries, and the count agrees with the items.
        expect(page.items.length).toBe(page.pagination.total);
        for (const r of page.items) expect(r.source.id && r.target.id).toBeTruthy();
        checks++;
      }
    })();
    for (const s of spokes) await deleteEntity(writer.ctx, s.id);
    done = true;
    await reading;
    expect(checks).toBeGreaterThan(0);
    expect((await listRelations(reader, {})).pagination.total).toBe(0);
    await reader.close();
  });
});
