import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * Input that used to pass, or fail with internals, refused by the real `mm` in words a user can
 * act on: the flag they typed, what is wrong with it, no stack or source path.
 */
const tempDir = useTempDirs();

describe("bad input the CLI refuses in the user's words", () => {
  it("--as-of: a day the calendar doesn't have, or a time without a zone, is a usage error naming --as-of", async () => {
    const store = join(await tempDir(), "store");
    expect((await runMm(["memories", "add", "the shed key is blue", "--user", "u"], { store })).code).toBe(0);
    const noDay = await runMm(["memories", "search", "shed key", "--user", "u", "--as-of", "2026-02-30", "--format", "table"], { store });
    expect([noDay.code, noDay.stderr.trim()]).toEqual([2, "mm: --as-of 2026-02-30 is not a day of the calendar."]);
    const noZone = await runMm(["memories", "search", "shed key", "--user", "u", "--as-of", "2026-12-07 10:00", "--format", "table"], { store });
    expect([noZone.code, noZone.stderr.trim()]).toEqual([2, "mm: --as-of has no time zone: add Z for UTC, or an offset like +02:00."]);
    const fine = await runMm(["memories", "search", "shed key", "--user", "u", "--as-of", "2099-12-07T10:00+01:00", "--threshold", "0"], { store });
    expect(fine.code, fine.stderr).toBe(0);
  });

  it("a Redis URL with a malformed %-escape is a usage error naming --redis or MM_REDIS_URL, never 'URI malformed' or the password", async () => {
    const store = join(await tempDir(), "store");
    expect((await runMm(["init"], { store })).code).toBe(0);
    const url = "redis://:s3cret%zz@127.0.0.1:1";
    const serve = await runMm(["serve", "--port", "0", "--redis", url], { store });
    expect(serve.code, serve.stderr).toBe(2);
    const { error } = JSON.parse(serve.stderr.trim().split("\n").pop()!);
    expect(error.code).toBe("VALIDATION_ERROR");
    expect(error.message).toMatch(/^--redis: the password in the URL has a % that doesn't start an escape/);
    const viaEnv = await runMm(["memories", "add", "x", "--user", "u"], { store, env: { MM_REDIS_URL: "redis://us%2er%g@127.0.0.1:1" } });
    expect(viaEnv.code, viaEnv.stderr).toBe(2);
    expect(JSON.parse(viaEnv.stderr).error.message).toMatch(/^MM_REDIS_URL: the user name in the URL has a %/);
    for (const r of [serve, viaEnv]) expect(r.stderr).not.toMatch(/URI malformed|INTERNAL_ERROR|s3cret|\bat .*\.js:\d+/);
  });

  it("an Azure account key that isn't base64 is a STORE_ERROR that says so in the variable's name, without Rust source paths or the key", async () => {
    const dir = await tempDir();
    const env = { AZURE_STORAGE_ACCOUNT_NAME: "mmtestaccount", AZURE_STORAGE_ACCOUNT_KEY: "not-a-base64-key!!", AZURE_STORAGE_ENDPOINT: "http://127.0.0.1:1", XDG_STATE_HOME: dir };
    const r = await runMm(["init", "--json"], { store: "az://mm-test/store", env });
    expect(r.code, r.stderr).toBe(6);
    const { error } = JSON.parse(r.stderr.trim().split("\n").pop()!);
    expect(error.code).toBe("STORE_ERROR");
    expect(error.message).toMatch(/AZURE_STORAGE_ACCOUNT_KEY is not base64/);
    expect(r.stderr).not.toMatch(/\.rs\b|src\/|not-a-base64-key/);
  });
});
