/** The metadata key that marks a memory whose text mm started with its entity's name (core/mcp-memory.ts withSubject). */
export const SUBJECT = "observationOf";

/** The entity name mm put in front of an observation's text ("Acme: HQ is in Phoenix"), or undefined. */
export function observationSubject(metadata: string | null | undefined): string | undefined {
  if (!metadata) return undefined;
  try {
    const subject = (JSON.parse(metadata) as Record<string, unknown>)[SUBJECT];
    return typeof subject === "string" ? subject : undefined;
  } catch {
    return undefined;
  }
}
