import { mkdirSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Document, type DocumentDriver } from "./documents.js";

/** When each API key was last used. */
export interface KeyUse {
  /** Records a use at `at`; never throws (a read-only store still serves). */
  touch(keyId: string, at: Date): Promise<void>;
  /** The last recorded use, as an ISO timestamp, or undefined if none was. */
  lastUse(keyId: string): Promise<string | undefined>;
}

/**
 * The key-use log of a store: for a local store, `<store>/key-use/<keyId>`, an empty file whose
 * mtime is the last use (one utimes() per use, not a rewrite of auth.json, which every process
 * re-reads whenever it changes); for an object store, the `key-use` document (keyId → time).
 */
export function keyUseOf(driver: () => Promise<DocumentDriver>): KeyUse {
  let chosen: KeyUse | undefined;
  const pick = async () => {
    if (!chosen) {
      const d = await driver();
      chosen = d.kind === "files" ? new KeyUseFiles((d as { dir: string } & DocumentDriver).dir) : new KeyUseDocument(driver);
    }
    return chosen;
  };
  return {
    touch: async (keyId, at) => (await pick()).touch(keyId, at),
    lastUse: async (keyId) => (await pick()).lastUse(keyId),
  };
}

class KeyUseFiles implements KeyUse {
  private readonly dir: string;

  constructor(storeDir: string) {
    this.dir = join(storeDir, "key-use");
  }

  /** Synchronous inside: a utimes of a local file takes microseconds, its promise version a thread-pool round trip. */
  async touch(keyId: string, at: Date): Promise<void> {
    const path = join(this.dir, keyId);
    try {
      try {
        utimesSync(path, at, at);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        mkdirSync(this.dir, { recursive: true, mode: 0o700 });
        writeFileSync(path, "", { mode: 0o600 });
        utimesSync(path, at, at);
      }
    } catch {
      // A read-only store still serves; the key's last use is only not recorded.
    }
  }

  async lastUse(keyId: string): Promise<string | undefined> {
    try {
      return statSync(join(this.dir, keyId)).mtime.toISOString();
    } catch {
      return undefined;
    }
  }
}

/** Object stores: one document, changed at most once a minute per key and process (Accounts throttles). */
class KeyUseDocument implements KeyUse {
  private readonly doc: Document<Record<string, string>>;

  constructor(driver: () => Promise<DocumentDriver>) {
    this.doc = new Document<Record<string, string>>(driver, "key-use", { parse: (data) => (data as Record<string, string> | undefined) ?? {}, pretty: false });
  }

  async touch(keyId: string, at: Date): Promise<void> {
    const when = at.toISOString();
    await this.doc
      .update((uses) => {
        if (!uses[keyId] || uses[keyId] < when) uses[keyId] = when;
      })
      .catch(() => undefined);
  }

  async lastUse(keyId: string): Promise<string | undefined> {
    return (await this.doc.read())[keyId];
  }
}
