import { execFile } from "node:child_process";
import { chmod, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Accounts } from "../../src/core/accounts.js";
import { openContext } from "../../src/core/context.js";
import { createMemory } from "../../src/core/memories.js";
import { QuotaLedger } from "../../src/limits/ledger.js";
import { MM_BIN } from "../helpers/spawn-mm.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

/**
 * A store holds private data: its directories are 700 and its files 600 whatever the umask of
 * the process that writes them (LanceDB's own files included), and a store made loose by an
 * older mm is tightened when it is opened.
 */

const tempDir = useTempDirs();

/** Every path under `dir` (and `dir` itself) whose mode isn't 700 for a directory or 600 for a file. */
async function loose(dir: string): Promise<string[]> {
  const out: string[] = [];
  const visit = async (path: string) => {
    const s = await stat(path);
    const mode = s.mode & 0o777;
    if (s.isDirectory()) {
      if (mode !== 0o700) out.push(`${path} ${mode.toString(8)}`);
      for (const name of await readdir(path)) await visit(join(path, name));
    } else if (mode !== 0o600) out.push(`${path} ${mode.toString(8)}`);
  };
  await visit(dir);
  return out;
}

/** Runs `mm` under `umask 000`, the loosest a user could have. */
function mmUnderUmask000(store: string, args: string[], input = ""): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile("sh", ["-c", `umask 000 && exec "${process.execPath}" "${MM_BIN}" "$@"`, "sh", ...args], { env: { ...process.env, MM_STORE: store, LANCEDB_LOG: "error" } }, (err, _out, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stderr }),
    );
    child.stdin!.end(input);
  });
}

describe("file modes", () => {
  it("a store made and written by mm under umask 000 has only 700 directories and 600 files: tables, ledger, keys, config", async () => {
    const store = join(await tempDir(), "store");
    for (const args of [
      ["accounts", "create", "acme", "--plan", "hobby"],
      ["keys", "create", "--account", "acme", "--name", "k"],
      ["memories", "add", "a private note", "--user", "u", "--account", "acme"],
      ["memories", "add", "--batch", "-", "--user", "u"],
      ["entities", "create", "Ada", "--type", "PERSON"],
    ]) {
      const r = await mmUnderUmask000(store, args, '"one"\n"two"\n');
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
    }
    expect(await loose(store)).toEqual([]);
  });

  it("an existing store with 755 directories and 644 files is tightened when opened", async () => {
    const store = join(await tempDir(), "store");
    const ctx = await openContext({ storeDir: store, embedder: createTestEmbedder() });
    await createMemory(ctx, { content: "written by an older mm", userId: "u" });
    await ctx.close();
    await new Accounts(store).createKey({ account: "default", name: "k" });
    await new QuotaLedger(join(store, "ledger")).charge("acct_default", null, "write");
    const loosen = async (path: string): Promise<void> => {
      const s = await stat(path);
      await chmod(path, s.isDirectory() ? 0o755 : 0o644);
      if (s.isDirectory()) for (const name of await readdir(path)) await loosen(join(path, name));
    };
    await loosen(store);
    expect((await loose(store)).length).toBeGreaterThan(5);

    await (await openContext({ storeDir: store, embedder: createTestEmbedder() })).close();
    expect(await loose(store)).toEqual([]);
  });
});
