import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { contextOf, hook, newEnv, promptSubmit, seed } from "../helpers/hooks.js";
import { json, runMm, spawnMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

describe("mm hook with an mm serve running on the store", () => {
  it("asks the server (with the key in MM_API_KEY) instead of loading the model itself", async () => {
    const e = await newEnv(tempDir);
    await seed(e, [{ content: "The staging database is PostgreSQL 16, on port 5433", userId: "me", project: "orders-api" }]);
    const { key } = json(await runMm(["keys", "create", "--name", "hooks"], { env: e.env }));
    const server = spawnMm(["serve", "--port", "0"], { env: e.env });
    const logs: string[] = [];
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("exit", (code) => reject(new Error(`mm serve exited ${code}: ${logs.join("\n")}`)));
        createInterface({ input: server.stderr! }).on("line", (line) => {
          logs.push(line);
          if (line.includes('"listening"')) resolve();
        });
      });
      server.stdout!.resume();
      const withKey = { ...e, env: { ...e.env, MM_API_KEY: key } };
      const context = contextOf(await hook(withKey, promptSubmit(e.project, "which port is the staging database on?")), "UserPromptSubmit");
      expect(context).toContain("port 5433");
      // The server logged the search: the answer came from it.
      await new Promise((r) => setTimeout(r, 200));
      expect(logs.some((l) => l.includes("/v1/memories/search"))).toBe(true);
    } finally {
      server.kill("SIGTERM");
    }
  }, 120_000);
});
