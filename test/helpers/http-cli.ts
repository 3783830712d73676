import { runCli as runCliOn, type CliResult } from "./run-cli.js";

export type { CliResult };

/**
 * Runs the real CLI in-process (piped, so JSON output) on `storeDir` as `account`, with the test
 * embedder and the given clock: the same store, embedder and clock a test server uses (and, with
 * `$MM_TEST_REDIS_URL`, the same Redis, as the test server does).
 */
export function runCli(storeDir: string, account: string, args: string[], clock?: () => Date): Promise<CliResult> {
  const redis = process.env.MM_TEST_REDIS_URL;
  return runCliOn(storeDir, ["--account", account, "--json", ...args], { clock, ...(redis ? { env: { MM_REDIS_URL: redis } } : {}) });
}

const ID = /\b(mem|ent|rel)_[0-9A-Z]{24}\b/g;
const TIMESTAMP = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\b/g;

/**
 * Replaces ids with placeholders numbered by first appearance (`mem#1`, `ent#2`…) and ISO
 * timestamps with `<time>`, and pulls out `score` values (returned separately, for toBeCloseTo).
 * One normaliser per side: when both sides perform the same steps in the same order, the same
 * resource gets the same placeholder on both.
 */
export function createNormaliser() {
  const ids = new Map<string, string>();
  const counters: Record<string, number> = {};
  const normalise = (value: unknown): { value: unknown; scores: number[] } => {
    const scores: number[] = [];
    const walk = (v: unknown): unknown => {
      if (typeof v === "string") {
        return v
          .replace(ID, (id, prefix: string) => {
            let p = ids.get(id);
            if (!p) {
              counters[prefix] = (counters[prefix] ?? 0) + 1;
              p = `${prefix}#${counters[prefix]}`;
              ids.set(id, p);
            }
            return p;
          })
          .replace(TIMESTAMP, "<time>");
      }
      if (Array.isArray(v)) return v.map(walk);
      if (v && typeof v === "object") {
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v)) {
          if (k === "score" && typeof x === "number") {
            scores.push(x);
            out[k] = "<score>";
          } else out[k] = walk(x);
        }
        return out;
      }
      return v;
    };
    return { value: walk(value), scores };
  };
  return { normalise, ids };
}
