import { afterAll, beforeAll } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./doc-examples.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Azurite's well-known development account (published in Microsoft's Azurite documentation). */
export const AZURITE_ACCOUNT = "devstoreaccount1";
export const AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

export interface Azurite {
  port: number;
  /** The folder Azurite keeps its data in. */
  location: string;
  endpoint: string;
  /** The environment `mm` reads for an `az://` store on this emulator. */
  env: Record<string, string>;
  /** A new, empty container (3–63 lowercase characters), created through the Blob API. */
  container(prefix?: string): Promise<string>;
  /** Requests Azurite logged so far (with `debug: true`): one entry per HTTP request it served. */
  requests(): Promise<string[]>;
  /** kill -9: an outage. What Azurite wrote to its folder stays. */
  kill(): Promise<void>;
  /** Starts it again on the same port and folder (after kill): the store comes back as it was. */
  start(): Promise<void>;
  /** SIGSTOP: it still holds its port, and answers nothing (a store that hangs), until resume(). */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/** The requests `fn` made, as an Azurite started with `debug: true` logged them (it logs each shortly after answering). */
export async function requestsDuring(azurite: Azurite, fn: () => Promise<unknown>): Promise<string[]> {
  const settle = async () => {
    let n = -1;
    for (let same = 0; same < 3; ) {
      await new Promise((r) => setTimeout(r, 100));
      const now = (await azurite.requests()).length;
      same = now === n ? same + 1 : 0;
      n = now;
    }
    return n;
  };
  const before = await settle();
  await fn();
  await settle();
  return (await azurite.requests()).slice(before);
}

/**
 * Starts Microsoft's Azure Storage emulator on a free port, in its own temp directory, for tests
 * against a real object store (it honours conditional writes, which LanceDB's commits rely on).
 */
/** One Azurite for a test file: started before its tests, stopped after them. */
export function useAzurite(options: { debug?: boolean } = {}): () => Azurite {
  let azurite: Azurite | undefined;
  beforeAll(async () => {
    azurite = await startAzurite(options);
  }, 60_000);
  afterAll(async () => {
    await azurite?.stop();
  });
  return () => azurite!;
}

export async function startAzurite(options: { debug?: boolean } = {}): Promise<Azurite> {
  const location = await mkdtemp(join(tmpdir(), "mm-azurite-"));
  const port = await freePort();
  const debugLog = join(location, "debug.log");
  const args = ["--location", location, "--blobHost", "127.0.0.1", "--blobPort", String(port), "--skipApiVersionCheck", "--loose", "--silent", "--disableTelemetry"];
  if (options.debug) args.push("--debug", debugLog);
  let child: ChildProcess;
  const start = async () => {
    child = spawn(join(ROOT, "node_modules", ".bin", "azurite-blob"), args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout!.on("data", (d) => (output += d));
    child.stderr!.on("data", (d) => (output += d));
    await waitForPort(port, child, () => output);
  };
  await start();
  const endpoint = `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  const { BlobServiceClient, StorageSharedKeyCredential } = await import("@azure/storage-blob");
  const service = new BlobServiceClient(endpoint, new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY));
  return {
    port,
    location,
    endpoint,
    env: {
      AZURE_STORAGE_ACCOUNT_NAME: AZURITE_ACCOUNT,
      AZURE_STORAGE_ACCOUNT_KEY: AZURITE_KEY,
      AZURE_STORAGE_ENDPOINT: endpoint,
      AZURE_STORAGE_ALLOW_HTTP: "true",
    },
    async container(prefix = "mm") {
      const name = `${prefix}-${randomBytes(6).toString("hex")}`;
      await service.getContainerClient(name).create();
      return name;
    },
    async requests() {
      const { readFile } = await import("node:fs/promises");
      const text = await readFile(debugLog, "utf8").catch(() => "");
      return text.split("\n").filter((l) => l.includes("BlobStorageContextMiddleware: RequestMethod="));
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    },
    start,
    pause: () => void child.kill("SIGSTOP"),
    resume: () => void child.kill("SIGCONT"),
    async stop() {
      await stopChild(child);
      await rm(location, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`azurite-blob exited (${child.exitCode}):\n${output()}`);
    if (await canConnect(port)) return;
    if (Date.now() > deadline) throw new Error(`azurite-blob did not listen on ${port} within 30 s:\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
  });
}
