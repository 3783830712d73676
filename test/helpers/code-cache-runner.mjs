// Run by test/code-cache.test.ts, one process per case (the cache hooks a process's CommonJS loader
// once): installs the code cache from dist/code-cache.js, requires one file, and prints what the
// file exported and what the cache did with it.
import { createRequire } from "node:module";

const [codeCacheModule, dir, mode, file] = process.argv.slice(2);
const { useCodeCache, stopCodeCache, codeCacheUses } = await import(codeCacheModule);
useCodeCache(dir, { record: mode === "record" });
if (mode === "stop") stopCodeCache();
const value = createRequire(import.meta.url)(file);
process.stdout.write(JSON.stringify({ value, uses: codeCacheUses() }));
