/**
 * @inquirer/prompts is an ES module only, so it must stay a dynamic `import()`. In the CLI bundle
 * that expression keeps the chunk holding it out of the code cache (src/code-cache.ts), so it lives
 * here, in a chunk of its own that only a prompt loads, and not in the CLI's main chunk.
 */
export function loadInquirer(): Promise<typeof import("@inquirer/prompts")> {
  return import("@inquirer/prompts");
}
