import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { spawnMm } from "./spawn-mm.js";

export interface Replica {
  child: ChildProcess;
  url: string;
  /** Every line it wrote to stderr (JSON log lines, piped). */
  logs: string[];
}

/** `mm serve --redis` on the store, spawned as a user would; resolves once it listens. */
export async function replica(store: string, redisUrl: string, args: string[] = [], env: Record<string, string> = {}): Promise<Replica> {
  const child = spawnMm(["serve", "--port", "0", "--redis", redisUrl, ...args], { store, env });
  const logs: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`mm serve exited ${code}: ${logs.join("\n")}`)));
    createInterface({ input: child.stderr! }).on("line", (line) => {
      logs.push(line);
      if (line.includes('"event":"listening"')) resolve(JSON.parse(line).url);
    });
  });
  child.stdout!.resume();
  return { child, url, logs };
}

/** Resolves when the process has exited, also if it already had ('exit' is emitted once). */
export function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())));
}
