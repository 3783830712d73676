import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { MmError } from "../errors.js";

/**
 * The longest line an import reads: a memory is at most 10,000 characters, its vector a few
 * thousand numbers, its metadata whatever fits in the API's 1 MiB body. A longer line is not an
 * export's (`/dev/zero`, a binary file): reading stops there, before the process runs out of memory.
 */
export const MAX_LINE_CHARS = 8 * 1024 * 1024;
/** The largest whole document (mem0's JSON export) an import reads into memory. */
export const MAX_DOCUMENT_BYTES = 128 * 1024 * 1024;

/** The lines of a stream (`\n` or `\r\n`), as readline gives them, refusing any longer than `maxChars`. */
export async function* boundedLines(input: Readable, what: string, maxChars = MAX_LINE_CHARS): AsyncGenerator<string> {
  const decoder = new StringDecoder("utf8");
  let partial = "";
  let line = 0;
  const tooLong = () =>
    new MmError("VALIDATION_ERROR", `Line ${line + 1} of ${what} is longer than ${maxChars / 1024 / 1024} MiB; is it the right file? Reading stopped there.`, {
      details: [{ field: `line ${line + 1}`, message: `longer than ${maxChars} characters` }],
    });
  try {
    for await (const chunk of input) {
      const text = typeof chunk === "string" ? chunk : decoder.write(chunk);
      let start = 0;
      for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", start)) {
        const p = partial + text.slice(start, nl);
        partial = "";
        start = nl + 1;
        if (p.length > maxChars) throw tooLong();
        line++;
        yield p.endsWith("\r") ? p.slice(0, -1) : p;
      }
      partial += text.slice(start);
      if (partial.length > maxChars) throw tooLong();
    }
    partial += decoder.end();
    if (partial.length > maxChars) throw tooLong();
    if (partial !== "") yield partial.endsWith("\r") ? partial.slice(0, -1) : partial;
  } finally {
    input.destroy();
  }
}

/** A whole stream as text, refusing one larger than `maxBytes`. */
export async function boundedText(input: Readable, what: string, maxBytes = MAX_DOCUMENT_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of input) {
      const buf = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
      size += buf.length;
      if (size > maxBytes) {
        throw new MmError("VALIDATION_ERROR", `${what} is larger than ${maxBytes / 1024 / 1024} MiB, more than an import reads at once; is it the right file?`, {
          details: [{ field: "file", message: `larger than ${maxBytes} bytes` }],
        });
      }
      chunks.push(buf);
    }
  } finally {
    input.destroy();
  }
  return Buffer.concat(chunks).toString("utf8");
}
