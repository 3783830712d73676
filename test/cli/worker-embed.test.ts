import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { json, runMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

/**
 * The bundled `mm` embeds large batches on worker threads (dist/bundle/embed-worker.js). Their
 * vectors must be the very ones the main thread makes: a query equal to a stored text scores 1.
 */
describe("batch embedding on worker threads (spawned mm, real model)", () => {
  it("stores the same vectors the single-threaded search path makes", async () => {
    const dir = await tempDir();
    const store = join(dir, "store");
    const topics = ["sailing", "tax forms", "sourdough bread", "a broken bicycle chain", "the violin recital", "moving to Oslo", "a dentist appointment"];
    const lines = Array.from({ length: 70 }, (_, i) => JSON.stringify({ content: `Note ${i}: talked about ${topics[i % topics.length]} with friend number ${i}`, userId: "u" }));
    await writeFile(join(dir, "batch.jsonl"), lines.join("\n") + "\n");
    const added = await runMm(["memories", "add", "--batch", join(dir, "batch.jsonl"), "--batch-size", "64"], { store, env: { MM_EMBED_WORKERS: "2" } });
    expect(added.code, added.stderr).toBe(0);
    for (const i of [3, 41, 69]) {
      const text = `Note ${i}: talked about ${topics[i % topics.length]} with friend number ${i}`;
      const r = json(await runMm(["memories", "search", text, "--user", "u", "--mode", "semantic", "--threshold", "0", "--limit", "1"], { store }));
      expect(r.results[0].content).toBe(text);
      expect(r.results[0].score).toBeGreaterThan(0.999);
    }
  });
});
