#!/usr/bin/env node
// Part of `npm run build`: bundles the compiled CLI (dist/) into dist/bundle/, which bin/mm.js runs.
// Node resolves and compiles ES modules one file at a time; the CLI plus zod and commander is
// ~190 files, and loading them that way cost ~100 ms of every command's start-up. One file per
// entry point (split where mm loads code lazily, so `mm memories list` still never parses the
// HTTP server or the model code) starts in a fraction of that. Packages with native code or
// heavy optional parts stay external and load from node_modules as before.
import { build, transform } from "esbuild";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { recordCodeCache } from "./code-cache.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist", "bundle");
rmSync(out, { recursive: true, force: true }); // chunk names change per build
const { outputFiles } = await build({
  absWorkingDir: root,
  entryPoints: { main: "dist/cli/main.js", "embed-worker": "dist/embedder/embed-worker.js", "code-cache": "dist/code-cache.js" },
  outdir: out,
  write: false,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  minify: true,
  logLevel: "warning",
  external: [
    "@lancedb/lancedb",
    "apache-arrow",
    "@energetic-ai/*",
    "@huggingface/transformers",
    "compromise",
    "@inquirer/*",
  ],
});

// esbuild splits only ES modules, but Node 20 keeps no compile cache for ES modules: only a
// CommonJS file can be compiled from a V8 code cache (src/code-cache.ts), and compiling the CLI's
// chunks was ~40 ms of every command. So each chunk is rewritten as CommonJS, in a directory that
// says so, and a chunk's `import("./chunk.js")` becomes a `require` in a promise. `import()` of a
// package stays (some are ES modules only); a chunk that holds one is never cached. The chunks are
// rewritten after bundling, so they carry no source maps: debug on the sources (the tests run them).
mkdirSync(out, { recursive: true });
writeFileSync(join(out, "package.json"), '{ "type": "commonjs" }\n');
for (const file of outputFiles) {
  const { code } = await transform(file.text, {
    format: "cjs",
    platform: "node",
    target: "node20",
    minify: true,
    define: { "import.meta.url": "__mmUrl" },
    // First, so that the module stays in strict mode as it was as an ES module.
    banner: '"use strict";var __mmUrl=require("node:url").pathToFileURL(__filename).href;',
  });
  const chunkImport = /\bimport\("(\.\/[\w.-]+\.js)"\)/g;
  const rewritten = code.replace(chunkImport, 'Promise.resolve().then(()=>require("$1"))');
  if (/\bimport\("\./.test(rewritten)) throw new Error(`${basename(file.path)}: an import() of a chunk was not rewritten`);
  writeFileSync(file.path, rewritten);
}

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

// The caches only make mm start faster: if they can't be recorded here, say so and build anyway
// (mm then compiles the ordinary way; test/cli/code-cache.test.ts fails, so CI notices).
try {
  await recordCodeCache(root);
} catch (err) {
  console.warn(`warning: no code cache recorded, so mm will start slower: ${err.message}`);
}
