#!/usr/bin/env node
// What `mm --remote` costs over a direct HTTP call: a real `mm serve` on a temporary store, then
// the same read (GET /v1/memories?limit=1) made N times each way, alternating:
//   curl           a direct HTTP call from a shell;
//   node fetch     a Node process that makes the call with fetch and exits;
//   node http      the same with node:http (the floor for any Node CLI: what mm uses);
//   mm --remote    `mm --remote URL --key K memories list --limit 1 --json`;
// then, in this process once the CLI is loaded, the same command through run() against fetch.
// Prints each one's p50 and p90 and the overheads, as JSON. Usage: node scripts/remote-overhead.mjs [--runs 30]
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const mm = join(root, "bin", "mm.js");
const runs = Number(process.argv[process.argv.indexOf("--runs") + 1]) || 30;
const dir = mkdtempSync(join(tmpdir(), "mm-remote-overhead-"));
const env = { ...process.env, MM_STORE: join(dir, "store"), XDG_CONFIG_HOME: join(dir, "config"), LANCEDB_LOG: "error", MM_URL: "", MM_API_KEY: "" };
const cli = (args) => execFileSync(process.execPath, [mm, ...args], { env, encoding: "utf8" });

cli(["accounts", "create", "bench", "--plan", "enterprise"]);
const key = JSON.parse(cli(["keys", "create", "--account", "bench", "--name", "bench"])).key;
const server = spawn(process.execPath, [mm, "serve", "--port", "0", "--rate-read", "100000", "--rate-write", "100000"], { env, stdio: ["ignore", "ignore", "pipe"] });
try {
  const url = await new Promise((resolve, reject) => {
    let err = "";
    server.stderr.setEncoding("utf8").on("data", (d) => {
      err += d;
      const m = /"event":"listening","url":"([^"]+)"/.exec(err);
      if (m) resolve(m[1]);
    });
    server.once("exit", (code) => reject(new Error(`mm serve exited (${code}): ${err}`)));
  });
  const target = `${url}/v1/memories?limit=1`;
  cli(["--remote", url, "--key", key, "memories", "add", "a warm-up memory", "--user", "bench"]);
  const ways = {
    curl: ["curl", ["-sf", "-o", "/dev/null", "-H", `Authorization: Bearer ${key}`, target]],
    "node fetch": [process.execPath, ["-e", `fetch(${JSON.stringify(target)}, { headers: { Authorization: "Bearer ${key}" } }).then((r) => r.text()).then((t) => process.stdout.write(t))`]],
    "node http": [process.execPath, ["-e", `require("node:http").get(${JSON.stringify(target)}, { headers: { Authorization: "Bearer ${key}" } }, (r) => r.resume())`]],
    "mm --remote": [process.execPath, [mm, "--remote", url, "--key", key, "memories", "list", "--limit", "1", "--json"]],
  };
  const times = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
  for (let i = 0; i < runs + 2; i++) {
    for (const [name, [cmd, args]] of Object.entries(ways)) {
      const started = performance.now();
      const r = spawnSync(cmd, args, { env, encoding: "utf8" });
      const ms = performance.now() - started;
      if (r.status !== 0) throw new Error(`${name} failed: ${r.stderr}`);
      if (i >= 2) times[name].push(ms); // the first two warm the disk cache
    }
  }
  // In one process, once loaded: what the CLI and the client add to the request itself.
  const { run } = await import(join(root, "dist", "cli", "main.js"));
  const { Writable, Readable } = await import("node:stream");
  const sink = () => new Writable({ write: (_c, _e, cb) => cb() });
  const inProcess = { fetch: [], "mm --remote (in-process)": [] };
  for (let i = 0; i < runs + 2; i++) {
    let started = performance.now();
    await (await fetch(target, { headers: { Authorization: `Bearer ${key}` } })).text();
    if (i >= 2) inProcess.fetch.push(performance.now() - started);
    started = performance.now();
    const code = await run(["--remote", url, "--key", key, "memories", "list", "--limit", "1", "--json"], {
      stdout: sink(),
      stderr: sink(),
      stdin: Object.assign(Readable.from([]), { isTTY: false }),
      env: { ...env },
    });
    if (code !== 0) throw new Error(`in-process mm --remote exited ${code}`);
    if (i >= 2) inProcess["mm --remote (in-process)"].push(performance.now() - started);
  }
  Object.assign(times, inProcess);
  const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
  const summary = Object.fromEntries(Object.entries(times).map(([k, xs]) => [k, { p50: +pct(xs, 50).toFixed(1), p90: +pct(xs, 90).toFixed(1) }]));
  console.log(
    JSON.stringify(
      {
        runs,
        node: process.version,
        ms: summary,
        overheadOverCurlP50: +(summary["mm --remote"].p50 - summary.curl.p50).toFixed(1),
        overheadOverNodeFetchP50: +(summary["mm --remote"].p50 - summary["node fetch"].p50).toFixed(1),
        overheadOverNodeHttpP50: +(summary["mm --remote"].p50 - summary["node http"].p50).toFixed(1),
        inProcessOverheadP50: +(summary["mm --remote (in-process)"].p50 - summary.fetch.p50).toFixed(1),
        loadAverage: (await import("node:os")).loadavg()[0],
      },
      null,
      2,
    ),
  );
} finally {
  server.kill("SIGTERM");
  await new Promise((r) => server.once("exit", r));
  rmSync(dir, { recursive: true, force: true });
}
