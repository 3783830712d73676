import { jsonSchema } from "../schemas/json-schema.js";
import { ErrorEnvelope } from "../schemas/responses.js";
import { VERSION } from "../cli/version.js";
import type { Route } from "./routes.js";

type Json = Record<string, unknown>;

const ERRORS: Record<string, string> = {
  "400": "Validation failed (VALIDATION_ERROR, INVALID_USER_ID, CONTENT_TOO_LONG, NAME_REQUIRED, INVALID_ENTITY_TYPE, INVALID_RELATION_TYPE)",
  "401": "Missing, malformed, unknown or revoked API key (UNAUTHORIZED)",
  "403": "Monthly quota exceeded (QUOTA_EXCEEDED)",
  "404": "Unknown id, or another account's (…_NOT_FOUND)",
  "413": "Body larger than the server's limit (PAYLOAD_TOO_LARGE)",
  "429": "Rate limit exceeded (RATE_LIMIT_EXCEEDED); see Retry-After",
  "503": "The object store holding the data or Redis is unavailable (STORE_UNAVAILABLE, SERVICE_UNAVAILABLE; see Retry-After), or the embedding service is (EMBEDDER_UNAVAILABLE)",
};

/**
 * The OpenAPI 3.1 document, generated from the route table and the very zod schemas the services
 * validate with (request bodies and queries) and describe their answers with (responses).
 */
export function buildOpenApi(routes: Route[]): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of routes) {
    const path = r.path.replace(/:(\w+)/g, "{$1}");
    const parameters: Json[] = [...r.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
    if (r.query) {
      const schema = jsonSchema(r.query) as { properties?: Record<string, Json>; required?: string[] };
      for (const [name, prop] of Object.entries(schema.properties ?? {})) {
        parameters.push({ name, in: "query", required: false, schema: prop });
      }
    }
    const responses: Record<string, Json> = {
      [String(r.status)]: { description: "Success", content: { "application/json": { schema: jsonSchema(r.response, "output") } } },
    };
    for (const [code, description] of Object.entries(ERRORS)) {
      if (code === "413" && !r.body) continue;
      responses[code] = { $ref: `#/components/responses/E${code}`, description };
    }
    (paths[path] ??= {})[r.method.toLowerCase()] = {
      summary: r.summary,
      operationId: `${r.method.toLowerCase()}${path.replace(/[{}]/g, "").replace(/\/(\w)/g, (_, c: string) => c.toUpperCase())}`,
      ...(r.extension ? { "x-mm-extension": true } : {}),
      "x-mm-rate-bucket": r.bucket,
      ...(parameters.length ? { parameters } : {}),
      ...(r.body ? { requestBody: { required: true, content: { "application/json": { schema: jsonSchema(r.body) } } } } : {}),
      responses,
    };
  }
  const errorSchema = jsonSchema(ErrorEnvelope, "output");
  return {
    openapi: "3.1.0",
    info: { title: "mm semantic memory API", version: VERSION, description: "Memories, entities and relations; see the project README." },
    servers: [{ url: "/" }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "An API key: mm_ followed by 40 base62 characters" } },
      responses: Object.fromEntries(
        Object.entries(ERRORS).map(([code, description]) => [`E${code}`, { description, content: { "application/json": { schema: errorSchema } } }]),
      ),
    },
  };
}
