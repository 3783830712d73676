// Loaded with `node --import`: records every ESM specifier the process resolves into $MM_TRACE_FILE,
// so a test can prove which heavy modules a command did (not) load.
import { register } from "node:module";

const hooks = `
import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (process.env.MM_TRACE_FILE) appendFileSync(process.env.MM_TRACE_FILE, result.url + "\\n");
  return result;
}`;
register("data:text/javascript," + encodeURIComponent(hooks));
