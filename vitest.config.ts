import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

/**
 * The benchmark's smoke run (test/bench/bench-smoke.test.ts, 2 to 2.5 minutes: the slowest file by
 * twice) checks that `npm run bench` still runs, not anything a change to mm's behaviour breaks, so
 * `npm test` leaves it out and CI runs it on its own (.ci/run: MM_BENCH_SMOKE=1 npx vitest run).
 */
const BENCH_SMOKE = "test/bench/bench-smoke.test.ts";
const benchSmoke = process.env.MM_BENCH_SMOKE === "1";

export default defineConfig({
  test: {
    include: benchSmoke ? [BENCH_SMOKE] : ["test/**/*.test.ts"],
    exclude: benchSmoke ? [] : ["**/node_modules/**", BENCH_SMOKE],
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
