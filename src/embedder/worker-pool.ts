import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { codeCacheDir } from "../code-cache.js";
import { MmError } from "../errors.js";
import type { EmbedderConfig } from "./types.js";

/** The compiled worker; under vitest (TypeScript sources) the built copy in dist/ is used. */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith(".js")) return join(dirname(here), "embed-worker.js");
  const built = join(dirname(here), "..", "..", "dist", "embedder", "embed-worker.js");
  if (!existsSync(built)) throw new MmError("INTERNAL_ERROR", "dist/embedder/embed-worker.js is missing; run npm run build.");
  return built;
}

interface Job {
  texts: string[];
  resolve(v: Float32Array[]): void;
  reject(e: unknown): void;
}

/**
 * Embeds on worker threads so a CPU-bound model (use-lite runs TensorFlow.js on the CPU in plain
 * JavaScript) uses every core. Each worker holds its own copy of the model (≈1 s to load, ≈150 MB),
 * so the pool starts lazily, on the first large batch, and only for large batches.
 */
export class EmbedderPool {
  private workers: { worker: Worker; busy: boolean }[] = [];
  private queue: Job[] = [];
  private pending = new Map<number, Job>();
  private nextId = 0;

  constructor(
    private readonly config: EmbedderConfig,
    private readonly env: Record<string, string | undefined>,
    private readonly size: number,
  ) {}

  embed(texts: string[]): Promise<Float32Array[]> {
    this.start();
    return new Promise((resolve, reject) => {
      this.queue.push({ texts, resolve, reject });
      this.pump();
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.worker.terminate()));
    this.workers = [];
  }

  private start(): void {
    if (this.workers.length) return;
    for (let i = 0; i < this.size; i++) {
      const worker = new Worker(workerFile(), { workerData: { config: this.config, env: this.env, codeCache: codeCacheDir() } });
      const slot = { worker, busy: false };
      worker.on("message", (msg: { id: number; vectors?: Float32Array[]; error?: { message: string; code?: string } }) => {
        const job = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        slot.busy = false;
        if (job) {
          if (msg.error) job.reject(new MmError((msg.error.code as "EMBEDDER_UNAVAILABLE") ?? "INTERNAL_ERROR", msg.error.message));
          else job.resolve(msg.vectors!);
        }
        this.pump();
      });
      worker.on("error", (err) => {
        for (const job of this.pending.values()) job.reject(err);
        this.pending.clear();
      });
      this.workers.push(slot);
    }
  }

  private pump(): void {
    for (const slot of this.workers) {
      if (slot.busy || !this.queue.length) continue;
      const job = this.queue.shift()!;
      const id = this.nextId++;
      slot.busy = true;
      this.pending.set(id, job);
      slot.worker.postMessage({ id, texts: job.texts });
    }
  }
}
