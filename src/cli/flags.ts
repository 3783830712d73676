import type { Readable } from "node:stream";
import { validationError } from "../errors.js";

/** `--metadata '<json>'`: parsed here, validated (object, size) by the service like any body. */
export function jsonFlag(field: string, value: string | undefined): unknown {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(value);
  } catch {
    throw validationError(field, "must be valid JSON");
  }
}

/**
 * A numeric flag passed on to the service: numbers become numbers, anything else stays a string so
 * the service rejects it with VALIDATION_ERROR exactly as it would an HTTP body.
 */
export function numberFlag(value: string | undefined): number | string | undefined {
  if (value === undefined) return undefined;
  return /^\s*-?(\d+\.?\d*|\.\d+)(e-?\d+)?\s*$/i.test(value) ? Number(value) : value;
}

/** Reads all of stdin; drops one trailing newline (the one `echo` adds), keeps everything else. */
export async function readStdin(stdin: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
}

/** Drops undefined fields so the service sees exactly what the user gave (PATCH semantics rely on it). */
export function defined(obj: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));
}
