import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Accounts } from "../../src/core/accounts.js";
import { openContext } from "../../src/core/context.js";
import { startServer } from "../../src/http/server.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

async function storeWithKey(): Promise<{ dir: string; key: string }> {
  const dir = join(await tempDir(), "store");
  await (await openContext({ storeDir: dir, embedder: createTestEmbedder() })).close();
  const { key } = await new Accounts(dir).createKey({ account: "default", name: "t" });
  return { dir, key };
}

describe("mm serve settings and transport errors", () => {
  it("takes rate limits from the store's config, and flags override them", async () => {
    const { dir, key } = await storeWithKey();
    const configPath = join(dir, "config.json");
    const config = JSON.parse(await readFile(configPath, "utf8"));
    await writeFile(configPath, JSON.stringify({ ...config, server: { rateLimits: { read: 2, search: 7 } } }));
    const server = await startServer({ storeDir: dir, port: 0, embedder: createTestEmbedder(), warm: false, rateLimits: { search: 3 } });
    try {
      const get = () => fetch(`${server.url}/v1/memories`, { headers: { Authorization: `Bearer ${key}` } });
      const statuses = [(await get()).status, (await get()).status, (await get()).status];
      expect(statuses).toEqual([200, 200, 429]);
      const search = await fetch(`${server.url}/v1/memories/search`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify({ query: "x" }),
      });
      expect(search.headers.get("x-ratelimit-limit")).toBe("3");
    } finally {
      await server.close();
    }
  });

  it("answers requests Node rejects itself (oversized headers) with the JSON envelope", async () => {
    const { dir, key } = await storeWithKey();
    const server = await startServer({ storeDir: dir, port: 0, embedder: createTestEmbedder(), warm: false });
    try {
      const res = await fetch(`${server.url}/v1/memories?userId=${"x".repeat(20_000)}`, { headers: { Authorization: `Bearer ${key}` } });
      expect(res.status).toBe(431);
      expect(res.headers.get("content-type")).toContain("application/json");
      expect((await res.json()).error.code).toBe("PAYLOAD_TOO_LARGE");
    } finally {
      await server.close();
    }
  });
});
