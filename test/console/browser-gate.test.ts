import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { collect } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const tempDir = useTempDirs();

/**
 * The README's `npm test` on a fresh machine: without chromium the browser tests are skipped with
 * one line saying why; with CI=true they fail instead. Runs the real test file in a child vitest
 * (without the global setup's build, which the browser tests don't need).
 */
async function runBrowserTests(env: Record<string, string>) {
  const dir = await tempDir();
  const config = join(dir, "vitest.config.mjs");
  await writeFile(config, `export default { test: { root: ${JSON.stringify(ROOT)}, include: ["test/console/browser.test.ts"], pool: "forks", hookTimeout: 60000 } };\n`);
  const childEnv: Record<string, string | undefined> = { ...process.env, ...env, MM_TEST_CHROMIUM: join(dir, "no-chromium-here") };
  if (env.CI === undefined) delete childEnv.CI;
  const child = spawn(process.execPath, [join(ROOT, "node_modules", "vitest", "vitest.mjs"), "run", "--config", config, "--reporter", "default"], {
    cwd: ROOT,
    env: childEnv as NodeJS.ProcessEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return collect(child);
}

describe("the browser tests on a machine without a browser", () => {
  it("are skipped with a clear line outside CI, and the run passes", async () => {
    const r = await runBrowserTests({});
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toMatch(/skipping the console's browser tests: no browser at .*no-chromium-here \(apt-get install -y chromium/);
    expect(r.stdout).toMatch(/skipped/);
  });

  it("fail in CI, saying what to install", async () => {
    const r = await runBrowserTests({ CI: "true" });
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/No browser at .*no-chromium-here: install Debian's chromium/);
  });
});
