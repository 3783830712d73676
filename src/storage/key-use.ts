import { mkdirSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * When each API key was last used: `<store>/key-use/<keyId>`, an empty file whose mtime is the
 * last use. Recording a use is one utimes() of it, not a rewrite of auth.json, which every
 * process re-reads whenever it changes.
 */
export class KeyUse {
  private readonly dir: string;

  constructor(storeDir: string) {
    this.dir = join(storeDir, "key-use");
  }

  /** Records a use at `at`. Synchronous: a utimes of a local file takes microseconds, its promise version a thread-pool round trip. */
  touch(keyId: string, at: Date): void {
    const path = join(this.dir, keyId);
    try {
      utimesSync(path, at, at);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      writeFileSync(path, "", { mode: 0o600 });
      utimesSync(path, at, at);
    }
  }

  /** The last recorded use, as an ISO timestamp, or undefined if none was. */
  lastUse(keyId: string): string | undefined {
    try {
      return statSync(join(this.dir, keyId)).mtime.toISOString();
    } catch {
      return undefined;
    }
  }
}
