import { afterEach, describe, expect, it } from "vitest";
import { client, expectError, monthReset, startTestServer, type ApiResponse, type TestServer } from "../helpers/http-server.js";

/**
 * Rate limits (per key, per bucket, fixed minute windows) and the monthly quota (per account),
 * over real HTTP with a controlled clock: the headers on every authenticated answer, the 429 and
 * 403 refusals, and exactly which requests count.
 */

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function serve(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const s = await startTestServer(options);
  servers.push(s);
  return s;
}

interface Rate {
  limit: number;
  remaining: number;
  reset: number;
}
function rate(res: ApiResponse): Rate {
  const get = (h: string) => {
    const v = res.headers.get(h);
    expect(v, `${h} on ${res.status} ${res.text.slice(0, 200)}`).toMatch(/^\d+$/);
    return Number(v);
  };
  return { limit: get("x-ratelimit-limit"), remaining: get("x-ratelimit-remaining"), reset: get("x-ratelimit-reset") };
}
function quota(res: ApiResponse): { limit: string; used: number; reset: string } {
  const limit = res.headers.get("x-quota-limit");
  const used = res.headers.get("x-quota-used");
  const reset = res.headers.get("x-quota-reset");
  expect(limit, `X-Quota-Limit on ${res.status}`).not.toBeNull();
  expect(used, `X-Quota-Used on ${res.status}`).toMatch(/^\d+$/);
  expect(reset, `X-Quota-Reset on ${res.status}`).not.toBeNull();
  return { limit: limit!, used: Number(used), reset: reset! };
}
/** Unix seconds at the end of the minute `d` falls in. */
const minuteEnd = (d: Date) => (Math.floor(d.getTime() / 60_000) + 1) * 60;

describe("rate-limit headers", () => {
  it("every endpoint carries its bucket's default limit (read 100, write 50, search 30) with Remaining counting down per bucket", async () => {
    const s = await serve({ rateLimits: {} });
    const acct = await s.account("buckets");
    const api = client(s.url, acct.key);
    const reset = minuteEnd(s.clock.peek());
    const seen: Record<string, number[]> = { read: [], write: [], search: [] };
    const expectBucket = (res: ApiResponse, bucket: "read" | "write" | "search", status: number) => {
      expect(res.status, res.text).toBe(status);
      const r = rate(res);
      expect(r.limit, `${bucket}`).toBe({ read: 100, write: 50, search: 30 }[bucket]);
      expect(r.reset).toBe(reset);
      seen[bucket].push(r.remaining);
    };

    const m = await api.post("/v1/memories", { body: { content: "rate me", userId: "u" } });
    expectBucket(m, "write", 201);
    expectBucket(await api.post("/v1/memories/search", { body: { query: "rate" } }), "search", 200);
    expectBucket(await api.get("/v1/memories"), "read", 200);
    expectBucket(await api.get(`/v1/memories/${m.body.id}`), "read", 200);
    expectBucket(await api.patch(`/v1/memories/${m.body.id}`, { body: { content: "rated" } }), "write", 200);
    const e1 = await api.post("/v1/entities", { body: { name: "E1", type: "PERSON" } });
    expectBucket(e1, "write", 201);
    expectBucket(await api.post("/v1/entities", { body: { name: "e1", type: "PERSON" } }), "write", 200);
    const e2 = await api.post("/v1/entities", { body: { name: "E2", type: "PERSON" } });
    expectBucket(e2, "write", 201);
    expectBucket(await api.get("/v1/entities"), "read", 200);
    expectBucket(await api.get(`/v1/entities/${e1.body.id}`), "read", 200);
    expectBucket(await api.patch(`/v1/entities/${e1.body.id}`, { body: { description: "d" } }), "write", 200);
    expectBucket(await api.get(`/v1/entities/${e1.body.id}/memories`), "read", 200);
    const r = await api.post("/v1/relations", { body: { sourceId: e1.body.id, targetId: e2.body.id, type: "KNOWS" } });
    expectBucket(r, "write", 201);
    expectBucket(await api.get("/v1/relations"), "read", 200);
    expectBucket(await api.get(`/v1/relations/${r.body.id}`), "read", 200);
    expectBucket(await api.delete(`/v1/relations/${r.body.id}`), "write", 200);
    expectBucket(await api.delete(`/v1/entities/${e2.body.id}`), "write", 200);
    expectBucket(await api.delete(`/v1/memories/${m.body.id}`), "write", 200);
    expectBucket(await api.post("/v1/memories/search", { body: { query: "again" } }), "search", 200);

    const countdown = (from: number, n: number) => Array.from({ length: n }, (_, i) => from - 1 - i);
    expect(seen.write).toEqual(countdown(50, seen.write.length));
    expect(seen.read).toEqual(countdown(100, seen.read.length));
    expect(seen.search).toEqual(countdown(30, 2));
  });

  it("errors carry the rate headers too: 400, 404 and 429 (each for its bucket); 401 carries none", async () => {
    const s = await serve({ rateLimits: { read: 3, write: 2, search: 1 } });
    const api = client(s.url, (await s.account("errs")).key);
    const bad = await api.post("/v1/memories", { body: { content: 1, userId: "u" } });
    expectError(bad, 400, "VALIDATION_ERROR");
    expect(rate(bad)).toMatchObject({ limit: 2, remaining: 1 });
    const missing = await api.get("/v1/memories/mem_missing");
    expectError(missing, 404, "MEMORY_NOT_FOUND");
    expect(rate(missing)).toMatchObject({ limit: 3, remaining: 2 });
    const badSearch = await api.post("/v1/memories/search", { body: {} });
    expectError(badSearch, 400, "VALIDATION_ERROR");
    expect(rate(badSearch)).toMatchObject({ limit: 1, remaining: 0 });
    const limited = await api.post("/v1/memories/search", { body: { query: "x" } });
    expectError(limited, 429, "RATE_LIMIT_EXCEEDED");
    expect(rate(limited)).toMatchObject({ limit: 1, remaining: 0 });
    quota(limited);
    const anon = await client(s.url).get("/v1/memories");
    expectError(anon, 401, "UNAUTHORIZED");
    for (const h of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "x-quota-limit", "x-quota-used", "x-quota-reset", "retry-after"]) {
      expect(anon.headers.get(h), h).toBeNull();
    }
  });
});

describe("RATE_LIMIT_EXCEEDED", () => {
  it("429 with retryAfter and a matching Retry-After header once a bucket is spent; other buckets unaffected; the next window allows again", async () => {
    const s = await serve({ rateLimits: { read: 3, write: 2, search: 2 } });
    s.clock.set("2026-03-15T12:00:17.500Z");
    const api = client(s.url, (await s.account("limited")).key);
    for (let i = 0; i < 3; i++) expect((await api.get("/v1/memories")).status).toBe(200);
    const refused = await api.get("/v1/entities");
    const error = expectError(refused, 429, "RATE_LIMIT_EXCEEDED");
    expect(Object.keys(error).sort()).toEqual(["code", "message", "retryAfter"]);
    expect(Number.isInteger(error.retryAfter)).toBe(true);
    expect(error.retryAfter).toBe(43); // 12:00:17.5 → 12:01:00, rounded up
    expect(refused.headers.get("retry-after")).toBe(String(error.retryAfter));
    expect(rate(refused)).toEqual({ limit: 3, remaining: 0, reset: minuteEnd(new Date("2026-03-15T12:00:17.500Z")) });
    // A refused request doesn't consume: still refused, still 0 remaining.
    expectError(await api.get("/v1/memories/mem_x"), 429, "RATE_LIMIT_EXCEEDED");
    // Other buckets have their own counts.
    expect((await api.post("/v1/memories", { body: { content: "still writable", userId: "u" } })).status).toBe(201);
    expect((await api.post("/v1/memories/search", { body: { query: "x" } })).status).toBe(200);

    s.clock.set("2026-03-15T12:00:59.900Z");
    const last = await api.get("/v1/memories");
    expectError(last, 429, "RATE_LIMIT_EXCEEDED");
    expect(last.body.error.retryAfter).toBe(1);
    expect(last.headers.get("retry-after")).toBe("1");

    s.clock.set("2026-03-15T12:01:00.000Z");
    const fresh = await api.get("/v1/memories");
    expect(fresh.status).toBe(200);
    expect(rate(fresh)).toEqual({ limit: 3, remaining: 2, reset: minuteEnd(new Date("2026-03-15T12:01:00.000Z")) });
  });

  it("is per key: another key, of the same or another account, has its own window", async () => {
    const s = await serve({ rateLimits: { read: 2 } });
    const a = await s.account("per-key");
    const a2 = await s.accounts.createKey({ account: a.id, name: "second" });
    const b = await s.account("per-key-other");
    const k1 = client(s.url, a.key);
    await k1.get("/v1/memories");
    await k1.get("/v1/memories");
    expectError(await k1.get("/v1/memories"), 429, "RATE_LIMIT_EXCEEDED");
    const other = await client(s.url, a2.key).get("/v1/memories");
    expect(other.status).toBe(200);
    expect(rate(other).remaining).toBe(1);
    expect((await client(s.url, b.key).get("/v1/memories")).status).toBe(200);
  });

  it("caps an account at 50 active keys, so more keys can't multiply its allowance without end; revoking one makes room", async () => {
    const s = await serve();
    const a = await s.account("many-keys"); // its first key
    const made = [];
    for (let i = 1; i < 50; i++) made.push(await s.accounts.createKey({ account: a.id, name: `k${i}` }));
    const refused = await s.accounts.createKey({ account: a.id, name: "one too many" }).catch((e) => e);
    expect(refused.code).toBe("VALIDATION_ERROR");
    expect(refused.message).toMatch(/50 active keys/);
    await s.accounts.revokeKey(made[0].id);
    expect((await s.accounts.createKey({ account: a.id, name: "after a revoke" })).name).toBe("after a revoke");
    // Another account is not affected.
    expect((await s.accounts.createKey({ account: (await s.account("other")).id, name: "x" })).name).toBe("x");
  });

  it("records a key's last use without rewriting auth.json on each key's first request of a minute", async () => {
    const s = await serve();
    const a = await s.account("touchy");
    const keys = [a.key, ...(await Promise.all([1, 2, 3].map((i) => s.accounts.createKey({ account: a.id, name: `t${i}` })))).map((k) => k.key)];
    const { readFile, stat } = await import("node:fs/promises");
    const { join } = await import("node:path");
    const file = join(s.storeDir, "auth.json");
    const before = { text: await readFile(file, "utf8"), ino: (await stat(file)).ino };
    for (let minute = 0; minute < 3; minute++) {
      for (const key of keys) expect((await client(s.url, key).get("/v1/memories")).status).toBe(200);
      s.clock.advance(61_000);
    }
    expect(await readFile(file, "utf8")).toBe(before.text);
    expect((await stat(file)).ino).toBe(before.ino);
    const listed = (await s.accounts.listKeys(a.id)).items;
    expect(listed).toHaveLength(4);
    for (const k of listed) {
      expect(k.lastUsedAt).not.toBeNull();
      // The last use was in the third minute.
      expect(Date.parse(k.lastUsedAt!)).toBeGreaterThanOrEqual(s.clock.peek().getTime() - 2 * 61_000);
    }
  });

  it("concurrent requests never exceed the limit: exactly `limit` of 12 parallel requests pass", async () => {
    const s = await serve({ rateLimits: { read: 5 } });
    const api = client(s.url, (await s.account("burst")).key);
    const all = await Promise.all(Array.from({ length: 12 }, () => api.get("/v1/memories")));
    expect(all.filter((r) => r.status === 200)).toHaveLength(5);
    expect(all.filter((r) => r.status === 429)).toHaveLength(7);
    expect(all.filter((r) => r.status === 200).map((r) => rate(r).remaining).sort()).toEqual([0, 1, 2, 3, 4]);
  });
});

describe("quota headers", () => {
  it("X-Quota-Limit is `unlimited` for enterprise and the plan's number for free and hobby; Used counts up; Reset is the next month's first instant", async () => {
    const s = await serve();
    for (const [plan, limit] of [["enterprise", "unlimited"], ["hobby", "50000"], ["free", "1000"]] as const) {
      const api = client(s.url, (await s.account(`plan-${plan}`, plan)).key);
      const r1 = await api.get("/v1/memories");
      const r2 = await api.post("/v1/memories", { body: { content: "q", userId: "u" } });
      const r3 = await api.get("/v1/memories/mem_missing");
      expect(quota(r1)).toEqual({ limit, used: 1, reset: "2026-04-01T00:00:00.000Z" });
      expect(quota(r2)).toEqual({ limit, used: 2, reset: "2026-04-01T00:00:00.000Z" });
      expect(quota(r3)).toEqual({ limit, used: 3, reset: "2026-04-01T00:00:00.000Z" });
    }
  });

  it("is per account and per UTC month: a new month starts from 0 with the next reset", async () => {
    const s = await serve();
    s.clock.set("2026-12-31T23:59:58.000Z");
    const acct = await s.account("rollover", "hobby");
    const a2 = await s.accounts.createKey({ account: acct.id, name: "second" });
    const api = client(s.url, acct.key);
    expect(quota(await api.get("/v1/memories"))).toEqual({ limit: "50000", used: 1, reset: "2027-01-01T00:00:00.000Z" });
    // Another key of the same account shares the quota.
    expect(quota(await client(s.url, a2.key).get("/v1/memories")).used).toBe(2);
    // Another account doesn't.
    expect(quota(await client(s.url, (await s.account("bystander", "hobby")).key).get("/v1/memories")).used).toBe(1);
    s.clock.set("2027-01-01T00:00:00.000Z");
    const next = await api.get("/v1/memories");
    expect(quota(next)).toEqual({ limit: "50000", used: 1, reset: "2027-02-01T00:00:00.000Z" });
    expect(monthReset(new Date("2027-01-01T00:00:00.000Z"))).toBe("2027-02-01T00:00:00.000Z");
  });
});

describe("QUOTA_EXCEEDED", () => {
  it("403 with currentUsage, limit and resetAt once a free account has used 1,000 operations; rate and quota headers present; nothing done", async () => {
    const s = await serve({ rateLimits: { read: 50, write: 50, search: 50 } });
    const acct = await s.account("freeloader", "free");
    await s.ledger.charge(acct.id, null, "read", 999);
    const api = client(s.url, acct.key);
    const last = await api.get("/v1/memories");
    expect(last.status).toBe(200);
    expect(quota(last)).toEqual({ limit: "1000", used: 1000, reset: "2026-04-01T00:00:00.000Z" });

    for (const res of [
      await api.get("/v1/memories"),
      await api.post("/v1/memories", { body: { content: "over quota", userId: "u" } }),
      await api.post("/v1/memories/search", { body: { query: "x" } }),
      await api.post("/v1/entities", { body: { name: "Over", type: "PERSON" } }),
      await api.get("/v1/relations"),
      await api.delete("/v1/memories/mem_x"),
    ]) {
      const error = expectError(res, 403, "QUOTA_EXCEEDED", { currentUsage: 1000, limit: 1000, resetAt: "2026-04-01T00:00:00.000Z" });
      expect(Object.keys(error).sort()).toEqual(["code", "currentUsage", "limit", "message", "resetAt"]);
      expect(quota(res)).toEqual({ limit: "1000", used: 1000, reset: "2026-04-01T00:00:00.000Z" });
      rate(res);
    }
    // Refusals are not counted.
    expect((await s.ledger.usage(acct.id, 1000)).used).toBe(1000);

    // Next month the account works again, and the refused create had stored nothing.
    s.clock.set("2026-04-01T00:00:00.000Z");
    const after = await api.get("/v1/memories");
    expect(after.status).toBe(200);
    expect(after.body.pagination.total).toBe(0);
    expect(quota(after)).toEqual({ limit: "1000", used: 1, reset: "2026-05-01T00:00:00.000Z" });
  });

  it("concurrent requests never overshoot: with 5 operations left, exactly 5 of 12 parallel requests pass", async () => {
    const s = await serve();
    const acct = await s.account("racer", "free");
    await s.ledger.charge(acct.id, null, "read", 995);
    const api = client(s.url, acct.key);
    const all = await Promise.all(Array.from({ length: 12 }, (_, i) => api.post("/v1/memories", { body: { content: `race ${i}`, userId: "u" } })));
    expect(all.filter((r) => r.status === 201)).toHaveLength(5);
    expect(all.filter((r) => r.status === 403 && r.body.error.code === "QUOTA_EXCEEDED")).toHaveLength(7);
    expect((await s.ledger.usage(acct.id, 1000)).used).toBe(1000);
    expect(all.filter((r) => r.status === 201).map((r) => quota(r).used).sort((x, y) => x - y)).toEqual([996, 997, 998, 999, 1000]);
  });
});

describe("QUOTA_EXCEEDED and the rate limit", () => {
  it("a request refused with QUOTA_EXCEEDED uses no rate-limit allowance: 403 every time, never 429, Remaining unchanged", async () => {
    const s = await serve({ rateLimits: { read: 3, write: 3, search: 3 } });
    const acct = await s.account("spent", "free");
    await s.ledger.charge(acct.id, null, "read", 1000);
    const api = client(s.url, acct.key);
    for (let i = 0; i < 6; i++) {
      const res = await api.get("/v1/memories");
      expectError(res, 403, "QUOTA_EXCEEDED");
      expect(rate(res), `refusal ${i + 1}`).toMatchObject({ limit: 3, remaining: 3 });
    }
    // In the same minute, once the quota resets (a new month here), the whole allowance is there.
    s.clock.set("2026-04-01T00:00:05.000Z");
    const fresh = [await api.get("/v1/memories"), await api.get("/v1/memories"), await api.get("/v1/memories"), await api.get("/v1/memories")];
    expect(fresh.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(fresh.slice(0, 3).map((r) => rate(r).remaining)).toEqual([2, 1, 0]);
  });

  it("when both are spent, QUOTA_EXCEEDED wins: retrying after Retry-After would not help", async () => {
    const s = await serve({ rateLimits: { read: 1, write: 1, search: 1 } });
    const acct = await s.account("both", "free");
    await s.ledger.charge(acct.id, null, "read", 999);
    const api = client(s.url, acct.key);
    expect((await api.get("/v1/memories")).status).toBe(200);
    const res = await api.get("/v1/memories");
    expectError(res, 403, "QUOTA_EXCEEDED");
    expect(res.headers.get("retry-after")).toBeNull();
    expect(rate(res)).toMatchObject({ limit: 1, remaining: 0 });
  });
});

describe("what counts against the quota", () => {
  it("400 and 404 answers count; list entities and list relations count; 401, 429, QUOTA_EXCEEDED, unknown routes, 405 and 413 don't", async () => {
    const s = await serve({ rateLimits: { read: 100, write: 100, search: 1 }, bodyLimitBytes: 1024 });
    const acct = await s.account("counter", "hobby");
    const api = client(s.url, acct.key);
    const used = async () => (await s.ledger.usage(acct.id, 50_000)).used;
    const step = async (label: string, send: () => Promise<ApiResponse>, status: number, delta: number) => {
      const before = await used();
      const res = await send();
      expect(res.status, `${label}: ${res.text.slice(0, 200)}`).toBe(status);
      expect((await used()) - before, label).toBe(delta);
      if (res.headers.get("x-quota-used") !== null) expect(quota(res).used, label).toBe(before + delta);
    };

    await step("400 validation", () => api.post("/v1/memories", { body: { content: 1, userId: "u" } }), 400, 1);
    await step("400 invalid JSON", () => api.post("/v1/memories", { raw: "{", headers: { "Content-Type": "application/json" } }), 400, 1);
    await step("400 bad query", () => api.get("/v1/memories", { query: { page: 0 } }), 400, 1);
    await step("404 memory", () => api.get("/v1/memories/mem_missing"), 404, 1);
    await step("404 entity", () => api.delete("/v1/entities/ent_missing"), 404, 1);
    await step("404 source entity", () => api.post("/v1/relations", { body: { sourceId: "ent_a", targetId: "ent_b", type: "KNOWS" } }), 404, 1);
    await step("list entities", () => api.get("/v1/entities"), 200, 1);
    await step("list relations", () => api.get("/v1/relations"), 200, 1);
    await step("entity memories", () => api.get("/v1/entities/ent_missing/memories"), 404, 1);
    await step("search", () => api.post("/v1/memories/search", { body: { query: "x" } }), 200, 1);
    await step("429", () => api.post("/v1/memories/search", { body: { query: "x" } }), 429, 0);
    await step("401 unknown key", () => client(s.url, "mm_unknownunknownunknownunknownunknown00").get("/v1/memories"), 401, 0);
    await step("401 malformed", () => client(s.url).get("/v1/memories", { headers: { Authorization: `Basic ${acct.key}` } }), 401, 0);
    await step("unknown route", () => api.get("/v1/nope"), 404, 0);
    await step("405", () => api.put("/v1/memories"), 405, 0);
    await step("413", () => api.post("/v1/memories", { body: { content: "x".repeat(2048), userId: "u" } }), 413, 0);
    await step("openapi", () => api.get("/v1/openapi.json"), 200, 0);

    const free = await s.account("counter-free", "free");
    await s.ledger.charge(free.id, null, "read", 1000);
    const before = (await s.ledger.usage(free.id, 1000)).used;
    expectError(await client(s.url, free.key).get("/v1/memories"), 403, "QUOTA_EXCEEDED");
    expect((await s.ledger.usage(free.id, 1000)).used).toBe(before);
  });
});
