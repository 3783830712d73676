import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a build script, plain JavaScript without types
import { clientTypes, TYPES_FILE } from "../../scripts/client-types.mjs";
import { buildOpenApi } from "../../src/http/openapi.js";
import { ROUTES } from "../../src/http/routes.js";

/**
 * The client's types are generated from the OpenAPI document (`npm run build` writes them): the
 * checked-in file must be what the current route table generates, and the client must bundle for a
 * browser, small, with nothing of Node in it.
 */
describe("client types", () => {
  it("match the OpenAPI document the server serves (run `npm run build` and commit when this fails)", async () => {
    const fresh = await clientTypes(buildOpenApi(ROUTES));
    expect(readFileSync(TYPES_FILE, "utf8") === fresh, "src/client/api-types.ts is stale: run `npm run build` and commit it").toBe(true);
  });

  it("change when a route is added, so the check above catches a forgotten endpoint", async () => {
    const extra = { ...ROUTES[0], path: "/v1/memories/:id/history", method: "GET" as const, body: undefined };
    const withRoute = await clientTypes(buildOpenApi([...ROUTES, extra]));
    expect(withRoute).not.toBe(readFileSync(TYPES_FILE, "utf8"));
    expect(withRoute).toContain('"/v1/memories/{id}/history"');
    expect(withRoute).toContain("getV1MemoriesIdHistory");
  });
});

describe("the client in a browser bundle", () => {
  it("bundles for platform browser with no Node module, at most 15 KB gzipped", async () => {
    const result = await build({
      entryPoints: ["src/client/index.ts"],
      bundle: true,
      minify: true,
      format: "esm",
      platform: "browser",
      target: "es2022",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const code = result.outputFiles[0].text;
    expect(Object.keys(result.metafile.inputs).every((f) => f.startsWith("src/client/"))).toBe(true);
    expect(code).not.toMatch(/\bnode:|require\(|process\.|Buffer\b/);
    const gzip = gzipSync(code).length;
    console.log(`client bundle: ${code.length} bytes minified, ${gzip} bytes gzipped`);
    expect(gzip).toBeLessThanOrEqual(15 * 1024);
  });
});
