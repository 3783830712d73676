import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ACTIONS } from "../../src/console/actions.js";
import { ROUTES } from "../../src/http/routes.js";
import { ROOT } from "../helpers/doc-examples.js";

describe("the console's counted actions", () => {
  it("take the bucket of the endpoint they mirror, and docs/console.md lists each with it", async () => {
    const doc = await readFile(join(ROOT, "docs", "console.md"), "utf8");
    const rows = doc.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("|---"));
    for (const [name, action] of Object.entries(ACTIONS)) {
      const route = ROUTES.find((r) => `${r.method} ${r.path}` === action.mirrors);
      if (route) expect(action.bucket, name).toBe(route.bucket);
      const row = rows.find((r) => r.includes(`\`${action.mirrors}\``));
      expect(row, `${name} (${action.mirrors}) in docs/console.md`).toBeDefined();
      expect(row!.split("|").map((c) => c.trim())).toEqual(expect.arrayContaining([action.bucket, "1"]));
    }
  });
});
