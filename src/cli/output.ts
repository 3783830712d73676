import { createRequire } from "node:module";
import type { Writable } from "node:stream";
import { MmError } from "../errors.js";
import { humanMessage, type FieldNamer } from "./messages.js";

/** mermaid and dot apply to `mm graph export` only, markdown to `mm export` and `mm import`; every other command refuses them. */
export type Format = "table" | "json" | "ndjson" | "mermaid" | "dot" | "markdown";
const FORMATS: Format[] = ["table", "json", "ndjson", "mermaid", "dot", "markdown"];

export interface OutputStreams {
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean; columns?: number };
}

export interface OutputOptions {
  json?: boolean;
  format?: string;
  /** `--no-color`. */
  color?: boolean;
  /** `--wide`. */
  wide?: boolean;
  env?: Record<string, string | undefined>;
}

/**
 * Renders command results. JSON mode prints exactly the HTTP response body; table mode is for
 * people at a terminal: columns fit its width, colour follows NO_COLOR, FORCE_COLOR and
 * `--no-color`. Errors are one line on stderr, in the words the person typed (cli/messages.ts),
 * or the API's error envelope in JSON mode.
 */
export class Output {
  /** How to name an API field in a message; set once the command is known (main.ts). */
  fieldName: FieldNamer = (field) => field;
  /** A progress line being redrawn on stderr (cli/progress.ts): every other line is written above it. */
  private live: LiveLine | undefined;

  private constructor(
    private readonly io: OutputStreams,
    readonly format: Format,
    /** Colour on stdout (tables) and stderr (errors, notes). */
    private readonly colors: { stdout: boolean; stderr: boolean },
    /** `--wide`: tables keep their id columns. */
    private readonly wide = false,
  ) {}

  static create(io: OutputStreams, opts: OutputOptions): Output {
    let format: Format;
    if (opts.format !== undefined) {
      if (!(FORMATS as string[]).includes(opts.format)) {
        throw new MmError("VALIDATION_ERROR", `Unknown --format "${opts.format}"; use table, json or ndjson (or mermaid, dot for graph export, markdown for export and import).`, {
          details: [{ field: "format", message: "must be table, json, ndjson, mermaid, dot or markdown" }],
        });
      }
      if (opts.json && opts.format !== "json") {
        throw new MmError("VALIDATION_ERROR", `--json can't be used with --format ${opts.format}; give one of them.`, {
          details: [{ field: "command", message: `--json can't be used with --format ${opts.format}` }],
        });
      }
      format = opts.format as Format;
    } else {
      format = opts.json || !io.stdout.isTTY ? "json" : "table";
    }
    const env = opts.env ?? {};
    return new Output(io, format, { stdout: useColor(io.stdout, opts.color, env), stderr: useColor(io.stderr, opts.color, env) }, opts.wide);
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
    if (this.format === "markdown") {
      throw new MmError("VALIDATION_ERROR", "--format markdown is only for `mm export` and `mm import`.", {
        details: [{ field: "format", message: "markdown applies to export and import only" }],
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
    this.out(await renderTable(tableKit(this.colors.stdout, this.io.stdout.columns, this.wide)));
  }

  out(line: string): void {
    this.clearOfLive(this.io.stdout.isTTY === true, () => this.io.stdout.write(line + "\n"));
  }

  /** Human messages (progress, warnings) go to stderr so stdout stays parseable. */
  note(line: string): void {
    this.clearOfLive(true, () => this.io.stderr.write(this.fitStderr(line) + "\n"));
  }

  /**
   * Holds `line` as the terminal's live line until `stop`: notes, errors and (on a terminal) output
   * are then written above it, never run on after it, whoever writes them.
   */
  hold(line: LiveLine): { stop(): void } {
    this.live = line;
    return { stop: () => void (this.live === line && (this.live = undefined)) };
  }

  private clearOfLive(onScreen: boolean, write: () => void): void {
    if (this.live && onScreen) this.live.above(write);
    else write();
  }

  /**
   * A message for a person's terminal, broken at spaces to its width so that the terminal never
   * breaks a word; a word longer than a line (a URL, a path) stays whole. JSON lines are never touched.
   */
  private fitStderr(text: string): string {
    const columns = this.io.stderr.columns;
    if (!this.isTable || !this.io.stderr.isTTY || !columns || columns < 20) return text;
    return fitWords(text, columns, require("string-width") as (s: string) => number);
  }

  /**
   * A note for the person, kept out of a script's way: printed in table mode, or when stderr is a
   * terminal; a script that reads stderr for JSON error envelopes never gets it.
   */
  personNote(line: string): void {
    if (this.isTable || this.io.stderr.isTTY) this.note(line);
  }

  /** A warning on a terminal: `mm: warning: …`, in yellow where colour is on. */
  warn(text: string): void {
    this.note(paint(`mm: warning: ${text}`, 33, this.colors.stderr));
  }

  /** Styles for stderr text (progress lines, prompts' surroundings). */
  get styles(): { dim(s: string): string; bold(s: string): string } {
    const on = this.colors.stderr;
    return { dim: (s) => paint(s, 2, on, 22), bold: (s) => paint(s, 1, on, 22) };
  }

  error(err: MmError, extra: string[] = []): void {
    if (!this.isTable) {
      this.io.stderr.write(JSON.stringify(err.toBody()) + "\n");
      return;
    }
    const message = paint(this.fitStderr(`mm: ${humanMessage(err, this.fieldName)}`), 31, this.colors.stderr);
    this.clearOfLive(true, () => this.io.stderr.write(message + "\n"));
    for (const line of extra) this.note(line);
  }
}

/** A line redrawn in place on stderr (a progress bar): `above` clears it, writes, and draws it again below. */
export interface LiveLine {
  above(write: () => void): void;
}

/**
 * Colour on a stream: never with `--no-color` or NO_COLOR (any non-empty value, no-color.org);
 * always with FORCE_COLOR (any value but "0" or "false"); otherwise on terminals only.
 */
function useColor(stream: { isTTY?: boolean }, flag: boolean | undefined, env: Record<string, string | undefined>): boolean {
  if (flag === false || (env.NO_COLOR ?? "") !== "") return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== "") return force !== "0" && force !== "false";
  return Boolean(stream.isTTY);
}

function paint(s: string, code: number, on: boolean, off = 39): string {
  return on ? `\u001b[${code}m${s}\u001b[${off}m` : s;
}

function listItems(body: unknown): unknown[] | undefined {
  if (body && typeof body === "object") {
    const b = body as { items?: unknown; results?: unknown };
    if (Array.isArray(b.items)) return b.items;
    if (Array.isArray(b.results)) return b.results;
  }
  return undefined;
}

export interface TableOptions {
  /** The column that gets the room (content, a description). */
  flex?: number;
  /** Columns holding ids: shown whole, or left out when they don't fit (unless --wide). */
  ids?: number[];
  /** Further columns that may be left out, least useful first. */
  drop?: number[];
  /** Columns never cut nor left out: what a person types back, already made short (a short id). */
  whole?: number[];
}

export interface TableKit {
  /**
   * Aligned columns under a header, without borders or rules, as `docker ps` and `gh` print them.
   * A row never runs past the terminal's width. The `flex` column (default: the widest) gets the
   * room and is cut with "…"; it keeps at least MIN_FLEX columns (or its natural width), and to
   * give it that, the `ids` columns are left out first (an id is whole or absent, never cut; a
   * dim line then says `--wide` or `--format json` shows them), then the `drop` columns in order,
   * then the others are cut. With `--wide` ids stay. Columns empty in every row are left out.
   */
  table(head: string[], rows: (string | number)[][], options?: TableOptions): string;
  /** One `key  value` line per entry; long values wrap under themselves. Undefined values are skipped. */
  record(entries: [string, unknown][]): string;
  /** `--wide`: ids are to be shown whole. */
  readonly wide: boolean;
  /** A sentence or two, broken at spaces to the terminal's width, so the terminal never breaks a word. */
  prose(text: string): string;
  dim(s: string): string;
  bold(s: string): string;
  green(s: string): string;
}

const require = createRequire(import.meta.url);
const GAP = 2;
/** The least a table's flexible column (content, a description) keeps before other columns go. */
const MIN_FLEX = 40;

/** Columns of a terminal we can't measure (a pipe with --format table): no cutting at all. */
function tableKit(color: boolean, columns: number | undefined, wide = false): TableKit {
  const width = require("string-width") as (s: string) => number;
  const limit = columns && columns > 20 ? columns : Infinity;
  const dim = (s: string) => paint(s, 2, color, 22);
  const bold = (s: string) => paint(s, 1, color, 22);
  const pad = (s: string, w: number) => s + " ".repeat(Math.max(0, w - width(s)));
  return {
    table(head, rows, options = {}) {
      const cells = rows.map((r) => r.map((c) => oneLine(String(c))));
      const natural = head.map((h, i) => Math.max(width(h), ...cells.map((r) => width(r[i] ?? ""))));
      let shown = head.map((_, i) => i).filter((i) => cells.some((r) => r[i] !== ""));
      const flex = options.flex !== undefined && shown.includes(options.flex) ? options.flex : shown.reduce((a, i) => (natural[i] > natural[a] ? i : a), shown[0]);
      const flexMin = Math.min(natural[flex], MIN_FLEX);
      const fixed = (cols: number[]) => cols.reduce((a, i) => (i === flex ? a : a + natural[i]), 0) + GAP * (cols.length - 1);
      const droppable = [...(wide ? [] : (options.ids ?? [])), ...(options.drop ?? [])].filter((i) => i !== flex);
      const idsLeftOut: string[] = [];
      for (const i of droppable) {
        if (fixed(shown) + flexMin <= limit) break;
        if (!shown.includes(i)) continue;
        shown = shown.filter((c) => c !== i);
        if (options.ids?.includes(i)) idsLeftOut.push(head[i]);
      }
      const widths = new Map(shown.map((i) => [i, natural[i]]));
      // Still too wide: cut the other columns (never an id), the widest first, down to 6.
      const cuttable = shown.filter((i) => i !== flex && !options.ids?.includes(i) && !options.whole?.includes(i));
      for (let over = fixed(shown) + flexMin - limit; over > 0; over--) {
        const widest = cuttable.reduce((a, i) => (widths.get(i)! > widths.get(a)! ? i : a), cuttable[0]);
        if (widest === undefined || widths.get(widest)! <= 6) break;
        widths.set(widest, widths.get(widest)! - 1);
      }
      const others = shown.reduce((a, i) => (i === flex ? a : a + widths.get(i)!), 0) + GAP * (shown.length - 1);
      widths.set(flex, Math.max(Math.min(flexMin, 8), Math.min(natural[flex], limit - others)));
      const line = (values: string[]) =>
        values
          .map((v, k) => {
            const w = widths.get(shown[k])!;
            return k === values.length - 1 ? cut(v, w, width) : pad(cut(v, w, width), w);
          })
          .join(" ".repeat(GAP))
          .trimEnd();
      const out = [bold(line(shown.map((i) => head[i]))), ...cells.map((r) => line(shown.map((i) => r[i] ?? "")))];
      if (idsLeftOut.length) out.push(dim(cut(`${idsLeftOut.join(", ")} left out to fit; --wide or --format json shows ${idsLeftOut.length === 1 && idsLeftOut[0] === "id" ? "ids" : "them"}`, limit, width)));
      return out.join("\n");
    },
    record(entries) {
      const shown = entries.filter(([, v]) => v !== undefined && v !== null && v !== "");
      const keyWidth = Math.max(...shown.map(([k]) => width(k)));
      const room = Math.max(20, limit - keyWidth - GAP);
      return shown
        .map(([k, v]) => {
          const text = typeof v === "string" ? v : JSON.stringify(v);
          const lines = wrap(text, room, width);
          return lines.map((l, n) => (n === 0 ? `${bold(pad(k, keyWidth))}${" ".repeat(GAP)}${l}` : `${" ".repeat(keyWidth + GAP)}${l}`)).join("\n");
        })
        .join("\n");
    },
    wide,
    prose: (text) => (limit === Infinity ? text : fitWords(text, limit, width)),
    dim,
    bold,
    green: (s) => paint(s, 32, color),
  };
}

/** `text` broken at spaces into lines of at most `columns`; a word longer than a line (a URL, a path) stays whole. */
function fitWords(text: string, columns: number, width: (s: string) => number): string {
  return text
    .split("\n")
    .map((paragraph) => {
      const lines: string[] = [];
      let line = "";
      for (const word of paragraph.split(" ")) {
        if (line && width(`${line} ${word}`) > columns) {
          lines.push(line);
          line = word;
        } else line = line ? `${line} ${word}` : word;
      }
      lines.push(line);
      return lines.join("\n");
    })
    .join("\n");
}

/** A cell on one line: newlines shown as ⏎, tabs as spaces. */
function oneLine(s: string): string {
  return s.replace(/\r?\n/g, " ⏎ ").replace(/\t/g, " ");
}

/** `s` cut to `w` display columns, ending in "…" when cut. */
function cut(s: string, w: number, width: (s: string) => number): string {
  if (width(s) <= w) return s;
  let out = "";
  for (const ch of s) {
    if (width(out + ch) > w - 1) break;
    out += ch;
  }
  return out + "…";
}

/** Lines of at most `w` display columns, broken at spaces where possible; the text's own newlines kept. */
function wrap(text: string, w: number, width: (s: string) => number): string[] {
  if (w === Infinity) return text.split(/\r?\n/);
  const out: string[] = [];
  for (const paragraph of text.split(/\r?\n/)) {
    let line = "";
    for (const word of paragraph.split(/(?<= )/)) {
      if (width(line + word) > w && line) {
        out.push(line.trimEnd());
        line = "";
      }
      let rest = word;
      while (width(rest) > w) {
        let head = "";
        for (const ch of rest) {
          if (width(head + ch) > w) break;
          head += ch;
        }
        out.push(head);
        rest = rest.slice(head.length);
      }
      line += rest;
    }
    out.push(line.trimEnd());
  }
  return out;
}

/** A count as every message and table writes it: 6,000 (never 6000). */
export function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** A count and its noun, singular for one: "1 memory", "2 memories", "1,000 relations". */
export function counted(n: number, one: string, many = `${one}s`): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}

/** Human sizes: 1.4 MiB, 512 B. */
export function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}

/** A timestamp as a person scans it in a table: `2026-11-20 14:03` (UTC). */
export function when(iso: string): string {
  return iso.length >= 16 ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : iso;
}

/**
 * The line under a page of a list, or the whole answer when the page is empty: "page 2 of 5 · 97
 * memories", "No memories.", or "Page 5 is past the end: 3 memories on 1 page."
 */
export function pageLine(t: TableKit, p: { page: number; totalPages: number; total: number }, one: string, many: string, empty: boolean): string {
  const total = `${count(p.total)} ${p.total === 1 ? one : many}`;
  if (empty && p.total === 0) return `No ${many}.`;
  if (empty) return `Page ${p.page} is past the end: ${total} on ${p.totalPages} page${p.totalPages === 1 ? "" : "s"}.`;
  return t.dim(`page ${p.page} of ${p.totalPages} · ${total}`);
}
