import { spawn } from "node:child_process";
import { MM_BIN } from "./spawn-mm.js";

export interface TerminalRun {
  code: number | null;
  /** Everything the terminal received (stdout and stderr share it), escape codes included. */
  raw: string;
  /** What the screen shows at the end: carriage returns and line clears applied, colours removed. */
  screen: string[];
}

/**
 * Runs `mm` on a real pseudo-terminal (util-linux `script`), as a person at a keyboard would:
 * `keys` are typed in order, each once `waitFor` (if given) has appeared on the screen, so prompts
 * can be answered and Ctrl-C ("\x03") pressed mid-command.
 */
export function runInTerminal(
  args: string[],
  options: { store?: string; env?: Record<string, string>; cols?: number; keys?: { waitFor?: string | RegExp; send: string }[]; timeoutMs?: number } = {},
): Promise<TerminalRun> {
  const quoted = [process.execPath, MM_BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ");
  const child = spawn("script", ["-qec", `stty cols ${options.cols ?? 100} rows 50; exec ${quoted}`, "/dev/null"], {
    env: { ...process.env, LANCEDB_LOG: "error", TERM: "xterm", ...(options.store ? { MM_STORE: options.store } : {}), ...options.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let raw = "";
  const keys = [...(options.keys ?? [])];
  const pump = () => {
    while (keys.length) {
      const next = keys[0];
      const seen = next.waitFor === undefined || (typeof next.waitFor === "string" ? raw.includes(next.waitFor) : next.waitFor.test(raw));
      if (!seen) return;
      keys.shift();
      child.stdin.write(next.send);
    }
  };
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    raw += d;
    setTimeout(pump, 50);
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => (raw += d));
  setTimeout(pump, 50);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`terminal run timed out; screen so far:\n${raw}`));
    }, options.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, raw, screen: render(raw) });
    });
  });
}

/** A terminal's final lines from what was written to it: enough of VT100 for progress bars and prompts. */
export function render(raw: string): string[] {
  const text = raw.replace(/\u001b\[[0-9;?]*[A-JL-Za-z]/g, "").replace(/\r\n/g, "\n");
  return text.split("\n").map((line) => {
    let out = "";
    let col = 0;
    for (let i = 0; i < line.length; i++) {
      if (line[i] === "\r") col = 0;
      else if (line.startsWith("\u001b[K", i)) {
        out = out.slice(0, col);
        i += 2;
      } else {
        out = out.slice(0, col) + line[i] + out.slice(col + 1);
        col++;
      }
    }
    return out.trimEnd();
  });
}
