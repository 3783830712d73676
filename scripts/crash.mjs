#!/usr/bin/env node
// `npm run crash`: kill -9 trials. Each trial makes a fresh store and kills, at a random moment,
// either `mm memories add --batch` (the CLI) or `mm serve` under concurrent POSTs, then checks:
//   - every acknowledged write is stored (and stored once);
//   - every stored write is billed, except at most the one commit a kill can fall behind
//     (a batch for the CLI, a request for the server), and nothing unstored is billed;
//   - the store takes writes again afterwards.
// Trials alternate CLI and server, hobby and enterprise plans. Every tenth trial (the 10th, 20th…)
// is an object-store restart instead of a server trial: `mm serve` on an Azurite store under the
// same POSTs, Azurite stopped and started again 2-6 s later, then `mm serve` killed -9 a moment
// after it serves again (Azurite is stopped, not killed: killed, the emulator itself loses its last
// seconds of writes, which a real object store doesn't). Exit 1 if any trial breaks a rule.
//   --trials 50   (npm test runs 2)
//   --seed 1
//   --objectStoreEvery 10   (1: every trial is an object-store restart)
//   --out bench-results/crash.json
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { startMmServe } from "./mm-serve.mjs";
import { BIN, machine, newStore, parseArgs, printTable, rng, root, sleep, tally, writeJson } from "./suite-kit.mjs";

/** How many clients POST at once in the server and object-store trials. */
const POSTING_CLIENTS = 6;
const opts = parseArgs({ trials: 50, seed: 1, objectStoreEvery: 10, out: join(root, "bench-results", "crash.json") });
const r = rng(opts.seed);
const trials = [];
/** The object-store trials' Azurite (objectStoreTrial), started by the first of them. */
let sharedAzurite;

for (let i = 0; i < opts.trials; i++) {
  const plan = i % 4 < 2 ? "hobby" : "enterprise";
  const trial = i % opts.objectStoreEvery === opts.objectStoreEvery - 1 ? await objectStoreTrial(plan) : i % 2 === 0 ? await batchTrial(plan) : await serverTrial(plan);
  trials.push(trial);
  const outage = trial.outage ? ` (store down ${trial.outage.downMs} ms, answers ${JSON.stringify(trial.outage.statuses)}, serving again ${trial.outage.servingAfterMs} ms after its return)` : "";
  console.log(`trial ${i + 1}/${opts.trials}: ${trial.kind} (${plan}) killed after ${trial.killedAfterMs} ms: acknowledged ${trial.acknowledged}, stored ${trial.stored}, billed ${trial.billed}${outage}${trial.problems.length ? ` — ${trial.problems.join("; ")}` : ""}`);
}

const failed = trials.filter((t) => t.problems.length);
const sum = (k, kind) => trials.filter((t) => !kind || t.kind === kind).reduce((a, t) => a + t[k], 0);
const result = {
  machine: machine(),
  seed: opts.seed,
  trials: trials.length,
  cliTrials: trials.filter((t) => t.kind === "cli batch").length,
  serverTrials: trials.filter((t) => t.kind === "server POSTs").length,
  objectStoreTrials: trials.filter((t) => t.kind === "object-store restart").length,
  acknowledged: sum("acknowledged"),
  stored: sum("stored"),
  billed: sum("billed"),
  acknowledgedButLost: sum("lost"),
  billedButNotStored: trials.reduce((a, t) => a + Math.max(0, t.billed - t.stored), 0),
  storedButUnbilled: { total: sum("free"), maxInOneTrial: Math.max(0, ...trials.map((t) => t.free)), trialsWithAny: trials.filter((t) => t.free > 0).length },
  failedTrials: failed.length,
  details: trials,
};
printTable(
  `mm crash · ${result.trials} kill -9 trials (${result.cliTrials} CLI batch, ${result.serverTrials} server, ${result.objectStoreTrials} object-store restart) · ${machine().cpus} cores`,
  ["figure", "value"],
  [
    ["writes acknowledged", result.acknowledged],
    ["writes stored", result.stored],
    ["operations billed", result.billed],
    ["acknowledged but lost", result.acknowledgedButLost],
    ["billed but not stored", result.billedButNotStored],
    ["stored but unbilled (the commit a kill fell behind)", `${result.storedButUnbilled.total} in ${result.storedButUnbilled.trialsWithAny} trials, at most ${result.storedButUnbilled.maxInOneTrial} in one`],
    ["trials breaking a rule", result.failedTrials],
  ],
);
writeJson(opts.out, result);
process.exit(failed.length ? 1 : 0);

// ---------------------------------------------------------------------------------------------

/**
 * A batch add killed at a random moment: mostly after its first acknowledged line (after a random
 * number of further lines, or a random time), sometimes before anything is committed.
 */
async function batchTrial(plan) {
  const store = await newStore({ payer: plan });
  const batchSize = r.pick([8, 16, 32, 64]);
  const lines = 600;
  const file = join(store.dir, "lines.jsonl");
  writeFileSync(file, Array.from({ length: lines }, (_, i) => JSON.stringify({ content: `Line ${i}: notes about ${r.pick(["tea", "the garden", "Berlin", "a meeting"])} number ${r.int(1e6)}`, userId: `u${i % 3}` })).join("\n") + "\n");
  const child = spawn(process.execPath, [BIN, "memories", "add", "--batch", file, "--batch-size", String(batchSize), "--account", "payer", "--json"], { env: store.env, stdio: ["ignore", "pipe", "ignore"] });
  const started = performance.now();
  const acked = [];
  // Within about five batches of the first commit: what matters is where in a batch the kill falls.
  const killAt = r.pick([{ early: 100 + r.int(1500) }, { acks: 1 + r.int(5 * batchSize) }, { ms: r.int(2500) }, { ms: r.int(2500) }]);
  let killedAfterMs;
  let timer;
  const kill = () => {
    if (killedAfterMs === undefined) {
      killedAfterMs = Math.round(performance.now() - started);
      child.kill("SIGKILL");
    }
  };
  if (killAt.early !== undefined) timer = setTimeout(kill, killAt.early);
  createInterface({ input: child.stdout }).on("line", (line) => {
    const entry = JSON.parse(line);
    if (entry.memory) acked.push(entry.memory.id);
    if (killAt.acks !== undefined && acked.length >= killAt.acks) kill();
    if (killAt.ms !== undefined && acked.length === 1) timer = setTimeout(kill, killAt.ms);
  });
  await new Promise((resolve) => child.once("exit", resolve));
  clearTimeout(timer);
  killedAfterMs ??= Math.round(performance.now() - started);
  return check(store, { kind: "cli batch", plan, batchSize, killedAfterMs, acked, bound: batchSize, finished: child.signalCode !== "SIGKILL" });
}

/** `mm serve` killed at a random moment while 6 clients POST memories as fast as it answers. */
async function serverTrial(plan) {
  const store = await newStore({ payer: plan });
  const server = await startMmServe(BIN, store.env, { rateLimit: 1_000_000 });
  const posting = postingClients(server.url, store.accounts.payer.key);
  const acked = posting.acked;
  const started = performance.now();
  await sleep(300 + r.int(4000));
  const killedAfterMs = Math.round(performance.now() - started);
  server.child.kill("SIGKILL");
  await new Promise((resolve) => server.child.once("exit", resolve));
  await posting.stop();
  // A kill between a commit and its charges leaves that commit's creates unbilled: one group of the
  // concurrent creates committed together, so at most one per POSTing client (docs/safety.md, "The
  // bound after a crash").
  return check(store, { kind: "server POSTs", plan, killedAfterMs, acked, bound: POSTING_CLIENTS });
}

/**
 * `mm serve` on an Azurite store while 6 clients POST memories: Azurite stopped at a random
 * moment and started again 2-6 s later on the same folder and port; once the server stores a
 * create again, it is killed -9 a random moment later. Answers during the outage must be 503
 * STORE_UNAVAILABLE, and the server must serve again within 30 s of the store's return.
 */
async function objectStoreTrial(plan) {
  // One Azurite for the run, a container for each trial: LanceDB keeps one object-store client per
  // account for the process (this script's, where the store is made and tallied), so an Azurite on
  // another port would not be reached.
  sharedAzurite ??= await startAzurite();
  const azurite = { ...sharedAzurite, container: await sharedAzurite.newContainer() };
  // The trial's store, its credentials and this machine's coordination directory, for this script
  // (newStore, tally) and every process it starts.
  const state = mkdtempSync(join(tmpdir(), "mm-crash-state-"));
  const saved = { ...process.env };
  Object.assign(process.env, azurite.env, { XDG_STATE_HOME: state });
  const store = await newStore({ payer: plan }, undefined, `az://${azurite.container}/store`);
  const server = await startMmServe(BIN, { ...store.env, ...azurite.env, XDG_STATE_HOME: state }, { rateLimit: 1_000_000 });
  const posting = postingClients(server.url, store.accounts.payer.key);
  const { acked, statuses } = posting;
  const started = performance.now();
  await sleep(300 + r.int(2000));
  const downAt = performance.now();
  await azurite.stop();
  await sleep(2000 + r.int(4000));
  await azurite.start();
  const backAt = performance.now();
  while (posting.lastCreated < backAt && performance.now() - backAt < 30_000) await sleep(50);
  const servingAfterMs = posting.lastCreated > backAt ? Math.round(posting.lastCreated - backAt) : null;
  await sleep(r.int(1500));
  const killedAfterMs = Math.round(performance.now() - started);
  server.child.kill("SIGKILL");
  await new Promise((resolve) => server.child.once("exit", resolve));
  await posting.stop();
  const trial = await check({ ...store, env: { ...store.env, ...azurite.env, XDG_STATE_HOME: state } }, { kind: "object-store restart", plan, killedAfterMs, acked, bound: POSTING_CLIENTS });
  const unexpected = Object.keys(statuses).filter((s) => s !== "503 STORE_UNAVAILABLE");
  if (unexpected.length) trial.problems.push(`answers other than 201 and 503 STORE_UNAVAILABLE: ${unexpected.join(", ")}`);
  if (servingAfterMs === null) trial.problems.push("mm serve did not store a create within 30 s of the store's return");
  trial.outage = { downMs: Math.round(backAt - downAt), statuses, servingAfterMs };
  rmSync(state, { recursive: true, force: true });
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  Object.assign(process.env, saved);
  return trial;
}

/** Azurite (Microsoft's Azure Storage emulator, a dev dependency) on a free port: new containers, and a way to stop and start it again. */
async function startAzurite() {
  const location = mkdtempSync(join(tmpdir(), "mm-crash-azurite-"));
  const port = await new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port: free } = probe.address();
      probe.close(() => resolve(free));
    });
  });
  const account = "devstoreaccount1";
  const key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="; // Azurite's published development key
  const endpoint = `http://127.0.0.1:${port}/${account}`;
  let child;
  const start = async () => {
    child = spawn(join(root, "node_modules", ".bin", "azurite-blob"), ["--location", location, "--blobHost", "127.0.0.1", "--blobPort", String(port), "--skipApiVersionCheck", "--loose", "--silent", "--disableTelemetry"], { stdio: "ignore" });
    process.once("exit", () => child.kill("SIGKILL"));
    for (let i = 0; i < 300; i++) {
      if (await new Promise((ok) => connect(port, "127.0.0.1").once("connect", function () { this.destroy(); ok(true); }).once("error", () => ok(false)))) return;
      await sleep(100);
    }
    throw new Error(`azurite-blob did not listen on ${port}`);
  };
  await start();
  const { BlobServiceClient, StorageSharedKeyCredential } = await import("@azure/storage-blob");
  const service = new BlobServiceClient(endpoint, new StorageSharedKeyCredential(account, key));
  process.once("exit", () => rmSync(location, { recursive: true, force: true }));
  return {
    async newContainer() {
      const container = `crash-${randomBytes(6).toString("hex")}`;
      await service.getContainerClient(container).create();
      return container;
    },
    env: { AZURE_STORAGE_ACCOUNT_NAME: account, AZURE_STORAGE_ACCOUNT_KEY: key, AZURE_STORAGE_ENDPOINT: endpoint, AZURE_STORAGE_ALLOW_HTTP: "true" },
    start,
    // SIGTERM: Azurite saves its index before it exits.
    stop: () => (child.exitCode !== null ? Promise.resolve() : new Promise((done) => (child.once("exit", () => done()), child.kill("SIGTERM")))),
  };
}

/**
 * Six clients POSTing memories to `url` as fast as it answers, until stopped or the server is gone:
 * the ids acknowledged (201), the other answers by status and code, when the last 201 came.
 */
function postingClients(url, key) {
  const out = { acked: [], statuses: {}, lastCreated: 0, stop: undefined };
  let stopped = false;
  const client = async (c) => {
    for (let n = 0; !stopped; n++) {
      try {
        const res = await fetch(`${url}/v1/memories`, {
          method: "POST",
          headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
          body: JSON.stringify({ content: `client ${c} note ${n} about ${r.pick(["tea", "rain", "Lisbon"])}`, userId: `c${c}` }),
        });
        const body = await res.json();
        if (res.status === 201) {
          out.acked.push(body.id);
          out.lastCreated = performance.now();
        } else {
          const code = `${res.status} ${body.error?.code}`;
          out.statuses[code] = (out.statuses[code] ?? 0) + 1;
          await sleep(200);
        }
      } catch {
        return; // the server is gone
      }
    }
  };
  const clients = Array.from({ length: POSTING_CLIENTS }, (_, c) => client(c));
  out.stop = () => ((stopped = true), Promise.all(clients));
  return out;
}

async function check(store, t) {
  const { ids, billed } = await tally(store.store, store.accounts.payer.id);
  const stored = new Set(ids);
  const lost = t.acked.filter((id) => !stored.has(id)).length;
  const problems = [];
  if (lost) problems.push(`${lost} acknowledged writes lost`);
  if (stored.size !== ids.length) problems.push(`${ids.length - stored.size} writes stored twice`);
  if (billed > ids.length) problems.push(`billed ${billed} for ${ids.length} stored`);
  if (billed < t.acked.length) problems.push(`billed ${billed} for ${t.acked.length} acknowledged`);
  if (ids.length - billed > t.bound) problems.push(`${ids.length - billed} stored writes unbilled (bound ${t.bound})`);
  // The store takes writes again: the dead writer's lock is taken over.
  const after = spawn(process.execPath, [BIN, "memories", "add", "after the crash", "--user", "u", "--account", "payer"], { env: store.env, stdio: "ignore" });
  const code = await new Promise((resolve) => after.once("exit", resolve));
  if (code !== 0) problems.push(`a write after the crash failed (exit ${code})`);
  store.cleanup();
  const { acked, bound, ...rest } = t;
  return { ...rest, acknowledged: acked.length, stored: ids.length, billed, lost, free: ids.length - billed, problems };
}
