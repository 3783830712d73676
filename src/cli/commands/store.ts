import type { Command } from "commander";
import { MmError } from "../../errors.js";
import { detachStoreRedis, locateStore } from "../../core/store-location.js";
import { bytes, count } from "../output.js";
import { withContext } from "../context.js";
import type { CliApp } from "../main.js";

export function registerStore(program: Command, app: CliApp): void {
  const store = program.command("store").description("inspect and maintain the store");

  store
    .command("path")
    .description("print the store directory in use")
    .action((_opts: unknown, cmd: Command) => {
      const { dir } = locateStore((cmd.optsWithGlobals() as { store?: string }).store, app.io.env);
      return app.output.result({ path: dir }, () => dir);
    });

  store
    .command("detach-redis")
    .description("let commands without $MM_REDIS_URL use this store again, once no replica serves it with Redis (docs/redis.md)")
    .action(async (_opts: unknown, cmd: Command) => {
      const r = await detachStoreRedis(locateStore((cmd.optsWithGlobals() as { store?: string }).store, app.io.env), app.io.env);
      await app.output.result(r, () =>
        r.detached ? `${r.store} no longer requires Redis (it was coordinated by ${r.redis}).` : `${r.store} records no Redis; nothing to detach.`,
      );
    });

  store
    .command("stats")
    .description("rows, fragments, versions and size on disk")
    .action((_opts: unknown, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const s = await ctx.store.stats();
        await app.output.result(s, (t) =>
          t.record([
            ["path", s.path],
            ["embedder", `${s.embedder.provider}:${s.embedder.model} (${s.embedder.dims} dims)`],
            ["memories", `${count(s.memories.rows)} in ${s.memories.segments.length} segment${s.memories.segments.length === 1 ? "" : "s"}`],
            ["entities", count(s.graph.entities)],
            ["relations", count(s.graph.relations)],
            ["fragments", `memories ${s.memories.fragments} (${s.memories.smallFragments} small), graph ${s.graph.fragments}`],
            ["versions", `memories ${s.memories.versions}, graph ${s.graph.versions}`],
            ["indices", s.memories.indices + s.graph.indices],
            [
              "vector index",
              s.memories.vectorIndex
                ? `${s.memories.vectorIndex.type} in ${s.memories.vectorIndex.segments} segment${s.memories.vectorIndex.segments === 1 ? "" : "s"}, ${s.memories.vectorIndex.partitions} partitions, ${s.memories.vectorIndex.indexedRows} rows indexed, ${s.memories.vectorIndex.unindexedRows} not yet`
                : "none (exact search)",
            ],
            ["table data", bytes(s.memories.bytes + s.graph.bytes)],
            ["on disk", bytes(s.diskBytes)],
          ]),
        );
      }),
    );

  store
    .command("optimize")
    .description("compact small fragments, update the indexes and delete old versions, all at once (this also runs on its own in the background)")
    .option("--keep-minutes <n>", "keep versions younger than this, for readers still using them", "10")
    .action((opts: { keepMinutes: string }, cmd: Command) =>
      withContext(app, cmd, async (ctx) => {
        const minutes = Number(opts.keepMinutes);
        if (!Number.isFinite(minutes) || minutes < 0) {
          throw new MmError("VALIDATION_ERROR", "--keep-minutes must be a number of at least 0.", {
            details: [{ field: "keep-minutes", message: "must be a number of at least 0" }],
          });
        }
        // Keys first: the rows it rewrites are compacted by the same pass.
        // Loaded here, not with the command: `mm store path` and `stats` load no validation.
        const { refreshMatchKeys } = await import("../../core/memories.js");
        const matchKeysRefreshed = await refreshMatchKeys(ctx);
        const r = { ...(await ctx.store.optimize({ keepVersionsMs: minutes * 60_000 })), matchKeysRefreshed };
        await app.output.result(r, (t) =>
          t.record([
            ["memories re-keyed", r.matchKeysRefreshed],
            ["fragments removed", r.fragmentsRemoved],
            ["fragments added", r.fragmentsAdded],
            ["old versions removed", r.oldVersionsRemoved],
            ["space freed", bytes(r.bytesRemoved)],
            ["orphan temp files removed", r.tempFilesRemoved],
            ["vector index built", r.vectorIndexBuilt ? `${r.vectorIndexBuilt.partitions} partitions over ${r.vectorIndexBuilt.rows} rows` : "no"],
          ]),
        );
      }),
    );
}
