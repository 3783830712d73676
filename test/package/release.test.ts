import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { VERSION } from "../../src/cli/version.js";
import { codeBlocks, documentedFiles, ROOT } from "../helpers/doc-examples.js";

const run = promisify(execFile);

/** The parts of docs/releasing.md's checklist that can be checked without publishing. */
describe("the release checklist", async () => {
  const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8"));
  const changelog = await readFile(join(ROOT, "CHANGELOG.md"), "utf8");
  const heading = new RegExp(`^## ${pkg.version.replaceAll(".", "\\.")} \\((unreleased|\\d{4}-\\d{2}-\\d{2})\\)$`, "m");

  it("one version: package.json, the CLI's VERSION, and a CHANGELOG heading", () => {
    expect(VERSION).toBe(pkg.version);
    expect(changelog).toMatch(heading);
  });

  it("npm publish --dry-run would publish the built CLI, the client and integrations with their types, and no sources", async () => {
    const { stdout } = await run("npm", ["publish", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: ROOT,
      env: { ...process.env, npm_config_update_notifier: "false" },
      maxBuffer: 64 << 20,
    });
    const report = JSON.parse(stdout);
    const packed = report[pkg.name] ?? report;
    expect([packed.name, packed.version]).toEqual([pkg.name, pkg.version]);
    const files = new Set<string>(packed.files.map((f: { path: string }) => f.path));
    const targets = Object.values(pkg.exports as Record<string, string | Record<string, string>>).flatMap((t) => (typeof t === "string" ? [t] : Object.values(t)));
    for (const target of [...targets, ...Object.values(pkg.bin as Record<string, string>)]) expect(files, target).toContain(target.replace(/^\.\//, ""));
    for (const f of ["dist/bundle/main.js", "README.md", "CHANGELOG.md", "docs/releasing.md"]) expect(files, f).toContain(f);
    expect([...files].filter((f) => /^(src|test)\/|\.map$|^node_modules\//.test(f))).toEqual([]);
  });

  it("while the version is unreleased, no MCP configuration in the docs runs the package with npx", async () => {
    if (!new RegExp(`^## ${pkg.version.replaceAll(".", "\\.")} \\(unreleased\\)$`, "m").test(changelog)) return;
    for (const file of await documentedFiles()) {
      for (const block of await codeBlocks(file, "json")) {
        expect(/"npx"[\s\S]*"mm-semantic-memory"/.test(block.code), `${file}:${block.line} runs npx mm-semantic-memory`).toBe(false);
      }
    }
  });
});
