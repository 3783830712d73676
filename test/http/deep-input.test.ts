import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, expectError, startTestServer, type ApiResponse, type Client, type TestServer } from "../helpers/http-server.js";
import { runCli } from "../helpers/run-cli.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * Metadata nested thousands of levels deep once overflowed the stack inside validation (a
 * RangeError from JSON.stringify, answered 500, and a stack trace on the CLI). Nesting is now
 * limited to 32 levels and checked without recursion, before anything recursive runs.
 */

const tempDir = useTempDirs();

/** `{"a":{"a":…1…}}` with `levels` objects, as JSON text (built as text: a value that deep can't be stringified). */
function nestedObject(levels: number): string {
  return '{"a":'.repeat(levels - 1) + "{}" + "}".repeat(levels - 1);
}
/** An object holding arrays nested `levels - 1` deep: `{"a":[[[…]]]}`. */
function nestedArrays(levels: number): string {
  return '{"a":' + "[".repeat(levels - 1) + "]".repeat(levels - 1) + "}";
}

let server: TestServer;
let api: Client;
beforeAll(async () => {
  server = await startTestServer();
  api = client(server.url, (await server.account("deep")).key);
});
afterAll(async () => server?.close());

function expectDepthError(res: ApiResponse, label: string): void {
  const error = expectError(res, 400, "VALIDATION_ERROR");
  expect(error.details, label).toEqual([{ field: "metadata", message: "must be nested at most 32 levels deep" }]);
}

describe("metadata nesting", () => {
  it("4,400 and 100,000 levels → 400 VALIDATION_ERROR naming the 32-level limit, on every endpoint that takes metadata", async () => {
    const memory = (await api.post("/v1/memories", { body: { content: "shallow", userId: "u" } })).body;
    const entity = (await api.post("/v1/entities", { body: { name: "Shallow", type: "PERSON" } })).body;
    for (const levels of [4_400, 100_000]) {
      for (const metadata of [nestedObject(levels), nestedArrays(levels)]) {
        const send = (method: string, path: string, fields: string) =>
          api.request(method)(path, { raw: `{${fields}${fields ? "," : ""}"metadata":${metadata}}`, headers: { "Content-Type": "application/json" } });
        const cases: [string, () => Promise<ApiResponse>][] = [
          ["POST memories", () => send("POST", "/v1/memories", '"content":"x","userId":"u"')],
          ["PATCH memory", () => send("PATCH", `/v1/memories/${memory.id}`, "")],
          ["PATCH unknown memory", () => send("PATCH", "/v1/memories/mem_nope", "")],
          ["POST entities", () => send("POST", "/v1/entities", '"name":"N","type":"PERSON"')],
          ["PATCH entity", () => send("PATCH", `/v1/entities/${entity.id}`, "")],
          ["PATCH unknown entity", () => send("PATCH", "/v1/entities/ent_nope", "")],
          ["POST relations", () => send("POST", "/v1/relations", `"sourceId":"${entity.id}","targetId":"${entity.id}","type":"KNOWS"`)],
          ["POST relations, unknown ids", () => send("POST", "/v1/relations", '"sourceId":"ent_a","targetId":"ent_b","type":"KNOWS"')],
        ];
        for (const [label, call] of cases) expectDepthError(await call(), `${label} at ${levels} levels`);
      }
    }
    // Nothing was stored or changed.
    expect((await api.get("/v1/memories")).body.items).toEqual([expect.objectContaining({ id: memory.id })]);
    expect((await api.get(`/v1/memories/${memory.id}`)).body).toEqual(memory);
    expect((await api.get("/v1/relations")).body.pagination.total).toBe(0);
  });

  it("exactly 32 levels is accepted and read back; 33 is refused", async () => {
    const ok = await api.post("/v1/memories", { raw: `{"content":"deep but allowed","userId":"u","metadata":${nestedObject(32)}}`, headers: { "Content-Type": "application/json" } });
    expect(ok.status, ok.text).toBe(201);
    expect(JSON.stringify((await api.get(`/v1/memories/${ok.body.id}`)).body.metadata)).toBe(nestedObject(32));
    const arrays = await api.post("/v1/entities", { raw: `{"name":"Arrays","type":"OTHER","metadata":${nestedArrays(32)}}`, headers: { "Content-Type": "application/json" } });
    expect(arrays.status, arrays.text).toBe(201);
    expectDepthError(await api.post("/v1/memories", { raw: `{"content":"x","userId":"u","metadata":${nestedObject(33)}}`, headers: { "Content-Type": "application/json" } }), "33 levels");
  });
});

describe("the CLI", () => {
  it("refuses deep --metadata with exit 2 and the envelope, no stack trace; a batch line fails alone", async () => {
    const store = await tempDir();
    const r = await runCli(store, ["memories", "add", "deep", "--user", "u", "--metadata", nestedObject(10_000)]);
    expect(r.code, r.stderr).toBe(2);
    expect(JSON.parse(r.stderr).error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "metadata", message: "must be nested at most 32 levels deep" }] });
    expect(r.stderr).not.toMatch(/RangeError|at .*\.(ts|js):\d+/);

    const lines = [JSON.stringify({ content: "fine", userId: "u" }), `{"content":"deep","userId":"u","metadata":${nestedObject(10_000)}}`].join("\n");
    const batch = await runCli(store, ["memories", "add", "--batch", "-"], { input: lines });
    expect(batch.code).toBe(2);
    const results = batch.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(results[0].memory.content).toBe("fine");
    expect(results[1]).toMatchObject({ line: 2, error: { code: "VALIDATION_ERROR", details: [{ field: "metadata" }] } });
    expect(batch.stderr).not.toMatch(/RangeError|at .*\.(ts|js):\d+/);
  });
});
