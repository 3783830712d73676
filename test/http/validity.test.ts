import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, expectError, startTestServer, type Client, type TestServer } from "../helpers/http-server.js";

/** Replaced facts, duplicates and history over real HTTP: statuses, billing, and other accounts' ids. */
let server: TestServer;
let A: Client;
let B: Client;

beforeAll(async () => {
  server = await startTestServer();
  A = client(server.url, (await server.account("alpha", "hobby")).key);
  B = client(server.url, (await server.account("beta")).key);
});
afterAll(() => server.close());

const used = (res: { headers: Headers }) => Number(res.headers.get("x-quota-used"));

describe("replaced facts over HTTP", () => {
  it("detects, supersedes, restores and shows history; another account's ids answer 404", async () => {
    const paris = (await A.post("/v1/memories", { body: { content: "I work at Acme Robotics", userId: "u" } })).body;
    const moved = await A.post("/v1/memories", { body: { content: "I joined Globex last week", userId: "u" } });
    expect(moved.status).toBe(201);
    expect(moved.body.supersedes).toEqual([paris.id]);
    expect((await A.get(`/v1/memories/${paris.id}`)).body.supersededBy).toBe(moved.body.id);

    const hits = (await A.post("/v1/memories/search", { body: { query: "Acme Robotics Globex work", userId: "u", threshold: 0 } })).body.results;
    expect(hits.map((h: { id: string }) => h.id)).toEqual([moved.body.id]);
    const all = (await A.post("/v1/memories/search", { body: { query: "Acme Robotics Globex work", userId: "u", threshold: 0, includeSuperseded: true } })).body.results;
    expect(all.map((h: { id: string }) => h.id)).toEqual([moved.body.id, paris.id]);
    expect(all[1].supersededBy).toBe(moved.body.id);
    expectError(await A.post("/v1/memories/search", { body: { query: "x", asOf: "last week" } }), 400, "VALIDATION_ERROR");

    const restored = await A.post(`/v1/memories/${paris.id}/restore`);
    expect(restored.status).toBe(200);
    expect(restored.body).not.toHaveProperty("supersededBy");
    const again = await A.post(`/v1/memories/${paris.id}/supersede`, { body: { by: moved.body.id } });
    expect(again.body.supersededBy).toBe(moved.body.id);
    expectError(await A.post(`/v1/memories/${moved.body.id}/supersede`, { body: { by: paris.id } }), 400, "VALIDATION_ERROR");
    expectError(await A.post(`/v1/memories/${paris.id}/supersede`, { body: { by: paris.id } }), 400, "VALIDATION_ERROR");
    expectError(await A.post(`/v1/memories/${paris.id}/supersede`, { body: {} }), 400, "VALIDATION_ERROR");
    const history = (await A.get(`/v1/memories/${paris.id}/history`)).body;
    expect(history.events.map((e: { type: string }) => e.type)).toEqual(["superseded", "restored", "superseded"]);
    expect(history.replacedBy.map((l: { id: string }) => l.id)).toEqual([moved.body.id]);

    const mine = (await B.post("/v1/memories", { body: { content: "Mine", userId: "u" } })).body;
    for (const res of [
      await B.get(`/v1/memories/${paris.id}/history`),
      await B.post(`/v1/memories/${paris.id}/restore`),
      await B.post(`/v1/memories/${paris.id}/supersede`, { body: { by: mine.id } }),
      await B.post(`/v1/memories/${mine.id}/supersede`, { body: { by: paris.id } }),
      await B.post("/v1/memories", { body: { content: "x y", userId: "u", supersedes: [paris.id] } }),
      await B.patch(`/v1/memories/${mine.id}`, { body: { supersedes: [paris.id] } }),
    ]) {
      expectError(res, 404, "MEMORY_NOT_FOUND");
    }
    expect((await A.get(`/v1/memories/${paris.id}`)).body.supersededBy).toBe(moved.body.id);
  });

  it("a duplicate answers 200 with the existing memory, marked, and is billed as one operation", async () => {
    const first = await A.post("/v1/memories", { body: { content: "The wifi password is hunter2 at home", userId: "d" } });
    const dup = await A.post("/v1/memories", { body: { content: "the wifi password is hunter2 at home.", userId: "d" } });
    expect(dup.status).toBe(200);
    expect(dup.body).toEqual({ ...first.body, deduplicated: true });
    expect(used(dup)).toBe(used(first) + 1);
    const copy = await A.post("/v1/memories", { body: { content: "the wifi password is hunter2 at home.", userId: "d", dedupe: false } });
    expect(copy.status).toBe(201);
    expect(copy.body.id).not.toBe(first.body.id);
    expectError(await A.post("/v1/memories", { body: { content: "x", userId: "d", dedupe: "no" } }), 400, "VALIDATION_ERROR");
  });
});

describe("asOf is an instant or it is refused", () => {
  it("refuses a day the calendar doesn't have, an hour past 23, and a time without a zone, naming asOf; takes a date alone, Z and offsets", async () => {
    for (const asOf of ["2026-02-30", "2026-02-29T10:00:00Z", "2026-04-31T00:00Z", "2026-12-07T24:30:00Z", "2026-12-07T10:61Z", "2026-12-07 10:00", "2026-12-07T10:00:00", "2026-12-07T10:00+25:00"]) {
      const res = await A.post("/v1/memories/search", { body: { query: "x", asOf } });
      const error = expectError(res, 400, "VALIDATION_ERROR");
      expect(error.details, asOf).toEqual([{ field: "asOf", message: expect.any(String) }]);
      expect(error.message, asOf).toContain("asOf");
    }
    const noZone = expectError(await A.post("/v1/memories/search", { body: { query: "x", asOf: "2026-12-07 10:00" } }), 400, "VALIDATION_ERROR");
    expect(noZone.details[0].message).toMatch(/time zone.*Z.*\+02:00/);
    const noDay = expectError(await A.post("/v1/memories/search", { body: { query: "x", asOf: "2026-02-30" } }), 400, "VALIDATION_ERROR");
    expect(noDay.details[0].message).toMatch(/2026-02-30 is not a day/);
    for (const asOf of ["2028-02-29", "2026-12-07T10:00Z", "2026-12-07T10:00:00.5+02:00", "2026-12-07 10:00:00-0530"]) {
      expect((await A.post("/v1/memories/search", { body: { query: "x", asOf } })).status, asOf).toBe(200);
    }
  });
});
