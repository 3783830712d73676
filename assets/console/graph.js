// The graph page: the account's entities and relations drawn with Cytoscape.js (pan, zoom,
// click an entity for its relations and memories). Names and contents are user data: they go
// into the page only through textContent and attributes, never as HTML.
"use strict";
(() => {
  const container = document.getElementById("graph");
  if (!container || typeof cytoscape === "undefined") return;
  const data = JSON.parse(container.getAttribute("data-graph") || '{"entities":[],"relations":[]}');
  const panel = document.getElementById("entity-panel");
  const COLORS = {
    PERSON: "#2f5fd0",
    ORGANIZATION: "#a23c9c",
    LOCATION: "#1f7a4d",
    PRODUCT: "#b35c00",
    EVENT: "#b3261e",
    CONCEPT: "#5b5f97",
    OTHER: "#5f6368",
  };
  const n = data.entities.length;
  // Start on a circle (the same every time), then let the force layout settle from there.
  const radius = Math.max(120, n * 18);
  const elements = [
    ...data.entities.map((e, i) => ({
      group: "nodes",
      data: { id: e.id, name: e.name, type: e.type },
      position: { x: radius * Math.cos((2 * Math.PI * i) / Math.max(1, n)), y: radius * Math.sin((2 * Math.PI * i) / Math.max(1, n)) },
    })),
    ...data.relations.map((r) => ({ group: "edges", data: { id: r.id, source: r.sourceId, target: r.targetId, type: r.type } })),
  ];
  const cy = cytoscape({
    container,
    elements,
    minZoom: 0.1,
    // Large graphs: draw a bitmap while panning and zooming, and labels only where readable.
    textureOnViewport: n > 300,
    hideEdgesOnViewport: n > 300,
    maxZoom: 3,
    style: [
      {
        selector: "node",
        style: {
          label: "data(name)",
          "background-color": (node) => COLORS[node.data("type")] || COLORS.OTHER,
          color: "#1d1f24",
          "font-size": 12,
          "text-valign": "bottom",
          "text-margin-y": 4,
          "text-wrap": "ellipsis",
          "text-max-width": 140,
          "min-zoomed-font-size": 7,
          width: 22,
          height: 22,
        },
      },
      { selector: "node:selected", style: { "border-width": 4, "border-color": "#f2b705", width: 30, height: 30 } },
      {
        selector: "edge",
        style: {
          label: "data(type)",
          "font-size": 9,
          color: "#555a64",
          width: 1.5,
          "line-color": "#9aa0aa",
          "target-arrow-color": "#9aa0aa",
          "target-arrow-shape": "triangle",
          "curve-style": "bezier",
          "text-rotation": "autorotate",
          "text-background-color": "#ffffff",
          "text-background-opacity": 0.8,
          "min-zoomed-font-size": 7,
        },
      },
      { selector: "edge.near", style: { "line-color": "#f2b705", "target-arrow-color": "#f2b705", width: 3 } },
    ],
    layout: {
      name: n > 1 ? "cose" : "preset",
      animate: false,
      randomize: false,
      nodeRepulsion: () => 400_000,
      idealEdgeLength: () => 110,
      nodeOverlap: 20,
      gravity: 0.4,
      // Each iteration compares every pair of nodes: fewer of them on larger graphs (see "Large
      // graphs" in docs/console.md for what it measured).
      numIter: n > 300 ? 60 : n > 100 ? 300 : 1000,
      componentSpacing: 80,
      fit: true,
      padding: 40,
    },
  });
  // A few entities would be fitted at a giant zoom: keep them at a readable size, centred.
  const readable = () => {
    if (cy.zoom() > 1.2) {
      cy.zoom(1.2);
      cy.center();
    }
  };
  readable();
  container.setAttribute("data-ready", String(cy.nodes().length));
  // The Cytoscape instance, for the tests and the curious (not a global).
  container.cy = cy;

  const zoomBy = (factor) => cy.zoom({ level: cy.zoom() * factor, renderedPosition: { x: container.clientWidth / 2, y: container.clientHeight / 2 } });
  for (const button of document.querySelectorAll("[data-zoom]")) {
    button.addEventListener("click", () => {
      const how = button.getAttribute("data-zoom");
      if (how === "in") zoomBy(1.25);
      else if (how === "out") zoomBy(0.8);
      else {
        cy.fit(undefined, 40);
        readable();
      }
    });
  }

  const el = (tag, props = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props)) {
      if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  };
  const typeChip = (type) => el("span", { class: `type t-${type}`, text: type });

  let current = 0;
  async function show(id) {
    const ticket = ++current;
    cy.elements().unselect();
    cy.edges().removeClass("near");
    const node = cy.getElementById(id);
    if (node.nonempty()) {
      node.select();
      node.connectedEdges().addClass("near");
      cy.animate({ center: { eles: node } }, { duration: 200 });
    }
    panel.replaceChildren(el("p", { class: "muted", text: "Loading…" }));
    const res = await fetch(`/console/api/entities/${encodeURIComponent(id)}`, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    const body = await res.json();
    if (ticket !== current) return;
    if (!res.ok) {
      panel.replaceChildren(el("p", { class: "notice error", role: "alert", text: body.error ? body.error.message : "Could not load the entity." }));
      return;
    }
    const { entity, neighbors, memories } = body;
    const names = new Map([[neighbors.root.id, neighbors.root], ...neighbors.nodes.map((x) => [x.id, x])]);
    const title = el("h2", { id: "panel-title", tabindex: "-1" }, entity.name + " ", typeChip(entity.type));
    const relations = el("ul", { class: "relations", "data-testid": "relations" });
    for (const r of neighbors.edges) {
      const out = r.sourceId === entity.id;
      const other = names.get(out ? r.targetId : r.sourceId);
      const link = other ? el("a", { href: `/console/graph/entities/${encodeURIComponent(other.id)}`, "data-entity": other.id, text: other.name }) : el("span", { text: "?" });
      relations.append(el("li", {}, `${out ? "→" : "←"} `, el("span", { class: "rel", text: r.type }), " ", link));
    }
    const mems = el("ol", { class: "memories compact" });
    for (const m of memories.items) {
      mems.append(el("li", { class: "memory" }, el("a", { class: "content", href: `/console/memories/${encodeURIComponent(m.id)}`, text: m.content.length > 200 ? `${m.content.slice(0, 200)}…` : m.content })));
    }
    const parts = [
      title,
      entity.description ? el("p", { text: entity.description }) : null,
      el("h3", { text: `Relations (${neighbors.edges.length})` }),
      neighbors.edges.length ? relations : el("p", { class: "muted", text: "None." }),
      el("h3", { text: `Memories (${memories.pagination.total})` }),
      memories.items.length ? mems : el("p", { class: "muted", text: "None." }),
      el("p", {}, el("a", { href: `/console/graph/entities/${encodeURIComponent(entity.id)}`, text: "Open as a page" })),
    ];
    panel.replaceChildren(...parts.filter(Boolean));
    title.focus({ preventScroll: true });
  }

  cy.on("tap", "node", (event) => void show(event.target.id()));
  // The entity list, and links inside the panel, open the panel in place (a plain link without script).
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element ? event.target.closest("a[data-entity]") : null;
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    void show(link.getAttribute("data-entity"));
  });
})();
