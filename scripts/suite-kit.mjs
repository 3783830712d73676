// What the on-demand suites (fuzz, crash, soak) share: arguments, a fresh store with accounts and
// keys, a seeded random source, the server's RSS, and the table + JSON every suite reports with.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const BIN = join(root, "bin", "mm.js");

/** `--name value` flags over defaults; numbers stay numbers. */
export function parseArgs(defaults) {
  const args = process.argv.slice(2);
  const out = { ...defaults };
  for (let i = 0; i < args.length; i++) {
    const name = args[i].replace(/^--/, "");
    if (!(name in defaults)) throw new Error(`unknown option ${args[i]}; options: ${Object.keys(defaults).map((k) => `--${k}`).join(" ")}`);
    const value = args[++i];
    out[name] = typeof defaults[name] === "number" ? Number(value) : value;
  }
  return out;
}

/** mulberry32: a small seeded generator, so a failing run can be replayed from its seed. */
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  return { next, int, pick: (list) => list[int(list.length)], chance: (p) => next() < p };
}

/**
 * A new store in a temp directory (use-lite unless `embedder` says otherwise; the model is not
 * loaded), with accounts and one key each: `{ name: plan }`. Made through the built library, not
 * `mm` commands, to save start-ups.
 */
export async function newStore(accounts = { main: "enterprise" }, embedder = undefined, location = undefined) {
  const { openContext } = await import(join(root, "dist/core/context.js"));
  const { Accounts } = await import(join(root, "dist/core/accounts.js"));
  const { DEFAULT_EMBEDDER } = await import(join(root, "dist/embedder/index.js"));
  const dir = mkdtempSync(join(tmpdir(), "mm-suite-"));
  // `location`: a store elsewhere (an object store's URI, its credentials in process.env).
  const store = location ?? join(dir, "store");
  await (await openContext({ storeDir: store, createWith: embedder ?? DEFAULT_EMBEDDER })).close();
  const made = {};
  const acc = new Accounts(store);
  for (const [name, plan] of Object.entries(accounts)) {
    const account = await acc.create({ name, plan });
    const key = await acc.createKey({ account: account.id, name: `${name}-key` });
    made[name] = { id: account.id, key: key.key, keyId: key.id };
  }
  return {
    dir,
    store,
    accounts: made,
    env: { ...process.env, MM_STORE: store, LANCEDB_LOG: "error" },
    revoke: (keyId) => acc.revokeKey(keyId),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Stored memories and billed operations of an account, read from the store and the ledger directly (nothing is charged). */
export async function tally(store, accountId) {
  const { Store } = await import(join(root, "dist/storage/store.js"));
  const { QuotaLedger } = await import(join(root, "dist/limits/ledger.js"));
  const s = await Store.open(store);
  try {
    const { records } = await s.listMemories({ accountId }, { offset: 0, limit: 1_000_000 });
    return { ids: records.map((r) => r.id), billed: (await new QuotaLedger(join(s.coordinationDir, "ledger")).usage(accountId, null)).used };
  } finally {
    s.close();
  }
}

/** Resident memory of a process, in MB (Linux /proc). */
export function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

export function machine() {
  return { cpus: cpus().length, cpu: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, platform: process.platform };
}

export function printTable(title, head, rows) {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join(" | ");
  console.log(`\n${title}`);
  console.log(line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("-|-"));
  for (const r of rows) console.log(line(r));
}

export function writeJson(out, data) {
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(data, null, 2) + "\n");
  console.log(`\nJSON: ${out}`);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A stand-in embedding model: an OpenAI-compatible /v1/embeddings endpoint on 127.0.0.1 that
 * answers with deterministic bag-of-words vectors. `mm serve` uses it through its real `openai`
 * provider, so a long run measures the server and the store, not the model's CPU time.
 */
export async function stubEmbeddings(dims = 64) {
  const { createServer } = await import("node:http");
  const { createHash } = await import("node:crypto");
  const vector = (text) => {
    const v = new Array(dims).fill(0);
    for (const w of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [text]) {
      const h = createHash("sha256").update(w).digest();
      for (let i = 0; i < dims; i++) v[i] += (h[i % h.length] >> (i % 8)) & 1 ? 1 : -1;
    }
    return v;
  };
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const input = JSON.parse(body).input ?? [];
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: input.map((t, index) => ({ object: "embedding", index, embedding: vector(t) })) }));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}/v1`;
  return { url, config: { provider: "openai", model: "stub-bag-of-words", dims, options: { url, apiKeyEnv: "MM_STUB_EMBEDDINGS_KEY" } }, close: () => new Promise((r) => (server.closeAllConnections(), server.close(r))) };
}

/**
 * A signed-in console session for an account of `store` on the server at `url`: its cookie
 * (`mm_console=…`) and a CSRF token of its forms, for suites that send console traffic.
 */
export async function consoleSession(store, url, account) {
  const { ConsoleAccess, signInUrl } = await import(join(root, "dist/core/console-access.js"));
  const { token } = await new ConsoleAccess(store).createLink(account);
  const res = await fetch(signInUrl(url, token), { redirect: "manual" });
  const cookie = String(res.headers.get("set-cookie")).split(";")[0];
  const page = await (await fetch(`${url}/console/keys`, { headers: { Cookie: cookie } })).text();
  return { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? "" };
}

/** The headers an MCP client sends with a JSON-RPC POST to /mcp. */
export const MCP_HEADERS = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
