import { describe, expect, it } from "vitest";
import { MmError, toMmError } from "../../src/errors.js";
import { isStoreFailure, StoreHealth, StoreTimeout, withDeadline } from "../../src/storage/outage.js";

/** Messages as LanceDB 0.37.1 gave them with Azurite killed, restarted older, or hung (test/cli/object-store-outage.test.ts). */
const REFUSED =
  "lance error: LanceError(IO): Generic MicrosoftAzure error: Error performing list request: Error performing GET http://127.0.0.1:43461/devstoreaccount1/c?restype=container&comp=list in 488ms, after 3 retries, max_retries: 3, retry_timeout: 15s  - HTTP error: error sending request";
const GONE = "Failed to get next batch from stream: lance error: Not found: store/memories.lance/_indices/ae5fc8ea-56dc-4058-8c87-d69383d614e3/metadata.lance, /usr/local/cargo/registry/src/lance-io-10.0.0/src/object_store.rs:972:12";

describe("what counts as the object store failing", () => {
  it("LanceDB's refused connections, files missing after a restart, a timeout; through an INTERNAL_ERROR that wraps them", () => {
    expect(isStoreFailure(new Error(REFUSED))).toBe(true);
    expect(isStoreFailure(new Error(GONE))).toBe(true);
    expect(isStoreFailure(new StoreTimeout(10_000))).toBe(true);
    expect(isStoreFailure(toMmError(new Error(REFUSED)))).toBe(true);
    expect(isStoreFailure(new MmError("INTERNAL_ERROR", "An internal error occurred.", {}, { cause: new Error(GONE) }))).toBe(true);
  });

  it("not mm's own errors, nor anything that isn't LanceDB's", () => {
    expect(isStoreFailure(new MmError("SERVICE_UNAVAILABLE", "Redis at redis://127.0.0.1:6379 timed out"))).toBe(false);
    expect(isStoreFailure(new MmError("STORE_ERROR", "the store is busy: error sending request"))).toBe(false);
    expect(isStoreFailure(new Error("connect ECONNREFUSED 127.0.0.1:6379"))).toBe(false);
    expect(isStoreFailure(new TypeError("Cannot read properties of undefined"))).toBe(false);
  });
});

describe("StoreHealth", () => {
  it("a store failure is STORE_UNAVAILABLE with retryAfter, later checks fail at once, and it heals by itself, trying again each second", async () => {
    const logged: Record<string, unknown>[] = [];
    let tries = 0;
    const health = new StoreHealth("az://c/store", async () => {
      tries++;
      if (tries < 2) throw new Error(REFUSED);
    });
    health.log = (e) => logged.push(e);
    expect(() => health.check()).not.toThrow();
    const reported = health.failed(new Error(REFUSED));
    expect(reported).toMatchObject({ code: "STORE_UNAVAILABLE", extra: { retryAfter: 2 } });
    expect(() => health.check()).toThrow(expect.objectContaining({ code: "STORE_UNAVAILABLE" }));
    const waiting = health.whenDown();
    expect(health.failed(new TypeError("a bug"))).toBeInstanceOf(TypeError);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(tries).toBe(2);
    expect(() => health.check()).not.toThrow();
    expect(logged.map((e) => e.event)).toEqual(["store-lost", "store-back"]);
    waiting.cancel();
    health.stop();
  });

  it("whenDown rejects once the store is marked down; withDeadline gives up on work that takes too long", async () => {
    const health = new StoreHealth("az://c/store", () => new Promise(() => undefined), 50);
    const { down } = health.whenDown();
    health.failed(new Error(GONE));
    await expect(down).rejects.toMatchObject({ code: "STORE_UNAVAILABLE" });
    health.stop();
    await expect(withDeadline(new Promise(() => undefined), 30)).rejects.toBeInstanceOf(StoreTimeout);
    await expect(withDeadline(Promise.resolve(7), 30)).resolves.toBe(7);
  });
});
