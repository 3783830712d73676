import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, realpathSync, unlinkSync, writeFileSync, type Dirent } from "node:fs";
import { join } from "node:path";
import { MmError, toMmError, validationError } from "../errors.js";
import { parseCreateEntity } from "../schemas/entity.js";
import { parseCreateMemory } from "../schemas/memory.js";
import { parseCreateRelation } from "../schemas/relation.js";
import { replaceFileSync } from "../storage/atomic-file.js";
import type { Context } from "./context.js";
import { emitFrontMatter, frontMatterField, parseMarkdownFile, type FrontValue } from "./front-matter.js";
import { exportRecords, ID, importExport, timestamps, type ExportRecord, type InputRecord, type TransferCounts } from "./transfer.js";

/**
 * Memories as Markdown files a person can read, edit and keep in git
 * (docs/import-export.md, "Markdown: a folder to read, edit and keep in git"): one file per memory
 * under `memories/<user>/` (and `<project>/` below it), one per entity under `entities/`, YAML
 * front matter for everything but the text. The files are a view of exportRecords' records, and an
 * import of a folder into an empty store goes through importExport, so export → import → export
 * gives the same bytes. On a store that has the records, an import applies what changed through
 * the ordinary update, supersede, restore and delete services, each billed as that API operation.
 */

/** A file larger than this is refused unread: a memory is at most 10,000 characters, and its history and metadata are bounded too. */
export const MAX_MARKDOWN_FILE_BYTES = 1 << 20;

type Rec = Record<string, unknown>;
type Kind = "memory" | "entity" | "relation";

// ---- names --------------------------------------------------------------------------------

/** A readable file name from a text: its first words, lower case, letters and digits joined by `-`. */
function slug(text: string, fallback: string): string {
  const words = /^[\x00-\x7f]*$/.test(text) ? asciiWords(text) : text.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase().split(/[^\p{L}\p{N}]+/u);
  let out = "";
  let first: string | undefined;
  for (const w of words) {
    if (!w) continue;
    first ??= w;
    const next = out ? `${out}-${w}` : w;
    if (next.length > 48) break;
    out = next;
  }
  return out || first?.slice(0, 48) || fallback;
}

/** ASCII (most texts) is its own NFKD form, has no marks and lowercases letter by letter: its words are read as slug() needs them, not the whole text split. */
function* asciiWords(text: string): Generator<string> {
  for (const m of text.matchAll(/[A-Za-z0-9]+/g)) yield m[0].toLowerCase();
}

/** The last 8 characters of an id (its random part): a name stays unique without the whole id, and stays put when the text changes. */
const shortId = (id: string) => id.slice(-8).toLowerCase();

/**
 * A user's folder name: the id itself when it is a safe name, else percent-encoded (no `/`, no
 * leading `.`, so never `..`), with a hash when that would be too long for a file system.
 */
export function userFolder(userId: string): string {
  const encoded = /^[\p{L}\p{N}_@+-][\p{L}\p{N}_.@+-]*$/u.test(userId) && !userId.includes("..") ? userId : encodeURIComponent(userId).replace(/[.*'()!~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  if (Buffer.byteLength(encoded) <= 120) return encoded;
  return `${encoded.slice(0, 80).replace(/%[0-9A-F]?$/, "")}~${createHash("sha256").update(userId).digest("hex").slice(0, 12)}`;
}

/** The user a folder stands for (for files without `userId`); a hashed long name can't be read back, so such files must name their user. */
function userOfFolder(name: string, file: string): string {
  if (name.includes("~")) throw validationError(file, "names no userId, and its folder's name is shortened: add `userId:` to its front matter");
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

// ---- rendering ----------------------------------------------------------------------------

const MEMORY_FIELDS = ["id", "userId", "agentId", "project", "tags", "metadata", "entityIds", "links", "createdAt", "updatedAt", "supersededBy", "supersededAt", "supersedes", "history"];
const ENTITY_FIELDS = ["id", "name", "type", "description", "metadata", "createdAt", "updatedAt", "relations"];

/**
 * `supersedes` (the memories this one replaced) and `links` (its entities as wikilinks, so Obsidian
 * draws memories into the graph) are written for readers, worked out from other fields, and not read back.
 */
function memoryText(m: Rec, supersedes: string[] | undefined, link?: (id: string) => string): string {
  let out = "---\n";
  for (const k of MEMORY_FIELDS) out += frontMatterField(k, k === "supersedes" ? supersedes : k === "links" ? link && (m.entityIds as string[] | undefined)?.map(link) : m[k]);
  return `${out}---\n${String(m.content)}\n`;
}

function entityText(e: Rec, relations: Rec[], link: (id: string) => string): string {
  const items = relations.map((r) => ({ id: r.id, type: r.type, targetId: r.targetId, ...(r.metadata !== undefined ? { metadata: r.metadata } : {}), createdAt: r.createdAt }));
  const fields = Object.fromEntries(ENTITY_FIELDS.map((k) => [k, k === "relations" ? (items.length ? items : undefined) : e[k]]));
  let body = `# ${String(e.name)}\n`;
  if (e.description !== undefined) body += `\n${String(e.description)}\n`;
  if (relations.length) body += `\n## Relations\n\n${relations.map((r) => `- ${String(r.type)} ${link(String(r.targetId))}\n`).join("")}`;
  return emitFrontMatter(fields) + body;
}

// ---- the folder ---------------------------------------------------------------------------

interface FoundFile {
  /** Relative to the folder, with `/`. */
  path: string;
  symlink: boolean;
}

/**
 * The `.md` files under `memories/` and `entities/` (hidden names skipped: `.git`, `.obsidian`,
 * editors' swap files), without following any symbolic link: a link is listed as one, for the
 * caller to refuse. The listing's file types are enough: no stat per file.
 */
function walk(root: string): FoundFile[] {
  const out: FoundFile[] = [];
  const visit = (rel: string, depth: number): void => {
    let entries: Dirent[];
    try {
      entries = readdirSync(join(root, rel), { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    for (const d of entries) {
      if (d.name.startsWith(".")) continue;
      const path = `${rel}/${d.name}`;
      if (d.isSymbolicLink()) out.push({ path, symlink: true });
      else if (d.isDirectory() && depth > 0) visit(path, depth - 1);
      else if (d.isFile() && d.name.endsWith(".md")) out.push({ path, symlink: false });
    }
  };
  visit("memories", 2);
  visit("entities", 0);
  return out;
}

/** Opens for reading without following a link (one put there since the listing is refused, ELOOP); 0 where the platform has no such flag. */
const READ_NO_LINK = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0);

/** A file's size, and its text when it is at most MAX_MARKDOWN_FILE_BYTES (a larger one is left unread): open, fstat, read, close. */
function readSmall(root: string, path: string): { size: number; text?: string } {
  let fd: number;
  try {
    fd = openSync(join(root, path), READ_NO_LINK);
  } catch (err) {
    // A link put in the file's place since the folder was listed.
    if ((err as NodeJS.ErrnoException).code === "ELOOP") throw linkError(path);
    throw err;
  }
  try {
    const size = fstatSync(fd).size;
    if (size > MAX_MARKDOWN_FILE_BYTES) return { size };
    const buf = Buffer.allocUnsafe(size);
    let n = 0;
    while (n < size) {
      const got = readSync(fd, buf, n, size - n, null);
      if (got === 0) break;
      n += got;
    }
    return { size, text: buf.toString("utf8", 0, n) };
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a new file in one call (Node opens, writes and closes it natively); if the
 * write fails after the file was made, it is removed, so a failed export leaves no half-written file.
 */
function createFile(abs: string, text: string): void {
  try {
    // "wx": O_CREAT|O_EXCL, which never opens through a link (nor over a file) that appeared since the check.
    writeFileSync(abs, text, { flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).syscall !== "open") unlinkSync(abs);
    throw err;
  }
}

/** The folders in `rel` (none when it is missing). */
function walkDirs(root: string, rel: string): string[] {
  try {
    return readdirSync(join(root, rel), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch {
    return [];
  }
}

/** Refuses a symbolic link on the way to `path` (relative to `root`, whose own path may be a link): mm never writes through one. */
function assertNoLinks(root: string, path: string, checked: Set<string>): void {
  const parts = path.split("/");
  for (let i = 1; i <= parts.length; i++) {
    const sub = parts.slice(0, i).join("/");
    if (checked.has(sub)) continue;
    const st = lstatSync(join(root, sub), { throwIfNoEntry: false });
    if (st?.isSymbolicLink()) throw linkError(sub);
    if (st && i < parts.length && !st.isDirectory()) throw validationError(sub, "is a file where mm keeps a folder");
    if (st) checked.add(sub);
  }
}

const linkError = (path: string) =>
  new MmError("VALIDATION_ERROR", `${path} is a symbolic link; mm reads and writes only the files inside the folder and follows no link.`, { details: [{ field: path, message: "is a symbolic link" }] });

// ---- export -------------------------------------------------------------------------------

export interface MarkdownExportOptions {
  /** Only this user's memories; files of other users are left alone. The graph is written whole: its files are every user's. */
  userId?: string;
}

export interface MarkdownExportSummary extends TransferCounts {
  written: number;
  unchanged: number;
  removed: number;
}

/**
 * Writes the account's memories and graph into `dir` as Markdown. Deterministic: records in the
 * export's order, fields in a fixed order, so `git diff` shows real changes only; a file whose
 * bytes are already right is not touched. A memory keeps the name its file has in the folder, so
 * an edit of its first words renames nothing. Files of memories and entities that are gone are
 * removed, but only files mm wrote (ones whose front matter has an mm id), within the export's
 * scope. Every path is worked out and checked (no symbolic link on the way) before the first write.
 */
export async function exportMarkdown(ctx: Context, dir: string, options: MarkdownExportOptions = {}): Promise<MarkdownExportSummary> {
  const memories: Rec[] = [];
  const entities: Rec[] = [];
  const relations: Rec[] = [];
  const counts = await exportRecords(ctx, { userId: options.userId, wholeGraph: true, pageSize: 2000 }, (r: ExportRecord) => {
    if (!("kind" in r)) return;
    (r.kind === "memory" ? memories : r.kind === "entity" ? entities : relations).push(r);
  });
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EEXIST" && code !== "ENOTDIR") throw err;
    throw validationError("dir", `${dir} is a file, or a file stands on its path; name a folder`);
  }
  const root = realpathSync(dir);

  // Synchronous file calls: ten thousand small files cost a thread-pool round trip per call otherwise.
  const found = walk(root);
  const existing = new Map<string, { path: string; text: string }>(); // by id
  const occupied = new Map<string, string | null>(); // path → its mm id, or null
  const links = new Set(found.filter((f) => f.symlink).map((f) => f.path));
  for (const f of found.filter((f) => !f.symlink)) {
    const text = readSmall(root, f.path).text ?? "";
    const id = /^---\r?\nid: ((?:mem|ent)_[0-9A-Z]{24})\r?\n/.exec(text)?.[1] ?? null;
    occupied.set(f.path, id);
    if (id) existing.set(id, { path: f.path, text });
  }

  const wanted = new Map<string, string>(); // path → text
  const place = (id: string, folder: string, name: string, text: string) => {
    const kept = existing.get(id);
    let path = kept && kept.path.slice(0, kept.path.lastIndexOf("/")) === folder ? kept.path : `${folder}/${name}-${shortId(id)}.md`;
    const holder = occupied.get(path);
    if (wanted.has(path) || (holder !== undefined && holder !== id)) path = `${folder}/${name}-${id.toLowerCase()}.md`;
    wanted.set(path, text);
  };

  const names = new Map<string, string>();
  for (const e of entities) names.set(String(e.id), String(e.name));
  const entityPath = new Map<string, string>();
  for (const e of entities) entityPath.set(String(e.id), `${slug(String(e.name), "entity")}-${shortId(String(e.id))}`);
  const link = (id: string) => `[[${existing.get(id)?.path.replace(/^.*\/|\.md$/g, "") ?? entityPath.get(id) ?? id}|${names.get(id) ?? id}]]`;
  const bySource = new Map<string, Rec[]>();
  for (const r of relations) (bySource.get(String(r.sourceId)) ?? bySource.set(String(r.sourceId), []).get(String(r.sourceId))!).push(r);
  for (const e of entities) place(String(e.id), "entities", slug(String(e.name), "entity"), entityText(e, bySource.get(String(e.id)) ?? [], link));

  const supersedes = new Map<string, string[]>();
  for (const m of memories) if (m.supersededBy) (supersedes.get(String(m.supersededBy)) ?? supersedes.set(String(m.supersededBy), []).get(String(m.supersededBy))!).push(String(m.id));
  for (const m of memories) {
    const folder = `memories/${userFolder(String(m.userId))}${m.project ? `/${String(m.project)}` : ""}`;
    place(String(m.id), folder, slug(String(m.content), "memory"), memoryText(m, supersedes.get(String(m.id)), link));
  }

  // Files of records that are gone: only mm's own (an id in their front matter), within the scope exported.
  const inScope = (path: string) => (options.userId === undefined ? true : path.startsWith(`memories/${userFolder(options.userId)}/`));
  const gone = [...occupied].filter(([path, id]) => id !== null && !wanted.has(path) && inScope(path)).map(([path]) => path);

  const checked = new Set<string>();
  const folders = new Set<string>(); // each checked once, not once per file
  const writes: [string, string][] = [];
  let unchanged = 0;
  for (const [path, text] of wanted) {
    if (links.has(path)) throw linkError(path);
    const id = occupied.get(path);
    if (id !== undefined && existing.get(id!)?.path === path && existing.get(id!)!.text === text) {
      unchanged++;
      continue;
    }
    const folder = path.slice(0, path.lastIndexOf("/"));
    if (!folders.has(folder)) assertNoLinks(root, folder, checked);
    folders.add(folder);
    writes.push([path, text]);
  }
  const made = new Set<string>();
  for (const [path, text] of writes) {
    const abs = join(root, path);
    if (occupied.has(path)) {
      // Replaced whole, so a crash leaves the old file or the new one.
      replaceFileSync(abs, text);
    } else {
      const folder = path.slice(0, path.lastIndexOf("/"));
      if (!made.has(folder)) mkdirSync(join(root, folder), { recursive: true });
      made.add(folder);
      createFile(abs, text);
    }
  }
  for (const path of gone) unlinkSync(join(root, path));
  return { ...counts, written: writes.length, unchanged, removed: gone.length };
}

// ---- import -------------------------------------------------------------------------------

export interface MarkdownImportOptions {
  /** Delete the memories of each user folder whose file is gone, and relations gone from their entity's file. */
  deleteMissing?: boolean;
  /** Work out and return the plan; change nothing. */
  dryRun?: boolean;
  /** Records committed together when the import adds records with their ids (importExport). */
  batchSize?: number;
}

export interface MarkdownChange {
  action: "create" | "update" | "delete";
  kind: Kind;
  /** The file, relative to the folder (none for a deletion). */
  file?: string;
  /** The record's id (none yet for a new file without one, until it is created). */
  id?: string;
  /** For an update: the fields that changed. */
  fields?: string[];
}

export interface MarkdownImportResult {
  dryRun: boolean;
  changes: MarkdownChange[];
  created: number;
  updated: number;
  deleted: number;
  unchanged: number;
}

interface FileRecord {
  file: string;
  kind: Kind;
  /** The record as an export line holds it (`kind` and `id` included when the file has an id). */
  value: Rec;
  /** The entity file a relation is listed in. */
  sourceFile?: string;
}

const fileError = (file: string, err: unknown): MmError => {
  const e = toMmError(err);
  return new MmError(e.code, `${file}: ${e.message}`, { ...(e.extra ?? {}), file });
};

const defined = (o: Rec): Rec => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));

/** A memory file's record: front matter and body, checked as a create would check it. */
function memoryRecord(file: string, fields: Record<string, FrontValue> | null, body: string): FileRecord {
  const f = fields ?? {};
  const unknown = Object.keys(f).filter((k) => !MEMORY_FIELDS.includes(k));
  if (unknown.length) throw validationError(unknown[0], `is not a memory field (${MEMORY_FIELDS.join(", ")}); keep other data in metadata`);
  const parts = file.split("/");
  const value = defined({
    kind: "memory",
    ...f,
    supersedes: undefined,
    links: undefined,
    content: body.replace(/\r?\n$/, ""),
    userId: f.userId ?? userOfFolder(parts[1], file),
    project: f.project ?? (parts.length === 4 ? parts[2] : undefined),
  });
  parseCreateMemory(defined({ content: value.content, userId: value.userId, agentId: value.agentId, tags: value.tags, metadata: value.metadata, entityIds: value.entityIds, project: value.project }));
  if (value.id !== undefined) {
    if (typeof value.id !== "string" || !ID.memory.test(value.id)) throw validationError("id", `must be an mm memory id (${ID.memory.source})`);
    timestamps(value, ["createdAt", "updatedAt"], new Date(Date.now()));
    if (value.supersededBy !== undefined) {
      if (typeof value.supersededBy !== "string" || !ID.memory.test(value.supersededBy)) throw validationError("supersededBy", "must be an mm memory id");
      timestamps(value, ["supersededAt"], new Date(Date.now()));
    }
    const h = value.history;
    if (h !== undefined && !(Array.isArray(h) && h.every((e) => e !== null && typeof e === "object" && ["version", "superseded", "restored"].includes((e as Rec).type as string)))) {
      throw validationError("history", "must be a list of history entries (as mm export writes them)");
    }
  } else for (const k of ["createdAt", "updatedAt", "supersededBy", "supersededAt", "history"]) delete value[k];
  return { file, kind: "memory", value };
}

/** An entity file's record and its relations' records. The body is written from the front matter and not read back. */
function entityRecords(file: string, fields: Record<string, FrontValue> | null): FileRecord[] {
  const f = fields ?? {};
  const unknown = Object.keys(f).filter((k) => !ENTITY_FIELDS.includes(k));
  if (unknown.length) throw validationError(unknown[0], `is not an entity field (${ENTITY_FIELDS.join(", ")})`);
  const value = defined({ kind: "entity", ...f, relations: undefined });
  parseCreateEntity(defined({ name: value.name, type: value.type, description: value.description, metadata: value.metadata }));
  if (value.id !== undefined) {
    if (typeof value.id !== "string" || !ID.entity.test(value.id)) throw validationError("id", `must be an mm entity id (${ID.entity.source})`);
    timestamps(value, ["createdAt", "updatedAt"], new Date(Date.now()));
  } else for (const k of ["createdAt", "updatedAt"]) delete value[k];
  const out: FileRecord[] = [{ file, kind: "entity", value }];
  const relations = f.relations ?? [];
  if (!Array.isArray(relations)) throw validationError("relations", "must be a list of relations");
  for (const raw of relations) {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw validationError("relations", "each relation is a JSON object: {\"type\":…,\"targetId\":…}");
    const r = raw as Rec;
    const extra = Object.keys(r).filter((k) => !["id", "type", "targetId", "metadata", "createdAt"].includes(k));
    if (extra.length) throw validationError(`relations.${extra[0]}`, "is not a relation field (id, type, targetId, metadata, createdAt)");
    const rel = defined({ kind: "relation", id: r.id, sourceId: value.id, targetId: r.targetId, type: r.type, metadata: r.metadata, createdAt: r.createdAt });
    parseCreateRelation(defined({ sourceId: rel.sourceId ?? "ent_new", targetId: rel.targetId, type: rel.type, metadata: rel.metadata }));
    if (rel.id !== undefined) {
      if (typeof rel.id !== "string" || !ID.relation.test(rel.id)) throw validationError("relations.id", `must be an mm relation id (${ID.relation.source})`);
      if (value.id === undefined) throw validationError("relations.id", "a relation with an id belongs to an entity with one");
      timestamps(rel, ["createdAt"], new Date(Date.now()));
    } else delete rel.createdAt;
    out.push({ file, kind: "relation", value: rel, sourceFile: file });
  }
  return out;
}

/** Every file of the folder, read and checked; the first bad one stops everything, before any write. */
function readFolder(root: string): FileRecord[] {
  const out: FileRecord[] = [];
  for (const f of walk(root)) {
    if (f.symlink) throw linkError(f.path);
    if (f.path.includes("..")) throw validationError(f.path, "has `..` in its name; rename it");
    const { size, text } = readSmall(root, f.path);
    if (text === undefined) {
      throw new MmError("VALIDATION_ERROR", `${f.path} is ${(size / 1048576).toFixed(1)} MiB; a memory's or an entity's file is at most ${MAX_MARKDOWN_FILE_BYTES / 1048576} MiB.`, { details: [{ field: f.path, message: "too large" }] });
    }
    try {
      const { fields, body } = parseMarkdownFile(text, f.path);
      const depth = f.path.split("/").length;
      if (f.path.startsWith("entities/")) out.push(...entityRecords(f.path, fields));
      else if (depth === 3 || depth === 4) out.push(memoryRecord(f.path, fields, body));
      else throw validationError(f.path, "is not in a user's folder: a memory's file goes in memories/<user>/ or memories/<user>/<project>/");
    } catch (err) {
      throw err instanceof MmError && err.message.startsWith(f.path) ? err : fileError(f.path, err);
    }
  }
  return out;
}

/** Equal as the API would store them: an empty list is no list. */
const same = (a: unknown, b: unknown) => {
  const norm = (v: unknown) => JSON.stringify(Array.isArray(v) && v.length === 0 ? null : (v ?? null));
  return norm(a) === norm(b);
};

/**
 * Reads the folder (every file checked first: nothing is written if one is bad), compares it with
 * the store and applies the difference. Records the store lacks are added with their ids and times
 * (importExport, as from an export); a file without an id is a new memory or entity (the ordinary
 * create, and the file gets its id); a changed file updates its record through the ordinary
 * update (a memory keeps its earlier text in its history); a changed `supersededBy` replaces or
 * restores. Nothing is deleted unless `deleteMissing`.
 */
export async function importMarkdown(ctx: Context, dir: string, options: MarkdownImportOptions = {}): Promise<MarkdownImportResult> {
  let root: string;
  try {
    root = realpathSync(dir);
    if (!lstatSync(root).isDirectory()) throw new Error("not a folder");
  } catch {
    throw validationError("dir", `${dir} is not a folder; give the folder mm export --format markdown wrote`);
  }
  const files = readFolder(root);

  // The store's side in export shape, to compare field by field with the files.
  const store = { memory: new Map<string, Rec>(), entity: new Map<string, Rec>(), relation: new Map<string, Rec>() };
  await exportRecords(ctx, { pageSize: 2000 }, (r) => {
    if ("kind" in r && r.kind !== "account") store[r.kind].set(r.id, r);
  });

  // Ids: once each in the folder, and not another account's.
  const byId = new Map<string, FileRecord>();
  for (const r of files) {
    const id = r.value.id as string | undefined;
    if (id === undefined) continue;
    const twin = byId.get(id);
    if (twin) throw validationError(r.file, `has the id ${id}, as ${twin.file} does; an id belongs to one file`);
    byId.set(id, r);
  }
  for (const kind of ["memory", "entity", "relation"] as const) {
    const ids = files.filter((r) => r.kind === kind && r.value.id !== undefined && !store[kind].has(r.value.id as string)).map((r) => r.value.id as string);
    for (const [id, owner] of await ctx.store.existingIds(kind, ids)) {
      if (owner !== ctx.accountId) throw new MmError("VALIDATION_ERROR", `${byId.get(id)!.file}: the id ${id} belongs to another account of this store.`, { details: [{ field: byId.get(id)!.file, message: "id of another account" }] });
    }
  }

  // A reference resolves to a record in the folder or in the store (an import deletes no entity).
  const here = (kind: Kind, id: unknown) => (byId.get(id as string)?.kind === kind) || store[kind].has(id as string);
  for (const r of files) {
    const v = r.value;
    if (r.kind === "memory") {
      for (const e of (v.entityIds as string[] | undefined) ?? []) if (!here("entity", e)) throw new MmError("ENTITY_NOT_FOUND", `${r.file}: links to entity ${e}, which is neither in the folder nor in the store.`, { file: r.file });
      if (v.supersededBy !== undefined && !here("memory", v.supersededBy)) throw validationError(r.file, `is replaced by ${String(v.supersededBy)}, which is neither in the folder nor in the store`);
    } else if (r.kind === "relation" && !here("entity", v.targetId)) {
      throw new MmError("TARGET_ENTITY_NOT_FOUND", `${r.file}: a relation ${String(v.type)} goes to entity ${String(v.targetId)}, which is neither in the folder nor in the store.`, { file: r.file });
    }
  }

  const changes: MarkdownChange[] = [];
  const withIds: FileRecord[] = [];
  const updates: { r: FileRecord; patch: Rec; replace?: string | null }[] = [];
  let unchanged = 0;
  for (const r of files) {
    const id = r.value.id as string | undefined;
    if (id === undefined) {
      changes.push({ action: "create", kind: r.kind, file: r.file });
      continue;
    }
    const current = store[r.kind].get(id);
    if (!current) {
      withIds.push(r);
      changes.push({ action: "create", kind: r.kind, file: r.file, id });
      continue;
    }
    const { patch, replace } = difference(r, current);
    if (Object.keys(patch).length || replace !== undefined) {
      updates.push({ r, patch, replace });
      changes.push({ action: "update", kind: r.kind, file: r.file, id, fields: [...Object.keys(patch), ...(replace !== undefined ? ["supersededBy"] : [])] });
    } else unchanged++;
  }
  const deletions: { kind: Kind; id: string }[] = [];
  if (options.deleteMissing) {
    // Only users whose folder is there: a folder exported with --user deletes nobody else's memories.
    const users = new Set(walkDirs(root, "memories"));
    for (const [id, m] of store.memory) if (!byId.has(id) && users.has(userFolder(String(m.userId)))) deletions.push({ kind: "memory", id });
    const entityFiles = new Set(files.filter((r) => r.kind === "entity").map((r) => r.value.id));
    for (const [id, rel] of store.relation) if (!byId.has(id) && entityFiles.has(rel.sourceId)) deletions.push({ kind: "relation", id });
    for (const d of deletions) changes.push({ action: "delete", ...d });
  }
  const result = (dryRun: boolean): MarkdownImportResult => ({
    dryRun,
    changes,
    created: changes.filter((c) => c.action === "create").length,
    updated: changes.filter((c) => c.action === "update").length,
    deleted: deletions.length,
    unchanged,
  });
  if (options.dryRun) return result(true);
  // A quota that can't take every change refuses them all before the first.
  if (changes.length) await ctx.meter?.check(changes.length);
  await applyPlan(ctx, root, files, withIds, updates, deletions, options, changes);
  return result(false);
}

/** What differs between a file and its record in the store: an update's patch, and a replacement to make (an id) or undo (null). */
function difference(r: FileRecord, current: Rec): { patch: Rec; replace?: string | null } {
  const v = r.value;
  const patch: Rec = {};
  const fields = r.kind === "memory" ? ["content", "agentId", "tags", "metadata", "entityIds", "project"] : r.kind === "entity" ? ["name", "type", "description", "metadata"] : ["type", "metadata"];
  if (r.kind === "memory" && v.userId !== current.userId) throw validationError(r.file, `says userId ${JSON.stringify(v.userId)}, but ${String(v.id)} is ${JSON.stringify(current.userId)}'s; a memory stays its user's (remove the id to make a new memory)`);
  if (r.kind === "relation" && (v.sourceId !== current.sourceId || v.targetId !== current.targetId)) throw validationError(r.file, `relation ${String(v.id)}'s ends can't change; remove its id to make a new relation`);
  for (const f of fields) if (!same(v[f], current[f])) patch[f] = v[f] ?? null;
  if (r.kind !== "memory" || same(v.supersededBy, current.supersededBy)) return { patch };
  return { patch, replace: (v.supersededBy as string | undefined) ?? null };
}

async function applyPlan(
  ctx: Context,
  root: string,
  files: FileRecord[],
  withIds: FileRecord[],
  updates: { r: FileRecord; patch: Rec; replace?: string | null }[],
  deletions: { kind: Kind; id: string }[],
  options: MarkdownImportOptions,
  changes: MarkdownChange[],
): Promise<void> {
  const memories = await import("./memories.js");
  const entities = await import("./entities.js");
  const relations = await import("./relations.js");
  const at = (r: FileRecord) => `${String(r.value.createdAt)}\u0000${String(r.value.id)}`;
  const order: Record<Kind, number> = { entity: 0, relation: 1, memory: 2 };
  const sorted = [...withIds].sort((a, b) => order[a.kind] - order[b.kind] || (at(a) < at(b) ? -1 : at(a) > at(b) ? 1 : 0));
  if (sorted.length) {
    const header: ExportRecord = { format: "mm-export", version: 1, exportedAt: ctx.clock().toISOString(), embedder: null, scope: { accountId: ctx.accountId }, vectors: false };
    async function* lines(): AsyncGenerator<InputRecord> {
      yield { line: 0, value: header };
      for (let i = 0; i < sorted.length; i++) yield { line: i + 1, value: sorted[i].value };
    }
    let failure: { file: string; error: MmError } | undefined;
    await importExport(ctx, lines(), {
      batchSize: options.batchSize ?? 1000,
      onResult: (res) => {
        if (res.error) failure ??= { file: sorted[res.line - 1].file, error: res.error };
      },
    });
    if (failure) throw fileError(failure.file, failure.error);
  }

  // New entities (no id) first, so relations listed in their files have a source.
  const newEntity = new Map<string, string>(); // file → id
  for (const r of files.filter((r) => r.kind === "entity" && r.value.id === undefined)) {
    const { entity } = await entities.createEntity(ctx, defined({ name: r.value.name, type: r.value.type, description: r.value.description, metadata: r.value.metadata }));
    newEntity.set(r.file, entity.id);
    setId(changes, r, entity.id);
  }
  for (const r of files.filter((r) => r.kind === "relation" && r.value.id === undefined)) {
    const sourceId = (r.value.sourceId as string | undefined) ?? newEntity.get(r.sourceFile!)!;
    const rel = await relations.createRelation(ctx, defined({ sourceId, targetId: r.value.targetId, type: r.value.type, metadata: r.value.metadata }));
    setId(changes, r, rel.id);
  }
  for (const { r, patch, replace } of updates) {
    const id = String(r.value.id);
    try {
      if (Object.keys(patch).length) {
        if (r.kind === "memory") await memories.updateMemory(ctx, id, patch);
        else if (r.kind === "entity") await entities.updateEntity(ctx, id, patch);
        else await relations.updateRelation(ctx, id, patch);
      }
      if (replace !== undefined) {
        const current = await ctx.store.getMemory(ctx.accountId, id);
        if (current?.supersededBy) await memories.restoreMemory(ctx, id);
        if (replace !== null) await memories.supersedeMemory(ctx, id, { by: replace });
      }
    } catch (err) {
      throw fileError(r.file, err);
    }
  }
  // New memories (no id): the ordinary create; the file then gets its id, so the next import finds it.
  for (const r of files.filter((r) => r.kind === "memory" && r.value.id === undefined)) {
    const { kind: _k, ...input } = r.value;
    const created = await memories.createMemory(ctx, input);
    setId(changes, r, created.id);
    if (!created.deduplicated) {
      const { deduplicated: _d, supersedes, ...m } = created;
      writeFileSync(join(root, r.file), memoryText(m as Rec, supersedes));
    }
  }
  for (const d of deletions) {
    if (d.kind === "memory") await memories.deleteMemory(ctx, d.id);
    else await relations.deleteRelation(ctx, d.id);
  }
}

function setId(changes: MarkdownChange[], r: FileRecord, id: string): void {
  const c = changes.find((c) => c.file === r.file && c.kind === r.kind && c.id === undefined);
  if (c) c.id = id;
}
