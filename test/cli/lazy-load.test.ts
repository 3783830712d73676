import { spawnSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MM_BIN } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const TRACER = fileURLToPath(new URL("../helpers/trace-imports.mjs", import.meta.url));
const HEAVY = ["@energetic-ai", "@tensorflow", "@huggingface", "@inquirer", "cli-progress"];

async function importsOf(store: string, args: string[], status = 0): Promise<string[]> {
  const trace = join(store, "..", `trace-${Math.random().toString(36).slice(2)}.txt`);
  const r = spawnSync(process.execPath, ["--import", TRACER, MM_BIN, ...args], {
    env: { ...process.env, MM_STORE: store, MM_TRACE_FILE: trace, LANCEDB_LOG: "error" },
    encoding: "utf8",
  });
  expect(r.status, r.stderr).toBe(status);
  return (await readFile(trace, "utf8")).trim().split("\n");
}

describe("lazy loading", () => {
  it("never loads the model or prompt libraries for commands that don't embed; search does load it", async () => {
    const store = join(await tempDir(), "store");
    const added = await importsOf(store, ["memories", "add", "hello there", "--user", "u"]);
    expect(added.some((u) => u.includes("@energetic-ai/embeddings"))).toBe(true);
    const id = JSON.parse(spawnSync(process.execPath, [MM_BIN, "memories", "list", "--json"], { env: { ...process.env, MM_STORE: store }, encoding: "utf8" }).stdout).items[0].id;

    const lean = [
      ["memories", "list"],
      ["memories", "get", id],
      ["store", "stats"],
      ["memories", "search", "greetings", "--mode", "keyword", "--threshold", "0"],
      ["memories", "update", id, "--tag", "x"],
      ["memories", "delete", id, "--yes"],
    ];
    for (const args of lean) {
      const loaded = await importsOf(store, args);
      // The trace sees CommonJS loads too (LanceDB's JavaScript is CommonJS), so the checks below can fail.
      expect(loaded.some((u) => u.endsWith("/lancedb.cjs"))).toBe(true);
      for (const heavy of HEAVY) expect(loaded.filter((u) => u.includes(heavy)), `${args.join(" ")} loaded ${heavy}`).toEqual([]);
    }
    const searched = await importsOf(store, ["memories", "search", "greetings", "--threshold", "0"]);
    expect(searched.some((u) => u.includes("@energetic-ai/embeddings"))).toBe(true);
  });

  it("does not start loading the model for a search or an add that will fail validation", async () => {
    const store = join(await tempDir(), "store");
    await importsOf(store, ["memories", "add", "hello there", "--user", "u"]);
    for (const args of [
      ["memories", "search", "greetings", "--mode", "hybird"],
      ["memories", "search", "greetings", "--threshold", "7"],
      ["memories", "add", "hello", "--user", "u", "--tag", ""],
    ]) {
      const loaded = await importsOf(store, args, 2);
      expect(loaded.filter((u) => u.includes("@energetic-ai")), args.join(" ")).toEqual([]);
    }
  });

  it("validates with zod/mini only, and loads no zod at all for a command that validates nothing", async () => {
    const store = join(await tempDir(), "store");
    spawnSync(process.execPath, [MM_BIN, "memories", "add", "hello there", "--user", "u"], { env: { ...process.env, MM_STORE: store, LANCEDB_LOG: "error" } });
    // Schema class names survive minification as the strings zod registers them under.
    const bundled = async (args: string[]) => {
      const files = (await importsOf(store, args)).filter((u) => u.includes("/dist/bundle/"));
      return (await Promise.all(files.map((u) => readFile(fileURLToPath(u), "utf8")))).join("\n");
    };
    const listing = await bundled(["memories", "list"]);
    expect(listing).toContain('"ZodMiniString"');
    expect(listing, "classic zod is bundled: every validating command would load all of it").not.toContain('"ZodString"');
    expect(await bundled(["store", "stats"])).not.toContain('"ZodMini');
  });
});
