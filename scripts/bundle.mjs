#!/usr/bin/env node
// Part of `npm run build`: bundles the compiled CLI (dist/) into dist/bundle/, which bin/mm.js runs.
// Node resolves and compiles ES modules one file at a time; the CLI plus zod and commander is
// ~190 files, and loading them that way cost ~100 ms of every command's start-up. One file per
// entry point (split where mm loads code lazily, so `mm memories list` still never parses the
// HTTP server or the model code) starts in a fraction of that. Packages with native code or
// heavy optional parts stay external and load from node_modules as before.
import { build } from "esbuild";
import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
rmSync(join(root, "dist", "bundle"), { recursive: true, force: true }); // chunk names change per build
await build({
  absWorkingDir: root,
  entryPoints: { main: "dist/cli/main.js", "embed-worker": "dist/embedder/embed-worker.js" },
  outdir: "dist/bundle",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  minify: true,
  sourcemap: true,
  logLevel: "warning",
  // commander is CommonJS: inside an ES module bundle its `require` calls need a real require.
  banner: { js: "import { createRequire as __mmRequire } from 'node:module'; const require = __mmRequire(import.meta.url);" },
  external: [
    "@lancedb/lancedb",
    "apache-arrow",
    "@energetic-ai/*",
    "@huggingface/transformers",
    "compromise",
    "@inquirer/*",
    "cli-progress",
  ],
});

// LanceDB's JavaScript layer is ~20 CommonJS files, and it loads @opentelemetry/api (51 more) and
// reflect-metadata: about 40 ms of loading per command that opens the store. The same code as one
// file, next to the chunks: src/storage/lance.ts loads it when it runs from this directory. The
// native binding and Arrow stay external (Arrow must be the one instance mm shares with LanceDB).
await build({
  absWorkingDir: root,
  entryPoints: [createRequire(join(root, "package.json")).resolve("@lancedb/lancedb")],
  outfile: "dist/bundle/lancedb.cjs",
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  minify: true,
  logLevel: "warning",
  external: ["apache-arrow", "@lancedb/lancedb-*", "*.node"],
});
