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
});
