#!/usr/bin/env node
// Object storage against the local store, one process, the real model (use-lite): creates/s (8
// concurrent clients, as group commit gathers them, and one at a time), search p50/p95, and the
// object-store requests one create and one search cost, counted by a pass-through HTTP proxy in
// front of Azurite (its --debug log logs every body: over 512 MB for 2,000 creates). Starts its own
// Azurite on a free port; needs `npm run build` first. Figures go to docs/object-storage.md and docs/measurements/object-storage-rounds.md.
//   node scripts/measure-object-store.mjs [--memories 2000] [--searches 100]
//   node scripts/measure-object-store.mjs --memories 100000 --bulk [--creates 400]
//   node scripts/measure-object-store.mjs --trace FILE   also writes each counted request (the
//     operation it served, method, path, range, start and end in ms from the operation's start) as
//     JSON lines: which requests of a search follow each other, and which run side by side; and each
//     call of the store's methods during one ({op, phase: "Class.method", startMs, endMs}): which
//     query a round of requests belongs to (docs/measurements/object-storage-rounds.md, "A create's last round").
//   node scripts/measure-object-store.mjs --clients 32   the timed creates from 32 concurrent clients (default 8)
//   node scripts/measure-object-store.mjs --profile   also times, during the timed creates, the
//     store methods a group commit runs under the write lock (`write`: the lock waited for and
//     held), and reports each one's calls and mean ms under `profile`: where a group's time goes
//     (docs/measurements/object-storage-rounds.md, "Recent writes from memory (27 November, ninth pass)").
//   node scripts/measure-object-store.mjs --pin   mm (this process: the local store's run and the
//     Azurite one) on the first core and Azurite on the second (`taskset`), as a replica and an
//     object store on machines of their own: without it the emulator's CPU competes with the model's.
// --bulk fills each store in-process through `mm import`'s code (core/transfer.ts) with lines that
// carry their vectors (random unit vectors: no model runs for the fill), compacts and indexes it
// (`mm store optimize`), then times `--creates` creates and the searches as above.
import { spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent, createServer as createHttpServer, request } from "node:http";
import { createServer } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const flag = (name, fallback) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : fallback);
const N = Number(flag("memories", "2000"));
const SEARCHES = Number(flag("searches", "100"));
const BULK = args.includes("--bulk");
const CREATES = Number(flag("creates", BULK ? "400" : String(N)));
const TRACE = flag("trace", undefined);
/** Concurrent clients of the timed creates (group commit gathers what arrives while a commit runs). */
const CLIENTS = Number(flag("clients", "8"));
const PIN = args.includes("--pin");
const PROFILE = args.includes("--profile");
/** The Store methods --profile times: the write lock held, and what detection and the commit run in it. */
const PROFILED = ["write", "currentMemoriesMatching", "searchMemories", "getMemoryRows", "memoriesAtMost", "currentMemoriesOf", "insertMemories", "replaceMemories"];
if (PIN && !process.env.MM_MEASURE_PINNED) {
  // Run again on the first core only; Azurite (below) takes the second.
  const { spawnSync } = await import("node:child_process");
  const run = spawnSync("taskset", ["-c", "0", process.execPath, fileURLToPath(import.meta.url), ...args], { stdio: "inherit", env: { ...process.env, MM_MEASURE_PINNED: "1" } });
  process.exit(run.status ?? 1);
}
/**
 * How long after one process's create returns another, already open and warm, process can read
 * the memory by id (polling every 10 ms): bounded by the read-consistency interval.
 */
async function visibility(store, env) {
  const writer = await openContext({ storeDir: store, env });
  const reader = await openContext({ storeDir: store, env });
  await writer.embedder();
  const delays = [];
  for (let i = 0; i < 10; i++) {
    const { id } = await createMemory(writer, { content: `visibility probe ${i}`, userId: "probe" });
    const t = performance.now();
    for (;;) {
      const seen = await getMemory(reader, id).then(() => true, () => false);
      if (seen) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    delays.push(Math.round(performance.now() - t));
    await new Promise((r) => setTimeout(r, 300 + 137 * i)); // different phases of the reader's interval
  }
  await Promise.all([writer.close(), reader.close()]);
  delays.sort((a, b) => a - b);
  return { p50: delays[5], max: delays[9] };
}

const round = (x) => Math.round(x * 10) / 10;
const TOPICS = ["the garden", "the trip to Porto", "the new job", "the dentist", "the boat", "the book club", "the kitchen", "the marathon", "the piano", "the move"];
const ACCOUNT = "devstoreaccount1";
const KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const { openContext } = await import(join(root, "dist/core/context.js"));
const { createMemory, getMemory } = await import(join(root, "dist/core/memories.js"));
const { searchMemories } = await import(join(root, "dist/core/search.js"));
const { readConsistencySeconds } = await import(join(root, "dist/storage/database.js"));
const { Store, StoreWriter } = await import(join(root, "dist/storage/store.js"));
const { Maintainer, maintainIfDue } = await import(join(root, "dist/storage/maintenance.js"));
const { importExport } = await import(join(root, "dist/core/transfer.js"));

if (TRACE) traceStoreCalls();
const work = mkdtempSync(join(tmpdir(), "mm-objmeasure-"));
const port = await freePort();
const azuriteArgs = ["--location", join(work, "azurite"), "--blobHost", "127.0.0.1", "--blobPort", String(port), "--skipApiVersionCheck", "--loose", "--silent", "--disableTelemetry"];
const azuriteBin = join(root, "node_modules/.bin/azurite-blob");
const azurite = PIN ? spawn("taskset", ["-c", "1", azuriteBin, ...azuriteArgs], { stdio: "ignore" }) : spawn(azuriteBin, azuriteArgs, { stdio: "ignore" });
let proxied = 0;
/** The operation being counted, for --trace: its name and when it started. */
let operation;
const agent = new Agent({ keepAlive: true });
const proxy = createHttpServer((req, res) => {
  proxied++;
  const start = performance.now();
  const upstream = request({ host: "127.0.0.1", port, path: req.url, method: req.method, headers: req.headers, agent }, (r) => {
    res.writeHead(r.statusCode, r.headers);
    r.pipe(res);
    const op = operation;
    if (TRACE && op) {
      r.on("end", () => {
        const path = decodeURIComponent(req.url).replace(/^\/[^/]+\/[^/?]+\/?/, "");
        const range = req.headers["x-ms-range"] ?? req.headers.range ?? "";
        appendFileSync(TRACE, JSON.stringify({ op: op.name, method: req.method, path, range, startMs: round(start - op.at), endMs: round(performance.now() - op.at) }) + "\n");
      });
    }
  });
  upstream.on("error", () => res.destroy());
  req.pipe(upstream);
});
const proxyPort = await new Promise((r) => proxy.listen(0, "127.0.0.1", () => r(proxy.address().port)));
try {
  await waitFor(port);
  const endpoint = `http://127.0.0.1:${port}/${ACCOUNT}`;
  const { BlobServiceClient, StorageSharedKeyCredential } = await import("@azure/storage-blob");
  await new BlobServiceClient(endpoint, new StorageSharedKeyCredential(ACCOUNT, KEY)).getContainerClient("measure").create();
  const env = { ...process.env, AZURE_STORAGE_ACCOUNT_NAME: ACCOUNT, AZURE_STORAGE_ACCOUNT_KEY: KEY, AZURE_STORAGE_ENDPOINT: endpoint, AZURE_STORAGE_ALLOW_HTTP: "true", XDG_STATE_HOME: join(work, "state") };
  const out = {};
  const counted = { ...env, AZURE_STORAGE_ENDPOINT: `http://127.0.0.1:${proxyPort}/${ACCOUNT}` };
  for (const [name, store] of [["local", join(work, "local-store")], ["azurite", "az://measure/store"]]) out[name] = await measure(store, env, name === "azurite" ? counted : undefined);
  const interval = readConsistencySeconds(process.env);
  // The machine's load moves every time here (the cores are shared): say what it was.
  console.log(JSON.stringify({ memories: N, searches: SEARCHES, creates: CREATES, ...(BULK ? { bulk: true } : {}), ...(PIN ? { pinned: "mm on core 0, Azurite on core 1" } : {}), readConsistencyIntervalS: interval, loadAverage1m: Math.round(loadavg()[0] * 10) / 10, ...out }, null, 2));
} finally {
  proxy.close();
  agent.destroy();
  await new Promise((r) => (azurite.exitCode !== null ? r() : (azurite.once("exit", r), azurite.kill())));
  rmSync(work, { recursive: true, force: true, maxRetries: 5 });
}

/** A context with the background maintainer `mm serve` runs (a pass every 2 s; compaction at 32 small fragments, on an object store sooner while it is small). */
async function served(store, env, maintain = true) {
  const ctx = await openContext({ storeDir: store, env });
  await ctx.embedder();
  // What the maintainer did, for the figures: its passes, the work they found, and any error.
  const upkeep = { passes: 0, compactions: 0, conflicts: 0, errors: [] };
  const maintainer = maintain
    ? new Maintainer(ctx.store, {
        intervalMs: 2000,
        onPass: (p) => ((upkeep.passes += 1), (upkeep.compactions += p.work.length), (upkeep.conflicts += p.conflicts)),
        onError: (err) => upkeep.errors.push(String(err).slice(0, 200)),
      }).start()
    : undefined;
  return { ctx, upkeep, close: async () => (await maintainer?.stop(), await ctx.close()) };
}

/** CPU seconds a process has used (Linux /proc): Azurite shares this machine's two cores with mm. */
function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

async function measure(store, env, countedEnv) {
  const cpuAtStart = cpuSeconds(azurite.pid);
  const { ctx, upkeep, close } = await served(store, env);
  const texts = Array.from({ length: N + 200 }, (_, i) => sentence(i));
  let filledInS;
  if (BULK) {
    const t = performance.now();
    await bulkFill(ctx, N - CREATES, texts);
    // Old versions stay (10 minutes): this process's maintainer may still hold a handle on one.
    await ctx.store.optimize();
    filledInS = Math.round((performance.now() - t) / 1000);
  }
  let next = BULK ? N - CREATES : 0;
  const timers = PROFILE ? timeStoreMethods() : undefined;
  // CPU seconds during the timed creates, this process's and Azurite's: on two shared cores, whether
  // creates wait on requests or on the CPU.
  const ownCpuAtCreates = process.cpuUsage();
  const azuriteCpuAtCreates = cpuSeconds(azurite.pid);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    while (next < N) {
      const i = next++;
      await createMemory(ctx, { content: texts[i], userId: `user${i % 20}` });
    }
  }));
  const createsS = (performance.now() - t0) / 1000;
  const concurrentPerS = CREATES / createsS;
  const own = process.cpuUsage(ownCpuAtCreates);
  const cpuDuringCreates = { wallS: round(createsS), mmCpuS: round((own.user + own.system) / 1e6), azuriteCpuS: round(cpuSeconds(azurite.pid) - azuriteCpuAtCreates) };
  const profile = timers?.stop();
  const t1 = performance.now();
  for (let i = N; i < N + 100; i++) await createMemory(ctx, { content: texts[i], userId: `user${i % 20}` });
  const sequentialPerS = 100 / ((performance.now() - t1) / 1000);
  // 100 different searches (name, topic and user), so that no search repeats another whole: a
  // process remembers a scope's word lookups by table version (storage/memories.ts atVersion).
  const query = (q) => ({ query: `what did ${["Ana", "Bo", "Chen", "Dara", "Eli"][q % 5]} say about ${TOPICS[Math.floor(q / 5) % TOPICS.length]}`, userId: `user${(q * 7) % 20}` });
  const latencies = [];
  for (let q = 0; q < SEARCHES; q++) {
    const t = performance.now();
    await searchMemories(ctx, query(q));
    latencies.push(performance.now() - t);
  }
  const fragments = (await ctx.store.stats()).memories.fragments;
  const upkeepThen = { ...upkeep, errors: upkeep.errors.slice(0, 3) };
  const cpuTimed = cpuSeconds(azurite.pid) - cpuAtStart;
  // Again on the compacted store: the searches above met however many small fragments the
  // maintainer had left at that moment (up to 31 on a local store), which moves p50 several-fold.
  await ctx.store.optimize();
  const compacted = [];
  for (let q = 100; q < 100 + SEARCHES; q++) {
    const t = performance.now();
    await searchMemories(ctx, query(q));
    compacted.push(performance.now() - t);
  }
  compacted.sort((a, b) => a - b);
  // An object store searches an indexed segment through its index (StoreTuning.vectorsFromIndex):
  // the same searches bypassing it, from a second process-like context, for the difference.
  let bypassing;
  if (countedEnv && (await ctx.store.stats()).memories.vectorIndex) {
    const other = await openContext({ storeDir: store, env, tuning: { vectorsFromIndex: false } });
    bypassing = [];
    for (let q = 100; q < 100 + SEARCHES; q++) {
      const t = performance.now();
      await searchMemories(other, query(q));
      bypassing.push(performance.now() - t);
    }
    bypassing.sort((a, b) => a - b);
    await other.close();
  }
  await close();
  latencies.sort((a, b) => a - b);
  const figures = {
    [`createsPerS${CLIENTS}Clients`]: round(concurrentPerS),
    ...(profile ? { profile } : {}),
    cpuDuringCreates,
    createsPerSOneClient: round(sequentialPerS),
    searchP50Ms: round(latencies[Math.floor(latencies.length / 2)]),
    searchP95Ms: round(latencies[Math.floor(latencies.length * 0.95)]),
    fragmentsAfter: fragments,
    maintainerUntilThen: upkeepThen,
    searchP50MsCompacted: round(compacted[Math.floor(compacted.length / 2)]),
    searchP95MsCompacted: round(compacted[Math.floor(compacted.length * 0.95)]),
    ...(bypassing ? { searchP50MsCompactedBypassingIndex: round(bypassing[Math.floor(bypassing.length / 2)]) } : {}),
    ...(BULK ? { filledInS, vectorIndex: (await statsOf(store, env)).memories.vectorIndex?.type ?? null } : {}),
  };
  if (!countedEnv) return figures;
  // The same store through the counting proxy: compacted first, then a warm process, one operation
  // at a time. Maintenance runs between operations as `mm serve`'s maintainer would (maintainIfDue:
  // this build's own rule for when a table is due), its requests not counted. Searches are counted
  // in that maintained state, and again after 30 more creates with no maintenance (30 small
  // fragments, as a store nobody compacts would have them).
  const { ctx: counted, close: closeCounted } = await served(store, countedEnv, false);
  await counted.store.optimize({ keepVersionsMs: 0 });
  let requests = 0;
  const count = async (fn, name) => {
    const before = proxied;
    operation = { name, at: performance.now() };
    await fn();
    operation = undefined;
    requests += proxied - before;
  };
  const searches = async (from) => {
    requests = 0;
    for (let q = from; q < from + 30; q++) await count(() => searchMemories(counted, query(q)), `search ${q}`);
    return requests / 30;
  };
  await searchMemories(counted, query(1000));
  requests = 0;
  for (let i = N + 100; i < N + 130; i++) {
    await count(() => createMemory(counted, { content: texts[i], userId: `user${i % 20}` }), `create ${i}`);
    await maintainIfDue(counted.store);
  }
  const perCreate = requests / 30;
  const perSearch = await searches(1001);
  for (let i = N + 130; i < N + 160; i++) await createMemory(counted, { content: texts[i], userId: `user${i % 20}` });
  const perSearch30Fragments = await searches(2000);
  await closeCounted();
  return {
    ...figures,
    requestsPerCreate: round(perCreate),
    requestsPerSearch: round(perSearch),
    requestsPerSearch30Fragments: round(perSearch30Fragments),
    azuriteCpuSTimed: round(cpuTimed),
    visibleAfterMs: await visibility(store, env),
  };
}

/** For --trace: every method of the store's classes writes its calls during a counted operation, beside that operation's requests. */
function traceStoreCalls() {
  const protos = new Set();
  for (let p of [Store.prototype, StoreWriter.prototype]) for (; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) protos.add(p);
  for (const proto of protos) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const original = Object.getOwnPropertyDescriptor(proto, name).value;
      if (typeof original !== "function" || name === "constructor") continue;
      proto[name] = function (...a) {
        const op = operation;
        const t = performance.now();
        const r = original.apply(this, a);
        if (!op || !(r instanceof Promise)) return r;
        return r.finally(() => appendFileSync(TRACE, JSON.stringify({ op: op.name, phase: `${proto.constructor.name}.${name}`, startMs: round(t - op.at), endMs: round(performance.now() - op.at) }) + "\n"));
      };
    }
  }
}

/** Wraps PROFILED on the Store and StoreWriter prototypes with timers until stop(), which returns each one's calls and mean ms. */
function timeStoreMethods() {
  const times = new Map();
  const restore = [];
  for (const proto of [Store.prototype, StoreWriter.prototype]) {
    for (const name of PROFILED) {
      const original = proto[name];
      if (typeof original !== "function") continue; // the other prototype's
      proto[name] = function (...a) {
        const t = performance.now();
        return Promise.resolve(original.apply(this, a)).finally(() => {
          const e = times.get(name) ?? { calls: 0, ms: 0 };
          e.calls++;
          e.ms += performance.now() - t;
          times.set(name, e);
        });
      };
      restore.push([proto, name, original]);
    }
  }
  return {
    stop() {
      for (const [proto, name, original] of restore) proto[name] = original;
      return Object.fromEntries([...times].map(([name, e]) => [name, { calls: e.calls, meanMs: round(e.ms / e.calls) }]));
    },
  };
}

/** `count` memories through the import path, with vectors (random unit vectors) so that nothing is embedded. */
async function bulkFill(ctx, count, texts) {
  const { embedder } = ctx.store.config;
  async function* records() {
    yield { line: 1, value: { format: "mm-export", version: 1, exportedAt: new Date().toISOString(), embedder, scope: { accountId: ctx.accountId }, vectors: true } };
    const at = Date.now() - count * 1000;
    for (let i = 0; i < count; i++) {
      const v = Array.from({ length: embedder.dims }, () => Math.random() - 0.5);
      const norm = Math.hypot(...v);
      const createdAt = new Date(at + i * 1000).toISOString();
      const id = `mem_${String(i).padStart(10, "0")}${"BULK".padEnd(14, "0")}`;
      yield { line: i + 2, value: { kind: "memory", id, content: texts[i], userId: `user${i % 20}`, createdAt, updatedAt: createdAt, vector: v.map((x) => x / norm) } };
    }
  }
  const summary = await importExport(ctx, records(), { batchSize: 2000 });
  if (summary.added !== count) throw new Error(`bulk fill added ${summary.added} of ${count}`);
}

async function statsOf(store, env) {
  const ctx = await openContext({ storeDir: store, env });
  try {
    return await ctx.store.stats();
  } finally {
    await ctx.close();
  }
}

function sentence(i) {
  const who = ["Ana", "Bo", "Chen", "Dara", "Eli"][i % 5];
  const verb = ["talked about", "worried about", "planned", "finished", "remembered", "booked", "asked about"][i % 7];
  return `${who} ${verb} ${TOPICS[(i * 7) % TOPICS.length]} on day ${i}, noting detail ${(i * 37) % 101}.`;
}

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

async function waitFor(port) {
  const { connect } = await import("node:net");
  for (let i = 0; i < 300; i++) {
    const ok = await new Promise((r) => {
      const c = connect(port, "127.0.0.1");
      c.once("connect", () => (c.destroy(), r(true)));
      c.once("error", () => r(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("azurite did not start");
}
