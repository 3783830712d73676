import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { JSDOM } from "jsdom";
import { Graphviz } from "@hpcc-js/wasm-graphviz";
import { openContext, type Context } from "../../src/core/context.js";
import { createEntity } from "../../src/core/entities.js";
import { exportGraph, neighbors, shortestPath, type Direction, type ExportedGraph, type GraphEdge } from "../../src/core/graph.js";
import { toDot, toMermaid } from "../../src/core/graph-format.js";
import { createRelation, type Relation } from "../../src/core/relations.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

// Registered after useTempDirs: vitest runs after-hooks in reverse order, so contexts close before
// their directories are removed.
const opened: Context[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

async function open(storeDir?: string, accountId?: string): Promise<Context> {
  let t = Date.parse("2026-01-01T00:00:00.000Z");
  const ctx = await openContext({ storeDir: storeDir ?? (await tempDir()), embedder: createTestEmbedder(), clock: () => new Date((t += 10)), accountId });
  opened.push(ctx);
  return ctx;
}

async function codeOf(p: Promise<unknown>): Promise<{ code: string; extra: Record<string, unknown> }> {
  try {
    await p;
  } catch (err) {
    return err as { code: string; extra: Record<string, unknown> };
  }
  throw new Error("expected an error");
}

/**
 * The fixture graph (ids grow in creation order, so r.ab1 < r.ab2 < r.abWork):
 *
 *   A -KNOWS-> B (twice) and A -WORKS_FOR-> B      parallel and duplicate edges
 *   B -KNOWS-> C -KNOWS-> A                        a cycle A→B→C→A
 *   C -RELATED_TO-> D,  D -KNOWS-> D               a self-loop one hop off the cycle
 *   E -PART_OF-> A,  F -LOCATED_IN-> E             edges pointing into A (reachable only `in`/`both`)
 *   X -KNOWS-> Y                                   a disconnected component
 *   H                                              an isolated entity
 */
async function fixture(ctx: Context) {
  const ent = async (name: string, type = "PERSON", description?: string) =>
    (await createEntity(ctx, { name, type, ...(description ? { description } : {}) })).entity;
  const A = await ent("Alice", "PERSON", "the root");
  const B = await ent("Bob");
  const C = await ent("Carol");
  const D = await ent("Dave");
  const E = await ent("Eve Corp", "ORGANIZATION");
  const F = await ent("Faro", "LOCATION");
  const X = await ent("Xena");
  const Y = await ent("Yuri");
  const H = await ent("Hermit");
  const rel = (s: { id: string }, t: { id: string }, type: string) => createRelation(ctx, { sourceId: s.id, targetId: t.id, type });
  const r = {
    ab1: await rel(A, B, "KNOWS"),
    ab2: await rel(A, B, "KNOWS"),
    abWork: await rel(A, B, "WORKS_FOR"),
    bc: await rel(B, C, "KNOWS"),
    ca: await rel(C, A, "KNOWS"),
    cd: await rel(C, D, "RELATED_TO"),
    dd: await rel(D, D, "KNOWS"),
    ea: await rel(E, A, "PART_OF"),
    fe: await rel(F, E, "LOCATED_IN"),
    xy: await rel(X, Y, "KNOWS"),
  };
  return { A, B, C, D, E, F, X, Y, H, r };
}

const edge = (r: Relation): GraphEdge => ({ id: r.id, sourceId: r.sourceId, targetId: r.targetId, type: r.type });
const nodeSet = (res: { nodes: { id: string; depth: number }[] }) => res.nodes.map((n) => [n.id, n.depth]);
const edgeIds = (edges: { id: string }[]) => edges.map((e) => e.id).sort();
const ids = (...rs: Relation[]) => rs.map((r) => r.id).sort();

describe("neighbors", () => {
  it("walks out, in and both at depths 1 to 4 through a cycle, parallel edges and a self-loop", async () => {
    const ctx = await open();
    const { A, B, C, D, E, F, r } = await fixture(ctx);

    const out1 = await neighbors(ctx, A.id, { direction: "out" });
    expect(out1.root).toEqual({ id: A.id, name: "Alice", type: "PERSON" });
    expect(out1).toMatchObject({ depth: 1, direction: "out" });
    expect(out1.nodes).toEqual([{ id: B.id, name: "Bob", type: "PERSON", depth: 1 }]);
    expect(edgeIds(out1.edges)).toEqual(ids(r.ab1, r.ab2, r.abWork));
    expect(out1.edges.find((e) => e.id === r.abWork.id)).toEqual(edge(r.abWork));

    const out2 = await neighbors(ctx, A.id, { direction: "out", depth: 2 });
    expect(nodeSet(out2)).toEqual([
      [B.id, 1],
      [C.id, 2],
    ]);
    expect(edgeIds(out2.edges)).toEqual(ids(r.ab1, r.ab2, r.abWork, r.bc));

    // Depth 3 closes the cycle (C→A is crossed, A stays the root, not a node) and reaches D.
    const out3 = await neighbors(ctx, A.id, { direction: "out", depth: 3 });
    expect(nodeSet(out3)).toEqual([
      [B.id, 1],
      [C.id, 2],
      [D.id, 3],
    ]);
    expect(edgeIds(out3.edges)).toEqual(ids(r.ab1, r.ab2, r.abWork, r.bc, r.ca, r.cd));
    // Depth 4 crosses the self-loop once and finds nothing new.
    const out4 = await neighbors(ctx, A.id, { direction: "out", depth: 4 });
    expect(nodeSet(out4)).toEqual(nodeSet(out3));
    expect(edgeIds(out4.edges)).toEqual(ids(r.ab1, r.ab2, r.abWork, r.bc, r.ca, r.cd, r.dd));

    const in2 = await neighbors(ctx, A.id, { direction: "in", depth: 2 });
    expect(nodeSet(in2)).toEqual([
      [C.id, 1],
      [E.id, 1],
      [B.id, 2],
      [F.id, 2],
    ]);
    expect(edgeIds(in2.edges)).toEqual(ids(r.ca, r.ea, r.bc, r.fe));

    const both1 = await neighbors(ctx, A.id, {});
    expect(both1.direction).toBe("both");
    expect(nodeSet(both1)).toEqual([
      [B.id, 1],
      [C.id, 1],
      [E.id, 1],
    ]);
    expect(edgeIds(both1.edges)).toEqual(ids(r.ab1, r.ab2, r.abWork, r.ca, r.ea));
    const both2 = await neighbors(ctx, A.id, { depth: 2, direction: "both" });
    expect(nodeSet(both2)).toEqual([
      [B.id, 1],
      [C.id, 1],
      [E.id, 1],
      [D.id, 2],
      [F.id, 2],
    ]);
    expect(edgeIds(both2.edges)).toEqual(ids(r.ab1, r.ab2, r.abWork, r.bc, r.ca, r.cd, r.ea, r.fe));
  });

  it("never lists the root or an entity twice, and stops at the component's edge however deep", async () => {
    const ctx = await open();
    const { A, B, C, D, E, F, X, Y, H, r } = await fixture(ctx);
    const all = await neighbors(ctx, A.id, { depth: 10 });
    expect(all.nodes.map((n) => n.name)).toEqual(["Bob", "Carol", "Eve Corp", "Dave", "Faro"]);
    expect(new Set(all.nodes.map((n) => n.id)).size).toBe(all.nodes.length);
    expect(all.nodes.map((n) => n.id)).not.toContain(A.id);
    for (const far of [X, Y, H]) expect(all.nodes.map((n) => n.id)).not.toContain(far.id);
    expect(new Set(all.edges.map((e) => e.id)).size).toBe(all.edges.length);
    expect(edgeIds(all.edges)).toEqual(ids(r.ab1, r.ab2, r.abWork, r.bc, r.ca, r.cd, r.dd, r.ea, r.fe));
    expect([B, C, D, E, F].every((n) => all.nodes.some((m) => m.id === n.id))).toBe(true);

    const self = await neighbors(ctx, D.id, { direction: "out", depth: 5 });
    expect(self.nodes).toEqual([]);
    expect(self.edges).toEqual([edge(r.dd)]);
    expect((await neighbors(ctx, H.id, { depth: 3 })).nodes).toEqual([]);
  });

  it("never reports a relation whose endpoint is gone (as a crash between commits could leave)", async () => {
    const ctx = await open();
    const { A, B, C, r } = await fixture(ctx);
    const ghost = { id: "rel_ghost", accountId: ctx.accountId, sourceId: A.id, targetId: "ent_ghost", type: "KNOWS", metadata: null, createdAt: "2026-01-01T00:00:00.000Z" };
    await ctx.store.write((w) => w.insertRelation(ghost));
    const out = await neighbors(ctx, A.id, { direction: "out", depth: 2 });
    expect(nodeSet(out)).toEqual([
      [B.id, 1],
      [C.id, 2],
    ]);
    expect(edgeIds(out.edges)).toEqual(ids(r.ab1, r.ab2, r.abWork, r.bc));
    expect((await shortestPath(ctx, A.id, C.id, { direction: "out" })).length).toBe(2);
    expect((await exportGraph(ctx)).relations.map((e) => e.id)).not.toContain("rel_ghost");
    expect((await exportGraph(ctx, { root: A.id })).relations.map((e) => e.id)).not.toContain("rel_ghost");
  });

  it("follows only the requested relation type", async () => {
    const ctx = await open();
    const { A, B, C, r } = await fixture(ctx);
    const knows = await neighbors(ctx, A.id, { type: "KNOWS", depth: 10 });
    expect(nodeSet(knows)).toEqual([
      [B.id, 1],
      [C.id, 1],
    ]);
    expect(edgeIds(knows.edges)).toEqual(ids(r.ab1, r.ab2, r.bc, r.ca));
    const work = await neighbors(ctx, A.id, { type: "WORKS_FOR", direction: "in" });
    expect(work.nodes).toEqual([]);
    expect(work.edges).toEqual([]);
  });

  it("takes depth as a CLI string and rejects bad depth, direction, type and fields", async () => {
    const ctx = await open();
    const { A, B } = await fixture(ctx);
    expect(nodeSet(await neighbors(ctx, A.id, { depth: "1", direction: "out" }))).toEqual([[B.id, 1]]);
    for (const depth of [0, 11, -1, 1.5, "x", "", "2.0", null, true]) {
      const err = await codeOf(neighbors(ctx, A.id, { depth }));
      expect(err.code, String(depth)).toBe("VALIDATION_ERROR");
      expect((err.extra.details as { field: string }[])[0].field).toBe("depth");
    }
    for (const direction of ["sideways", "OUT", "", 1]) {
      const err = await codeOf(neighbors(ctx, A.id, { direction }));
      expect(err.code).toBe("VALIDATION_ERROR");
      expect((err.extra.details as { field: string }[])[0].field).toBe("direction");
    }
    for (const type of ["works_for", "", 7]) expect((await codeOf(neighbors(ctx, A.id, { type }))).code).toBe("INVALID_RELATION_TYPE");
    expect((await codeOf(neighbors(ctx, A.id, { hops: 2 }))).code).toBe("VALIDATION_ERROR");
    expect((await codeOf(neighbors(ctx, A.id, "depth=2"))).code).toBe("VALIDATION_ERROR");
    expect((await codeOf(neighbors(ctx, "ent_missing", {}))).code).toBe("ENTITY_NOT_FOUND");
  });

  it("answers ENTITY_NOT_FOUND for another account's entity", async () => {
    const dir = await tempDir();
    const ctx = await open(dir);
    const { A, B } = await fixture(ctx);
    const other = await open(dir, "acct_other");
    expect((await codeOf(neighbors(other, A.id, {}))).code).toBe("ENTITY_NOT_FOUND");
    expect((await codeOf(shortestPath(other, A.id, B.id, {}))).code).toBe("ENTITY_NOT_FOUND");
    expect((await codeOf(exportGraph(other, { root: A.id }))).code).toBe("ENTITY_NOT_FOUND");
    expect(await exportGraph(other, {})).toEqual({ entities: [], relations: [] });
    // The other account's own entity with the same name sees none of the first account's graph.
    const twin = (await createEntity(other, { name: "Alice", type: "PERSON" })).entity;
    expect((await neighbors(other, twin.id, { depth: 10 })).nodes).toEqual([]);
    expect((await codeOf(shortestPath(other, twin.id, B.id, {}))).code).toBe("ENTITY_NOT_FOUND");
  });
});

describe("shortestPath", () => {
  it("finds the exact shortest node and edge sequence, keeping each edge's true direction", async () => {
    const ctx = await open();
    const { A, B, C, E, F, r } = await fixture(ctx);
    const s = (e: { id: string; name: string; type: string }) => ({ id: e.id, name: e.name, type: e.type });

    const ac = await shortestPath(ctx, A.id, C.id, { direction: "out" });
    expect(ac).toEqual({ from: s(A), to: s(C), found: true, length: 2, nodes: [s(A), s(B), s(C)], edges: [edge(r.ab1), edge(r.bc)] });

    // `both` takes C→A backwards: one hop, reported as C→A.
    const acBoth = await shortestPath(ctx, A.id, C.id, {});
    expect(acBoth).toMatchObject({ found: true, length: 1, nodes: [s(A), s(C)], edges: [edge(r.ca)] });

    expect((await shortestPath(ctx, C.id, B.id, { direction: "out" })).nodes.map((n) => n.id)).toEqual([C.id, A.id, B.id]);
    const cbIn = await shortestPath(ctx, C.id, B.id, { direction: "in" });
    expect(cbIn).toMatchObject({ length: 1, edges: [edge(r.bc)] });

    const fb = await shortestPath(ctx, F.id, B.id, { direction: "out" });
    expect(fb.nodes.map((n) => n.id)).toEqual([F.id, E.id, A.id, B.id]);
    expect(fb.edges).toEqual([edge(r.fe), edge(r.ea), edge(r.ab1)]);
    expect(fb.length).toBe(3);
  });

  it("respects direction, type and maxDepth, and reports found:false across components", async () => {
    const ctx = await open();
    const { A, B, C, D, E, F, X, Y, H } = await fixture(ctx);
    const notFound = { found: false, length: null, nodes: [], edges: [] };

    expect(await shortestPath(ctx, B.id, F.id, { direction: "out" })).toMatchObject(notFound);
    const bf = await shortestPath(ctx, B.id, F.id, { direction: "both" });
    expect(bf.nodes.map((n) => n.id)).toEqual([B.id, A.id, E.id, F.id]);
    expect(bf.edges.map((e) => [e.sourceId, e.targetId])).toEqual([
      [A.id, B.id],
      [E.id, A.id],
      [F.id, E.id],
    ]);
    expect(await shortestPath(ctx, F.id, B.id, { direction: "in" })).toMatchObject(notFound);
    expect((await shortestPath(ctx, B.id, F.id, { direction: "in" })).length).toBe(3);

    expect(await shortestPath(ctx, F.id, B.id, { direction: "out", maxDepth: 2 })).toMatchObject(notFound);
    expect(await shortestPath(ctx, F.id, B.id, { direction: "out", maxDepth: "3" })).toMatchObject({ found: true, length: 3 });
    expect(await shortestPath(ctx, F.id, D.id, { maxDepth: 3 })).toMatchObject(notFound);
    expect((await shortestPath(ctx, F.id, D.id, {})).length).toBe(4);

    expect((await shortestPath(ctx, A.id, D.id, {})).nodes.map((n) => n.id)).toEqual([A.id, C.id, D.id]);
    expect(await shortestPath(ctx, A.id, D.id, { type: "KNOWS" })).toMatchObject(notFound);
    expect((await shortestPath(ctx, A.id, C.id, { type: "KNOWS", direction: "out" })).length).toBe(2);
    expect(await shortestPath(ctx, A.id, C.id, { type: "WORKS_FOR" })).toMatchObject(notFound);

    for (const [from, to] of [
      [A, X],
      [X, A],
      [Y, X],
      [A, H],
    ]) {
      const res = await shortestPath(ctx, from.id, to.id, { maxDepth: 10 });
      expect(res, `${from.name}→${to.name}`).toMatchObject(from === Y ? { found: true, length: 1 } : notFound);
    }
    expect(await shortestPath(ctx, Y.id, X.id, { direction: "out" })).toMatchObject(notFound);
  });

  it("returns length 0 for from == to, including on a self-loop, and walks off a self-loop", async () => {
    const ctx = await open();
    const { A, C, D, H, r } = await fixture(ctx);
    for (const e of [A, D, H]) {
      expect(await shortestPath(ctx, e.id, e.id, { direction: "out" })).toEqual({
        from: { id: e.id, name: e.name, type: e.type },
        to: { id: e.id, name: e.name, type: e.type },
        found: true,
        length: 0,
        nodes: [{ id: e.id, name: e.name, type: e.type }],
        edges: [],
      });
    }
    const dc = await shortestPath(ctx, D.id, C.id, {});
    expect(dc).toMatchObject({ found: true, length: 1, edges: [edge(r.cd)] });
    expect(await shortestPath(ctx, D.id, C.id, { direction: "out" })).toMatchObject({ found: false });
  });

  it("picks the same path among equal-length ones every time: smallest ids first", async () => {
    const ctx = await open();
    const ent = async (name: string) => (await createEntity(ctx, { name, type: "PERSON" })).entity;
    // Created in this order, so ids sort zed < amy < end; names sort the other way.
    const start = await ent("Start");
    const zed = await ent("Zed");
    const amy = await ent("Amy");
    const end = await ent("End");
    const rel = (s: { id: string }, t: { id: string }, type = "KNOWS") => createRelation(ctx, { sourceId: s.id, targetId: t.id, type });
    await rel(start, amy);
    await rel(amy, end);
    const viaZed1 = await rel(start, zed);
    const zedEnd = await rel(zed, end);
    const viaZed2 = await rel(start, zed, "RELATED_TO");
    for (const direction of ["out", "both"] as const) {
      for (let i = 0; i < 3; i++) {
        const p = await shortestPath(ctx, start.id, end.id, { direction });
        expect(p.nodes.map((n) => n.name)).toEqual(["Start", "Zed", "End"]);
        expect(p.edges.map((e) => e.id)).toEqual([viaZed1.id < viaZed2.id ? viaZed1.id : viaZed2.id, zedEnd.id]);
      }
    }
    expect((await shortestPath(ctx, end.id, start.id, { direction: "in" })).nodes.map((n) => n.name)).toEqual(["End", "Zed", "Start"]);
  });

  it("rejects bad options and names which endpoint is unknown", async () => {
    const ctx = await open();
    const { A, B } = await fixture(ctx);
    for (const maxDepth of [0, 11, "x", -2, 2.5]) expect((await codeOf(shortestPath(ctx, A.id, B.id, { maxDepth }))).code).toBe("VALIDATION_ERROR");
    expect((await codeOf(shortestPath(ctx, A.id, B.id, { direction: "sideways" }))).code).toBe("VALIDATION_ERROR");
    expect((await codeOf(shortestPath(ctx, A.id, B.id, { depth: 2 }))).code).toBe("VALIDATION_ERROR");
    expect((await codeOf(shortestPath(ctx, A.id, B.id, { type: "works_for" }))).code).toBe("INVALID_RELATION_TYPE");
    const from = await codeOf(shortestPath(ctx, "ent_nope", B.id, {}));
    expect(from).toMatchObject({ code: "ENTITY_NOT_FOUND", extra: { missing: [{ field: "from", id: "ent_nope" }] } });
    expect((from as unknown as Error).message).toContain("ent_nope (from)");
    const to = await codeOf(shortestPath(ctx, A.id, "ent_gone", {}));
    expect(to).toMatchObject({ code: "ENTITY_NOT_FOUND", extra: { missing: [{ field: "to", id: "ent_gone" }] } });
    expect((to as unknown as Error).message).toContain("ent_gone (to)");
    const both = await codeOf(shortestPath(ctx, "ent_a", "ent_b", {}));
    expect(both.extra.missing).toEqual([
      { field: "from", id: "ent_a" },
      { field: "to", id: "ent_b" },
    ]);
  });

  it("agrees with an in-memory reference on a random graph (length, canonical path, neighbourhoods)", async () => {
    const ctx = await open();
    const rand = mulberry32(20260101);
    const people = [];
    for (let i = 0; i < 12; i++) people.push((await createEntity(ctx, { name: `P${i}`, type: "PERSON" })).entity);
    const types = ["KNOWS", "PART_OF"];
    for (let i = 0; i < 20; i++) {
      const s = people[Math.floor(rand() * people.length)];
      const t = rand() < 0.1 ? s : people[Math.floor(rand() * people.length)];
      await createRelation(ctx, { sourceId: s.id, targetId: t.id, type: types[Math.floor(rand() * types.length)] });
    }
    const { relations } = await exportGraph(ctx, {});
    expect(relations).toHaveLength(20);
    const directions: Direction[] = ["out", "in", "both"];
    let found = 0;
    for (let k = 0; k < 40; k++) {
      const from = people[Math.floor(rand() * people.length)].id;
      const to = people[Math.floor(rand() * people.length)].id;
      const direction = directions[k % 3];
      const type = k % 5 === 0 ? "KNOWS" : undefined;
      const expected = referencePath(relations, from, to, direction, type, 6);
      const got = await shortestPath(ctx, from, to, { direction, type });
      const label = `${from}→${to} ${direction} ${type ?? ""}`;
      if (!expected) {
        expect(got.found, label).toBe(false);
        continue;
      }
      found++;
      expect(got.length, label).toBe(expected.edges.length);
      expect(got.nodes.map((n) => n.id), label).toEqual(expected.nodes);
      expect(got.edges.map((e) => e.id), label).toEqual(expected.edges);
    }
    expect(found).toBeGreaterThan(10);
    for (let k = 0; k < 9; k++) {
      const root = people[k].id;
      const direction = directions[k % 3];
      const depth = 1 + (k % 3);
      const expected = referenceNeighbors(relations, root, direction, depth);
      const got = await neighbors(ctx, root, { direction, depth });
      expect(new Map(got.nodes.map((n) => [n.id, n.depth]))).toEqual(expected.depths);
      expect(edgeIds(got.edges)).toEqual([...expected.edges].sort());
    }
  });
});

describe("exportGraph", () => {
  it("exports every entity (isolated ones too) and relation, with description only when present", async () => {
    const ctx = await open();
    const { A, B, H, X, r } = await fixture(ctx);
    const all = await exportGraph(ctx);
    expect(all.entities).toHaveLength(9);
    expect(all.entities[0]).toEqual({ id: A.id, name: "Alice", type: "PERSON", description: "the root" });
    expect(all.entities.find((e) => e.id === B.id)).toEqual({ id: B.id, name: "Bob", type: "PERSON" });
    expect(all.entities.map((e) => e.id)).toEqual(expect.arrayContaining([H.id, X.id]));
    expect(all.relations).toHaveLength(10);
    expect(edgeIds(all.relations)).toEqual(ids(...Object.values(r)));
    expect(all.relations.find((e) => e.id === r.dd.id)).toEqual(edge(r.dd));

    const knows = await exportGraph(ctx, { type: "KNOWS" });
    expect(knows.entities).toHaveLength(9);
    expect(edgeIds(knows.relations)).toEqual(ids(r.ab1, r.ab2, r.bc, r.ca, r.dd, r.xy));
  });

  it("exports the subgraph around a root, root first", async () => {
    const ctx = await open();
    const { A, B, C, D, E, F, r } = await fixture(ctx);
    const sub = await exportGraph(ctx, { root: A.id });
    expect(sub.entities.map((e) => e.id)).toEqual([A.id, B.id, C.id, E.id]);
    expect(sub.entities[0].description).toBe("the root");
    expect(edgeIds(sub.relations)).toEqual(ids(r.ab1, r.ab2, r.abWork, r.ca, r.ea));

    const out = await exportGraph(ctx, { root: A.id, depth: "3", direction: "out", type: "KNOWS" });
    expect(out.entities.map((e) => e.id)).toEqual([A.id, B.id, C.id]);
    expect(edgeIds(out.relations)).toEqual(ids(r.ab1, r.ab2, r.bc, r.ca));

    // Against the arrows from D: C (1), B (2), A (3), E (4), F (5); the self-loop is crossed, not listed twice.
    const deep = await exportGraph(ctx, { root: D.id, depth: 10, direction: "in" });
    expect(deep.entities.map((e) => e.id)).toEqual([D.id, C.id, B.id, A.id, E.id, F.id]);
    expect(edgeIds(deep.relations)).toEqual(ids(r.cd, r.dd, r.bc, r.ab1, r.ab2, r.abWork, r.ca, r.ea, r.fe));
  });

  it("rejects depth or direction without a root, bad types and unknown roots", async () => {
    const ctx = await open();
    const { A } = await fixture(ctx);
    expect((await codeOf(exportGraph(ctx, { depth: 2 }))).code).toBe("VALIDATION_ERROR");
    expect((await codeOf(exportGraph(ctx, { direction: "out" }))).code).toBe("VALIDATION_ERROR");
    expect((await codeOf(exportGraph(ctx, { root: A.id, depth: 0 }))).code).toBe("VALIDATION_ERROR");
    expect((await codeOf(exportGraph(ctx, { root: "" }))).code).toBe("VALIDATION_ERROR");
    expect((await codeOf(exportGraph(ctx, { type: "knows" }))).code).toBe("INVALID_RELATION_TYPE");
    expect((await codeOf(exportGraph(ctx, { root: "ent_missing" }))).code).toBe("ENTITY_NOT_FOUND");
  });
});

const NASTY = [
  'Quote "double" and \'single\'',
  "back\\slash ends with \\",
  "arrow --> b -- c ==> d",
  "pipe | bar || x",
  "[brackets] (parens) {braces} <angles>",
  "first line\nsecond line",
  "emoji 😀 family 👩‍👩‍👧 flag 🇫🇷",
  "<b>bold</b> <script>alert(1)</script>",
  "semi; colon: #hash &amp; 100% %%comment",
  "end",
  "`tick` **stars** _under_",
  "é ñ 中文 مرحبا ß",
  "A#quot;B #35; &#60;",
  "windows\r\nline",
  "subgraph",
  "\\N \\G \\l label escapes",
];

/** A real store with every nasty name, a self-loop, parallel edges and an isolated entity. */
async function nastyGraph(): Promise<ExportedGraph> {
  const ctx = await open();
  const ents = [];
  for (const [i, name] of NASTY.entries()) ents.push((await createEntity(ctx, { name, type: i % 2 ? "CONCEPT" : "PERSON" })).entity);
  for (let i = 0; i + 1 < ents.length - 1; i++) await createRelation(ctx, { sourceId: ents[i].id, targetId: ents[i + 1].id, type: i % 3 ? "KNOWS" : "RELATED_TO" });
  await createRelation(ctx, { sourceId: ents[0].id, targetId: ents[0].id, type: "KNOWS" });
  await createRelation(ctx, { sourceId: ents[1].id, targetId: ents[2].id, type: "KNOWS" });
  const graph = await exportGraph(ctx);
  expect(graph.entities.map((e) => e.name).sort()).toEqual([...NASTY].sort());
  return graph;
}

const lines = (s: string) => s.split(/\r\n|\r|\n/);

describe("toMermaid (checked by Mermaid's own flowchart parser)", () => {
  let mermaid: MermaidApi;
  let dom: JSDOM;
  beforeAll(async () => {
    // Mermaid sanitises labels with DOMPurify, which needs a DOM; jsdom provides one. Parsing
    // (jison grammar + flowchart db) needs nothing else, so no browser is involved.
    dom = new JSDOM("<!doctype html><html><body></body></html>");
    Object.assign(globalThis, { window: dom.window, document: dom.window.document });
    mermaid = (await import("mermaid")).default as unknown as MermaidApi;
    mermaid.initialize({ startOnLoad: false });
  });

  /** What a reader sees in a node: Mermaid's entity codes decoded, the label parsed as HTML, <br> as newlines. */
  function visibleText(text: string): string {
    const html = text.replace(/ﬂ°°/g, "&#").replace(/ﬂ°/g, "&").replace(/¶ß/g, ";");
    const div = dom.window.document.createElement("div");
    div.innerHTML = html;
    for (const br of div.querySelectorAll("br")) br.replaceWith("\n");
    expect(div.children.length, `label ${JSON.stringify(text)} would render markup`).toBe(0);
    return div.textContent ?? "";
  }

  async function check(graph: ExportedGraph): Promise<void> {
    const src = toMermaid(graph);
    expect(src.split("\n")[0]).toBe("flowchart LR");
    expect(await mermaid.parse(src)).toMatchObject({ diagramType: "flowchart-v2" });
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(src);
    const vertices = [...diagram.db.getVertices().values()];
    expect(vertices).toHaveLength(graph.entities.length);
    const byNode = new Map(vertices.map((v) => [v.id, visibleText(v.text)]));
    const nodeOf = new Map<string, string>();
    for (const e of graph.entities) {
      const match = vertices.find((v) => byNode.get(v.id) === [...lines(e.name), `(${e.type})`].join("\n"));
      expect(match, `node for ${JSON.stringify(e.name)}`).toBeDefined();
      nodeOf.set(e.id, match!.id);
    }
    expect(new Set(nodeOf.values()).size).toBe(graph.entities.length);
    const edges = diagram.db.getEdges().map((e) => `${e.start} -${visibleText(e.text)}-> ${e.end}`);
    expect(edges).toEqual(graph.relations.map((r) => `${nodeOf.get(r.sourceId)} -${r.type}-> ${nodeOf.get(r.targetId)}`));
  }

  it("the parser and the label check really catch broken flowcharts (so the checks below can fail)", async () => {
    await expect(mermaid.parse('flowchart LR\n  a["unterminated]')).rejects.toThrow();
    await expect(mermaid.parse("flowchart LR\n  a -->|X|| b")).rejects.toThrow();
    await expect(mermaid.parse("flowchart LR\n  a[x \"q\" y]")).rejects.toThrow();
    // Unescaped quotes may parse, but the label loses them, and an injected `"] --> b["` adds a node.
    const lost = await mermaid.mermaidAPI.getDiagramFromText('flowchart LR\n  a["say "hi""]');
    expect(visibleText([...lost.db.getVertices().values()][0].text)).not.toBe('say "hi"');
    const injected = await mermaid.mermaidAPI.getDiagramFromText('flowchart LR\n  a["x"] --> evil["y"]');
    expect(injected.db.getVertices().size).toBe(2);
    const markup = await mermaid.mermaidAPI.getDiagramFromText('flowchart LR\n  a["<b>x</b>"]');
    expect(() => visibleText([...markup.db.getVertices().values()][0].text)).toThrow();
  });

  it("parses nasty names, self-loops, parallel edges and isolated nodes exactly", async () => {
    await check(await nastyGraph());
  });

  it("parses the empty graph and keeps entities whose ids aren't plain identifiers", async () => {
    expect(toMermaid({ entities: [], relations: [] })).toBe("flowchart LR");
    await mermaid.parse("flowchart LR");
    await check({
      entities: [
        { id: "end", name: "kw", type: "OTHER" },
        { id: "has space", name: "sp", type: "OTHER" },
        { id: "n0", name: "taken", type: "OTHER" },
        { id: "x-->y", name: "arrow id", type: "OTHER" },
      ],
      relations: [
        { id: "r1", sourceId: "end", targetId: "x-->y", type: "KNOWS" },
        { id: "r2", sourceId: "has space", targetId: "n0", type: "weird | type" },
      ],
    });
  });
});

describe("toDot (rendered by Graphviz compiled to WASM)", () => {
  let graphviz: Awaited<ReturnType<typeof Graphviz.load>>;
  let dom: JSDOM;
  beforeAll(async () => {
    graphviz = await Graphviz.load();
    dom = new JSDOM("");
  });

  function render(dot: string) {
    const svg = graphviz.layout(dot, "svg", "dot");
    const doc = new dom.window.DOMParser().parseFromString(svg, "image/svg+xml");
    const group = (cls: string) =>
      [...doc.querySelectorAll(`g.${cls}`)].map((g) => ({
        title: g.querySelector("title")?.textContent ?? "",
        text: [...g.querySelectorAll("text")].map((t) => t.textContent).join("\n"),
      }));
    return { nodes: group("node"), edges: group("edge") };
  }

  it("Graphviz really rejects broken DOT (so the checks below can fail)", () => {
    expect(() => graphviz.layout('digraph mm { "a" [label="say "hi""]; }', "svg", "dot")).toThrow();
    expect(() => graphviz.layout('digraph mm { "a" [label="ends \\"]; }', "svg", "dot")).toThrow();
  });

  it("renders nasty names, self-loops, parallel edges and isolated nodes with every label intact", async () => {
    const graph = await nastyGraph();
    const dot = toDot(graph);
    expect(dot.startsWith("digraph mm {")).toBe(true);
    const { nodes, edges } = render(dot);
    expect(nodes.map((n) => n.title).sort()).toEqual(graph.entities.map((e) => e.id).sort());
    for (const e of graph.entities) {
      expect(nodes.find((n) => n.title === e.id)?.text, JSON.stringify(e.name)).toBe([...lines(e.name), `(${e.type})`].join("\n"));
    }
    // Graphviz emits edges in its own order; compare as multisets.
    expect(edges.map((e) => `${e.title} ${e.text}`).sort()).toEqual(graph.relations.map((r) => `${r.sourceId}->${r.targetId} ${r.type}`).sort());
  });

  it("quotes ids and escapes labels that would break DOT", () => {
    const graph: ExportedGraph = {
      entities: [
        { id: 'id "quoted"', name: "plain", type: "OTHER" },
        { id: "id\\back", name: 'label "q" \\', type: "OTHER" },
        { id: "digraph", name: "{ } ; -> --", type: "OTHER" },
      ],
      relations: [
        { id: "r1", sourceId: 'id "quoted"', targetId: "id\\back", type: 'T"Y\\PE' },
        { id: "r2", sourceId: "digraph", targetId: "digraph", type: "KNOWS" },
      ],
    };
    const { nodes, edges } = render(toDot(graph));
    expect(nodes.map((n) => n.text)).toEqual(["plain\n(OTHER)", 'label "q" \\\n(OTHER)', "{ } ; -> --\n(OTHER)"]);
    expect(edges.map((e) => e.text)).toEqual(['T"Y\\PE', "KNOWS"]);
  });
});

interface MermaidApi {
  initialize(config: Record<string, unknown>): void;
  parse(text: string): Promise<{ diagramType: string } | false>;
  mermaidAPI: {
    getDiagramFromText(text: string): Promise<{
      db: {
        getVertices(): Map<string, { id: string; text: string }>;
        getEdges(): { start: string; end: string; text: string }[];
      };
    }>;
  };
}

/** The canonical shortest path by brute force: lengths from `to` backwards, then greedy smallest ids from `from`. */
function referencePath(rels: GraphEdge[], from: string, to: string, direction: Direction, type: string | undefined, maxDepth: number) {
  const usable = rels.filter((r) => type === undefined || r.type === type);
  // Steps walkable from a node: [next, relation id].
  const stepsFrom = (n: string) => {
    const out: [string, string][] = [];
    for (const r of usable) {
      if (direction !== "in" && r.sourceId === n) out.push([r.targetId, r.id]);
      if (direction !== "out" && r.targetId === n) out.push([r.sourceId, r.id]);
    }
    return out.filter(([next]) => next !== n);
  };
  const toDist = new Map([[to, 0]]);
  const all = new Set(rels.flatMap((r) => [r.sourceId, r.targetId]).concat([from, to]));
  for (let changed = true; changed; ) {
    changed = false;
    for (const n of all) {
      for (const [next] of stepsFrom(n)) {
        const d = toDist.get(next);
        if (d !== undefined && (toDist.get(n) ?? Infinity) > d + 1) {
          toDist.set(n, d + 1);
          changed = true;
        }
      }
    }
  }
  const length = toDist.get(from);
  if (length === undefined || length > maxDepth) return undefined;
  const nodes = [from];
  const edges: string[] = [];
  while (nodes[nodes.length - 1] !== to) {
    const here = nodes[nodes.length - 1];
    const options = stepsFrom(here)
      .filter(([next]) => toDist.get(next) === toDist.get(here)! - 1)
      .sort(([a, ra], [b, rb]) => (a < b ? -1 : a > b ? 1 : ra < rb ? -1 : 1));
    nodes.push(options[0][0]);
    edges.push(options[0][1]);
  }
  return { nodes, edges };
}

function referenceNeighbors(rels: GraphEdge[], root: string, direction: Direction, depth: number) {
  const dist = new Map([[root, 0]]);
  for (let level = 1; level <= depth; level++) {
    for (const r of rels) {
      for (const [a, b] of [
        ...(direction !== "in" ? [[r.sourceId, r.targetId]] : []),
        ...(direction !== "out" ? [[r.targetId, r.sourceId]] : []),
      ]) {
        if (dist.get(a) === level - 1 && !dist.has(b)) dist.set(b, level);
      }
    }
  }
  const edges = rels
    .filter(
      (r) =>
        (direction !== "in" && (dist.get(r.sourceId) ?? Infinity) < depth) || (direction !== "out" && (dist.get(r.targetId) ?? Infinity) < depth),
    )
    .map((r) => r.id);
  dist.delete(root);
  return { depths: dist, edges };
}

/** A small seeded PRNG, so the random graph is the same on every run. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
