import { request } from "node:http";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { ChildProcess } from "node:child_process";
import { describe, expect, it } from "vitest";
import { collect, json, runMm, spawnMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

async function startServe(store: string, args: string[] = []): Promise<{ child: ChildProcess; url: string; logs: string[] }> {
  const child = spawnMm(["serve", "--port", "0", ...args], { store });
  const logs: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`mm serve exited ${code}: ${logs.join("\n")}`)));
    createInterface({ input: child.stderr! }).on("line", (line) => {
      logs.push(line);
      try {
        const entry = JSON.parse(line);
        if (entry.event === "listening") resolve(entry.url);
      } catch {
        // plain text line
      }
    });
  });
  child.stdout!.resume();
  return { child, url, logs };
}

const api = (url: string, key: string, path: string, init: RequestInit = {}) =>
  fetch(url + path, { ...init, headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...(init.headers as object) } });

describe("mm serve (spawned, real model)", () => {
  it("serves the API with keys, counts usage, refuses a revoked key at once, logs without keys, and stops gracefully", async () => {
    const store = join(await tempDir(), "store");
    const account = json(await runMm(["accounts", "create", "acme", "--plan", "hobby"], { store }));
    expect(account).toMatchObject({ name: "acme", plan: "hobby", quota: 50_000 });
    const created = json(await runMm(["keys", "create", "--account", "acme", "--name", "laptop"], { store }));
    expect(created.key).toMatch(/^mm_[0-9A-Za-z]{40}$/);
    expect(created.accountId).toBe(account.id);
    const key: string = created.key;

    const { child, url, logs } = await startServe(store, ["--rate-write", "500"]);
    const added = await api(url, key, "/v1/memories", { method: "POST", body: JSON.stringify({ content: "Alice adopted a kitten", userId: "alice" }) });
    expect(added.status).toBe(201);
    expect(added.headers.get("x-quota-limit")).toBe("50000");
    expect(added.headers.get("x-ratelimit-limit")).toBe("500");
    const search = await api(url, key, "/v1/memories/search", { method: "POST", body: JSON.stringify({ query: "who adopted a new kitten?", userId: "alice" }) });
    expect((await search.json()).results).toHaveLength(1);

    // The CLI, acting as the same account on the same store, counts into the same ledger.
    const viaCli = json(await runMm(["memories", "list", "--account", "acme"], { store }));
    expect(viaCli.pagination.total).toBe(1);
    const usage = json(await runMm(["usage", "--account", "acme"], { store }));
    expect(usage).toMatchObject({ accountId: account.id, plan: "hobby", used: 3, limit: 50_000 });

    const keys = json(await runMm(["keys", "list", "--account", "acme"], { store }));
    expect(keys.items[0]).toMatchObject({ id: created.id, name: "laptop", prefix: key.slice(0, 8), revoked: false });
    expect(keys.items[0].lastUsedAt).not.toBeNull();
    expect(JSON.stringify(keys)).not.toContain(key);

    // What revoke answers of the key is what list said of it, its last use included.
    expect(json(await runMm(["keys", "revoke", created.id], { store }))).toMatchObject({ revoked: true, lastUsedAt: keys.items[0].lastUsedAt });
    const refused = await api(url, key, "/v1/memories");
    expect(refused.status).toBe(401);
    expect((await refused.json()).error).toMatchObject({ code: "UNAUTHORIZED", message: "This API key has been revoked." });

    // Graceful stop: a request whose body is still arriving when SIGTERM lands is finished.
    const key2 = json(await runMm(["keys", "create", "--account", "acme", "--name", "second"], { store })).key;
    const body = JSON.stringify({ content: "in flight during shutdown", userId: "alice" });
    const inFlight = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(`${url}/v1/memories`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key2}`, "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) },
      });
      req.on("response", (res) => {
        let text = "";
        res.on("data", (d) => (text += d)).on("end", () => resolve({ status: res.statusCode!, text }));
      });
      req.on("error", reject);
      req.write(body.slice(0, 10));
      setTimeout(() => {
        child.kill("SIGTERM");
        setTimeout(() => req.end(body.slice(10)), 300);
      }, 200);
    });
    const exited = collect(child);
    const finished = await inFlight;
    expect(finished.status).toBe(201);
    expect(JSON.parse(finished.text).content).toBe("in flight during shutdown");
    const result = await exited;
    expect(result.code).toBe(0);

    const all = logs.join("\n");
    expect(all).not.toContain(key);
    expect(all).not.toContain(key2);
    const requestLogs = logs.map((l) => JSON.parse(l)).filter((e) => e.method);
    expect(requestLogs[0]).toMatchObject({ method: "POST", path: "/v1/memories", status: 201, account: account.id });
    expect(typeof requestLogs[0].ms).toBe("number");
    expect(logs.some((l) => l.includes('"event":"shutdown"'))).toBe(true);
    expect(json(await runMm(["memories", "list", "--account", "acme"], { store })).pagination.total).toBe(2);
  });

  it("binds to loopback by default and validates its flags", async () => {
    const store = join(await tempDir(), "store");
    expect((await runMm(["init"], { store })).code).toBe(0);
    const { child, url } = await startServe(store, ["--no-warm"]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    child.kill("SIGINT");
    expect((await collect(child)).code).toBe(0);
    for (const bad of [["--port", "70000"], ["--rate-read", "0"], ["--body-limit", "x"]]) {
      const r = await runMm(["serve", ...bad], { store });
      expect(r.code, bad.join(" ")).toBe(2);
    }
  });
});

describe("mm accounts / keys / usage", () => {
  it("creates, lists and re-plans accounts, and quota applies to the CLI too", async () => {
    const store = join(await tempDir(), "store");
    expect((await runMm(["accounts", "list"], { store })).code).toBe(6); // no store yet: listing creates none
    expect((await runMm(["init"], { store })).code).toBe(0);
    expect(json(await runMm(["accounts", "list"], { store })).items.map((a: { name: string }) => a.name)).toEqual(["default"]);
    const a = json(await runMm(["accounts", "create", "tiny"], { store }));
    expect(a.plan).toBe("free");
    expect((await runMm(["accounts", "create", "TINY"], { store })).code).toBe(2);
    expect((await runMm(["accounts", "create", "x", "--plan", "platinum"], { store })).code).toBe(2);
    expect(json(await runMm(["accounts", "set-plan", "tiny", "enterprise"], { store }))).toMatchObject({ plan: "enterprise", quota: null });
    expect((await runMm(["accounts", "set-plan", "nobody", "free"], { store })).code).toBe(3);
    expect((await runMm(["keys", "create", "--account", "nobody", "--name", "x"], { store })).code).toBe(3);
    expect((await runMm(["keys", "revoke", "key_nope"], { store })).code).toBe(3);
    const usage = json(await runMm(["usage"], { store }));
    expect(usage).toMatchObject({ accountId: "acct_default", plan: "enterprise", limit: null });
  });
});
