import { execFile, spawn } from "node:child_process";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ROOT } from "../helpers/doc-examples.js";
import { stdioClient } from "../helpers/mcp-client.js";
import { useTempDirs } from "../helpers/temp.js";

const run = promisify(execFile);
const tempDir = useTempDirs();

/**
 * What an MCP config's `npx -y mm-semantic-memory mcp` relies on: the tarball `npm pack` makes
 * holds the built files, and installs on a clean prefix with no build step. The global setup has
 * built dist/ already, so the pack here skips `prepare` (which would build it again); the install
 * fetches dependencies from the registry, preferring npm's local cache.
 */
describe("the npm package", () => {
  it("packs the built CLI and the console's assets, installs into an empty prefix without building, and runs: --version, add, search, mcp tools/list, the console", async () => {
    const dir = await tempDir();
    const started = performance.now();
    const npm = (args: string[], cwd: string) =>
      run("npm", args, { cwd, env: { ...process.env, npm_config_update_notifier: "false", npm_config_fund: "false", npm_config_audit: "false" }, maxBuffer: 64 << 20 });
    const packed = JSON.parse((await npm(["pack", "--ignore-scripts", "--json", "--pack-destination", dir], ROOT)).stdout)[0];
    expect(packed.name).toBe("mm-semantic-memory");
    const files = packed.files.map((f: { path: string }) => f.path);
    for (const f of ["bin/mm.js", "dist/bundle/main.js", "dist/bundle/code-cache.js", "dist/bundle/lancedb.cjs", "dist/client/index.js", "dist/client/index.d.ts", "package.json"]) expect(files).toContain(f);
    for (const f of ["console.css", "console.js", "graph.js", "usage.js"]) expect(files).toContain(`assets/console/${f}`);
    expect(files.filter((f: string) => f.startsWith("src/") || f.startsWith("test/") || f.endsWith(".map"))).toEqual([]);

    const prefix = join(dir, "prefix");
    // --ignore-scripts would also skip LanceDB's and others' own install scripts; a user's install doesn't.
    const installed = await npm(["install", "-g", "--prefix", prefix, "--prefer-offline", join(dir, packed.filename)], dir);
    expect(installed.stderr).not.toMatch(/error/i);
    expect(await readdir(join(prefix, "bin"))).toEqual(["mm"]);
    // Nothing was built there: a build would have recorded code caches, and needs sources and tsc.
    const pkg = join(prefix, "lib", "node_modules", "mm-semantic-memory");
    expect((await readdir(pkg)).sort()).toEqual(["CHANGELOG.md", "README.md", "assets", "bin", "dist", "docs", "node_modules", "package.json"]);
    expect(await readdir(join(pkg, "dist", "bundle"))).not.toContain("code-cache");
    expect(await readdir(join(pkg, "node_modules"))).not.toContain("typescript");
    const installMs = performance.now() - started;

    const mm = join(prefix, "bin", "mm");
    const env = { ...process.env, MM_STORE: join(dir, "store"), LANCEDB_LOG: "error" };
    const version = await run(mm, ["--version"], { env, cwd: dir });
    expect(version.stdout.trim()).toBe(packed.version);
    const added = JSON.parse((await run(mm, ["memories", "add", "Alice switched from coffee to green tea", "--user", "alice"], { env, cwd: dir })).stdout);
    const found = JSON.parse((await run(mm, ["memories", "search", "what does alice drink?", "--user", "alice", "--threshold", "0.3", "--mode", "semantic"], { env, cwd: dir })).stdout);
    expect(found.results.map((h: { id: string }) => h.id)).toEqual([added.id]);

    const { client } = await stdioClient([], { MM_STORE: env.MM_STORE }, [], mm);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("memories_search");
    expect(tools.map((t) => t.name)).toContain("search_nodes");
    await client.close();

    // The console, served by the installed package: its own scripts, and Cytoscape.js and Chart.js
    // from the package's dependencies, with nothing from the network.
    const serve = spawn(mm, ["serve", "--port", "0"], { env, cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let err = "";
        serve.stderr!.setEncoding("utf8").on("data", (d: string) => {
          err += d;
          const m = /"event":"listening","url":"([^"]+)"/.exec(err);
          if (m) resolve(m[1]);
        });
        serve.once("exit", (code) => reject(new Error(`mm serve exited (${code}): ${err}`)));
      });
      const link = JSON.parse((await run(mm, ["console", "link", "--url", url], { env, cwd: dir })).stdout).url;
      const signedIn = await fetch(link, { redirect: "manual" });
      expect(signedIn.status).toBe(303);
      const cookie = signedIn.headers.get("set-cookie")!.split(";")[0];
      const pages = await Promise.all(["/console/graph", "/console/usage"].map(async (path) => (await fetch(url + path, { headers: { cookie } })).text()));
      const assets = [...pages.join("").matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]);
      expect(new Set(assets.map((a) => a.split("/").pop()))).toEqual(new Set(["console.css", "console.js", "cytoscape.min.js", "graph.js", "chart.umd.min.js", "usage.js"]));
      for (const asset of new Set(assets)) expect((await fetch(url + asset)).status, asset).toBe(200);

      // The client, imported by its package name as an app beside the installed package would.
      const app = join(prefix, "lib", "app.mjs");
      await writeFile(app, 'import { createClient } from "mm-semantic-memory/client";\nconsole.log(Object.keys((await createClient({ baseUrl: process.argv[2] }).openapi()).paths).join(" "));\n');
      expect((await run(process.execPath, [app, url], { cwd: dir })).stdout.split(" ")).toContain("/v1/memories/search");
    } finally {
      serve.kill("SIGTERM");
    }
    console.log(`pack + install into a clean prefix: ${Math.round(installMs)} ms; whole test ${Math.round(performance.now() - started)} ms`);
  }, 240_000);
});
