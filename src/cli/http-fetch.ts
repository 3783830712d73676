import { request, type IncomingMessage } from "node:http";

/**
 * The `fetch` the CLI's client uses for `--remote`, over node:http. Node's own fetch (undici)
 * costs ~70 ms to load on its first use (median of 10 runs here, against ~25 ms for node:http),
 * which is more than everything else a remote command adds to its request. Only what the client
 * reads is implemented: status, headers, the body as text, and an AbortSignal. One connection per
 * request, closed after it, so nothing keeps the process alive.
 */
export function nodeFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const url = new URL(String(input));
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return reject(signal.reason);
    const send = (make: typeof request) => {
      const req = make(url, { method: init.method ?? "GET", headers: init.headers as Record<string, string>, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
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
