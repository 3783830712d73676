import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import type { Hono } from "hono";

/**
 * The console's own client files: `assets/console/` at the package root. This module runs from
 * src/console/ (tests), dist/console/ (tsc) or dist/bundle/ (the CLI), all two levels below it.
 */
const OWN_DIR = fileURLToPath(new URL("../../assets/console/", import.meta.url));

/** What the pages load: the console's scripts and styles, and the two libraries' browser builds from node_modules. */
function sources(): Record<string, string> {
  const require = createRequire(import.meta.url);
  return {
    "console.css": join(OWN_DIR, "console.css"),
    "console.js": join(OWN_DIR, "console.js"),
    "graph.js": join(OWN_DIR, "graph.js"),
    "usage.js": join(OWN_DIR, "usage.js"),
    "cytoscape.min.js": require.resolve("cytoscape/dist/cytoscape.min.js"),
    // chart.js exports no path to its browser build, so it is found beside its main file.
    "chart.umd.min.js": join(dirname(require.resolve("chart.js")), "chart.umd.min.js"),
  };
}

interface Asset {
  url: string;
  type: string;
  body: Buffer;
  gzip: Buffer;
}

export type AssetUrls = (name: string) => string;

/**
 * Serves the console's static files from memory under `/console/assets/<hash>/<name>`: the hash of
 * the content is in the URL, so they are cached for a year and a new version is a new URL. Each is
 * read and gzipped once, on the first console request. Nothing is fetched from the network.
 */
export function mountAssets(app: Hono<any>): AssetUrls {
  let assets: Map<string, Asset> | undefined;
  const load = () => {
    if (assets) return assets;
    assets = new Map();
    for (const [name, file] of Object.entries(sources())) {
      const body = readFileSync(file);
      const hash = createHash("sha256").update(body).digest("hex").slice(0, 12);
      const type = name.endsWith(".css") ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8";
      assets.set(name, { url: `/console/assets/${hash}/${name}`, type, body, gzip: gzipSync(body) });
    }
    return assets;
  };
  app.get("/console/assets/:hash/:name", (c) => {
    const asset = load().get(c.req.param("name"));
    if (!asset || asset.url !== c.req.path) return c.text("Not found", 404);
    c.header("Content-Type", asset.type);
    c.header("Cache-Control", "public, max-age=31536000, immutable");
    c.header("Vary", "Accept-Encoding");
    if (/\bgzip\b/.test(c.req.header("Accept-Encoding") ?? "")) {
      c.header("Content-Encoding", "gzip");
      return c.body(new Uint8Array(asset.gzip));
    }
    return c.body(new Uint8Array(asset.body));
  });
  return (name) => {
    const asset = load().get(name);
    if (!asset) throw new Error(`no console asset ${name}`);
    return asset.url;
  };
}
