import { readdir } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { LocalShared } from "../../src/storage/shared/local.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

describe("the local shared driver", () => {
  it("gives a lease to one holder at a time, and again once released", async () => {
    const dir = await tempDir();
    const a = new LocalShared(dir);
    const b = new LocalShared(dir);
    const first = await a.tryLease("maintenance");
    expect(first?.held).toBe(true);
    expect(await b.tryLease("maintenance")).toBeUndefined();
    await first!.release();
    expect(first!.held).toBe(false);
    const second = await b.tryLease("maintenance");
    expect(second?.held).toBe(true);
    await second!.release();
  });

  it("runs one holder of a lock at a time", async () => {
    const shared = new LocalShared(await tempDir());
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 5 }, () =>
        shared.withLock("write", async () => {
          most = Math.max(most, ++inside);
          await new Promise((r) => setTimeout(r, 5));
          inside--;
        }),
      ),
    );
    expect(most).toBe(1);
  });

  it("has no stamps of its own for a local store; with stamps (an object store's coordination dir) a touch by one is seen by another", async () => {
    const dir = await tempDir();
    const plain = new LocalShared(dir);
    await plain.touch("auth");
    expect(await plain.stamp("auth")).toBeUndefined();
    expect(await readdir(dir)).toEqual([]);
    const a = new LocalShared(dir, { stamps: true });
    const b = new LocalShared(dir, { stamps: true });
    const before = await b.stamp("auth");
    await a.touch("auth");
    const after = await b.stamp("auth");
    expect(after).not.toBe(before);
    expect(await b.stamp("auth")).toBe(after);
    expect(await b.stamp("console")).toBe(before);
  });
});
