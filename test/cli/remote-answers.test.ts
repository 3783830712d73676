import { createServer, type Server, type ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runMm } from "../helpers/spawn-mm.js";

/**
 * `mm --remote` against a server that answers badly: a tiny HTTP server of the test's own, and the
 * real `mm` spawned as a user runs it. What comes back is never trusted: a success that isn't JSON,
 * an error whose message carries terminal escape sequences, an endless body.
 */

const KEY = `mm_${"A".repeat(40)}`;
const MIB = 1024 * 1024;
let server: Server;
let base: string;
/** Bytes the endless answer managed to send before the client hung up. */
let endlessSent = 0;
let endlessDone: Promise<void>;

const HOSTILE = "\u001b[2J\u001b]0;owned\u0007Memory gone\r\n\u001b[32mmm: all good\u001b[0m \u009b31mred\u202e";

async function endless(res: ServerResponse): Promise<void> {
  res.writeHead(200, { "Content-Type": "application/json" });
  const chunk = Buffer.alloc(MIB, "a");
  let closed = false;
  res.on("close", () => (closed = true));
  while (!closed && endlessSent < 300 * MIB) {
    endlessSent += chunk.length;
    if (!res.write(chunk)) await new Promise((r) => (res.once("drain", r), res.once("close", r)));
  }
  res.end();
}

beforeAll(async () => {
  let finished: () => void;
  endlessDone = new Promise((r) => (finished = r));
  server = createServer((req, res) => {
    const [, kind] = req.url!.split("/");
    if (kind === "html") {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end("<html><body>Down for maintenance</body></html>");
    } else if (kind === "empty") {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end();
    } else if (kind === "escape") {
      res.writeHead(404, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: { code: "MEMORY_NOT_FOUND", message: HOSTILE, details: [{ field: "id", message: HOSTILE }] } }));
    } else if (kind === "declared") {
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": String(300 * MIB) });
      res.write("[");
    } else if (kind === "endless") void endless(res).then(() => finished());
    else res.writeHead(500).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const mm = (kind: string, ...format: string[]) => runMm(["--remote", `${base}/${kind}`, "--key", KEY, ...format, "memories", "list"], { env: { MM_URL: "", MM_API_KEY: "" } });

describe("mm --remote trusts nothing the server sends", () => {
  it("a success whose body isn't JSON is REMOTE_UNAVAILABLE (exit 6), saying what came back, in JSON and table mode", async () => {
    for (const kind of ["html", "empty"]) {
      const r = await mm(kind);
      expect(r.code, r.stderr).toBe(6);
      expect(r.stdout).toBe("");
      const { error } = JSON.parse(r.stderr);
      expect(error.code).toBe("REMOTE_UNAVAILABLE");
      expect(error.message).toContain(`${base}/${kind}`);
      expect(error.message).toMatch(kind === "html" ? /not JSON.*text\/html.*Down for maintenance/ : /empty/);
      const table = await mm(kind, "--format", "table");
      expect(table.code, table.stderr).toBe(6);
      expect(table.stdout).toBe("");
      expect(table.stderr).toContain(`The server at ${base}/${kind} did not answer as an mm server does`);
      expect(table.stderr).not.toMatch(/something went wrong inside mm|undefined/);
    }
  });

  it("a server's error message reaches the terminal without control characters or escape sequences", async () => {
    for (const format of [[], ["--format", "table"]]) {
      const r = await mm("escape", ...format);
      expect(r.code, r.stderr).toBe(3);
      if (!format.length) expect(JSON.parse(r.stderr).error.code).toBe("MEMORY_NOT_FOUND");
      expect(r.stderr).toContain("Memory gone");
      expect(r.stderr).toContain("mm: all good");
      // Nothing that a terminal acts on: no ESC, no C1 CSI, no BEL, no CR, no bidi override.
      expect(r.stderr).not.toMatch(/[\u001b\u009b\u0007\r\u202e]|\\u001b|\\u009b|\\u0007|\\r|\\u202e|owned/);
    }
  });

  it("stops reading an answer past 64 MiB and says so (REMOTE_UNAVAILABLE), whether declared or streamed", async () => {
    const declared = await mm("declared");
    expect(declared.code, declared.stderr).toBe(6);
    expect(JSON.parse(declared.stderr).error.message).toMatch(/larger than 64 MiB/);
    const r = await mm("endless");
    expect(r.code, r.stderr).toBe(6);
    const { error } = JSON.parse(r.stderr);
    expect(error.code).toBe("REMOTE_UNAVAILABLE");
    expect(error.message).toMatch(/larger than 64 MiB/);
    expect(error.message).toContain(base);
    await endlessDone;
    expect(endlessSent).toBeLessThan(150 * MIB);
  }, 60_000);
});
