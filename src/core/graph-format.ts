import type { ExportedGraph } from "./graph.js";

/**
 * Renders an exported graph as a Mermaid `flowchart LR`: one `id["Name<br/>(TYPE)"]` node per
 * entity (so isolated entities still appear) and one `a -->|TYPE| b` edge per relation.
 *
 * Names are user text, so every character Mermaid could read as syntax or markup is written as a
 * Mermaid entity code (`#quot;`, `#35;`, …): a name can never end its string, start a markdown
 * string or inject HTML (`<b>` shows as text). Newlines become `<br/>`, as Mermaid draws them.
 * Entity ids are used as node ids when they are plain identifiers; anything else gets a
 * synthetic `n<i>` id, since Mermaid ids can't be quoted.
 */
export function toMermaid(graph: ExportedGraph): string {
  const ids = nodeIds(graph);
  const lines = ["flowchart LR"];
  for (const e of graph.entities) lines.push(`  ${ids.get(e.id)}["${mermaidText(e.name)}<br/>(${mermaidText(e.type)})"]`);
  for (const r of graph.relations) {
    const source = ids.get(r.sourceId);
    const target = ids.get(r.targetId);
    if (source === undefined || target === undefined) continue;
    const label = /^[A-Za-z0-9_]+$/.test(r.type) ? r.type : `"${mermaidText(r.type)}"`;
    lines.push(`  ${source} -->|${label}| ${target}`);
  }
  return lines.join("\n");
}

/**
 * Renders an exported graph as Graphviz DOT: `digraph mm { … }` with every id quoted and every
 * label escaped (`\` and `"` backslashed, newlines as `\n`, `&` as `&amp;` because Graphviz
 * decodes HTML entities in labels), so any name, even one ending in a backslash, stays one string.
 */
export function toDot(graph: ExportedGraph): string {
  const known = new Set(graph.entities.map((e) => e.id));
  const lines = ["digraph mm {", "  rankdir=LR;", '  node [shape=box, style=rounded, fontname="Helvetica"];', '  edge [fontname="Helvetica", fontsize=10];'];
  for (const e of graph.entities) lines.push(`  ${dotId(e.id)} [label="${dotLabel(e.name)}\\n(${dotLabel(e.type)})"];`);
  for (const r of graph.relations) {
    if (!known.has(r.sourceId) || !known.has(r.targetId)) continue;
    lines.push(`  ${dotId(r.sourceId)} -> ${dotId(r.targetId)} [label="${dotLabel(r.type)}"];`);
  }
  lines.push("}");
  return lines.join("\n");
}

/** Mermaid keywords that can't be node ids, compared lower-case. */
const MERMAID_RESERVED = new Set(["end", "graph", "flowchart", "flowchart-elk", "subgraph", "style", "linkstyle", "classdef", "class", "click", "call", "href", "default", "direction", "interpolate", "accdescr", "acctitle"]);

function nodeIds(graph: ExportedGraph): Map<string, string> {
  const out = new Map<string, string>();
  const taken = new Set<string>();
  const plain = (id: string) => /^[A-Za-z][A-Za-z0-9_]*$/.test(id) && !MERMAID_RESERVED.has(id.toLowerCase());
  for (const e of graph.entities) if (plain(e.id)) taken.add(e.id);
  let n = 0;
  for (const e of graph.entities) {
    if (out.has(e.id)) continue;
    if (plain(e.id)) {
      out.set(e.id, e.id);
      continue;
    }
    while (taken.has(`n${n}`)) n++;
    out.set(e.id, `n${n}`);
    taken.add(`n${n}`);
  }
  return out;
}

/**
 * Mermaid text inside `"…"`: letters, digits, spaces and harmless punctuation pass; everything
 * else (quotes, `#`, `<`, `>`, `&`, `|`, brackets, backticks, `%`, `;`, …) becomes `#<code>;`.
 * Non-ASCII passes through, so accents and emoji stay readable in the source.
 */
function mermaidText(s: string): string {
  return s
    .split(/\r\n|\r|\n/)
    .map((line) => line.replace(/[^\p{L}\p{N}\p{M}\p{Emoji_Presentation}\p{Extended_Pictographic}\u200d\ufe0f ,.:!?_+=@$^~*'/-]/gu, (c) => `#${c.codePointAt(0)};`))
    .join("<br/>");
}

function dotId(id: string): string {
  return `"${id.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\r\n|\r|\n/g, "\\n")}"`;
}

function dotLabel(s: string): string {
  return s
    .replace(/&/g, "&amp;")
    .replace(/\\/g, "\\\\")
    .replace(/"/g, '\\"')
    .replace(/\r\n|\r|\n/g, "\\n");
}
