import { MmError } from "../errors.js";

/** The id of the one entity named `ref` among `named` (those whose folded name is ref's), or why there isn't one. */
export function onlyNamed(ref: string, named: { id: string; type: string }[]): string {
  if (named.length === 1) return named[0].id;
  if (!named.length) {
    throw new MmError("ENTITY_NOT_FOUND", `No entity is named "${ref}". \`mm entities list --search "${ref}"\` finds names that contain it.`);
  }
  throw new MmError("VALIDATION_ERROR", `${named.length} entities are named "${ref}": ${named.map((e) => `${e.id} (${e.type})`).join(", ")}. Give the id of the one you mean.`, {
    details: [{ field: "command", message: `${named.length} entities are named "${ref}"` }],
  });
}
