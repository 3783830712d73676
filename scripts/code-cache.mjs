// Part of `npm run build` (called by scripts/bundle.mjs): records the V8 code caches of the CLI's
// CommonJS files (see src/code-cache.ts) with a real search, in a store of its own that is removed
// afterwards. The search runs with MM_CODE_CACHE_RECORD=1; when it exits, it writes the caches of
// every function it compiled, and their manifest, to dist/bundle/code-cache/.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export async function recordCodeCache(root) {
  const work = mkdtempSync(join(tmpdir(), "mm-code-cache-"));
  try {
    const env = { ...process.env, MM_STORE: join(work, "store"), LANCEDB_LOG: "error" };
    for (const name of ["MM_ACCOUNT", "MM_USER", "MM_EMBED_WORKERS", "MM_CODE_CACHE_RECORD"]) delete env[name];
    mm(root, ["memories", "add", "The code cache is recorded by a real search.", "--user", "build"], env);
    mm(root, ["memories", "search", "what records the code cache?", "--user", "build", "--threshold", "0"], { ...env, MM_CODE_CACHE_RECORD: "1" });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const manifest = JSON.parse(readFileSync(join(root, "dist", "bundle", "code-cache", "manifest.json"), "utf8"));
  if (!manifest.entries.length) throw new Error("the code cache recorded no files");
}

function mm(root, args, env) {
  const r = spawnSync(process.execPath, [join(root, "bin", "mm.js"), ...args], { env, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`recording the code cache: mm ${args.join(" ")} failed (${r.status}):\n${r.stderr}`);
}
