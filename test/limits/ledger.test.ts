import { spawn } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { QuotaLedger } from "../../src/limits/ledger.js";
import { collect } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const WORKER = fileURLToPath(new URL("../helpers/ledger-worker.mjs", import.meta.url));

function worker(dir: string, account: string, count: number, limit: number | "unlimited") {
  return spawn(process.execPath, [WORKER, dir, account, String(count), String(limit)], { stdio: ["ignore", "pipe", "pipe"] });
}

describe("quota ledger", () => {
  it("counts 4 processes × 250 operations as exactly 1,000", async () => {
    const dir = await tempDir();
    const results = await Promise.all(Array.from({ length: 4 }, () => collect(worker(dir, "acct_x", 250, "unlimited"))));
    for (const r of results) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.trim().split("\n")).toHaveLength(250);
    }
    expect((await new QuotaLedger(dir).usage("acct_x", null)).used).toBe(1000);
  });

  it("enforces a finite limit exactly under contention: 4 × 100 attempts against 150 allow exactly 150", async () => {
    const dir = await tempDir();
    const results = await Promise.all(Array.from({ length: 4 }, () => collect(worker(dir, "acct_y", 100, 150))));
    const acks = results.flatMap((r) => r.stdout.trim().split("\n")).filter((l) => l.startsWith("ack"));
    expect(acks).toHaveLength(150);
    expect((await new QuotaLedger(dir).usage("acct_y", 150)).used).toBe(150);
  });

  it("loses nothing a killed process acknowledged", async () => {
    const dir = await tempDir();
    const child = worker(dir, "acct_k", 100_000, "unlimited");
    let acked = 0;
    const done = collect(child);
    await new Promise<void>((resolve) => {
      createInterface({ input: child.stdout! }).on("line", () => {
        acked++;
        if (acked === 300) {
          child.kill("SIGKILL");
          resolve();
        }
      });
    });
    // Every acknowledgement the child printed before it died, including lines not yet read at the
    // kill (a fast child is well past 300 by then).
    const acks = (await done).stdout.match(/^ack \d+$/gm) ?? [];
    expect(acks.length).toBeGreaterThanOrEqual(300);
    expect(acks.at(-1)).toBe(`ack ${acks.length}`);
    const used = (await new QuotaLedger(dir).usage("acct_k", null)).used;
    expect(used).toBeGreaterThanOrEqual(acks.length);
    // Charges run one at a time, so at most the one in flight at the kill counts unacknowledged.
    expect(used).toBeLessThanOrEqual(acks.length + 1);
    const bytes = (await readFile(join(dir, "acct_k", `${new Date().toISOString().slice(0, 7)}.log`))).length;
    expect(bytes % 32).toBe(0);
  });

  it("recreates its directory if the ledger is deleted under a running process", async () => {
    const dir = await tempDir();
    for (const limit of [null, 10]) {
      const ledger = new QuotaLedger(join(dir, `l${limit}`));
      expect((await ledger.charge("acct_x", limit, "read")).used).toBe(1);
      await rm(join(dir, `l${limit}`), { recursive: true, force: true });
      expect((await ledger.charge("acct_x", limit, "read")).used).toBe(1);
      expect((await ledger.charge("acct_x", limit, "read")).used).toBe(2);
    }
  });

  it("refuses past the limit with the spec's extras, counting nothing", async () => {
    const dir = await tempDir();
    const clock = () => new Date("2026-02-10T12:00:00.000Z");
    const ledger = new QuotaLedger(dir, clock);
    await ledger.charge("acct_f", 3, "read", 3);
    const err = await ledger.charge("acct_f", 3, "read").catch((e) => e);
    expect(err.code).toBe("QUOTA_EXCEEDED");
    expect(err.extra).toEqual({ currentUsage: 3, limit: 3, resetAt: "2026-03-01T00:00:00.000Z" });
    expect((await ledger.usage("acct_f", 3)).used).toBe(3);
    const batch = await ledger.charge("acct_g", 5, "write", 6).catch((e) => e);
    expect(batch.code).toBe("QUOTA_EXCEEDED");
    expect((await ledger.usage("acct_g", 5)).used).toBe(0);
  });

  it("chargeCommitted: charges after the commit, nothing if it throws, and never runs a commit that wouldn't fit", async () => {
    const ledger = new QuotaLedger(await tempDir());
    for (const limit of [null, 10]) {
      const account = `acct_c${limit}`;
      const seen: number[] = [];
      const { result, usage } = await ledger.chargeCommitted(account, limit, "write", 3, async () => {
        seen.push((await ledger.usage(account, limit)).used);
        return "stored";
      });
      expect([result, usage.used, seen]).toEqual(["stored", 3, [0]]);
      await expect(ledger.chargeCommitted(account, limit, "write", 2, async () => Promise.reject(new Error("commit failed")))).rejects.toThrow("commit failed");
      expect((await ledger.usage(account, limit)).used).toBe(3);
    }
    let ran = false;
    const refused = await ledger.chargeCommitted("acct_c10", 10, "write", 8, async () => void (ran = true)).catch((e) => e);
    expect([refused.code, ran, (await ledger.usage("acct_c10", 10)).used]).toEqual(["QUOTA_EXCEEDED", false, 3]);
  });

  it("chargeCommitted keeps a finite limit exact while commits take time: 12 concurrent commits of 2 for 9 units left → 4 run", async () => {
    const ledger = new QuotaLedger(await tempDir());
    await ledger.charge("acct_r", 10, "read", 1);
    let committed = 0;
    const slowCommit = async () => {
      await new Promise((r) => setTimeout(r, 5));
      committed += 2;
    };
    const results = await Promise.allSettled(Array.from({ length: 12 }, () => ledger.chargeCommitted("acct_r", 10, "write", 2, slowCommit)));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(4);
    expect(committed).toBe(8);
    expect((await ledger.usage("acct_r", 10)).used).toBe(9);
  });

  it("starts every UTC month at zero and keeps months apart", async () => {
    const dir = await tempDir();
    let now = new Date("2026-01-31T23:59:59.999Z");
    const ledger = new QuotaLedger(dir, () => now);
    await ledger.charge("acct_m", 10, "read", 4);
    expect(await ledger.usage("acct_m", 10)).toEqual({ accountId: "acct_m", period: "2026-01", used: 4, limit: 10, resetAt: "2026-02-01T00:00:00.000Z" });
    now = new Date("2026-02-01T00:00:00.000Z");
    expect((await ledger.usage("acct_m", 10)).used).toBe(0);
    await ledger.charge("acct_m", 10, "read");
    expect(await ledger.usage("acct_m", 10)).toMatchObject({ period: "2026-02", used: 1, resetAt: "2026-03-01T00:00:00.000Z" });
    now = new Date("2026-12-15T00:00:00.000Z");
    expect((await ledger.usage("acct_m", 10)).resetAt).toBe("2027-01-01T00:00:00.000Z");
    now = new Date("2026-01-15T00:00:00.000Z");
    expect((await ledger.usage("acct_m", 10)).used).toBe(4);
  });
});
