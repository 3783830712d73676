import * as z from "zod/mini";

type Json = Record<string, unknown>;

/**
 * A zod schema as JSON Schema (draft 2020-12), for the documents that describe mm to others: the
 * OpenAPI document and the MCP tool list. Both come from the very schemas the services validate
 * with, so neither can drift from what is enforced.
 */
export function jsonSchema(schema: z.core.$ZodType, io: "input" | "output" = "input"): Json {
  const out = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
    // The only z.custom schemas are JSON-object checks (metadata); say so instead of "anything".
    override: (ctx) => {
      if ((ctx.zodSchema as { _zod: { def: { type: string } } })._zod.def.type === "custom") {
        Object.assign(ctx.jsonSchema, { type: "object", additionalProperties: true });
      }
    },
  }) as Json;
  delete out.$schema;
  return out;
}
