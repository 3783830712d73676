import { MmError, validationError } from "../errors.js";
import { parseExportQuery, parseNeighborsQuery, parsePathQuery, type Direction } from "../schemas/graph.js";
import { requireObject } from "../schemas/validate.js";
import type { EntityRecord, RelationRecord } from "../storage/store.js";
import type { Context } from "./context.js";
import { entityNotFound } from "./entities.js";
import { summary, type EntitySummary } from "./relations.js";

export { MAX_GRAPH_DEPTH, DEFAULT_PATH_MAX_DEPTH, type Direction } from "../schemas/graph.js";

/** A relation as the graph views show it: just its identity, ends and type. */
export interface GraphEdge {
  id: string;
  sourceId: string;
  targetId: string;
  type: string;
}

export interface NeighborNode extends EntitySummary {
  /** Hops from the root along the followed direction (1 = adjacent). */
  depth: number;
}

export interface NeighborsResult {
  root: EntitySummary;
  depth: number;
  direction: Direction;
  nodes: NeighborNode[];
  edges: GraphEdge[];
}

export interface PathResult {
  from: EntitySummary;
  to: EntitySummary;
  found: boolean;
  /** Hops on the path; null when no path exists within `maxDepth`. */
  length: number | null;
  nodes: EntitySummary[];
  edges: GraphEdge[];
}

export interface GraphEntity {
  id: string;
  name: string;
  type: string;
  description?: string;
}

/** What `exportGraph` returns and `toMermaid`/`toDot` draw. */
export interface ExportedGraph {
  entities: GraphEntity[];
  relations: GraphEdge[];
}

/**
 * The entities within `depth` hops of one entity, found breadth-first one level per store query
 * (`relationsOf` on the whole frontier), so a small neighbourhood of a huge graph stays cheap;
 * the trade-off is one round trip per level, which is why depth is capped at 10. Every relation
 * the walk crossed is returned once, including ones closing a cycle onto a visited entity.
 */
export async function neighbors(ctx: Context, entityId: string, raw: unknown = {}): Promise<NeighborsResult> {
  const q = parseNeighborsQuery(raw);
  const walk = await traverse(ctx, entityId, q);
  return {
    root: summary(walk.root),
    depth: q.depth,
    direction: q.direction,
    nodes: walk.nodes.map(({ record, depth }) => ({ ...summary(record), depth })),
    edges: walk.edges,
  };
}

/**
 * The shortest path by hop count, searched from both ends at once (each step grows the smaller
 * frontier), so the work is about the square root of a one-sided search on branching graphs.
 * Among equal-length paths it returns the one whose entity ids, read from `from` to `to`, sort
 * first, and between parallel relations the smallest relation id: the same answer every time,
 * whatever order the store returns rows in. With `in` or `both`, an edge may point against the
 * walk; it is reported with its true source and target.
 */
export async function shortestPath(ctx: Context, fromId: string, toId: string, raw: unknown = {}): Promise<PathResult> {
  const q = parsePathQuery(raw);
  const ends = await ctx.store.getEntities(ctx.accountId, [fromId, toId]);
  const missing = [
    ["from", fromId],
    ["to", toId],
  ].filter(([, id]) => !ends.has(id));
  if (missing.length) {
    const names = missing.map(([field, id]) => `${id} (${field})`).join(" and ");
    throw new MmError("ENTITY_NOT_FOUND", `Entit${missing.length === 1 ? "y" : "ies"} ${names} ${missing.length === 1 ? "does" : "do"} not exist.`, {
      missing: missing.map(([field, id]) => ({ field, id })),
    });
  }
  const from = ends.get(fromId)!;
  const to = ends.get(toId)!;
  const notFound: PathResult = { from: summary(from), to: summary(to), found: false, length: null, nodes: [], edges: [] };
  if (fromId === toId) return { ...notFound, found: true, length: 0, nodes: [summary(from)] };

  const forward = new Side(fromId, q.direction);
  const backward = new Side(toId, reverse(q.direction));
  const known = new Map<string, EntityRecord>([
    [fromId, from],
    [toId, to],
  ]);
  while (forward.level + backward.level < q.maxDepth && forward.frontier.length && backward.frontier.length) {
    const side = forward.frontier.length <= backward.frontier.length ? forward : backward;
    const other = side === forward ? backward : forward;
    const fresh = await expand(ctx, side, q.type, known);
    const meet = fresh.filter((id) => other.dist.has(id));
    if (!meet.length) continue;
    const length = Math.min(...meet.map((id) => side.dist.get(id)! + other.dist.get(id)!));
    const middle = meet.filter((id) => side.dist.get(id)! + other.dist.get(id)! === length);
    const { nodes, edges } = canonicalPath(forward, backward, middle, fromId, toId);
    return { ...notFound, found: true, length, nodes: nodes.map((id) => summary(known.get(id)!)), edges };
  }
  return notFound;
}

/** `shortestPath` with both ends in one query object (`{from, to, ...}`), as GET /v1/graph/path takes them. */
export async function pathBetween(ctx: Context, raw: unknown): Promise<PathResult> {
  const { from, to, ...rest } = requireObject(raw, "query");
  for (const [field, value] of [["from", from], ["to", to]] as const) {
    if (typeof value !== "string" || value === "") throw validationError(field, "is required: an entity id");
  }
  return shortestPath(ctx, from as string, to as string, rest);
}

/**
 * The whole graph of the account, or with `root` the part `neighbors` reaches (root included),
 * optionally only relations of one type. It is the one shape the JSON, Mermaid and DOT exports
 * share. Without `root` every entity is listed, even isolated ones, because a picture of "my
 * graph" that silently dropped them would mislead.
 */
export async function exportGraph(ctx: Context, raw: unknown = {}): Promise<ExportedGraph> {
  const q = parseExportQuery(raw);
  if (q.root === undefined) {
    for (const field of ["depth", "direction"] as const) {
      if (q[field] !== undefined) throw validationError(field, "applies only with root");
    }
    const all = await ctx.store.allGraph(ctx.accountId);
    const entities = all.entities.filter((e) => q.entityType === undefined || e.type === q.entityType);
    const ids = new Set(entities.map((e) => e.id));
    return {
      entities: entities.map(toGraphEntity),
      relations: all.relations
        .filter((r) => (q.type === undefined || r.type === q.type) && ids.has(r.sourceId) && ids.has(r.targetId))
        .map(toEdge),
    };
  }
  const walk = await traverse(ctx, q.root, { depth: q.depth ?? 1, type: q.type, direction: q.direction ?? "both" });
  const entities = [walk.root, ...walk.nodes.map((n) => n.record)].filter((e) => q.entityType === undefined || e.type === q.entityType);
  const ids = new Set(entities.map((e) => e.id));
  return { entities: entities.map(toGraphEntity), relations: walk.edges.filter((r) => ids.has(r.sourceId) && ids.has(r.targetId)) };
}

interface Walk {
  root: EntityRecord;
  nodes: { record: EntityRecord; depth: number }[];
  edges: GraphEdge[];
}

async function traverse(ctx: Context, rootId: string, q: { depth: number; type?: string; direction: Direction }): Promise<Walk> {
  const root = await ctx.store.getEntity(ctx.accountId, rootId);
  if (!root) throw entityNotFound(rootId);
  const depthOf = new Map<string, number>([[rootId, 0]]);
  const records = new Map<string, EntityRecord>();
  const edges = new Map<string, GraphEdge>();
  let frontier = [rootId];
  for (let level = 1; level <= q.depth && frontier.length; level++) {
    const inFrontier = new Set(frontier);
    const relations = await ctx.store.relationsOf(ctx.accountId, frontier, q.direction, q.type);
    const candidates = new Set<string>();
    for (const r of relations) {
      for (const next of steps(r, inFrontier, q.direction)) if (!depthOf.has(next)) candidates.add(next);
    }
    // Relations can outlive an endpoint for a moment (entity delete commits before memory links
    // are dropped); a walk must not report an entity that isn't there.
    const found = await ctx.store.getEntities(ctx.accountId, [...candidates]);
    frontier = [];
    for (const id of [...candidates].sort(cmp)) {
      if (!found.has(id)) continue;
      depthOf.set(id, level);
      records.set(id, found.get(id)!);
      frontier.push(id);
    }
    for (const r of [...relations].sort((a, b) => cmp(a.id, b.id))) {
      if (depthOf.has(r.sourceId) && depthOf.has(r.targetId)) edges.set(r.id, toEdge(r));
    }
  }
  const nodes = [...records.values()]
    .map((record) => ({ record, depth: depthOf.get(record.id)! }))
    .sort((a, b) => a.depth - b.depth || a.record.name.localeCompare(b.record.name, "en") || cmp(a.record.name, b.record.name) || cmp(a.record.id, b.record.id));
  return { root, nodes, edges: [...edges.values()] };
}

/** The entities a relation leads to from the frontier, walking in `direction`. */
function steps(r: RelationRecord, frontier: Set<string>, direction: Direction): string[] {
  const out: string[] = [];
  if (direction !== "in" && frontier.has(r.sourceId)) out.push(r.targetId);
  if (direction !== "out" && frontier.has(r.targetId)) out.push(r.sourceId);
  return out;
}

/** One end of the bidirectional search: distances from its start, and every shortest-path link into each node. */
class Side {
  readonly dist: Map<string, number>;
  /** node → the (neighbour one level closer to the start, relation) pairs that reach it. */
  readonly links = new Map<string, { prev: string; edge: GraphEdge }[]>();
  frontier: string[];
  level = 0;

  constructor(
    start: string,
    readonly direction: Direction,
  ) {
    this.dist = new Map([[start, 0]]);
    this.frontier = [start];
  }
}

/** Grows one side by a level; returns the entities first reached at that level. */
async function expand(ctx: Context, side: Side, type: string | undefined, known: Map<string, EntityRecord>): Promise<string[]> {
  const inFrontier = new Set(side.frontier);
  const relations = await ctx.store.relationsOf(ctx.accountId, side.frontier, side.direction, type);
  const level = side.level + 1;
  const links = new Map<string, { prev: string; edge: GraphEdge }[]>();
  for (const r of relations) {
    if (side.direction !== "in" && inFrontier.has(r.sourceId)) addLink(links, r.targetId, r.sourceId, r);
    if (side.direction !== "out" && inFrontier.has(r.targetId)) addLink(links, r.sourceId, r.targetId, r);
  }
  const candidates = [...links.keys()].filter((id) => !side.dist.has(id));
  const unknown = candidates.filter((id) => !known.has(id));
  for (const [id, record] of await ctx.store.getEntities(ctx.accountId, unknown)) known.set(id, record);
  const fresh = candidates.filter((id) => known.has(id)).sort(cmp);
  for (const id of fresh) {
    side.dist.set(id, level);
    side.links.set(id, links.get(id)!);
  }
  side.frontier = fresh;
  side.level = level;
  return fresh;
}

function addLink(links: Map<string, { prev: string; edge: GraphEdge }[]>, node: string, prev: string, r: RelationRecord): void {
  if (node === prev) return;
  const list = links.get(node) ?? [];
  list.push({ prev, edge: toEdge(r) });
  links.set(node, list);
}

/**
 * Picks the lexicographically smallest shortest path. `middle` holds the nodes where the two
 * searches met at the minimal total length; they all sit at the same distance from `from`. From
 * `from`, each step takes the smallest-id neighbour that still leads to a middle node; from the
 * middle node on, the backward search's links all lead to `to`, so again the smallest id wins.
 * Because every choice can be completed, greedy is optimal.
 */
function canonicalPath(forward: Side, backward: Side, middle: string[], fromId: string, toId: string): { nodes: string[]; edges: GraphEdge[] } {
  // Forward-search nodes that lie on a shortest path: the middle nodes and their ancestors.
  const onPath = new Set<string>();
  const children = new Map<string, { next: string; edge: GraphEdge }[]>();
  const stack = [...middle];
  while (stack.length) {
    const id = stack.pop()!;
    if (onPath.has(id)) continue;
    onPath.add(id);
    for (const { prev, edge } of forward.links.get(id) ?? []) {
      const list = children.get(prev) ?? [];
      list.push({ next: id, edge });
      children.set(prev, list);
      stack.push(prev);
    }
  }
  const nodes = [fromId];
  const edges: GraphEdge[] = [];
  const take = (options: { next: string; edge: GraphEdge }[]) => {
    const best = options.reduce((a, b) => (cmp(b.next, a.next) < 0 || (b.next === a.next && cmp(b.edge.id, a.edge.id) < 0) ? b : a));
    nodes.push(best.next);
    edges.push(best.edge);
  };
  const middleSet = new Set(middle);
  while (!middleSet.has(nodes[nodes.length - 1])) take(children.get(nodes[nodes.length - 1])!);
  while (nodes[nodes.length - 1] !== toId) {
    take(backward.links.get(nodes[nodes.length - 1])!.map(({ prev, edge }) => ({ next: prev, edge })));
  }
  return { nodes, edges };
}

function reverse(d: Direction): Direction {
  return d === "out" ? "in" : d === "in" ? "out" : "both";
}

function toEdge(r: RelationRecord): GraphEdge {
  return { id: r.id, sourceId: r.sourceId, targetId: r.targetId, type: r.type };
}

function toGraphEntity(e: EntityRecord): GraphEntity {
  const out: GraphEntity = { id: e.id, name: e.name, type: e.type };
  if (e.description !== null) out.description = e.description;
  return out;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
