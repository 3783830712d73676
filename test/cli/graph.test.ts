import { Graphviz } from "@hpcc-js/wasm-graphviz";
import { describe, expect, it } from "vitest";
import { openContext } from "../../src/core/context.js";
import { createEntity } from "../../src/core/entities.js";
import { exportGraph } from "../../src/core/graph.js";
import { toDot, toMermaid } from "../../src/core/graph-format.js";
import { createRelation } from "../../src/core/relations.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { runCli, type CliResult } from "../helpers/run-cli.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();



const mm = runCli;

const parse = (r: CliResult) => JSON.parse(r.stdout);

/**
 * A store holding Ann -KNOWS-> Bob -KNOWS-> Cy, Acme -EMPLOYS-> Cy (so Ann…Acme needs one edge
 * against its arrow), a self-loop on Ann, a "tricky" entity with a nasty name, and a lone Zed.
 */
async function graphStore() {
  const store = await tempDir();
  const ctx = await openContext({ storeDir: store, embedder: createTestEmbedder() });
  try {
    const ent = async (name: string, type = "PERSON") => (await createEntity(ctx, { name, type })).entity;
    const ann = await ent("Ann");
    const bob = await ent("Bob");
    const cy = await ent("Cy");
    const acme = await ent("Acme", "ORGANIZATION");
    const tricky = await ent('Tricky "q" \\ --> | [x] {y}; <b>\nline 2 😀');
    const zed = await ent("Zed");
    const rel = (s: { id: string }, t: { id: string }, type: string) => createRelation(ctx, { sourceId: s.id, targetId: t.id, type });
    const r = {
      annBob: await rel(ann, bob, "KNOWS"),
      bobCy: await rel(bob, cy, "KNOWS"),
      acmeCy: await rel(acme, cy, "EMPLOYS"),
      annAnn: await rel(ann, ann, "KNOWS"),
      trickyAnn: await rel(tricky, ann, "RELATED_TO"),
    };
    return { store, ann, bob, cy, acme, tricky, zed, r, all: await exportGraph(ctx), sub: await exportGraph(ctx, { root: ann.id, depth: 2, type: "KNOWS" }) };
  } finally {
    await ctx.close();
  }
}

describe("mm graph neighbors", () => {
  it("prints the neighbourhood as JSON when piped, and a table on a terminal", async () => {
    const { store, ann, bob, cy, tricky, r } = await graphStore();
    const res = await mm(store, ["graph", "neighbors", ann.id, "--depth", "2", "--direction", "out"]);
    expect(res.code, res.stderr).toBe(0);
    const body = parse(res);
    expect(Object.keys(body)).toEqual(["root", "depth", "direction", "nodes", "edges"]);
    expect(body).toEqual({
      root: { id: ann.id, name: "Ann", type: "PERSON" },
      depth: 2,
      direction: "out",
      nodes: [
        { id: bob.id, name: "Bob", type: "PERSON", depth: 1 },
        { id: cy.id, name: "Cy", type: "PERSON", depth: 2 },
      ],
      edges: expect.arrayContaining([
        { id: r.annBob.id, sourceId: ann.id, targetId: bob.id, type: "KNOWS" },
        { id: r.annAnn.id, sourceId: ann.id, targetId: ann.id, type: "KNOWS" },
        { id: r.bobCy.id, sourceId: bob.id, targetId: cy.id, type: "KNOWS" },
      ]),
    });
    expect(body.edges).toHaveLength(3);

    const both = parse(await mm(store, ["graph", "neighbours", ann.id]));
    expect(both.direction).toBe("both");
    expect(both.nodes.map((n: { id: string }) => n.id).sort()).toEqual([bob.id, tricky.id].sort());

    const typed = parse(await mm(store, ["graph", "neighbors", cy.id, "--type", "EMPLOYS", "--direction", "in", "--depth", "10"]));
    expect(typed.nodes.map((n: { name: string }) => n.name)).toEqual(["Acme"]);

    const table = await mm(store, ["graph", "neighbors", ann.id, "-d", "2"], { tty: true });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/depth\S*\s+name\s+type/);
    expect(table.stdout).toContain("Cy");
    expect(table.stdout).toMatch(/3 entities, 4 relations within 2 hops \(both\) of Ann/);
    expect(() => JSON.parse(table.stdout)).toThrow();
    expect(parse(await mm(store, ["graph", "neighbors", ann.id, "--json"], { tty: true })).root.id).toBe(ann.id);
  });

  it("exits 2 on bad flags and 3 on an unknown entity, printing nothing on stdout", async () => {
    const { store, ann } = await graphStore();
    const cases: [string[], number, string][] = [
      [["graph", "neighbors", ann.id, "--depth", "0"], 2, "VALIDATION_ERROR"],
      [["graph", "neighbors", ann.id, "--depth", "11"], 2, "VALIDATION_ERROR"],
      [["graph", "neighbors", ann.id, "--depth", "x"], 2, "VALIDATION_ERROR"],
      [["graph", "neighbors", ann.id, "--depth", "1.5"], 2, "VALIDATION_ERROR"],
      [["graph", "neighbors", ann.id, "--direction", "sideways"], 2, "VALIDATION_ERROR"],
      [["graph", "neighbors", ann.id, "--type", "works_for"], 2, "INVALID_RELATION_TYPE"],
      [["graph", "neighbors"], 2, "VALIDATION_ERROR"],
      [["graph", "neighbors", ann.id, "--bogus"], 2, "VALIDATION_ERROR"],
      [["graph", "neighbors", "ent_missing"], 3, "ENTITY_NOT_FOUND"],
      [["graph", "neighbors", ann.id, "--format", "mermaid"], 2, "VALIDATION_ERROR"],
      [["graph", "bogus"], 2, "VALIDATION_ERROR"],
    ];
    for (const [args, code, error] of cases) {
      const res = await mm(store, args);
      expect(res.code, args.join(" ")).toBe(code);
      expect(JSON.parse(res.stderr).error.code, args.join(" ")).toBe(error);
      expect(res.stdout, args.join(" ")).toBe("");
    }
  });
});

describe("mm graph path", () => {
  it("prints the path as JSON, and as an arrow line that keeps each relation's direction on a terminal", async () => {
    const { store, ann, bob, cy, acme, r } = await graphStore();
    const res = await mm(store, ["graph", "path", ann.id, acme.id]);
    expect(res.code, res.stderr).toBe(0);
    expect(parse(res)).toEqual({
      from: { id: ann.id, name: "Ann", type: "PERSON" },
      to: { id: acme.id, name: "Acme", type: "ORGANIZATION" },
      found: true,
      length: 3,
      nodes: [
        { id: ann.id, name: "Ann", type: "PERSON" },
        { id: bob.id, name: "Bob", type: "PERSON" },
        { id: cy.id, name: "Cy", type: "PERSON" },
        { id: acme.id, name: "Acme", type: "ORGANIZATION" },
      ],
      edges: [
        { id: r.annBob.id, sourceId: ann.id, targetId: bob.id, type: "KNOWS" },
        { id: r.bobCy.id, sourceId: bob.id, targetId: cy.id, type: "KNOWS" },
        { id: r.acmeCy.id, sourceId: acme.id, targetId: cy.id, type: "EMPLOYS" },
      ],
    });

    const line = await mm(store, ["graph", "path", ann.id, acme.id], { tty: true });
    expect(line.code).toBe(0);
    expect(line.stdout).toBe("Ann (PERSON) -[KNOWS]-> Bob (PERSON) -[KNOWS]-> Cy (PERSON) <-[EMPLOYS]- Acme (ORGANIZATION)\n3 hops\n");

    const none = await mm(store, ["graph", "path", ann.id, acme.id, "--direction", "out"], { tty: true });
    expect(none.code).toBe(0);
    expect(none.stdout).toBe(`No path from Ann (${ann.id}) to Acme (${acme.id}) within 6 hops, direction out.\n`);
    expect(parse(await mm(store, ["graph", "path", ann.id, acme.id, "--direction", "out"]))).toMatchObject({ found: false, length: null, nodes: [] });
    expect(parse(await mm(store, ["graph", "path", ann.id, acme.id, "--max-depth", "2"]))).toMatchObject({ found: false });
    expect(parse(await mm(store, ["graph", "path", ann.id, cy.id, "--type", "KNOWS", "--direction", "out"]))).toMatchObject({ found: true, length: 2 });
    expect(parse(await mm(store, ["graph", "path", ann.id, ann.id]))).toMatchObject({ found: true, length: 0, edges: [] });
  });

  it("exits 2 on bad flags and 3 naming an unknown endpoint", async () => {
    const { store, ann, bob } = await graphStore();
    for (const args of [
      ["graph", "path", ann.id, bob.id, "--max-depth", "0"],
      ["graph", "path", ann.id, bob.id, "--max-depth", "11"],
      ["graph", "path", ann.id, bob.id, "--max-depth", "six"],
      ["graph", "path", ann.id, bob.id, "--direction", "up"],
      ["graph", "path", ann.id],
    ]) {
      const res = await mm(store, args);
      expect(res.code, args.join(" ")).toBe(2);
      expect(JSON.parse(res.stderr).error.code).toBe("VALIDATION_ERROR");
    }
    const badType = await mm(store, ["graph", "path", ann.id, bob.id, "--type", "knows"]);
    expect([badType.code, JSON.parse(badType.stderr).error.code]).toEqual([2, "INVALID_RELATION_TYPE"]);
    const missing = await mm(store, ["graph", "path", ann.id, "ent_nowhere"]);
    expect(missing.code).toBe(3);
    expect(JSON.parse(missing.stderr).error).toMatchObject({ code: "ENTITY_NOT_FOUND", missing: [{ field: "to", id: "ent_nowhere" }] });
    expect(missing.stdout).toBe("");
  });
});

describe("mm graph export", () => {
  it("prints exactly the core's Mermaid and DOT with --format, JSON when piped, Mermaid on a bare terminal", async () => {
    const { store, ann, all, sub } = await graphStore();
    const mermaid = await mm(store, ["graph", "export", "--format", "mermaid"]);
    expect(mermaid.code, mermaid.stderr).toBe(0);
    expect(mermaid.stdout).toBe(toMermaid(all) + "\n");
    expect(mermaid.stdout).toContain("#34;q#34;");

    const dot = await mm(store, ["graph", "export", "--format", "dot"]);
    expect(dot.code).toBe(0);
    expect(dot.stdout).toBe(toDot(all) + "\n");
    const svg = (await Graphviz.load()).layout(dot.stdout, "svg", "dot");
    expect(svg.match(/class="node"/g)).toHaveLength(6);
    expect(svg.match(/class="edge"/g)).toHaveLength(5);

    const piped = await mm(store, ["graph", "export"]);
    expect(parse(piped)).toEqual(all);
    expect(parse(await mm(store, ["graph", "export", "--format", "json"], { tty: true }))).toEqual(all);
    expect(parse(await mm(store, ["graph", "export", "--json"], { tty: true }))).toEqual(all);
    const nd = await mm(store, ["graph", "export", "--format", "ndjson"]);
    expect(nd.stdout.trim().split("\n")).toHaveLength(1);
    expect(JSON.parse(nd.stdout)).toEqual(all);

    const terminal = await mm(store, ["graph", "export"], { tty: true });
    expect(terminal.stdout).toBe(toMermaid(all) + "\n");

    const rooted = await mm(store, ["graph", "export", "--root", ann.id, "--depth", "2", "--type", "KNOWS", "--format", "json"]);
    expect(parse(rooted)).toEqual(sub);
    expect(sub.entities.map((e) => e.name)).toEqual(["Ann", "Bob", "Cy"]);
    const rootedDot = await mm(store, ["graph", "export", "-r", ann.id, "-d", "2", "-t", "KNOWS", "--format", "dot"]);
    expect(rootedDot.stdout).toBe(toDot(sub) + "\n");
  });

  it("exits 2 on bad flags and 3 on an unknown root; --format dot elsewhere is refused", async () => {
    const { store, ann } = await graphStore();
    const cases: [string[], number, string][] = [
      [["graph", "export", "--depth", "2"], 2, "VALIDATION_ERROR"],
      [["graph", "export", "--direction", "in"], 2, "VALIDATION_ERROR"],
      [["graph", "export", "--root", ann.id, "--depth", "0"], 2, "VALIDATION_ERROR"],
      [["graph", "export", "--root", ann.id, "--direction", "around"], 2, "VALIDATION_ERROR"],
      [["graph", "export", "--type", "Knows"], 2, "INVALID_RELATION_TYPE"],
      [["graph", "export", "--format", "svg"], 2, "VALIDATION_ERROR"],
      [["graph", "export", "--root", "ent_missing", "--format", "dot"], 3, "ENTITY_NOT_FOUND"],
      [["memories", "list", "--format", "dot"], 2, "VALIDATION_ERROR"],
      [["memories", "list", "--format", "mermaid"], 2, "VALIDATION_ERROR"],
      [["graph", "path", ann.id, ann.id, "--format", "dot"], 2, "VALIDATION_ERROR"],
    ];
    for (const [args, code, error] of cases) {
      const res = await mm(store, args);
      expect(res.code, args.join(" ")).toBe(code);
      expect(JSON.parse(res.stderr).error.code, args.join(" ")).toBe(error);
      expect(res.stdout, args.join(" ")).toBe("");
    }
  });

  it("documents each command with examples", async () => {
    const store = await tempDir();
    for (const sub of ["neighbors", "path", "export"]) {
      const help = await mm(store, ["graph", sub, "--help"]);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain("Examples:");
      expect(help.stdout).toContain(`mm graph ${sub}`);
    }
    expect((await mm(store, ["graph", "export", "--help"])).stdout).toMatch(/--format mermaid \| dot \| json/);
  });
});
