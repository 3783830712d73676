import { request, type IncomingMessage } from "node:http";
import { MmApiError } from "../client/index.js";

/**
 * The most of an answer the CLI reads: far above any page the API sends (a page of 100 memories
 * with their metadata is a few MiB), far below what would take the process's memory with it.
 */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/**
 * The `fetch` the CLI's client uses for `--remote`, over node:http. Node's own fetch (undici)
 * costs ~70 ms to load on its first use (median of 10 runs here, against ~25 ms for node:http),
 * which is more than everything else a remote command adds to its request. Only what the client
 * reads is implemented: status, headers, the body as text, and an AbortSignal. One connection per
 * request, closed after it, so nothing keeps the process alive. An answer is read with a running
 * count, and one over MAX_ANSWER_BYTES is cut off: an error of the answer's status, which the
 * client doesn't retry as it would a network error.
 */
export function nodeFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const url = new URL(String(input));
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return reject(signal.reason);
    const send = (make: typeof request) => {
      const req = make(url, { method: init.method ?? "GET", headers: init.headers as Record<string, string>, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const tooLarge = () => {
          req.destroy();
          reject(new MmApiError("ANSWER_TOO_LARGE", `its answer was larger than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB, so mm stopped reading it`, res.statusCode ?? 0));
        };
        if (Number(res.headers["content-length"]) > MAX_ANSWER_BYTES) return tooLarge();
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > MAX_ANSWER_BYTES) tooLarge();
          else chunks.push(c);
        });
        res.on("error", reject);
        res.on("end", () => resolve(answer(res, Buffer.concat(chunks).toString("utf8"))));
      });
      signal?.addEventListener("abort", () => req.destroy(signal.reason instanceof Error ? signal.reason : new Error("aborted")), { once: true });
      req.on("error", reject);
      req.end(typeof init.body === "string" ? init.body : undefined);
    };
    if (url.protocol === "https:") import("node:https").then((https) => send(https.request), reject);
    else send(request);
  });
}

function answer(res: IncomingMessage, text: string): Response {
  const status = res.statusCode ?? 0;
  const headers = {
    get: (name: string) => {
      const v = res.headers[name.toLowerCase()];
      return v === undefined ? null : Array.isArray(v) ? v.join(", ") : String(v);
    },
  };
  return { ok: status >= 200 && status < 300, status, headers, text: async () => text } as unknown as Response;
}
