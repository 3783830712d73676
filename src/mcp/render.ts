/**
 * A short plain-text rendering of a tool's result, for the model reading it: the JSON body stays
 * in `structuredContent`, but many clients show a model only the text. Ids are always included,
 * so the model can act on what it read.
 */
export function renderResult(body: unknown): string {
  if (!body || typeof body !== "object") return JSON.stringify(body);
  const b = body as Record<string, any>;
  if (Array.isArray(b.results) && !("entityName" in (b.results[0] ?? {}))) {
    if (!b.results.length) return "No memories matched.";
    return [`${b.results.length} memor${b.results.length === 1 ? "y" : "ies"}, best first:`, ...b.results.map((h: any) => `- [${h.score.toFixed(2)}] ${oneLine(h.content)} (${h.id}, user ${h.userId})`)].join("\n");
  }
  if (Array.isArray(b.items) && b.pagination) {
    const p = b.pagination;
    const head = `Page ${p.page} of ${Math.max(1, p.totalPages)} (${p.total} in all):`;
    return [head, ...b.items.map((i: any) => `- ${item(i)}`)].join("\n");
  }
  if (b.success === true && typeof b.id === "string") return `Deleted ${b.id}${typeof b.deletedRelations === "number" ? ` and ${b.deletedRelations} relation(s)` : ""}.`;
  if (b.success === true && typeof b.message === "string") return b.message;
  if (b.root && Array.isArray(b.nodes)) {
    const names = new Map<string, string>([[b.root.id, b.root.name], ...b.nodes.map((n: any) => [n.id, n.name] as [string, string])]);
    return [
      `${b.nodes.length} entit${b.nodes.length === 1 ? "y" : "ies"} within ${b.depth} hop(s) of ${b.root.name} (${b.root.id}):`,
      ...b.nodes.map((n: any) => `- ${n.name} (${n.type}, ${n.id}) at ${n.depth}`),
      ...b.edges.map((e: any) => `- ${names.get(e.sourceId) ?? e.sourceId} -[${e.type}]-> ${names.get(e.targetId) ?? e.targetId} (${e.id})`),
    ].join("\n");
  }
  if (typeof b.found === "boolean" && b.from && b.to) {
    if (!b.found) return `No path from ${b.from.name} to ${b.to.name}.`;
    return `${b.length} hop(s): ${b.nodes.map((n: any) => `${n.name} (${n.id})`).join(" → ")}`;
  }
  if (Array.isArray(b.entities) && Array.isArray(b.relations)) {
    return [
      `${b.entities.length} entit${b.entities.length === 1 ? "y" : "ies"}, ${b.relations.length} relation(s).`,
      ...b.entities.map((e: any) => `- ${e.name} (${e.entityType ?? e.type}${e.id ? `, ${e.id}` : ""})${e.observations?.length ? `: ${e.observations.map(oneLine).join("; ")}` : ""}`),
      ...b.relations.map((r: any) => (r.from ? `- ${r.from} -[${r.relationType}]-> ${r.to}` : `- ${r.sourceId} -[${r.type}]-> ${r.targetId} (${r.id})`)),
    ].join("\n");
  }
  if (Array.isArray(b.entities)) return `Created ${b.entities.length} entit${b.entities.length === 1 ? "y" : "ies"}${b.entities.length ? `: ${b.entities.map((e: any) => e.name).join(", ")}` : " (the others existed)"}.`;
  if (Array.isArray(b.relations)) return `Created ${b.relations.length} relation(s)${b.relations.length ? `: ${b.relations.map((r: any) => `${r.from} -[${r.relationType}]-> ${r.to}`).join("; ")}` : " (the others existed)"}.`;
  if (Array.isArray(b.results)) return b.results.map((r: any) => `${r.entityName}: added ${r.addedObservations.length} observation(s)`).join("\n");
  return item(b);
}

function item(i: any): string {
  if (typeof i.content === "string") return `${oneLine(i.content)} (${i.id}, user ${i.userId}${i.agentId ? `, agent ${i.agentId}` : ""}${i.tags?.length ? `, tags ${i.tags.join(", ")}` : ""})`;
  if (i.source && i.target) return `${i.source.name} -[${i.type}]-> ${i.target.name} (${i.id})`;
  if (typeof i.sourceId === "string") return `${i.sourceId} -[${i.type}]-> ${i.targetId} (${i.id})`;
  if (typeof i.name === "string") return `${i.name} (${i.type}, ${i.id})${i.description ? `: ${oneLine(i.description)}` : ""}`;
  return JSON.stringify(i);
}

function oneLine(s: string): string {
  const flat = s.replace(/\s*\n\s*/g, " ⏎ ");
  return flat.length > 300 ? `${flat.slice(0, 299)}…` : flat;
}
