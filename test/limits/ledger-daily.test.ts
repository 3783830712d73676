import { appendFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { QuotaLedger } from "../../src/limits/ledger.js";
import { createTestClock } from "../helpers/http-server.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

describe("the quota ledger, per day", () => {
  it("counts each day's operations from the records' own timestamps; the days add up to the month", async () => {
    const dir = await tempDir();
    const clock = createTestClock("2026-03-02T23:59:59.000Z");
    const ledger = new QuotaLedger(dir, clock);
    await ledger.charge("acct_a", 1000, "write");
    await ledger.charge("acct_a", 1000, "read", 2);
    clock.set("2026-03-03T00:00:00.500Z");
    await ledger.charge("acct_a", 1000, "search");
    clock.set("2026-03-15T12:00:00.000Z");
    for (let i = 0; i < 5; i++) await ledger.charge("acct_a", 1000, "read");
    await ledger.charge("acct_b", null, "read");

    const { period, days } = await ledger.daily("acct_a");
    expect(period).toBe("2026-03");
    expect(days).toHaveLength(15);
    expect(days[1]).toBe(3);
    expect(days[2]).toBe(1);
    expect(days[14]).toBe(5);
    expect(days.reduce((a, b) => a + b, 0)).toBe((await ledger.usage("acct_a", 1000)).used);
    expect((await ledger.daily("acct_b")).days[14]).toBe(1);
    expect((await ledger.daily("acct_none")).days).toEqual(new Array(15).fill(0));
  });

  it("reads a ledger written before per-day counts existed, exactly, and leaves a torn last record out", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "acct_old"), { recursive: true });
    // The record format has not changed: `<ISO time> <bucket>` padded to 31 bytes and a newline.
    const record = (iso: string, bucket: string) => `${iso} ${bucket}`.padEnd(31) + "\n";
    const file = join(dir, "acct_old", "2026-03.log");
    await writeFile(file, record("2026-03-01T08:00:00.000Z", "write").repeat(40_000) + record("2026-03-07T09:30:00.000Z", "search").repeat(3));
    await appendFile(file, "2026-03-07T10:"); // a crash mid-record: neither count nor daily counts it
    const ledger = new QuotaLedger(dir, createTestClock("2026-03-10T00:00:00.000Z"));
    const { days } = await ledger.daily("acct_old");
    expect(days).toEqual([40_000, 0, 0, 0, 0, 0, 3, 0, 0, 0]);
    expect((await ledger.usage("acct_old", null)).used).toBe(40_003);
  });
});
