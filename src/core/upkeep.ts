import { Maintainer, maintainIfDue, type MaintenancePass } from "../storage/maintenance.js";
import type { Context } from "./context.js";

export type { MaintenancePass };

/**
 * Keeps a store fast while a process uses it: maintenance passes in the background (see
 * storage/maintenance.ts), and, when the process wrote, one last pass before it ends if anything
 * is due, so a store written only by short CLI commands stays compact too. A failed pass never
 * fails the work it follows; it is reported to `onError` and the next pass tries again.
 */
export function startUpkeep(
  ctx: Context,
  options: {
    /** Only run when this process has written since the last pass (a CLI command), not for other processes' writes. */
    ownWritesOnly?: boolean;
    intervalMs?: number;
    onPass?: (pass: MaintenancePass) => void;
    onError?: (err: unknown) => void;
  } = {},
): { maintainer: Maintainer; stop(): Promise<void> } {
  let seen = ctx.store.writes;
  const maintainer = new Maintainer(ctx.store, {
    intervalMs: options.intervalMs,
    onPass: options.onPass,
    onError: options.onError,
    shouldRun: options.ownWritesOnly
      ? () => {
          const due = ctx.store.writes !== seen;
          seen = ctx.store.writes;
          return due;
        }
      : undefined,
  }).start();
  return {
    maintainer,
    async stop() {
      await maintainer.stop();
      if (ctx.store.writes === seen && options.ownWritesOnly) return;
      try {
        const pass = await maintainIfDue(ctx.store);
        if (pass?.work.length) options.onPass?.(pass);
      } catch (err) {
        options.onError?.(err);
      }
    },
  };
}
