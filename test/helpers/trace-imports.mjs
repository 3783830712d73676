// Loaded with `node --import`: records every module the process resolves into $MM_TRACE_FILE, ES
// modules (through a resolve hook) and CommonJS ones (through require's resolver), so a test can
// prove which heavy modules a command did (not) load.
import { appendFileSync } from "node:fs";
import Module, { register } from "node:module";
import { pathToFileURL } from "node:url";

const hooks = `
import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (process.env.MM_TRACE_FILE) appendFileSync(process.env.MM_TRACE_FILE, result.url + "\\n");
  return result;
}`;
register("data:text/javascript," + encodeURIComponent(hooks));

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (...args) {
  const file = resolveFilename.apply(this, args);
  if (process.env.MM_TRACE_FILE && file.startsWith("/")) appendFileSync(process.env.MM_TRACE_FILE, pathToFileURL(file).href + "\n");
  return file;
};
