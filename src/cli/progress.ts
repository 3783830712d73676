import { createReadStream } from "node:fs";
import { count, type Output } from "./output.js";

export interface Progress {
  /** One more line done (added or failed). */
  tick(): void;
  /** Clears the bar for good, so what follows (the summary) starts on a clean line. */
  stop(): void;
}

const WIDTH = 24;
const REDRAW_MS = 200;

/**
 * A one-line progress bar on a terminal's stderr for batch adds: "loading the model…" until the
 * first line is done, then done/total with a rate and an ETA (or just the count when the total is
 * unknown, reading stdin). Messages go above it, never under it: `output` holds it as its live
 * line until `stop`, so its notes and errors (a new store, a failure) are printed above it too.
 */
export function startProgress(output: Output, stream: NodeJS.WritableStream, total: number | undefined): Progress {
  const style = output.styles;
  const started = Date.now();
  let firstAt = 0;
  let done = 0;
  let drawnAt = 0;
  let stopped = false;
  const draw = (force = false) => {
    const now = Date.now();
    if (stopped || (!force && now - drawnAt < REDRAW_MS)) return;
    drawnAt = now;
    stream.write(`\r\u001b[K${line(now)}`);
  };
  const line = (now: number): string => {
    if (!done) return style.dim(`loading the model… ${seconds((now - started) / 1000)}`);
    const rate = done / Math.max(0.001, (now - firstAt) / 1000);
    const lines = total ? `${count(done)}/${count(total)} lines` : `${count(done)} lines`;
    if (!total) return `adding ${lines} · ${rate.toFixed(1)}/s`;
    const filled = Math.min(WIDTH, Math.round((done / total) * WIDTH));
    const eta = done < total ? ` · about ${seconds((total - done) / rate)} left` : "";
    return `[${"█".repeat(filled)}${"░".repeat(WIDTH - filled)}] ${lines} · ${rate.toFixed(1)}/s${eta}`;
  };
  const timer = setInterval(() => draw(), REDRAW_MS);
  timer.unref();
  draw(true);
  // Whatever else is written meanwhile: the bar is cleared, the text written, and the bar drawn again below it.
  const above = (write: () => void) => {
    if (!stopped) stream.write("\r\u001b[K");
    write();
    draw(true);
  };
  const held = output.hold({ above });
  return {
    tick() {
      if (!done) firstAt = Date.now();
      done++;
      draw();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      held.stop();
      stream.write("\r\u001b[K");
    },
  };
}

/** Lines in a file (its newlines, plus a last line without one), read as a stream: ~0.1 s per 100 MB. */
export async function countLines(path: string): Promise<number> {
  let lines = 0;
  let last = 10;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
    if (chunk.length) last = chunk[chunk.length - 1];
  }
  return lines + (last === 10 ? 0 : 1);
}


function seconds(s: number): string {
  if (!Number.isFinite(s)) return "…";
  if (s < 60) return `${Math.ceil(s)}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m${String(Math.ceil(s % 60)).padStart(2, "0")}s` : `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}
