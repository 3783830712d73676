import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { json, runMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * `mm import --from mcp-memory`: the reference MCP memory server's memory.jsonl, written the way
 * its saveGraph writes it (modelcontextprotocol/servers, src/memory/index.ts: entity lines, then
 * relation lines, each JSON.stringify'd with these keys in this order, "\n"-joined, with a final
 * newline), imported by the real `mm` with the real model, then found by meaning.
 */

const tempDir = useTempDirs();

type Graph = { entities: { name: string; entityType: string; observations: string[] }[]; relations: { from: string; to: string; relationType: string }[] };

/** A new store's path and a memory.jsonl holding `graph`, in a temp directory. */
async function storeAndFile(graph: Graph): Promise<{ store: string; file: string }> {
  const dir = await tempDir();
  const file = join(dir, "memory.jsonl");
  await writeFile(file, referenceFile(graph));
  return { store: join(dir, "store"), file };
}

function referenceFile(graph: Graph): string {
  const lines = [
    ...graph.entities.map((e) => JSON.stringify({ type: "entity", name: e.name, entityType: e.entityType, observations: e.observations })),
    ...graph.relations.map((r) => JSON.stringify({ type: "relation", from: r.from, to: r.to, relationType: r.relationType })),
  ];
  return lines.join("\n") + "\n";
}

describe("mm import --from mcp-memory", () => {
  it("imports entities, observations and relations, finds an observation by meaning, and adds nothing on a second run", async () => {
    const { store, file } = await storeAndFile({
      entities: [
        { name: "John_Smith", entityType: "person", observations: ["Speaks fluent Spanish", "Graduated in 2019", "Allergic to shellfish"] },
        { name: "Anthropic", entityType: "organization", observations: ["AI safety company"] },
        { name: "Lisbon", entityType: "city", observations: [] },
      ],
      relations: [
        { from: "John_Smith", to: "Anthropic", relationType: "works_at" },
        { from: "John_Smith", to: "Lisbon", relationType: "lives in" },
        { from: "John_Smith", to: "Nobody", relationType: "knows" },
      ],
    });
    const r = await runMm(["import", "--from", "mcp-memory", file, "--user", "me"], { store });
    expect(r.code).toBe(3); // the relation to a missing entity fails alone
    const results = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(results.map((x) => [x.line, x.kind, x.status])).toEqual([
      [1, "entity", "added"],
      [2, "entity", "added"],
      [3, "entity", "added"],
      [4, "relation", "added"],
      [5, "relation", "added"],
      [6, "relation", "failed"],
    ]);
    expect(results[5].error.code).toBe("TARGET_ENTITY_NOT_FOUND");

    const entities = json(await runMm(["entities", "list"], { store })).items;
    expect(Object.fromEntries(entities.map((e: { name: string; type: string }) => [e.name, e.type]))).toEqual({ John_Smith: "PERSON", Anthropic: "ORGANIZATION", Lisbon: "LOCATION" });
    const relations = json(await runMm(["relations", "list"], { store })).items;
    expect(relations.map((x: { type: string }) => x.type).sort()).toEqual(["LIVES_IN", "WORKS_AT"]);

    // By meaning: the query shares no word with the observation.
    const found = json(await runMm(["memories", "search", "Which languages can he talk in?", "--user", "me", "--mode", "semantic", "--threshold", "0.3"], { store }));
    expect(found.results[0].content).toBe("John_Smith: Speaks fluent Spanish"); // its subject in front (see below)
    const john = entities.find((e: { name: string }) => e.name === "John_Smith");
    expect(json(await runMm(["entities", "memories", john.id], { store })).pagination.total).toBe(3);

    const again = await runMm(["import", "--from", "mcp-memory", file, "--user", "me"], { store });
    const second = again.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(second.slice(0, 5).map((x) => x.status)).toEqual(["skipped", "skipped", "skipped", "skipped", "skipped"]);
    expect(json(await runMm(["memories", "list"], { store })).pagination.total).toBe(4);
  });
});

describe("mm import --from mcp-memory: an observation keeps its subject (issue 26)", () => {
  it("\"HQ is in Phoenix\" under Acme is found by \"where is Acme headquartered?\", and reads back as written", async () => {
    const { store, file } = await storeAndFile({
      entities: [
        { name: "Acme", entityType: "organization", observations: ["HQ is in Phoenix", "Founded by Acme's two engineers in 2011"] },
        { name: "Globex", entityType: "organization", observations: ["HQ is in Springfield"] },
      ],
      relations: [],
    });
    const r = await runMm(["import", "--from", "mcp-memory", file, "--user", "me"], { store });
    expect(r.code, r.stderr).toBe(0);
    // It ranks first, above Globex's HQ; it doesn't pass 0.5, as it lacks "headquartered"
    // (docs/search-quality.md: a note that lacks some of the question's words is discounted).
    const found = json(await runMm(["memories", "search", "where is Acme headquartered?", "--user", "me", "--threshold", "0"], { store }));
    expect(found.results[0]?.content).toBe("Acme: HQ is in Phoenix");
    // An observation that names its entity already is stored as written.
    const founded = json(await runMm(["memories", "search", "Founded by Acme's two engineers", "--user", "me"], { store }));
    expect(founded.results[0]?.content).toBe("Founded by Acme's two engineers in 2011");
    // The reference tools read the observations back exactly as they were written.
    const { stdioClient, ok } = await import("../helpers/mcp-client.js");
    const { client } = await stdioClient(["--user", "me"], { MM_STORE: store });
    const graph = await ok(client, "open_nodes", { names: ["Acme"] });
    expect(graph.entities[0].observations).toEqual(["HQ is in Phoenix", "Founded by Acme's two engineers in 2011"]);
    await client.close();
    // A second run adds nothing.
    const again = await runMm(["import", "--from", "mcp-memory", file, "--user", "me"], { store });
    expect(again.stdout.trim().split("\n").map((l) => JSON.parse(l).status)).toEqual(["skipped", "skipped"]);
    expect(json(await runMm(["memories", "list", "--user", "me"], { store })).pagination.total).toBe(3);
  });
});

describe("mm import --from mcp-memory on an mm export (issue 26)", () => {
  it("recognises the file, writes nothing, and says how to import it", async () => {
    const dir = await tempDir();
    const from = join(dir, "from");
    expect((await runMm(["memories", "add", "Ada wrote the first program", "--user", "me"], { store: from })).code).toBe(0);
    expect((await runMm(["entities", "create", "Ada Lovelace", "--type", "PERSON"], { store: from })).code).toBe(0);
    const file = join(dir, "backup.jsonl");
    expect((await runMm(["export", "-o", file], { store: from })).code).toBe(0);
    const store = join(dir, "store");
    const r = await runMm(["import", "--from", "mcp-memory", file, "--format", "table"], { store });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("This file is an mm export (its first line is the mm-export header), not the reference MCP memory server's memory.jsonl: import it without --from mcp-memory (`mm import <file>`).");
    expect(r.stderr).not.toMatch(/line \d+:/);
    expect(json(await runMm(["entities", "list"], { store })).pagination.total).toBe(0);
    expect((await runMm(["import", file], { store })).code).toBe(0);
  });
});
