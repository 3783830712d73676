import { tool } from "ai";
import * as z from "zod";
import { MmApiError, type MmClient } from "../client/index.js";

export interface MemoryToolsOptions {
  client: MmClient;
  /** Whose memories: every tool reads and writes this user's only. */
  userId: string;
  /** Recorded on what `remember` stores; `recall` still searches all of the user's memories. */
  agentId?: string;
  /** Added to everything `remember` stores. */
  tags?: string[];
  /** A project (docs/projects.md): `remember` stores there, `recall` sees it and the user's global memories. */
  project?: string;
  /** `recall`'s minimum score (default 0.3: an agent's questions are short, and a miss costs more than a weak hit). */
  threshold?: number;
}

/**
 * Memory tools for the Vercel AI SDK (`ai`): pass them as `tools` to `generateText` or
 * `streamText`, and the model decides when to remember, recall and forget. Each tool is one call
 * of the mm client, scoped to one user, so a model can't reach another user's memories by naming
 * them. Answers are small objects (ids, contents, scores) rather than whole API bodies, to spare
 * the model's context.
 */
export function memoryTools(options: MemoryToolsOptions) {
  const { client, userId, agentId, project } = options;
  return {
    remember: tool({
      description: "Store a fact worth keeping about the user or the conversation, in one or two plain sentences.",
      inputSchema: z.object({
        content: z.string().min(1).max(10_000).describe("the fact, self-contained: 'Ada prefers green tea', not 'she likes it'"),
        tags: z.array(z.string().min(1).max(100)).max(10).optional().describe("short labels, e.g. 'preferences'"),
      }),
      execute: async ({ content, tags }, { abortSignal }) => {
        const allTags = [...(options.tags ?? []), ...(tags ?? [])];
        const memory = await client.memories.create(
          { content, userId, ...(agentId ? { agentId } : {}), ...(allTags.length ? { tags: allTags } : {}), ...(project ? { project } : {}) },
          { signal: abortSignal },
        );
        return { id: memory.id, content: memory.content };
      },
    }),
    recall: tool({
      description: "Search what is remembered about the user by meaning; returns the closest memories with their ids.",
      inputSchema: z.object({
        query: z.string().min(1).describe("what to look for, in words"),
        limit: z.number().int().min(1).max(20).optional().describe("at most this many memories (default 5)"),
      }),
      execute: async ({ query, limit }, { abortSignal }) => {
        const { results } = await client.memories.search(
          { query, userId, limit: limit ?? 5, threshold: options.threshold ?? 0.3, ...(project ? { project } : {}) },
          { signal: abortSignal },
        );
        return results.map((r) => ({ id: r.id, content: r.content, score: r.score, createdAt: r.createdAt }));
      },
    }),
    forget: tool({
      description: "Delete a memory that is wrong or that the user asked to forget, by the id recall or remember gave.",
      inputSchema: z.object({ id: z.string().describe("the memory's id, mem_…") }),
      execute: async ({ id }, { abortSignal }) => {
        try {
          // Another user's memory is as unknown to this tool as an id that doesn't exist.
          const memory = await client.memories.get(id, { signal: abortSignal });
          if (memory.userId !== userId) return { forgotten: false, reason: `no memory ${id}` };
          await client.memories.delete(id, { signal: abortSignal });
          return { forgotten: true, id };
        } catch (err) {
          if (err instanceof MmApiError && err.code === "MEMORY_NOT_FOUND") return { forgotten: false, reason: `no memory ${id}` };
          throw err;
        }
      },
    }),
  };
}
