import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { Accounts } from "../../src/core/accounts.js";
import { openContext } from "../../src/core/context.js";
import { DEFAULT_EMBEDDER } from "../../src/embedder/index.js";
import { QuotaLedger } from "../../src/limits/ledger.js";
import { Store } from "../../src/storage/store.js";
import { collect, runMm, spawnMm } from "../helpers/spawn-mm.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * Billing across a kill -9, at the two instants that matter, reached exactly through the
 * MM_TEST_CRASH_AT hook: just before a billed commit, and between a commit and its charge.
 * The rule: an operation is billed if and only if it is acknowledged or stored, except that a
 * crash between a commit and its charge leaves that one commit (one batch, or one request) unbilled.
 */

const tempDir = useTempDirs();

/** A new store (use-lite, model not loaded) with a hobby account; returns the store and the account. */
async function storeWithAccount(): Promise<{ store: string; accountId: string }> {
  const store = join(await tempDir(), "store");
  await (await openContext({ storeDir: store, createWith: DEFAULT_EMBEDDER })).close();
  const account = await new Accounts(store).create({ name: "payer", plan: "hobby" });
  return { store, accountId: account.id };
}

async function tally(store: string, accountId: string): Promise<{ stored: number; billed: number }> {
  const s = await Store.open(store);
  try {
    return { stored: await s.countMemories({ accountId }), billed: (await new QuotaLedger(join(store, "ledger")).usage(accountId, null)).used };
  } finally {
    s.close();
  }
}

async function batchFile(dir: string, n: number): Promise<string> {
  const file = join(dir, "lines.jsonl");
  await writeFile(file, Array.from({ length: n }, (_, i) => JSON.stringify({ content: `Line ${i} about the garden and the roses`, userId: "u" })).join("\n") + "\n");
  return file;
}

/** Runs a batch add as the account until the hook kills it; returns the acknowledged lines. */
async function killedBatch(store: string, account: string, crashAt: string): Promise<number> {
  const file = await batchFile(await tempDir(), 12);
  const r = await runMm(["memories", "add", "--batch", file, "--batch-size", "4", "--account", account, "--json"], { store, env: { MM_TEST_CRASH_AT: crashAt } });
  expect(r.signal, r.stderr).toBe("SIGKILL");
  return r.stdout.trim().split("\n").filter((l) => l && JSON.parse(l).memory).length;
}

describe("a batch add killed mid-way", () => {
  for (const account of ["payer", "default"]) {
    it(`killed just before its 2nd commit, it is billed for exactly the lines it stored (${account === "default" ? "unlimited" : "hobby"} plan)`, async () => {
      const { store, accountId } = await storeWithAccount();
      const id = account === "default" ? "acct_default" : accountId;
      const acked = await killedBatch(store, account, "billed-commit:before#2");
      expect(acked).toBe(4);
      expect(await tally(store, id)).toEqual({ stored: 4, billed: 4 });
    });
  }

  it("killed between its 2nd commit and that commit's charge: that one batch is free, never more, and everything acknowledged is billed", async () => {
    const { store, accountId } = await storeWithAccount();
    const acked = await killedBatch(store, "payer", "billed-commit:after#2");
    expect(acked).toBe(4);
    expect(await tally(store, accountId)).toEqual({ stored: 8, billed: 4 });
  });
});

describe("mm serve killed during a POST", () => {
  async function killedPost(crashAt: string): Promise<{ stored: number; billed: number }> {
    const { store, accountId } = await storeWithAccount();
    const { key } = await new Accounts(store).createKey({ account: accountId, name: "k" });
    const child = spawnMm(["serve", "--port", "0", "--no-warm"], { store, env: { MM_TEST_CRASH_AT: crashAt } });
    const done = collect(child);
    const url = await new Promise<string>((resolve) => {
      createInterface({ input: child.stderr! }).on("line", (line) => {
        if (line.includes('"listening"')) resolve(JSON.parse(line).url);
      });
    });
    const answer = await fetch(`${url}/v1/memories`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ content: "never acknowledged", userId: "u" }),
    }).then((r) => r.status, () => "no answer");
    expect(answer).toBe("no answer");
    expect((await done).signal).toBe("SIGKILL");
    return tally(store, accountId);
  }

  it("killed before the commit: nothing stored, nothing billed", async () => {
    expect(await killedPost("billed-commit:before")).toEqual({ stored: 0, billed: 0 });
  });

  it("killed between the commit and the charge: stored, unacknowledged, and the one free operation", async () => {
    expect(await killedPost("billed-commit:after")).toEqual({ stored: 1, billed: 0 });
  });
});
