// All schemas use zod/mini, not classic zod: its functions tree-shake, so the bundle carries
// ~55 KB of zod instead of ~450 KB (50-75 ms of every validating command's start-up). Both
// flavours would share zod's core, so one classic schema anywhere would bring all of it back.
import * as z from "zod/mini";
import { MmError, validationError } from "../errors.js";
import { orList } from "../words.js";

// zod/mini carries no messages until they are configured; these are mm's own, in the voice of
// every other message: what the value must be, never zod's "Invalid input: expected …".
z.config({ localeError: plainMessage });

const TYPE_WORDS: Record<string, string> = {
  string: "text",
  number: "a number",
  boolean: "true or false",
  array: "a list",
  object: "a JSON object",
  int: "a whole number",
};

/** One plain sentence fragment per kind of problem: "must be a number", "must be one of a, b or c". */
function plainMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return "is required";
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    case "invalid_value":
      return issue.values.length === 1 ? `must be ${JSON.stringify(issue.values[0])}` : `must be one of ${orList(issue.values.map(String))}`;
    case "too_small":
    case "too_big": {
      const bound = issue.code === "too_small" ? issue.minimum : issue.maximum;
      const word = issue.code === "too_small" ? "at least" : "at most";
      const unit = issue.origin === "string" ? " characters" : issue.origin === "array" ? " items" : "";
      return issue.inclusive === false ? `must be ${issue.code === "too_small" ? "more" : "less"} than ${bound}${unit}` : `must be ${word} ${bound}${unit}`;
    }
    case "unrecognized_keys":
      return `unknown field${issue.keys.length > 1 ? "s" : ""}`;
    default:
      return "is not valid";
  }
}


export interface FieldIssue {
  field: string;
  message: string;
}

/**
 * Parses raw input with a schema; on failure throws VALIDATION_ERROR with one
 * `{field, message}` per problem. The CLI and the HTTP layer both hand raw values to the same
 * services, which call this, so the two can never validate differently.
 */
export function parseWith<S extends z.ZodMiniType>(schema: S, raw: unknown, what = "request"): z.output<S> {
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
export const positiveInt = z.pipe(
  z.union([z.number(), z.string()]),
  z.transform((v) => (typeof v === "number" ? v : /^\s*\d+\s*$/.test(v) ? Number(v) : NaN)),
).check(z.refine((n) => Number.isInteger(n) && n >= 1, "must be an integer of at least 1"));

/** A limit that may exceed the maximum: clamped, as decisions.md says, not rejected. */
export function clampedLimit(max: number) {
  return z.pipe(positiveInt, z.transform((n: number) => Math.min(n, max)));
}

/** The same for JSON bodies, where a limit must be a number: `"10"` is a wrong type there. */
export function clampedLimitNumber(max: number) {
  return z.pipe(
    z.number().check(z.refine((n) => Number.isInteger(n) && n >= 1, "must be an integer of at least 1")),
    z.transform((n: number) => Math.min(n, max)),
  );
}

/**
 * A string of well-formed Unicode; not blank unless `blank`, and at most `max` characters (code
 * points) if given.
 */
export function text(options: { max?: number; blank?: boolean } = {}) {
  const { max, blank } = options;
  return z.string().check(
    ...(blank ? [] : [z.refine<string>((s) => s.trim().length > 0, "must not be empty")]),
    ...(max === undefined ? [] : [z.refine<string>((s) => charLength(s) <= max, `must be at most ${max} characters`)]),
    z.refine<string>(isWellFormed, "must be valid Unicode"),
  );
}

/** A reference to a stored object (entity id, account id or name): any string but "". */
export const reference = z.string().check(z.minLength(1, "must not be empty"));

/** Non-empty identifier-like strings (user, agent): 1-256 characters, not blank, well-formed Unicode. */
export const identifier = text({ max: 256 });

export const MAX_TAGS = 50;
export const MAX_TAG_LENGTH = 100;

/** Tags: strings of 1-100 characters without commas (the GET filter is comma-separated), deduplicated in order. */
export const tagList = z.pipe(
  z
    .array(
      z.string().check(
        z.refine((s) => s.trim().length > 0, "must not be empty"),
        z.refine((s) => !s.includes(","), "must not contain a comma"),
        z.refine((s) => charLength(s) <= MAX_TAG_LENGTH, `must be at most ${MAX_TAG_LENGTH} characters`),
        z.refine(isWellFormed, "must be valid Unicode"),
      ),
    )
    .check(z.maxLength(MAX_TAGS, `at most ${MAX_TAGS} tags`)),
  z.transform((tags: string[]) => [...new Set(tags)]),
);

export const MAX_METADATA_BYTES = 64 * 1024;
/** Levels of objects and arrays metadata may nest: the metadata object itself is level 1. */
export const MAX_METADATA_DEPTH = 32;

/**
 * Whether `value` nests objects and arrays at most `max` levels deep (a scalar is 0, `{}` is 1).
 * Iterative, with an explicit stack: JSON.parse accepts nesting a million levels deep, and any
 * recursive walk of such a value (JSON.stringify, structuredClone, a schema) overflows the stack.
 */
export function nestsAtMost(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth > max) return false;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return true;
}

/**
 * Metadata: any JSON object (not an array or null), nested at most 32 levels, at most 64 KiB once
 * serialised. The depth check runs first and aborts, so the size check's JSON.stringify (which
 * recurses) never sees a value deep enough to overflow the stack.
 */
export const metadataObject = z
  // z.custom, not z.record: a record is rebuilt key by key, and a "__proto__" key from JSON.parse
  // would set the copy's prototype instead of surviving as data.
  .custom<Record<string, unknown>>((v) => v !== null && typeof v === "object" && !Array.isArray(v), "must be a JSON object")
  .check(
    z.refine((m) => nestsAtMost(m, MAX_METADATA_DEPTH), { message: `must be nested at most ${MAX_METADATA_DEPTH} levels deep`, abort: true }),
    z.refine((m) => Buffer.byteLength(JSON.stringify(m), "utf8") <= MAX_METADATA_BYTES, `must be at most ${MAX_METADATA_BYTES} bytes as JSON`),
  );
