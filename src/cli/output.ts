import type { Writable } from "node:stream";
import { MmError } from "../errors.js";

/** mermaid and dot apply to `mm graph export` only; every other command refuses them. */
export type Format = "table" | "json" | "ndjson" | "mermaid" | "dot";
const FORMATS: Format[] = ["table", "json", "ndjson", "mermaid", "dot"];

export interface OutputStreams {
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean };
}

/**
 * Renders command results. JSON mode prints exactly the HTTP response body; table mode is for
 * people at a terminal. chalk and cli-table3 load only in table mode, so piped use stays lean.
 */
export class Output {
  constructor(
    private readonly io: OutputStreams,
    readonly format: Format,
    private readonly color: boolean,
  ) {}

  static create(io: OutputStreams, opts: { json?: boolean; format?: string }): Output {
    let format: Format;
    if (opts.format !== undefined) {
      if (!(FORMATS as string[]).includes(opts.format)) {
        throw new MmError("VALIDATION_ERROR", `Unknown --format "${opts.format}"; use table, json or ndjson (or mermaid, dot for graph export).`, {
          details: [{ field: "format", message: "must be table, json, ndjson, mermaid or dot" }],
        });
      }
      format = opts.format as Format;
    } else {
      format = opts.json || !io.stdout.isTTY ? "json" : "table";
    }
    return new Output(io, format, Boolean(io.stdout.isTTY) && format === "table");
  }

  get isTable(): boolean {
    return this.format === "table";
  }

  /** The body as JSON (one line per item in ndjson mode when the body is a list). */
  json(body: unknown): void {
    if (this.format === "mermaid" || this.format === "dot") {
      throw new MmError("VALIDATION_ERROR", `--format ${this.format} is only for \`mm graph export\`.`, {
        details: [{ field: "format", message: "mermaid and dot apply to graph export only" }],
      });
    }
    if (this.format === "ndjson") {
      const items = listItems(body);
      if (items) {
        for (const item of items) this.out(JSON.stringify(item));
        return;
      }
      this.out(JSON.stringify(body));
      return;
    }
    this.out(JSON.stringify(body, null, this.format === "json" && this.io.stdout.isTTY ? 2 : undefined));
  }

  /** A result: JSON body in json/ndjson mode, else `renderTable()`'s text. */
  async result(body: unknown, renderTable: (t: TableKit) => string | Promise<string>): Promise<void> {
    if (!this.isTable) return this.json(body);
    this.out(await renderTable(await tableKit(this.color)));
  }

  out(line: string): void {
    this.io.stdout.write(line + "\n");
  }

  /** Human messages (progress, warnings) go to stderr so stdout stays parseable. */
  note(line: string): void {
    this.io.stderr.write(line + "\n");
  }

  error(err: MmError): void {
    if (!this.isTable) {
      this.io.stderr.write(JSON.stringify(err.toBody()) + "\n");
      return;
    }
    const details = Array.isArray(err.extra.details)
      ? (err.extra.details as { field: string; message: string }[]).map((d) => ` (${d.field}: ${d.message})`).join("")
      : "";
    const text = `mm: ${err.code}: ${err.message}${err.message.includes("(") ? "" : details}`;
    this.io.stderr.write((this.io.stderr.isTTY ? `\u001b[31m${text}\u001b[39m` : text) + "\n");
  }
}

function listItems(body: unknown): unknown[] | undefined {
  if (body && typeof body === "object") {
    const b = body as { items?: unknown; results?: unknown };
    if (Array.isArray(b.items)) return b.items;
    if (Array.isArray(b.results)) return b.results;
  }
  return undefined;
}

export interface TableKit {
  /** A table with a header row. */
  table(head: string[], rows: (string | number)[][], colWidths?: (number | null)[]): string;
  /** A two-column key/value table. */
  record(entries: [string, unknown][]): string;
  dim(s: string): string;
  bold(s: string): string;
  green(s: string): string;
}

async function tableKit(color: boolean): Promise<TableKit> {
  const [{ default: Table }, { Chalk }] = await Promise.all([import("cli-table3"), import("chalk")]);
  const chalk = new Chalk({ level: color ? 1 : 0 });
  const style = { head: color ? ["cyan"] : [], border: color ? ["grey"] : [] };
  return {
    table(head, rows, colWidths) {
      const t = new Table({ head, style, wordWrap: true, ...(colWidths ? { colWidths } : {}) });
      t.push(...rows.map((r) => r.map(String)));
      return t.toString();
    },
    record(entries) {
      const t = new Table({ style });
      for (const [k, v] of entries) {
        if (v === undefined) continue;
        t.push({ [chalk.bold(k)]: typeof v === "string" ? v : JSON.stringify(v) });
      }
      return t.toString();
    },
    dim: (s) => chalk.dim(s),
    bold: (s) => chalk.bold(s),
    green: (s) => chalk.green(s),
  };
}

/** One-line preview of content for tables: newlines shown as ⏎, cut at `width` characters. */
export function preview(text: string, width = 60): string {
  const flat = text.replace(/\r?\n/g, " ⏎ ");
  const chars = [...flat];
  return chars.length > width ? chars.slice(0, width - 1).join("") + "…" : flat;
}
