import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Vitest's default, one file at a time less than the cores, is one file at a time on a 2-core
    // machine. Most files here wait on spawned processes, servers, Redis, Azurite or a browser, so
    // two at a time on 2 cores: the whole suite took 826 s instead of 1,013-1,120 s (29 November).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    minWorkers: 1,
    env: { LANCEDB_LOG: "error" },
  },
});
