import type { Command } from "commander";
import type { MmError } from "../errors.js";

/**
 * Error messages in the user's own words. The services speak the API's language (`userId is
 * required`, details on the field `limit`), which is right for HTTP clients and for `--json`. On a
 * terminal the CLI names what the person typed instead: the flag (`--user`, or MM_USER where the
 * command reads it), or the argument (`<query>`).
 */

/** API fields whose flag has another name. */
const FLAG_OF_FIELD: Record<string, string> = {
  userId: "user",
  agentId: "agent",
  tags: "tag",
  entityIds: "entity",
  entityId: "entity",
  sourceId: "source",
  targetId: "target",
  maxDepth: "max-depth",
  asOf: "as-of",
  includeSuperseded: "all",
};

/** Environment variables a command falls back to when its flag is absent. */
const ENV_OF_FLAG: Record<string, string> = { user: "MM_USER", account: "MM_ACCOUNT", store: "MM_STORE" };

/** Codes whose message starts with the name of the field it is about (core's convention). */
const FIELD_OF_CODE: Record<string, string> = {
  INVALID_USER_ID: "userId",
  CONTENT_TOO_LONG: "content",
  NAME_REQUIRED: "name",
  INVALID_ENTITY_TYPE: "type",
  INVALID_RELATION_TYPE: "type",
};

export type FieldNamer = (field: string) => string;

/** How the user gave each API field to `cmd`: `--user (or MM_USER)`, `<query>`, or the field itself. */
export function fieldNamer(cmd: Command | undefined, env: Record<string, string | undefined>): FieldNamer {
  return (field) => {
    const top = field.split(".")[0];
    if (!cmd) return top;
    const flag = FLAG_OF_FIELD[top] ?? top;
    let option;
    for (let c: Command | null = cmd; c && !option; c = c.parent) option = c.options.find((o) => o.long === `--${flag}`);
    if (option) {
      const variable = ENV_OF_FLAG[flag];
      return variable && env[variable] === undefined && usesEnv(cmd, flag) ? `--${flag} (or ${variable})` : `--${flag}`;
    }
    const argument = cmd.registeredArguments.find((a) => a.name() === top);
    return argument ? `<${top}>` : top;
  };
}

/** Commands that read MM_USER when --user is absent: those that create memories. */
function usesEnv(cmd: Command, flag: string): boolean {
  return flag !== "user" || (cmd.name() === "add" && cmd.parent?.name() === "memories");
}

/** The one line a person reads on a terminal for an error, after `mm: `. */
export function humanMessage(err: MmError, name: FieldNamer): string {
  const details = err.extra.details as { field: string; message: string }[] | undefined;
  if (err.code === "VALIDATION_ERROR" && Array.isArray(details) && details.length && details.every((d) => d.field !== "command")) {
    return `${details.map((d) => detailLine(d, name)).join("; ")}.`;
  }
  const field = FIELD_OF_CODE[err.code];
  if (field && err.message.startsWith(`${field} `)) return `${name(field)}${err.message.slice(field.length)}`;
  return err.message;
}

/** One detail in the person's words: `--limit must be a number`; an empty update: `give at least one of --type, --metadata`. */
function detailLine(d: { field: string; message: string }, name: FieldNamer): string {
  const some = /^give at least one of (.+)$/.exec(d.message);
  if (d.field === "body" && some) return `Give at least one of ${some[1].split(", ").map((f) => name(f)).join(", ")}`;
  return `${name(d.field)} ${d.message}`;
}
