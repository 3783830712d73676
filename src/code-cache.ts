import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import Module, { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import vm from "node:vm";

/**
 * V8 code caches for the CommonJS files a cold `mm` process compiles: the CLI's own chunks,
 * LanceDB's bundled JavaScript, Arrow's single-file build and TensorFlow.js (1.7 MB, inside
 * @energetic-ai/core). From a cache V8 skips the parse and reuses the bytecode of every function
 * the recording run compiled, model inference included: a cold search ~150 ms faster, a cold
 * `mm memories list` ~60 ms (docs/performance.md, "Cold start").
 *
 * Node 22 has this built in (`module.enableCompileCache`); Node 20 does not, so this wraps
 * `Module.prototype._compile`, for the files listed in a manifest and for no others.
 * - The caches are made at build time by a real search (scripts/code-cache.mjs), so they hold every
 *   function a search runs. Nothing is written at run time.
 * - A cache is used only for the exact bytes it was made from (SHA-1 of the source, checked on every
 *   load: ~4 ms for TensorFlow.js) and the same V8. V8 itself checks only the source's length: a
 *   stale cache of a same-length file runs the old code (the tests show it does).
 * - Anything wrong (no manifest, another Node, a changed file, a cache V8 rejects) falls back to
 *   the ordinary compile: slower, never different.
 */

/** Smaller files compile about as fast as their cache is read and checked. */
const MIN_BYTES = 16 * 1024;

/**
 * An `import()` expression (not a method named `import`). Node 20 loses a script's dynamic-import
 * callback when the script comes from a code cache, and the `import()` then throws, so a file that
 * may hold one is never recorded. Strings and comments that look like one only cost that file its cache.
 */
const DYNAMIC_IMPORT = /(?<![\w$.])import\s*\(/;

interface ManifestEntry {
  file: string;
  sha1: string;
  cache: string;
}

interface Manifest {
  v8: string;
  entries: ManifestEntry[];
}

/** What happened to one file: for tests, and for whoever wonders whether the cache is working. */
export interface CodeCacheUse {
  file: string;
  outcome: "used" | "rejected" | "changed" | "recorded";
}

/** Node's CommonJS module, as far as this file uses its internals. */
interface CompilingModule {
  exports: unknown;
  _compile(content: string, filename: string): unknown;
}

let installed: { dir: string; record: boolean; entries: Map<string, ManifestEntry>; uninstall(): void } | undefined;
const uses: CodeCacheUse[] = [];
const recorded: { file: string; sha1: string; script: vm.Script }[] = [];

/**
 * Compiles the files listed in `dir`/manifest.json from their caches from now on. With `record`,
 * compiles every CommonJS file over 16 KB that holds no `import()` normally instead, and writes
 * their caches and the manifest to `dir` when the process exits. A process uses one directory;
 * later calls change nothing.
 */
export function useCodeCache(dir: string, options: { record?: boolean } = {}): void {
  if (installed) return;
  const record = options.record ?? false;
  let entries = new Map<string, ManifestEntry>();
  if (!record) {
    const manifest = readManifest(dir);
    if (!manifest || manifest.v8 !== process.versions.v8) return;
    entries = new Map(manifest.entries.map((e) => [e.file, e]));
  }
  const proto = Module.prototype as unknown as CompilingModule;
  const compile = proto._compile;
  installed = { dir, record, entries, uninstall: () => (proto._compile = compile) };
  proto._compile = function (this: CompilingModule, content: string, filename: string) {
    const script = record ? recordable(content, filename) : fromCache(content, filename);
    if (!script) return compile.call(this, content, filename);
    return run(script, this, filename);
  };
  if (record) process.once("exit", writeCaches);
}

/**
 * From now on, files compile the ordinary way again. For long-running processes: a warm
 * `mm serve` searched about 4 ms slower (p50 of 300 alternating requests, three runs) with its
 * files compiled through this hook, cache or no cache (docs/performance.md, "Cold start"), and a server's
 * start-up is paid once. Files already loaded stay as they are. Recording cannot be stopped.
 */
export function stopCodeCache(): void {
  if (!installed || installed.record) return;
  installed.uninstall();
  installed = undefined;
}

/** The directory in use (for worker threads, which must install it themselves), if any. */
export function codeCacheDir(): string | undefined {
  return installed?.dir;
}

export function codeCacheUses(): readonly CodeCacheUse[] {
  return uses;
}

function readManifest(dir: string): Manifest | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as Manifest;
    return typeof manifest.v8 === "string" && Array.isArray(manifest.entries) ? manifest : undefined;
  } catch {
    return undefined;
  }
}

function fromCache(content: string, filename: string): vm.Script | undefined {
  const entry = installed!.entries.get(filename);
  if (!entry) return undefined;
  if (sha1(content) !== entry.sha1) {
    uses.push({ file: filename, outcome: "changed" });
    return undefined;
  }
  let cachedData: Buffer;
  try {
    cachedData = readFileSync(join(installed!.dir, entry.cache));
  } catch {
    return undefined;
  }
  const script = compileWrapped(content, filename, cachedData);
  uses.push({ file: filename, outcome: script.cachedDataRejected ? "rejected" : "used" });
  return script;
}

function recordable(content: string, filename: string): vm.Script | undefined {
  if (content.length < MIN_BYTES || DYNAMIC_IMPORT.test(content)) return undefined;
  const script = compileWrapped(content, filename);
  recorded.push({ file: filename, sha1: sha1(content), script });
  uses.push({ file: filename, outcome: "recorded" });
  return script;
}

/** How many characters Node's module wrapper puts before a file's source. */
const WRAPPER_PREFIX = Module.wrap("\0").indexOf("\0");

/**
 * The module as Node itself wraps it. The negative column offset keeps positions on the first line
 * (all of a minified file) pointing at the file's own columns in stack traces.
 */
function compileWrapped(content: string, filename: string, cachedData?: Buffer): vm.Script {
  return new vm.Script(Module.wrap(content), { filename, columnOffset: -WRAPPER_PREFIX, cachedData });
}

function run(script: vm.Script, module: CompilingModule, filename: string): unknown {
  const wrapper = script.runInThisContext({ displayErrors: true }) as (...args: unknown[]) => unknown;
  return wrapper.call(module.exports, module.exports, createRequire(filename), module, filename, dirname(filename));
}

/** At exit, after the recording run, so the caches hold every function the run compiled. */
function writeCaches(): void {
  const { dir } = installed!;
  mkdirSync(dir, { recursive: true });
  const entries = recorded.map(({ file, sha1, script }) => {
    const cache = `${basename(file).replace(/[^\w.-]/g, "_")}-${sha1.slice(0, 12)}.v8cache`;
    writeFileSync(join(dir, cache), script.createCachedData());
    return { file, sha1, cache };
  });
  writeFileSync(join(dir, "manifest.json"), JSON.stringify({ v8: process.versions.v8, entries } satisfies Manifest, null, 2) + "\n");
}

function sha1(text: string): string {
  return createHash("sha1").update(text).digest("hex");
}
