// Loaded with `node --import` by test/cli/code-cache.test.ts: when the process exits, writes what
// the CLI's code cache did (codeCacheUses() of the module bin/mm.js installed) to $MM_CODE_CACHE_REPORT.
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";

process.on("exit", () => {
  const { codeCacheUses } = createRequire(import.meta.url)(process.env.MM_CODE_CACHE_MODULE);
  writeFileSync(process.env.MM_CODE_CACHE_REPORT, JSON.stringify(codeCacheUses()));
});
