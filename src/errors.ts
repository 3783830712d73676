/**
 * The one error type of `mm`. Core code throws it with a code from the spec (or decisions.md);
 * the CLI and the HTTP layer map the code to an exit code or an HTTP status through `ERROR_TABLE`,
 * so the two transports can never disagree on what an error means.
 */
export type ErrorCode =
  | "VALIDATION_ERROR"
  | "INVALID_USER_ID"
  | "CONTENT_TOO_LONG"
  | "NAME_REQUIRED"
  | "INVALID_ENTITY_TYPE"
  | "INVALID_RELATION_TYPE"
  | "MEMORY_NOT_FOUND"
  | "ENTITY_NOT_FOUND"
  | "RELATION_NOT_FOUND"
  | "SOURCE_ENTITY_NOT_FOUND"
  | "TARGET_ENTITY_NOT_FOUND"
  | "NOT_FOUND"
  | "METHOD_NOT_ALLOWED"
  | "PAYLOAD_TOO_LARGE"
  | "REQUEST_TIMEOUT"
  | "UNAUTHORIZED"
  | "FORBIDDEN"
  | "RATE_LIMIT_EXCEEDED"
  | "QUOTA_EXCEEDED"
  | "EMBEDDER_MISMATCH"
  | "EMBEDDER_UNAVAILABLE"
  | "STORE_ERROR"
  | "LISTEN_ERROR"
  | "REMOTE_UNAVAILABLE"
  | "SERVICE_UNAVAILABLE"
  | "STORE_UNAVAILABLE"
  | "INTERRUPTED"
  | "INTERNAL_ERROR";

/** Exit codes by error class. Documented in the README; scripts may rely on them. */
export const EXIT = {
  ok: 0,
  internal: 1,
  usage: 2,
  notFound: 3,
  limited: 4,
  auth: 5,
  config: 6,
  interrupted: 130,
} as const;

interface ErrorClass {
  status: number;
  exit: number;
}

export const ERROR_TABLE: Record<ErrorCode, ErrorClass> = {
  VALIDATION_ERROR: { status: 400, exit: EXIT.usage },
  INVALID_USER_ID: { status: 400, exit: EXIT.usage },
  CONTENT_TOO_LONG: { status: 400, exit: EXIT.usage },
  NAME_REQUIRED: { status: 400, exit: EXIT.usage },
  INVALID_ENTITY_TYPE: { status: 400, exit: EXIT.usage },
  INVALID_RELATION_TYPE: { status: 400, exit: EXIT.usage },
  MEMORY_NOT_FOUND: { status: 404, exit: EXIT.notFound },
  ENTITY_NOT_FOUND: { status: 404, exit: EXIT.notFound },
  RELATION_NOT_FOUND: { status: 404, exit: EXIT.notFound },
  SOURCE_ENTITY_NOT_FOUND: { status: 404, exit: EXIT.notFound },
  TARGET_ENTITY_NOT_FOUND: { status: 404, exit: EXIT.notFound },
  NOT_FOUND: { status: 404, exit: EXIT.notFound },
  METHOD_NOT_ALLOWED: { status: 405, exit: EXIT.usage },
  PAYLOAD_TOO_LARGE: { status: 413, exit: EXIT.usage },
  REQUEST_TIMEOUT: { status: 408, exit: EXIT.usage },
  UNAUTHORIZED: { status: 401, exit: EXIT.auth },
  FORBIDDEN: { status: 403, exit: EXIT.auth },
  RATE_LIMIT_EXCEEDED: { status: 429, exit: EXIT.limited },
  QUOTA_EXCEEDED: { status: 403, exit: EXIT.limited },
  EMBEDDER_MISMATCH: { status: 409, exit: EXIT.config },
  EMBEDDER_UNAVAILABLE: { status: 503, exit: EXIT.config },
  STORE_ERROR: { status: 500, exit: EXIT.config },
  LISTEN_ERROR: { status: 500, exit: EXIT.config },
  /** `mm --remote`: the server gave no answer (refused, timed out, or not mm's API). */
  REMOTE_UNAVAILABLE: { status: 502, exit: EXIT.config },
  /** A service the server depends on (Redis, with `--redis`) can't be reached: retry later. */
  SERVICE_UNAVAILABLE: { status: 503, exit: EXIT.config },
  /** The object store the data lives in can't be reached (an outage): retry after `retryAfter` seconds. */
  STORE_UNAVAILABLE: { status: 503, exit: EXIT.config },
  INTERRUPTED: { status: 499, exit: EXIT.interrupted },
  INTERNAL_ERROR: { status: 500, exit: EXIT.internal },
};

export type ErrorExtra = Record<string, unknown>;

export class MmError extends Error {
  readonly code: ErrorCode;
  readonly extra: ErrorExtra;

  constructor(code: ErrorCode, message: string, extra: ErrorExtra = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "MmError";
    this.code = code;
    this.extra = extra;
  }

  get status(): number {
    return ERROR_TABLE[this.code].status;
  }

  get exitCode(): number {
    return ERROR_TABLE[this.code].exit;
  }

  /** The spec's error envelope: `{error: {code, message, ...extra}}`. */
  toBody(): { error: { code: ErrorCode; message: string } & ErrorExtra } {
    return { error: { code: this.code, message: this.message, ...this.extra } };
  }
}

/**
 * Codes whose messages speak to whoever runs mm: they name paths, process ids, the embedding
 * endpoint's URL, the variable holding its key, the upstream's own words. Over HTTP a client gets
 * the message below instead (and no extra fields); the server logs the original.
 */
const OPERATOR_ONLY: Partial<Record<ErrorCode, string>> = {
  EMBEDDER_UNAVAILABLE: "The embedding service is unavailable; try again later.",
  EMBEDDER_MISMATCH: "The embedding service returned vectors this store can't use; the server's log has the details.",
  STORE_ERROR: "The store is unavailable; try again later.",
  SERVICE_UNAVAILABLE: "A service this server depends on is unavailable; try again later.",
  STORE_UNAVAILABLE: "The store is unavailable; try again later.",
  INTERNAL_ERROR: "An internal error occurred.",
};

/** What a remote client may see of `err`: itself, or for operator-only codes the same code with a generic message (and only `retryAfter` of its extra fields). */
export function forClient(err: MmError): MmError {
  const generic = OPERATOR_ONLY[err.code];
  if (generic === undefined) return err;
  return new MmError(err.code, generic, err.extra.retryAfter === undefined ? {} : { retryAfter: err.extra.retryAfter });
}

/**
 * What the log keeps of an error a client saw only generically: the message and each cause's
 * ("message ← cause ← cause's cause"), each cut to its first line and 1,000 characters; for an
 * unexpected error, the stack of the first cause that has one (an MmError wrapping the real failure,
 * as the group commit's does, would otherwise log only "An internal error occurred").
 */
export function errorDetail(err: unknown): string {
  const mm = toMmError(err);
  const parts: string[] = [];
  for (let e: unknown = mm; e && parts.length < 5; e = (e as Error).cause) {
    const line = (e instanceof Error ? e.message : String(e)).split("\n")[0];
    if (!(e === mm && mm !== err) && !parts.includes(line)) parts.push(line.length > 1_000 ? `${line.slice(0, 1_000)}…` : line);
  }
  if (mm.code !== "INTERNAL_ERROR") return parts.join(" ← ");
  let origin: unknown = mm;
  while (origin instanceof MmError && origin.cause) origin = origin.cause;
  const stack = origin instanceof Error && origin.stack ? origin.stack.split("\n").slice(1).join("\n") : "";
  return parts.join(" ← ") + (stack ? `\n${stack}` : "");
}

/** VALIDATION_ERROR for one field, in the same form schema failures take. */
export function validationError(field: string, message: string): MmError {
  return new MmError("VALIDATION_ERROR", `Invalid request: ${field}: ${message}`, { details: [{ field, message }] });
}

/** ENTITY_NOT_FOUND for links to entities that don't exist, listing them in `missing`. */
export function entitiesNotFound(missing: string[]): MmError {
  const one = missing.length === 1;
  return new MmError("ENTITY_NOT_FOUND", `Entit${one ? "y" : "ies"} ${missing.join(", ")} ${one ? "does" : "do"} not exist.`, { missing });
}

/**
 * Turns anything thrown into an MmError. Unknown errors become INTERNAL_ERROR with a generic
 * message, so no stack or internals reach a user; the original stays on `cause` for logging.
 */
export function toMmError(err: unknown): MmError {
  if (err instanceof MmError) return err;
  return new MmError("INTERNAL_ERROR", "An internal error occurred.", {}, { cause: err });
}
