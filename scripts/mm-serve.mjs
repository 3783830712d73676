// Starts a real `mm serve` on a free port for the benchmark scripts, and resolves once it has
// announced where it listens. `onLog` sees every structured line it writes to stderr (its access
// log, among others).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** @returns {Promise<{ url: string, pid: number, child: import("node:child_process").ChildProcess, stop: () => Promise<void> }>} */
export async function startMmServe(bin, env, { rateLimit, onLog } = {}) {
  const rate = String(rateLimit ?? 1_000_000);
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--rate-read", rate, "--rate-write", rate, "--rate-search", rate], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  // A script that dies (an uncaught error) must not leave its server running.
  const orphanGuard = () => child.kill("SIGKILL");
  process.once("exit", orphanGuard);
  child.once("exit", () => process.off("exit", orphanGuard));
  const url = await new Promise((resolveUrl, reject) => {
    child.once("exit", (code) => reject(new Error(`mm serve exited ${code}`)));
    createInterface({ input: child.stderr }).on("line", (line) => {
      let event;
      try {
        event = JSON.parse(line);
      } catch {
        return;
      }
      if (event.event === "listening") resolveUrl(event.url);
      onLog?.(event);
    });
  });
  return {
    url,
    pid: child.pid,
    child,
    stop: () => new Promise((done) => (child.once("exit", () => done()), child.kill("SIGTERM"))),
  };
}
