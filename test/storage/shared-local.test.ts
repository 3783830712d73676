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
});
