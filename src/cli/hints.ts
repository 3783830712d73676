import type { Command } from "commander";
import type { MmError } from "../errors.js";
import type { CliApp } from "./main.js";

const ID = /\b(?:mem|ent|rel)_[0-9A-Z]{24}\b/;

/**
 * Lines printed under an error on a terminal, where the error alone would leave a person stuck.
 * Today: an id that is "not found" because it belongs to another account of this store (the CLI
 * acts as the `default` account unless told otherwise) gets a pointer to `--account`. Best effort:
 * a failure here never hides the error itself.
 */
export async function hints(app: CliApp, program: Command, err: MmError): Promise<string[]> {
  if (!app.output.isTable || !/_NOT_FOUND$/.test(err.code)) return [];
  const id = ID.exec(err.message)?.[0];
  if (!id) return [];
  try {
    const globals = program.opts() as { store?: string; account?: string };
    const { locateStore, storeStatus } = await import("../core/store-location.js");
    const location = locateStore(globals.store, app.io.env);
    if ((await storeStatus(location)) !== "ready") return [];
    const { findOwnerAccount } = await import("../core/context.js");
    const owner = await findOwnerAccount(location.dir, id);
    if (!owner) return [];
    const current = globals.account ?? (app.io.env.MM_ACCOUNT || "default");
    if (owner.id === current || owner.name === current) return [];
    return [`${id} belongs to the account "${owner.name}": run the command again with --account ${owner.name}.`];
  } catch {
    return [];
  }
}
