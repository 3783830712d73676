import { openContext, type Context } from "../../src/core/context.js";
import { createEntity, mergeEntities } from "../../src/core/entities.js";
import { createMemory, deleteMemory, restoreMemory, supersedeMemory, updateMemory } from "../../src/core/memories.js";
import type { Azurite } from "./azurite.js";
import { createTestEmbedder } from "./test-embedder.js";

/** Opens processes on one store, each with its own tuning on top of `base`. */
export type OpenStore = (tuning?: object) => Promise<Context>;

/**
 * A fresh store of each kind (a local directory, and a container of a real Azurite), with a way
 * to open processes on it: for the tests of what a process keeps of the rows it read and wrote
 * (storage/current-rows.ts, storage/recent-writes.ts).
 */
export function storeKinds(tempDir: () => Promise<string>, azurite: () => Azurite, base: object = {}): [string, () => Promise<OpenStore>][] {
  return [
    [
      "a local store",
      async () => {
        const dir = await tempDir();
        return (tuning = {}) => openContext({ storeDir: dir, embedder: createTestEmbedder(), tuning: { ...base, ...tuning } });
      },
    ],
    [
      "an object store (real Azurite)",
      async () => {
        const uri = `az://${await azurite().container()}/store`;
        const state = await tempDir();
        return (tuning = {}) =>
          openContext({ storeDir: uri, env: { ...azurite().env, XDG_STATE_HOME: state, MM_STORE_READ_CONSISTENCY_S: "0" }, embedder: createTestEmbedder(), tuning: { ...base, ...tuning } });
      },
    ],
  ];
}

/** Two users' first notes; Berlin replaces Paris. */
export async function firstNotes(ctx: Context): Promise<{ paris: string; dentist: string; berlin: string }> {
  const paris = await createMemory(ctx, { content: "I live in Paris", userId: "ana" });
  const dentist = await createMemory(ctx, { content: "My dentist is Dr. Lee", userId: "ana" });
  await createMemory(ctx, { content: "I work at Acme", userId: "bo" });
  const berlin = await createMemory(ctx, { content: "I moved to Berlin", userId: "ana" });
  if (berlin.supersedes?.[0] !== paris.id) throw new Error(`"I moved to Berlin" replaced ${JSON.stringify(berlin.supersedes)}, not "I live in Paris"`);
  await createMemory(ctx, { content: "I switched jobs, now at Globex", userId: "bo" });
  return { paris: paris.id, dentist: dentist.id, berlin: berlin.id };
}

/**
 * Every kind of write to memory rows, one step each, on memories `ana` has (Paris replaced by
 * Berlin, Berlin by Lisbon, a dentist, a note linked to an entity that a merge will fold away).
 */
export async function everyKindOfWrite(ctx: Context, m: { paris: string; berlin: string; lisbon: string; dentist: string }): Promise<[string, () => Promise<unknown>][]> {
  const acme = (await createEntity(ctx, { name: "Acme Robotics", type: "ORGANIZATION" })).entity;
  const other = (await createEntity(ctx, { name: "ACME Robotix", type: "ORGANIZATION" })).entity;
  const linked = await createMemory(ctx, { content: "Ana's team moved to the ACME Robotix office", userId: "ana", entityIds: [other.id] });
  return [
    ["an edit", () => updateMemory(ctx, linked.id, { content: "Ana's team changed offices again" })],
    ["a replacement by hand", () => supersedeMemory(ctx, m.paris, { by: m.lisbon })],
    ["a restore", () => restoreMemory(ctx, m.berlin)],
    ["a compaction", () => ctx.store.optimize()],
    ["an entity merge, which rewrites memories' links", () => mergeEntities(ctx, acme.id, { other: other.id })],
    ["a create", () => createMemory(ctx, { content: "I moved to Porto", userId: "ana" })],
    ["a delete", () => deleteMemory(ctx, m.dentist)],
    ["a create after all of them", () => createMemory(ctx, { content: "I moved to Oslo", userId: "ana" })],
  ];
}
