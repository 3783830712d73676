import { z } from "zod";
import { MmError } from "../errors.js";

export interface FieldIssue {
  field: string;
  message: string;
}

/**
 * Parses raw input with a schema; on failure throws VALIDATION_ERROR with one
 * `{field, message}` per problem. The CLI and the HTTP layer both hand raw values to the same
 * services, which call this, so the two can never validate differently.
 */
export function parseWith<S extends z.ZodType>(schema: S, raw: unknown, what = "request"): z.output<S> {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const details = result.error.issues.map(toFieldIssue);
  throw new MmError("VALIDATION_ERROR", `Invalid ${what}: ${details.map((d) => `${d.field}: ${d.message}`).join("; ")}`, { details });
}

function toFieldIssue(issue: z.core.$ZodIssue): FieldIssue {
  const field = issue.path.length ? issue.path.map(String).join(".") : "body";
  if (issue.code === "unrecognized_keys") {
    return { field: issue.keys.join(", "), message: `unknown field${issue.keys.length > 1 ? "s" : ""}` };
  }
  return { field, message: issue.message };
}

export function validationError(field: string, message: string): MmError {
  return new MmError("VALIDATION_ERROR", `Invalid request: ${field}: ${message}`, { details: [{ field, message }] });
}

/** Requires a JSON object body, so `[]`, `"x"` or `null` get a clear message instead of a field list. */
export function requireObject(raw: unknown, what = "request body"): Record<string, unknown> {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw validationError("body", `the ${what} must be a JSON object`);
  }
  return raw as Record<string, unknown>;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** False for strings with lone UTF-16 surrogates, which can't be stored as UTF-8 without loss. */
export function isWellFormed(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}

/** Length in Unicode code points: what a person calls characters ("😀" is 1, not 2 UTF-16 units). */
export function charLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * A positive integer from JSON (number) or from a query string / CLI flag (digits). Other forms
 * ("abc", "1.5", "", 0, -1) are rejected, never coerced, so a typo doesn't silently change a page.
 */
export const positiveInt = z.union([z.number(), z.string()]).transform((v, ctx) => {
  const n = typeof v === "number" ? v : /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < 1) {
    ctx.addIssue({ code: "custom", message: "must be an integer of at least 1" });
    return z.NEVER;
  }
  return n;
});

/** A limit that may exceed the maximum: clamped, as decisions.md says, not rejected. */
export function clampedLimit(max: number) {
  return positiveInt.transform((n) => Math.min(n, max));
}

/** The same for JSON bodies, where a limit must be a number: `"10"` is a wrong type there. */
export function clampedLimitNumber(max: number) {
  return z
    .number()
    .refine((n) => Number.isInteger(n) && n >= 1, "must be an integer of at least 1")
    .transform((n) => Math.min(n, max));
}

/** Non-empty identifier-like strings (user, agent): 1-256 characters, not blank, well-formed Unicode. */
export const identifier = z
  .string()
  .refine((s) => s.trim().length > 0, "must not be empty")
  .refine((s) => charLength(s) <= 256, "must be at most 256 characters")
  .refine(isWellFormed, "must be valid Unicode");

export const MAX_TAGS = 50;
export const MAX_TAG_LENGTH = 100;

/** Tags: strings of 1-100 characters without commas (the GET filter is comma-separated), deduplicated in order. */
export const tagList = z
  .array(
    z
      .string()
      .refine((s) => s.trim().length > 0, "must not be empty")
      .refine((s) => !s.includes(","), "must not contain a comma")
      .refine((s) => charLength(s) <= MAX_TAG_LENGTH, `must be at most ${MAX_TAG_LENGTH} characters`)
      .refine(isWellFormed, "must be valid Unicode"),
  )
  .max(MAX_TAGS, `at most ${MAX_TAGS} tags`)
  .transform((tags) => [...new Set(tags)]);

export const MAX_METADATA_BYTES = 64 * 1024;

/** Metadata: any JSON object (not an array or null), at most 64 KiB once serialised. */
export const metadataObject = z
  // z.custom, not z.record: a record is rebuilt key by key, and a "__proto__" key from JSON.parse
  // would set the copy's prototype instead of surviving as data.
  .custom<Record<string, unknown>>((v) => v !== null && typeof v === "object" && !Array.isArray(v), "must be a JSON object")
  .refine((m) => Buffer.byteLength(JSON.stringify(m), "utf8") <= MAX_METADATA_BYTES, `must be at most ${MAX_METADATA_BYTES} bytes as JSON`);
