import { Transform, type Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";

/** The answer to a JSON-RPC batch over stdio: MCP's 2025-06-18 transport has no batches. */
export const BATCH_REFUSAL = {
  jsonrpc: "2.0",
  id: null,
  error: { code: -32600, message: "Invalid Request: mm mcp does not take JSON-RPC batches over stdio; send one message per line." },
} as const;

/**
 * stdin as the SDK's stdio transport should read it, without the lines that hold a JSON-RPC batch
 * (a line whose first non-blank character is `[`): `refuse` answers each of them instead. The SDK
 * would drop such a line without a word, and its client would wait for answers for good. Other
 * lines pass through as they come, a line longer than one chunk included, so nothing but a
 * batch's own line is held back.
 */
export function refuseBatches(input: Readable, refuse: () => void): Readable {
  // What is known of the line being read: a batch (held back), another message (passed on), or not yet.
  let line: "batch" | "message" | "unknown" = "unknown";
  let head = ""; // the blank start of a line whose kind isn't known yet
  const decoder = new StringDecoder("utf8"); // a character split between chunks stays whole
  const filter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      let text = decoder.write(chunk);
      let out = "";
      while (text) {
        const end = text.indexOf("\n");
        const part = end === -1 ? text : text.slice(0, end + 1);
        text = end === -1 ? "" : text.slice(end + 1);
        if (line === "unknown") {
          const start = (head + part).trimStart();
          if (!start) head += part;
          else {
            line = start.startsWith("[") ? "batch" : "message";
            if (line === "message") out += head + part;
            head = "";
          }
        } else if (line === "message") out += part;
        if (part.endsWith("\n")) {
          if (line === "batch") refuse();
          line = "unknown";
          head = "";
        }
      }
      done(null, out);
    },
  });
  return input.pipe(filter);
}
