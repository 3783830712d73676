import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as R from "../../src/schemas/responses.js";
import { TOOLS } from "../../src/mcp/tools.js";
import { call, fails, ok, stdioClient } from "../helpers/mcp-client.js";
import { MM_BIN, runMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const TRACER = fileURLToPath(new URL("../helpers/trace-imports.mjs", import.meta.url));
const REFERENCE_TOOLS = ["create_entities", "create_relations", "add_observations", "delete_entities", "delete_observations", "delete_relations", "read_graph", "search_nodes", "open_nodes"];

/**
 * A spawned `mm mcp`, as an MCP client config runs it, driven by the SDK's own Client over stdio,
 * on a real store with the real model.
 */
let client: Client;
let stderr: () => string;
let store: string;

beforeAll(async () => {
  const { mkdtemp } = await import("node:fs/promises");
  const { tmpdir } = await import("node:os");
  store = join(await mkdtemp(join(tmpdir(), "mm-mcp-")), "store");
  ({ client, stderr } = await stdioClient(["--user", "alice", "--agent", "desk"], { MM_STORE: store }));
});

afterAll(async () => {
  await client?.close();
  const { rm } = await import("node:fs/promises");
  if (store) await rm(join(store, ".."), { recursive: true, force: true });
});

function schemaOk(schema: { safeParse(v: unknown): { success: boolean; error?: unknown } }, body: unknown): void {
  const parsed = schema.safeParse(body);
  expect(parsed.success, `${JSON.stringify(body).slice(0, 300)}: ${JSON.stringify(parsed.error)?.slice(0, 300)}`).toBe(true);
}

describe("mm mcp over stdio", () => {
  it("lists every tool with an object input schema, without opening the store or loading the model", async () => {
    const dir = await tempDir();
    const trace = join(dir, "trace.txt");
    const traced = await stdioClient([], { MM_STORE: join(dir, "store"), MM_TRACE_FILE: trace }, ["--import", TRACER]);
    const started = performance.now();
    const { tools } = await traced.client.listTools();
    const listMs = performance.now() - started;
    await traced.client.close();
    expect(tools.map((t) => t.name)).toEqual(TOOLS.map((t) => t.name));
    for (const name of REFERENCE_TOOLS) expect(tools.map((t) => t.name)).toContain(name);
    for (const t of tools) {
      expect(t.inputSchema.type, t.name).toBe("object");
      expect(t.description!.length, t.name).toBeGreaterThan(10);
    }
    const add = tools.find((t) => t.name === "memories_add")!;
    expect(add.inputSchema.properties).toHaveProperty("content");
    expect(tools.find((t) => t.name === "memories_get")!.inputSchema.required).toEqual(["id"]);
    const loaded = (await readFile(trace, "utf8")).split("\n");
    for (const heavy of ["@energetic-ai", "@tensorflow", "lancedb.cjs", "apache-arrow"]) {
      expect(loaded.filter((u) => u.includes(heavy)), heavy).toEqual([]);
    }
    expect(listMs).toBeLessThan(1000);
  });

  it("prints nothing but JSON-RPC on stdout, and answers initialize and tools/list before any store exists", async () => {
    const dir = await tempDir();
    const child = spawn(process.execPath, [MM_BIN, "mcp"], { env: { ...process.env, MM_STORE: join(dir, "store") }, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    const send = (m: object) => child.stdin.write(JSON.stringify(m) + "\n");
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "memories_get", arguments: { id: "mem_nope" } } });
    child.stdin.end();
    const code = await new Promise((r) => child.on("close", r));
    expect(code).toBe(0);
    const lines = out.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.map((l) => l.id)).toEqual([1, 2, 3]);
    for (const l of lines) expect(l.jsonrpc).toBe("2.0");
    expect(lines[0].result.serverInfo.name).toBe("mm");
    expect(lines[2].result.isError).toBe(true);
    expect(lines[2].result.structuredContent.error.code).toBe("MEMORY_NOT_FOUND");
  });

  it("answers a JSON-RPC batch with a JSON-RPC error instead of leaving it unanswered, and goes on serving", async () => {
    const dir = await tempDir();
    const child = spawn(process.execPath, [MM_BIN, "mcp"], { env: { ...process.env, MM_STORE: join(dir, "store") }, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    const send = (text: string) => child.stdin.write(text + "\n");
    send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }));
    send(JSON.stringify([{ jsonrpc: "2.0", id: 2, method: "tools/list" }, { jsonrpc: "2.0", id: 3, method: "ping" }]));
    send("  []");
    // A batch split across writes is still one line.
    child.stdin.write('[{"jsonrpc":"2.0","id":4,');
    await new Promise((r) => setTimeout(r, 50));
    send('"method":"ping"}]');
    send(JSON.stringify({ jsonrpc: "2.0", id: 5, method: "ping" }));
    child.stdin.end();
    expect(await new Promise((r) => child.on("close", r))).toBe(0);
    const lines = out.trim().split("\n").map((l) => JSON.parse(l));
    // Answers come as they are ready: the refusals need no server, so they may come first.
    const refusals = lines.filter((l) => l.id === null);
    expect(refusals).toHaveLength(3);
    for (const l of refusals) expect(l).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: expect.stringMatching(/batch.*one message per line/i) } });
    expect(lines.filter((l) => l.id !== null).map((l) => l.id)).toEqual([1, 5]);
    expect(lines.find((l) => l.id === 5).result).toEqual({});
  });

  it("runs every memory tool with good input; the scope fills userId and agentId", async () => {
    const added = await ok(client, "memories_add", { content: "Zoë moved to Lisbon 🌊 in 2024", tags: ["moves"], metadata: { source: "chat", n: 1 } });
    schemaOk(R.Memory, added);
    expect(added).toMatchObject({ userId: "alice", agentId: "desk", tags: ["moves"], metadata: { source: "chat", n: 1 } });
    expect(await ok(client, "memories_get", { id: added.id })).toEqual(added);
    const found = await ok(client, "memories_search", { query: "where does Zoë live now?", threshold: 0 });
    schemaOk(R.SearchResults, found);
    expect(found.results[0].id).toBe(added.id);
    const listed = await ok(client, "memories_list", { tags: ["moves"] });
    schemaOk(R.page(R.MemoryListItem), listed);
    expect(listed.items.map((m: { id: string }) => m.id)).toEqual([added.id]);
    const updated = await ok(client, "memories_update", { id: added.id, tags: null, metadata: { source: "mcp" } });
    expect(updated.tags).toBeUndefined();
    expect(updated.metadata).toEqual({ source: "mcp" });
    expect(await ok(client, "memories_delete", { id: added.id })).toEqual({ success: true, id: added.id });
  });

  it("fences ids to its user and agent: another user's or agent's memory answers like an unknown id, and is left alone", async () => {
    await ok(client, "memories_list", {}); // the store exists
    const bob = JSON.parse((await runMm(["memories", "add", "bob's private note", "--user", "bob", "--json"], { store })).stdout);
    const otherAgent = JSON.parse((await runMm(["memories", "add", "alice via another agent", "--user", "alice", "--agent", "phone", "--json"], { store })).stdout);
    for (const id of [bob.id, otherAgent.id]) {
      const unknown = await fails(client, "memories_get", { id: "mem_00000000000000000000000000" }, "MEMORY_NOT_FOUND");
      const fenced = await fails(client, "memories_get", { id }, "MEMORY_NOT_FOUND");
      expect(fenced.message).toBe(unknown.message.replace("mem_00000000000000000000000000", id));
      await fails(client, "memories_update", { id, content: "overwritten" }, "MEMORY_NOT_FOUND");
      await fails(client, "memories_delete", { id }, "MEMORY_NOT_FOUND");
      expect(JSON.parse((await runMm(["memories", "get", id, "--json"], { store })).stdout).content).not.toBe("overwritten");
    }
    // An entity's memories: alice's (of this agent) only, though bob's memory links to it too.
    const entity = JSON.parse((await runMm(["entities", "create", "Shared Topic", "--type", "CONCEPT", "--json"], { store })).stdout);
    const bobs = JSON.parse((await runMm(["memories", "add", "bob on the shared topic", "--user", "bob", "--entity", entity.id, "--json"], { store })).stdout);
    const alices = await ok(client, "memories_add", { content: "alice on the shared topic", entityIds: [entity.id] });
    const listed = await ok(client, "entities_memories", { id: entity.id });
    expect(listed.items.map((m: { id: string }) => m.id)).toEqual([alices.id]);
    expect(listed.pagination.total).toBe(1);
    expect(JSON.stringify(listed)).not.toContain(bobs.id);
    const mine = await ok(client, "memories_add", { content: "alice's own note" });
    await fails(client, "memories_update", { id: mine.id, agentId: "phone" }, "FORBIDDEN");
    expect((await ok(client, "memories_get", { id: mine.id })).userId).toBe("alice");
  });

  it("is no existence oracle: another user's or agent's id named in supersedes or by answers exactly as an unknown id does", async () => {
    // A store of its own: the memories here would change what the suite's later searches find.
    const store = join(await tempDir(), "store");
    const { client } = await stdioClient(["--user", "alice", "--agent", "desk"], { MM_STORE: store });
    const mine = await ok(client, "memories_add", { content: "alice keeps her bike in the shed" });
    const bob = JSON.parse((await runMm(["memories", "add", "bob keeps his bike at work", "--user", "bob", "--json"], { store })).stdout);
    const otherAgent = JSON.parse((await runMm(["memories", "add", "alice's phone note on bikes", "--user", "alice", "--agent", "phone", "--json"], { store })).stdout);
    const unknownId = "mem_00000000000000000000000000";
    const calls: [string, (id: string) => Record<string, unknown>][] = [
      ["memories_add", (id) => ({ content: "alice moved her bike to the hall", supersedes: [id] })],
      ["memories_update", (id) => ({ id: mine.id, supersedes: [id] })],
      ["memories_supersede", (id) => ({ id: mine.id, by: id })],
      ["memories_get", (id) => ({ id })],
      ["memories_history", (id) => ({ id })],
    ];
    for (const [tool, args] of calls) {
      const unknown = await fails(client, tool, args(unknownId), "MEMORY_NOT_FOUND");
      for (const id of [bob.id, otherAgent.id]) {
        const fenced = await fails(client, tool, args(id), "MEMORY_NOT_FOUND");
        expect(JSON.stringify(fenced), tool).toBe(JSON.stringify(unknown).replaceAll(unknownId, id));
      }
    }
    // Nothing was replaced.
    for (const id of [bob.id, otherAgent.id]) expect(JSON.parse((await runMm(["memories", "get", id, "--json"], { store })).stdout).supersededBy).toBeUndefined();
    expect((await ok(client, "memories_get", { id: mine.id })).supersededBy).toBeUndefined();
    await client.close();
  });

  it("runs every graph tool with good input", async () => {
    const ada = await ok(client, "entities_create", { name: "Ada Lovelace", type: "PERSON", description: "mathematician" });
    schemaOk(R.Entity, ada);
    const engine = await ok(client, "entities_create", { name: "Analytical Engine", type: "PRODUCT" });
    const babbage = await ok(client, "entities_create", { name: "Charles Babbage", type: "PERSON" });
    expect((await ok(client, "entities_create", { name: "ada lovelace", type: "PERSON" })).id).toBe(ada.id);
    expect(await ok(client, "entities_get", { id: ada.id })).toEqual(ada);
    schemaOk(R.page(R.EntityListItem), await ok(client, "entities_list", { search: "lovel" }));
    expect((await ok(client, "entities_update", { id: ada.id, description: null })).description).toBeUndefined();
    const wrote = await ok(client, "relations_create", { sourceId: ada.id, targetId: engine.id, type: "CREATED", metadata: { year: 1843 } });
    schemaOk(R.Relation, wrote);
    const knows = await ok(client, "relations_create", { sourceId: babbage.id, targetId: ada.id, type: "KNOWS" });
    schemaOk(R.RelationWithEnds, await ok(client, "relations_get", { id: wrote.id }));
    schemaOk(R.page(R.RelationListItem), await ok(client, "relations_list", { sourceId: ada.id }));
    const retyped = await ok(client, "relations_update", { id: knows.id, type: "WORKED_WITH" });
    expect(retyped).toMatchObject({ type: "WORKED_WITH", source: { name: "Charles Babbage" }, target: { name: "Ada Lovelace" } });
    const linked = await ok(client, "memories_add", { content: "Ada wrote the first program", entityIds: [ada.id] });
    expect((await ok(client, "entities_memories", { id: ada.id })).items.map((m: { id: string }) => m.id)).toEqual([linked.id]);
    const around = await ok(client, "graph_neighbors", { id: ada.id, depth: 1 });
    schemaOk(R.Neighbors, around);
    expect(around.nodes.map((n: { name: string }) => n.name).sort()).toEqual(["Analytical Engine", "Charles Babbage"]);
    const path = await ok(client, "graph_path", { from: babbage.id, to: engine.id });
    schemaOk(R.Path, path);
    expect(path).toMatchObject({ found: true, length: 2 });
    schemaOk(R.GraphExport, await ok(client, "graph_export", {}));
    expect(await ok(client, "relations_delete", { id: wrote.id })).toEqual({ success: true, id: wrote.id });
    expect(await ok(client, "entities_delete", { id: babbage.id })).toEqual({ success: true, id: babbage.id, deletedRelations: 1 });
  });

  it("answers bad input with the API's codes as tool errors, and keeps serving", async () => {
    const ent = await ok(client, "entities_create", { name: "Kept", type: "OTHER" });
    const cases: [string, Record<string, unknown>, string][] = [
      ["memories_add", { content: "x".repeat(10_001) }, "CONTENT_TOO_LONG"],
      ["memories_add", { content: "" }, "VALIDATION_ERROR"],
      ["memories_add", { content: "hi", userId: "bob" }, "FORBIDDEN"],
      ["memories_add", { content: "hi", tags: "not-a-list" }, "VALIDATION_ERROR"],
      ["memories_add", { content: "hi", entityIds: ["ent_missing"] }, "ENTITY_NOT_FOUND"],
      ["memories_add", { content: "hi", user_id: "typo" }, "VALIDATION_ERROR"],
      ["memories_search", { query: "x", threshold: 7 }, "VALIDATION_ERROR"],
      ["memories_search", { query: "x", mode: "fuzzy" }, "VALIDATION_ERROR"],
      ["memories_search", {}, "VALIDATION_ERROR"],
      ["memories_list", { limit: 0 }, "VALIDATION_ERROR"],
      ["memories_get", {}, "VALIDATION_ERROR"],
      ["memories_get", { id: 42 }, "VALIDATION_ERROR"],
      ["memories_get", { id: "mem_00000000000000000000000000" }, "MEMORY_NOT_FOUND"],
      ["memories_update", { id: "mem_00000000000000000000000000", content: "x" }, "MEMORY_NOT_FOUND"],
      ["memories_delete", { id: "mem_00000000000000000000000000" }, "MEMORY_NOT_FOUND"],
      ["entities_create", { name: "", type: "PERSON" }, "NAME_REQUIRED"],
      ["entities_create", { name: "X", type: "person" }, "INVALID_ENTITY_TYPE"],
      ["entities_update", { id: ent.id, type: "ROBOT" }, "INVALID_ENTITY_TYPE"],
      ["entities_get", { id: "ent_missing" }, "ENTITY_NOT_FOUND"],
      ["entities_list", { type: "nope" }, "INVALID_ENTITY_TYPE"],
      ["entities_delete", { id: "ent_missing" }, "ENTITY_NOT_FOUND"],
      ["entities_memories", { id: "ent_missing" }, "ENTITY_NOT_FOUND"],
      ["relations_create", { sourceId: "ent_missing", targetId: ent.id, type: "KNOWS" }, "SOURCE_ENTITY_NOT_FOUND"],
      ["relations_create", { sourceId: ent.id, targetId: "ent_missing", type: "KNOWS" }, "TARGET_ENTITY_NOT_FOUND"],
      ["relations_create", { sourceId: ent.id, targetId: ent.id, type: "works_for" }, "INVALID_RELATION_TYPE"],
      ["relations_get", { id: "rel_missing" }, "RELATION_NOT_FOUND"],
      ["relations_update", { id: "rel_missing", type: "KNOWS" }, "RELATION_NOT_FOUND"],
      ["relations_delete", { id: "rel_missing" }, "RELATION_NOT_FOUND"],
      ["relations_list", { type: "lower" }, "INVALID_RELATION_TYPE"],
      ["graph_neighbors", { id: "ent_missing" }, "ENTITY_NOT_FOUND"],
      ["graph_neighbors", { id: ent.id, depth: 11 }, "VALIDATION_ERROR"],
      ["graph_path", { from: ent.id }, "VALIDATION_ERROR"],
      ["graph_export", { depth: 2 }, "VALIDATION_ERROR"],
      ["no_such_tool", {}, "NOT_FOUND"],
      ["create_entities", { entities: "Alice" }, "VALIDATION_ERROR"],
      ["create_relations", { relations: [{ from: "Nobody", to: "Kept", relationType: "knows" }] }, "SOURCE_ENTITY_NOT_FOUND"],
      ["add_observations", { observations: [{ entityName: "Nobody", contents: ["x"] }] }, "ENTITY_NOT_FOUND"],
      ["search_nodes", {}, "VALIDATION_ERROR"],
      ["open_nodes", { names: "Kept" }, "VALIDATION_ERROR"],
    ];
    for (const [tool, args, code] of cases) await fails(client, tool, args, code);
    expect(await ok(client, "entities_get", { id: ent.id })).toEqual(ent);
    expect((await client.listTools()).tools.length).toBe(TOOLS.length);
    expect(stderr()).not.toMatch(/internal error/i);
  });

  it("runs the reference memory server's tools with its argument shapes, and finds observations by meaning", async () => {
    const created = await ok(client, "create_entities", {
      entities: [
        { name: "John_Smith", entityType: "person", observations: ["Speaks fluent Spanish", "Graduated in 2019"] },
        { name: "Anthropic", entityType: "organization", observations: ["Builds AI systems"] },
        { name: "John_Smith", entityType: "person", observations: ["duplicate in the same call"] },
      ],
    });
    expect(created.entities).toEqual([
      { name: "John_Smith", entityType: "person", observations: ["Speaks fluent Spanish", "Graduated in 2019"] },
      { name: "Anthropic", entityType: "organization", observations: ["Builds AI systems"] },
    ]);
    expect((await ok(client, "create_entities", { entities: [{ name: "Anthropic", entityType: "company", observations: [] }] })).entities).toEqual([]);
    const rel = await ok(client, "create_relations", { relations: [{ from: "John_Smith", to: "Anthropic", relationType: "works at" }] });
    expect(rel.relations).toEqual([{ from: "John_Smith", to: "Anthropic", relationType: "works at" }]);
    expect((await ok(client, "create_relations", { relations: [{ from: "John_Smith", to: "Anthropic", relationType: "works at" }] })).relations).toEqual([]);
    const obs = await ok(client, "add_observations", { observations: [{ entityName: "John_Smith", contents: ["Prefers morning meetings", "Speaks fluent Spanish"] }] });
    expect(obs.results).toEqual([{ entityName: "John_Smith", addedObservations: ["Prefers morning meetings"] }]);

    const graph = await ok(client, "read_graph", {});
    const john = graph.entities.find((e: { name: string }) => e.name === "John_Smith");
    expect(john).toEqual({ name: "John_Smith", entityType: "person", observations: ["Speaks fluent Spanish", "Graduated in 2019", "Prefers morning meetings"] });
    expect(graph.relations).toContainEqual({ from: "John_Smith", to: "Anthropic", relationType: "works at" });

    // mm's own view of the same data: types mapped, originals kept, observations are linked memories.
    const person = (await ok(client, "entities_list", { search: "john_smith" })).items[0];
    expect(person.type).toBe("PERSON");
    expect((await ok(client, "entities_get", { id: person.id })).metadata).toEqual({ entityType: "person" });
    expect((await ok(client, "relations_list", { sourceId: person.id })).items[0].type).toBe("WORKS_AT");
    expect((await ok(client, "entities_memories", { id: person.id })).pagination.total).toBe(3);

    // By meaning: no word of the query is in the observation.
    const found = await ok(client, "search_nodes", { query: "Which languages can he talk in?" });
    expect(found.entities.map((e: { name: string }) => e.name)).toContain("John_Smith");
    expect(found.relations).toContainEqual({ from: "John_Smith", to: "Anthropic", relationType: "works at" });
    // A natural question, no word in common with the observation that answers it; and one nothing answers.
    await ok(client, "create_entities", { entities: [{ name: "Priya", entityType: "person", observations: ["Priya adopted a rescue greyhound last winter", "Works nights as a pediatric nurse"] }] });
    expect((await ok(client, "search_nodes", { query: "who owns a dog?" })).entities.map((e: { name: string }) => e.name)).toEqual(["Priya"]);
    expect((await ok(client, "search_nodes", { query: "best pizza in town?" })).entities).toEqual([]);
    const opened = await ok(client, "open_nodes", { names: ["Anthropic", "Nobody"] });
    expect(opened.entities.map((e: { name: string }) => e.name)).toEqual(["Anthropic"]);
    expect(opened.relations).toEqual([{ from: "John_Smith", to: "Anthropic", relationType: "works at" }]);

    expect(await ok(client, "delete_observations", { deletions: [{ entityName: "John_Smith", observations: ["Graduated in 2019"] }] })).toEqual({
      success: true,
      message: "Observations deleted successfully",
    });
    expect(await ok(client, "delete_relations", { relations: [{ from: "John_Smith", to: "Anthropic", relationType: "works at" }] })).toEqual({
      success: true,
      message: "Relations deleted successfully",
    });
    expect(await ok(client, "delete_entities", { entityNames: ["Anthropic", "Nobody"] })).toEqual({ success: true, message: "Deleted 1 of 2 entities. Not found: Nobody" });
    const after = await ok(client, "read_graph", {});
    expect(after.entities.find((e: { name: string }) => e.name === "Anthropic")).toBeUndefined();
    expect(after.entities.find((e: { name: string }) => e.name === "John_Smith").observations).toEqual(["Speaks fluent Spanish", "Prefers morning meetings"]);
    expect(after.relations.filter((r: { to: string }) => r.to === "Anthropic")).toEqual([]);
  });

  it("counts each call against the account's quota like the command it mirrors", async () => {
    const before = JSON.parse((await runMm(["usage", "--json"], { store })).stdout).used;
    await call(client, "memories_list", {});
    await call(client, "memories_get", { id: "mem_missing" });
    await client.listTools();
    expect(JSON.parse((await runMm(["usage", "--json"], { store })).stdout).used).toBe(before + 2);
  });
  it("works in the project of --project: adds go to it, searches see it and the global memories", async () => {
    await ok(client, "memories_list", {}); // the store exists
    const blog = JSON.parse((await runMm(["memories", "add", "the blog deploys with netlify", "--user", "alice", "--agent", "desk", "--project", "blog", "--json"], { store })).stdout);
    const global = JSON.parse((await runMm(["memories", "add", "alice deploys on fridays only", "--user", "alice", "--agent", "desk", "--json"], { store })).stdout);
    const scoped = await stdioClient(["--user", "alice", "--agent", "desk", "--project", "shop"], { MM_STORE: store });
    try {
      const added = await ok(scoped.client, "memories_add", { content: "the shop deploys with fly.io" });
      expect(added.project).toBe("shop");
      const found = await ok(scoped.client, "memories_search", { query: "how does it deploy?", threshold: 0, limit: 100 });
      const seen = found.results.map((h: { id: string }) => h.id);
      expect(seen).toEqual(expect.arrayContaining([added.id, global.id]));
      expect(seen).not.toContain(blog.id);
      // A call that names a project is answered for it.
      const named = await ok(scoped.client, "memories_list", { project: "blog", projectOnly: true });
      expect(named.items.map((m: { id: string }) => m.id)).toEqual([blog.id]);
      expect(scoped.stderr()).toContain("project shop");
    } finally {
      await scoped.client.close();
    }
  });
});
