import { existsSync, lstatSync, readFileSync, realpathSync } from "node:fs";
import { basename, dirname, join, relative, sep } from "node:path";
import { MmError, validationError } from "../errors.js";
import { replaceFileSync } from "../storage/atomic-file.js";
import { MAX_CONTENT_LENGTH } from "../schemas/memory.js";
import type { Context } from "./context.js";
import type { MarkdownChange, MarkdownImportResult } from "./markdown.js";
import { findProject } from "./project.js";
import { exportRecords } from "./transfer.js";

/**
 * A coding agent's instruction file as memories
 * (docs/import-export.md, "AGENTS.md, CLAUDE.md and Cursor rules"): AGENTS.md, CLAUDE.md and
 * `.cursor/rules/*.mdc` are all Markdown, read and written the same way (an .mdc file's front matter is skipped on import and left as it is on
 * export). Memories belong to the file's project (core/project.ts findProject) and name their
 * source in `metadata.source` ({file, heading}), which is how a re-import finds them again.
 */

export const BLOCK_BEGIN = "<!-- mm:begin -->";
export const BLOCK_END = "<!-- mm:end -->";
const MAX_FILE_BYTES = 1 << 20;

/** Two texts are one item edited when this share of their words is common to both (Jaccard). */
const SAME_ITEM = 0.5;

interface Item {
  line: number;
  heading: string | null;
  content: string;
}

/** The file's project, and the file's path within it (the key memories record as their source). */
function projectOf(file: string): { project: string; source: string } {
  const project = findProject(dirname(file));
  if (!project) {
    throw validationError("file", `${file} is in no project (no .mm-project file and no git repository at or above its folder); the memories of an AGENTS.md belong to its project`);
  }
  const real = existsSync(file) ? realpathSync(file) : join(realpathSync(dirname(file)), basename(file));
  return { project: project.name, source: relative(project.root, real).split(sep).join("/") };
}

function readText(file: string): string {
  const st = lstatSync(file, { throwIfNoEntry: false });
  if (!st) return "";
  if (st.isDirectory()) throw validationError("file", `${file} is a folder; name the AGENTS.md, CLAUDE.md or .mdc file`);
  if (st.size > MAX_FILE_BYTES) throw validationError("file", `${file} is ${(st.size / 1048576).toFixed(1)} MiB; an instruction file is at most 1 MiB`);
  return readFileSync(file, "utf8");
}

/**
 * The items of a Markdown instruction file: each bullet (with its continuation lines and nested
 * bullets) and each paragraph is one, under the nearest heading above it. Skipped: an .mdc file's
 * front matter, and mm's own block (what `exportAgentsMd` wrote).
 */
export function itemsOf(text: string): Item[] {
  const lines = text.split(/\r?\n/);
  const items: Item[] = [];
  let heading: string | null = null;
  let current: Item | undefined;
  let fence = false;
  let i = 0;
  if (/^---\s*$/.test(lines[0] ?? "")) {
    const end = lines.findIndex((l, k) => k > 0 && /^---\s*$/.test(l));
    if (end > 0) i = end + 1;
  }
  const close = () => {
    if (current) items.push({ ...current, content: current.content.trimEnd() });
    current = undefined;
  };
  for (; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === BLOCK_BEGIN) {
      close();
      while (i < lines.length && lines[i].trim() !== BLOCK_END) i++;
      continue;
    }
    if (/^\s*(```|~~~)/.test(line)) fence = !fence;
    else if (!fence) {
      const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
      if (h) {
        close();
        heading = h[1] || null;
        continue;
      }
      if (line.trim() === "") {
        close();
        continue;
      }
      const bullet = /^ {0,3}(?:[-*+]|\d+[.)])\s+(.*)$/.exec(line);
      if (bullet) {
        close();
        current = { line: i + 1, heading, content: bullet[1] };
        continue;
      }
    }
    if (current) current.content += `\n${line.replace(/^ {1,4}/, "")}`;
    else current = { line: i + 1, heading, content: line };
  }
  close();
  return items.filter((it) => it.content.trim() !== "" && !/^<!--.*-->$/s.test(it.content.trim()));
}

const words = (text: string) => new Set(text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean));
function similarity(a: string, b: string): number {
  const [x, y] = [words(a), words(b)];
  let common = 0;
  for (const w of x) if (y.has(w)) common++;
  return common / (x.size + y.size - common || 1);
}

/** A heading as a tag: tags hold no comma and at most 100 characters. */
const tagOf = (heading: string) => heading.replace(/,/g, " ").replace(/\s+/g, " ").trim().slice(0, 100);

export interface AgentsMdOptions {
  userId: string;
  agentId?: string;
  deleteMissing?: boolean;
  dryRun?: boolean;
}

type Rec = Record<string, unknown>;

/** The user's current memories of `project` (none replaced), oldest first. */
async function projectMemories(ctx: Context, userId: string, project: string): Promise<Rec[]> {
  const out: Rec[] = [];
  await exportRecords(ctx, { userId, pageSize: 2000 }, (r) => {
    if ("kind" in r && r.kind === "memory" && r.project === project && r.supersededBy === undefined) out.push(r);
  });
  return out;
}

const sourceOf = (m: Rec) => (m.metadata as { source?: { file?: unknown; heading?: unknown } } | undefined)?.source;

/**
 * Stores each item of the file as a memory of the user in the file's project, tagged with its
 * heading. A re-import matches items to the memories an earlier import made from the same file:
 * first by identical text (a moved item keeps its memory; a new heading updates its tag), then,
 * under the same heading, by the most similar text (at least half the words shared), which is an
 * edit: the memory is updated and keeps the old text in its history. Items left over are created;
 * memories left over are deleted only with `deleteMissing`. Every item is checked before anything is written.
 */
export async function importAgentsMd(ctx: Context, file: string, options: AgentsMdOptions): Promise<MarkdownImportResult> {
  const { project, source } = projectOf(file);
  const items = itemsOf(readText(file));
  for (const it of items) {
    if (it.content.length > MAX_CONTENT_LENGTH) throw new MmError("CONTENT_TOO_LONG", `${source}, line ${it.line}: the item is longer than ${MAX_CONTENT_LENGTH} characters; split it.`, { details: [{ field: `${source}:${it.line}`, message: "too long" }] });
  }
  const mine = (await projectMemories(ctx, options.userId, project)).filter((m) => sourceOf(m)?.file === source);
  const left = new Set(mine);
  const match = new Map<Item, Rec>();
  for (const it of items) {
    const same = [...left].find((m) => m.content === it.content);
    if (same) {
      match.set(it, same);
      left.delete(same);
    }
  }
  for (const it of items.filter((it) => !match.has(it))) {
    let best: Rec | undefined;
    let score = SAME_ITEM;
    for (const m of left) {
      if ((sourceOf(m)?.heading ?? null) !== it.heading) continue;
      const s = similarity(it.content, String(m.content));
      if (s >= score) [best, score] = [m, s];
    }
    if (best) {
      match.set(it, best);
      left.delete(best);
    }
  }

  const changes: MarkdownChange[] = [];
  const work: (() => Promise<void>)[] = [];
  let unchanged = 0;
  const memories = await import("./memories.js");
  for (const it of items) {
    const fields = {
      content: it.content,
      tags: it.heading ? [tagOf(it.heading)] : [],
      metadata: { source: { file: source, heading: it.heading } },
    };
    const at = `${source}:${it.line}`;
    const m = match.get(it);
    if (!m) {
      changes.push({ action: "create", kind: "memory", file: at });
      work.push(async () => {
        const created = await memories.createMemory(ctx, { ...fields, userId: options.userId, ...(options.agentId ? { agentId: options.agentId } : {}), project, dedupe: false, autoSupersede: false });
        changes.find((c) => c.file === at)!.id = created.id;
      });
      continue;
    }
    const patch: Rec = {};
    if (m.content !== fields.content) patch.content = fields.content;
    if (JSON.stringify(m.tags ?? []) !== JSON.stringify(fields.tags)) patch.tags = fields.tags;
    if (JSON.stringify(m.metadata) !== JSON.stringify(fields.metadata)) patch.metadata = fields.metadata;
    if (!Object.keys(patch).length) {
      unchanged++;
      continue;
    }
    changes.push({ action: "update", kind: "memory", file: at, id: String(m.id), fields: Object.keys(patch) });
    work.push(async () => void (await memories.updateMemory(ctx, String(m.id), patch)));
  }
  let deleted = 0;
  if (options.deleteMissing) {
    for (const m of left) {
      changes.push({ action: "delete", kind: "memory", id: String(m.id) });
      work.push(async () => void (await memories.deleteMemory(ctx, String(m.id))));
      deleted++;
    }
  }
  if (!options.dryRun) {
    // A quota that can't take every change refuses them all before the first.
    if (work.length) await ctx.meter?.check(work.length);
    for (const w of work) await w();
  }
  return {
    dryRun: Boolean(options.dryRun),
    changes,
    created: changes.filter((c) => c.action === "create").length,
    updated: changes.filter((c) => c.action === "update").length,
    deleted,
    unchanged,
  };
}

/** The block of `memories`: grouped under their source heading (else their first tag), oldest first; a memory's later lines indented under its bullet. */
export function renderBlock(memories: Rec[]): string {
  const groups = new Map<string, string[]>();
  for (const m of memories) {
    const heading = String(sourceOf(m)?.heading ?? (m.tags as string[] | undefined)?.[0] ?? "");
    const bullet = `- ${String(m.content).replace(/\n/g, "\n  ")}`;
    (groups.get(heading) ?? groups.set(heading, []).get(heading)!).push(bullet);
  }
  let out = `${BLOCK_BEGIN}\n<!-- Written by mm export --to agents-md: edit the memories (or this file outside the block), not the block. -->\n`;
  for (const [heading, bullets] of groups) out += `${heading ? `\n## ${heading}\n` : ""}\n${bullets.join("\n")}\n`;
  return `${out}\n${BLOCK_END}`;
}

/**
 * Writes the user's current memories of the file's project into the file, between the markers:
 * the block is replaced where it is, or appended to a file that has none (a missing file is
 * created). Everything outside the block keeps its bytes, and the file is written only when its
 * bytes change, so a second run changes nothing. Memories imported from this same file are left
 * out: the file already says them.
 */
export async function exportAgentsMd(ctx: Context, file: string, options: { userId: string }): Promise<{ memories: number; changed: boolean; project: string }> {
  const { project, source } = projectOf(file);
  const text = readText(file);
  const memories = (await projectMemories(ctx, options.userId, project)).filter((m) => sourceOf(m)?.file !== source);
  const block = renderBlock(memories);
  const begin = text.indexOf(BLOCK_BEGIN);
  const end = begin < 0 ? -1 : text.indexOf(BLOCK_END, begin);
  if ((begin < 0) !== (text.indexOf(BLOCK_END) < 0) || (begin >= 0 && end < 0)) {
    throw validationError("file", `${file} has one of the markers ${BLOCK_BEGIN} and ${BLOCK_END} without the other (in that order); fix or remove it`);
  }
  const next = begin >= 0 ? text.slice(0, begin) + block + text.slice(end + BLOCK_END.length) : `${text}${text && !text.endsWith("\n") ? "\n" : ""}${text ? "\n" : ""}${block}\n`;
  if (next === text) return { memories: memories.length, changed: false, project };
  // Through a link to its target (CLAUDE.md is often a link to AGENTS.md), replaced whole.
  const target = existsSync(file) ? realpathSync(file) : file;
  replaceFileSync(target, next);
  return { memories: memories.length, changed: true, project };
}
