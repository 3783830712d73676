import { parentPort, workerData } from "node:worker_threads";
import { useCodeCache } from "../code-cache.js";
import { createEmbedder } from "./index.js";
import type { EmbedderConfig } from "./types.js";

/** One embedding worker: loads the provider once, then embeds batches sent by the pool. */
const { config, env, codeCache } = workerData as { config: EmbedderConfig; env: Record<string, string | undefined>; codeCache?: string };
// A worker compiles the model's code afresh unless it installs the process's code cache too.
if (codeCache) useCodeCache(codeCache);
const embedder = createEmbedder({ ...config, options: { ...config.options, workers: 1 } }, env);

parentPort!.on("message", async (msg: { id: number; texts: string[] }) => {
  try {
    const vectors = await (await embedder).embed(msg.texts);
    parentPort!.postMessage({ id: msg.id, vectors }, vectors.map((v) => v.buffer as ArrayBuffer));
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: { message: (err as Error).message, code: (err as { code?: string }).code } });
  }
});
