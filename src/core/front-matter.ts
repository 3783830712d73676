import { MmError } from "../errors.js";

/**
 * YAML front matter, the small strict subset mm writes and reads
 * (docs/import-export.md, "Markdown: a folder to read, edit and keep in git"): one `key: value` a
 * line at the margin, where a value is a plain word, a quoted string, a JSON object or array, or a
 * block list of such values (`  - item`). Anything else YAML allows (anchors and aliases, tags,
 * block scalars, nested block mappings, merge keys) is refused with the line it is on, so a YAML
 * bomb of deep aliases never expands: there are no aliases to expand. A hand-written parser of a
 * subset instead of a YAML package: no new dependency, and a file is read the same way by every
 * mm, whatever a YAML library's version would resolve (YAML 1.1 reads `no` as false and
 * `2026-11-23` as a date; here both stay strings).
 */

export type FrontValue = string | number | boolean | null | unknown[] | Record<string, unknown>;

/** Plain words are written unquoted; anything else is a JSON string, which YAML reads as a double-quoted scalar. */
const PLAIN = /^[A-Za-z_][A-Za-z0-9_.\-/]*$/;
const RESERVED = /^(true|false|null|yes|no|on|off|y|n|~)$/i;
const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

const YAML_LINE_BREAKS = /[\u0085\u2028\u2029]/;

/** JSON, with the characters YAML 1.1 readers take for line breaks (NEL, LS, PS) escaped too. */
function scalar(value: unknown): string {
  if (typeof value === "string" && PLAIN.test(value) && !RESERVED.test(value)) return value;
  const json = JSON.stringify(value);
  return YAML_LINE_BREAKS.test(json) ? json.replace(/[\u0085\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`) : json;
}

/**
 * One field's lines of front matter ("" when the value is undefined). Arrays of strings or
 * objects become block lists, one item a line, so that a diff shows the item that changed.
 */
export function frontMatterField(key: string, value: unknown): string {
  if (value === undefined) return "";
  if (Array.isArray(value) && value.length) {
    let out = `${key}:\n`;
    for (const item of value) out += `  - ${scalar(item)}\n`;
    return out;
  }
  return `${key}: ${scalar(value)}\n`;
}

/** The front matter block (`---` lines included) of `fields`, in their order; undefined fields are left out. */
export function emitFrontMatter(fields: Record<string, unknown>): string {
  let out = "---\n";
  for (const [key, value] of Object.entries(fields)) out += frontMatterField(key, value);
  return out + "---\n";
}

export interface ParsedFile {
  /** Null when the file has no front matter. */
  fields: Record<string, FrontValue> | null;
  body: string;
}

/**
 * Splits a Markdown file into its front matter (parsed) and body. `file` names the file in errors.
 * A file that doesn't start with `---` has no front matter; one that opens it and never closes it
 * is refused.
 */
export function parseMarkdownFile(text: string, file: string): ParsedFile {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const open = /^---\r?\n/.exec(text);
  if (!open) return { fields: null, body: text };
  const close = /^---[ \t]*(\r?\n|$)/m;
  const rest = text.slice(open[0].length);
  const end = close.exec(rest);
  if (!end) throw frontMatterError(file, 1, "its front matter opens with --- and never closes");
  const fields = parseFrontMatter(rest.slice(0, end.index), file, 2);
  return { fields, body: rest.slice(end.index + end[0].length) };
}

function frontMatterError(file: string, line: number, why: string): MmError {
  return new MmError("VALIDATION_ERROR", `${file}, line ${line}: ${why}.`, { details: [{ field: file, message: `line ${line}: ${why}` }] });
}

/** The front matter's lines (between the `---`), as fields. `first` is the file line of the first. */
export function parseFrontMatter(text: string, file: string, first = 1): Record<string, FrontValue> {
  const fields: Record<string, FrontValue> = Object.create(null) as Record<string, FrontValue>;
  const lines = text.split(/\r?\n/);
  let list: { key: string; items: unknown[] } | undefined;
  const opened: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const at = first + i;
    if (/^\s*(#.*)?$/.test(line)) continue;
    const item = /^\s+-(?:\s+(.*))?$/s.exec(line);
    if (item) {
      if (!list) throw frontMatterError(file, at, "a list item belongs under a key with no value on its own line");
      list.items.push(value(item[1] ?? "", file, at));
      continue;
    }
    if (/^\s/.test(line)) throw frontMatterError(file, at, "nested mappings are not read; write the value as JSON on the key's line");
    const m = /^([^:\s][^:]*?)\s*:(?:\s+(.*?))?\s*$/s.exec(line);
    if (!m) throw frontMatterError(file, at, "not YAML of the form `key: value`");
    const key = m[1];
    if (!KEY.test(key)) throw frontMatterError(file, at, `${JSON.stringify(key)} is not a field name (letters, digits and _)`);
    if (key in fields) throw frontMatterError(file, at, `${key} is given twice`);
    const raw = m[2] ?? "";
    if (raw === "" || raw.startsWith("#")) {
      list = { key, items: [] };
      fields[key] = list.items;
      opened.push(key);
      continue;
    }
    list = undefined;
    fields[key] = value(raw, file, at);
  }
  // A key with nothing under it is null, as in YAML.
  for (const key of opened) if ((fields[key] as unknown[]).length === 0) fields[key] = null;
  return fields;
}

/** One value: JSON (a quoted string, an object, an array), a single-quoted string, or a plain word. */
function value(raw: string, file: string, at: number): FrontValue {
  const first = raw[0];
  if (first === "&" || first === "*") throw frontMatterError(file, at, "YAML anchors and aliases (& and *) are refused");
  if (first === "!") throw frontMatterError(file, at, "YAML tags (!) are refused");
  if (first === "|" || first === ">") throw frontMatterError(file, at, "block scalars (| and >) are not read; write the text as one quoted string");
  if (first === '"' || first === "[" || first === "{") {
    try {
      return JSON.parse(raw) as FrontValue;
    } catch {
      throw frontMatterError(file, at, first === '"' ? "a double-quoted string must be one JSON string (escapes as in JSON)" : "a flow value ([…] or {…}) must be JSON");
    }
  }
  if (first === "'") {
    const m = /^'((?:[^']|'')*)'(?:\s+#.*)?$/.exec(raw);
    if (!m) throw frontMatterError(file, at, "a single-quoted string must close on its line");
    return m[1].replace(/''/g, "'");
  }
  const plain = raw.replace(/\s+#.*$/, "");
  if (/^(null|Null|NULL|~)$/.test(plain)) return null;
  if (/^(true|True|TRUE)$/.test(plain)) return true;
  if (/^(false|False|FALSE)$/.test(plain)) return false;
  if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(plain)) return Number(plain);
  if (/^[-?:,\[\]{}#&*!|>'"%@`]/.test(plain) && plain !== "-") throw frontMatterError(file, at, `${JSON.stringify(plain.slice(0, 40))} must be quoted`);
  return plain;
}
