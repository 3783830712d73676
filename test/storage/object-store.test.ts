import { readdir } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { Accounts } from "../../src/core/accounts.js";
import { ConsoleAccess } from "../../src/core/console-access.js";
import { openContext, type Context } from "../../src/core/context.js";
import { createEntity, listEntities } from "../../src/core/entities.js";
import { createMemory, getMemory, listMemories, searchMemories } from "../../src/core/memories.js";
import { MmError } from "../../src/errors.js";
import { coordinationDir, objectStorageOptions, objectStoreError, placeOf } from "../../src/storage/location.js";
import { resolveStorePath } from "../../src/storage/paths.js";
import { Store } from "../../src/storage/store.js";
import { useAzurite } from "../helpers/azurite.js";
import { createTestEmbedder } from "../helpers/test-embedder.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();
const azurite = useAzurite();

/** The env of a process using the Azurite store, with its coordination directory in a temp dir. */
async function envFor(): Promise<Record<string, string>> {
  return { ...azurite().env, XDG_STATE_HOME: await tempDir() };
}

async function open(uri: string, env: Record<string, string>): Promise<Context> {
  return openContext({ storeDir: uri, env, embedder: createTestEmbedder(32, "m1") });
}

async function storeError(fn: () => Promise<unknown>): Promise<MmError> {
  const err = await fn().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MmError);
  expect((err as MmError).code).toBe("STORE_ERROR");
  return err as MmError;
}

describe("a store in Azure Blob Storage (Azurite)", () => {
  it("keeps memories, the graph, accounts, keys and console sessions where a second process sees them", async () => {
    const uri = `az://${await azurite().container()}/team/store`;
    const env = await envFor();
    const a = await open(uri, env);
    const m = await createMemory(a, { content: "I moved to Lisbon in March", userId: "ana" });
    await createEntity(a, { name: "Lisbon", type: "LOCATION" });
    const accounts = new Accounts(a.store);
    const acme = await accounts.create({ name: "acme" });
    const { key, id: keyId } = await accounts.createKey({ account: "acme", name: "k" });
    const link = await new ConsoleAccess(a.store).createLink("acme");

    // Another process: its own connection, its own caches.
    const b = await open(uri, env);
    expect((await getMemory(b, m.id)).content).toBe("I moved to Lisbon in March");
    expect((await searchMemories(b, { query: "I moved to Lisbon in March", userId: "ana" })).results[0].id).toBe(m.id);
    expect((await listEntities(b, {})).items.map((e) => e.name)).toEqual(["Lisbon"]);
    const other = new Accounts(b.store);
    expect((await other.authenticate(`Bearer ${key}`)).account.id).toBe(acme.id);
    expect((await new ConsoleAccess(b.store).checkLink(link.token)).id).toBe(acme.id);

    // A revoke by one is refused by the other on its very next request (one machine: stamps in the coordination dir).
    await accounts.revokeKey(keyId);
    await expect(other.authenticate(`Bearer ${key}`)).rejects.toThrow(/revoked/);
    await a.close();
    await b.close();
    expect(await Store.exists(uri, env)).toBe(true);
    expect(await Store.exists(`az://${uri.slice(5).split("/")[0]}/team`, env)).toBe(false);
  });

  it("every acknowledged write of two concurrent writers (two stores, one machine's locks) is stored once", async () => {
    const uri = `az://${await azurite().container()}/concurrent`;
    const env = await envFor();
    const [a, b] = [await open(uri, env), await open(uri, env)];
    const created = await Promise.all(
      Array.from({ length: 24 }, (_, i) => createMemory(i % 2 ? a : b, { content: `fact number ${i} about the garden`, userId: `u${i % 3}` })),
    );
    const check = await open(uri, env);
    const listed = (await listMemories(check, { limit: 100 })).items.map((r) => r.id);
    expect(listed.sort()).toEqual(created.map((c) => c.id).sort());
    // Sequence numbers stay unique per user across the two writers (each write starts from the latest version).
    for (const user of ["u0", "u1", "u2"]) {
      const rows = await check.store.memoriesAfter({ accountId: "acct_default", userId: user }, undefined, 100, false);
      const seqs = rows.map((r) => r.seq).sort((x, y) => x - y);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    }
    await Promise.all([a.close(), b.close(), check.close()]);
  });

  it("a document changes only from the revision its writer read: a writer that lost its lock can't overwrite a newer one", async () => {
    const uri = `az://${await azurite().container()}/revs`;
    const ctx = await open(uri, await envFor());
    await new Accounts(ctx.store).create({ name: "first" });
    const docs = ctx.store.documents;
    const loaded = (await docs.load("auth"))!;
    await new Accounts(ctx.store).create({ name: "second" });
    await expect(docs.save("auth", loaded.text, loaded.rev)).rejects.toThrow(/changed by another process/);
    expect((await new Accounts(ctx.store).list()).items.map((a) => a.name)).toEqual(["default", "first", "second"]);
    await ctx.close();
  });

  it("optimize compacts the store and keeps every memory; stats report the tables' bytes", async () => {
    const uri = `az://${await azurite().container()}/opt`;
    const ctx = await open(uri, await envFor());
    for (let i = 0; i < 5; i++) await createMemory(ctx, { content: `note ${i} on the boat`, userId: "u" });
    const before = await ctx.store.stats();
    expect(before.memories.fragments).toBe(5);
    const pass = await ctx.store.optimize({ keepVersionsMs: 0 });
    expect(pass.tempFilesRemoved).toBe(0);
    const after = await ctx.store.stats();
    expect(after.memories.fragments).toBe(1);
    expect(after.memories.rows).toBe(5);
    expect(after.path).toBe(uri);
    expect(after.diskBytes).toBeGreaterThan(0);
    await ctx.close();
  });

  it("refuses URIs it can't use, naming what is wrong, and makes no local directory", async () => {
    const cwd = await tempDir();
    const env = await envFor();
    const was = process.cwd();
    process.chdir(cwd);
    try {
      expect((await storeError(async () => placeOf("ftp://bucket/x"))).message).toMatch(/scheme ftp:\/\/ is not supported/);
      expect((await storeError(async () => placeOf("az://"))).message).toMatch(/names no container/);
      expect((await storeError(async () => placeOf("az://Bad_Name/x"))).message).toMatch(/not a valid Azure container name/);
      expect((await storeError(async () => placeOf("s3://bucket/x?versionId=1"))).message).toMatch(/no query/);
      expect((await storeError(() => Store.open("az://no-such-container/x", { env, create: { provider: "test", model: "m", dims: 8 } }))).message).toMatch(
        /container "no-such-container" does not exist.*mm does not create containers/,
      );
      const container = await azurite().container();
      const noKey = { ...env, AZURE_STORAGE_ACCOUNT_KEY: "" };
      expect((await storeError(() => Store.open(`az://${container}/x`, { env: noKey }))).message).toMatch(/AZURE_STORAGE_ACCOUNT_KEY is not set/);
      const noName = { ...env, AZURE_STORAGE_ACCOUNT_NAME: "" };
      expect((await storeError(() => Store.open(`az://${container}/x`, { env: noName }))).message).toMatch(/AZURE_STORAGE_ACCOUNT_NAME is not set/);
      const wrongKey = Buffer.alloc(64, 7).toString("base64");
      const refused = await storeError(() => Store.open(`az://${container}/x`, { env: { ...env, AZURE_STORAGE_ACCOUNT_KEY: wrongKey } }));
      expect(refused.message).toMatch(/refused the credentials/);
      expect(refused.message).not.toContain(wrongKey.slice(0, 12));
      const t0 = Date.now();
      const unreachable = await storeError(() => Store.open(`az://${container}/x`, { env: { ...env, AZURE_STORAGE_ENDPOINT: "http://127.0.0.1:1/devstoreaccount1" } }));
      expect(unreachable.message).toMatch(/can't be reached/);
      expect(Date.now() - t0).toBeLessThan(20_000);
      expect((await storeError(() => Store.open(`az://${container}/none`, { env }))).message).toMatch(/No mm store at az:\/\//);
      expect(await readdir(cwd)).toEqual([]);
    } finally {
      process.chdir(was);
    }
  });

  it("with AZURE_STORAGE_USE_EMULATOR beside AZURE_STORAGE_ENDPOINT, uses the endpoint (the emulator's account and key, sent there)", async () => {
    const uri = `az://${await azurite().container()}/emulated`;
    const env = { AZURE_STORAGE_USE_EMULATOR: "true", AZURE_STORAGE_ENDPOINT: azurite().env.AZURE_STORAGE_ENDPOINT, XDG_STATE_HOME: await tempDir() };
    const place = placeOf(uri) as Extract<ReturnType<typeof placeOf>, { kind: "object" }>;
    const options = objectStorageOptions(place, env);
    expect(options).toMatchObject({ azure_storage_account_name: "devstoreaccount1", azure_endpoint: env.AZURE_STORAGE_ENDPOINT, allow_http: "true" });
    expect(options).not.toHaveProperty("azure_storage_use_emulator");
    // Before, LanceDB went to 127.0.0.1:10000 and mm said the endpoint "can't be reached". Here the
    // emulator runs on another port: the store works.
    const ctx = await open(uri, env);
    const m = await createMemory(ctx, { content: "The emulator's endpoint is used", userId: "e" });
    expect((await getMemory(ctx, m.id)).content).toBe("The emulator's endpoint is used");
    await ctx.close();
  });

  it("names the address it really called when AZURE_STORAGE_USE_EMULATOR alone sends it to the emulator's default", async () => {
    const place = placeOf("az://nowhere/store") as Extract<ReturnType<typeof placeOf>, { kind: "object" }>;
    const options = objectStorageOptions(place, { AZURE_STORAGE_USE_EMULATOR: "1" });
    expect(options).toMatchObject({ azure_storage_use_emulator: "true", azure_storage_account_name: "devstoreaccount1" });
    const err = objectStoreError(new Error("error sending request for url (http://127.0.0.1:10000/devstoreaccount1/nowhere): Connection refused"), place, options);
    expect(err.message).toContain("http://127.0.0.1:10000/devstoreaccount1");
    expect(err.message).toContain("can't be reached");
  });

  it("reads S3 and GCS credentials from their standard variables, and names the missing one", () => {
    const s3 = placeOf("s3://my-bucket/mm") as Extract<ReturnType<typeof placeOf>, { kind: "object" }>;
    expect(objectStorageOptions(s3, { AWS_ACCESS_KEY_ID: "id", AWS_SECRET_ACCESS_KEY: "secret", AWS_REGION: "eu-west-1", AWS_ENDPOINT_URL: "http://127.0.0.1:9000" })).toMatchObject({
      aws_access_key_id: "id",
      aws_secret_access_key: "secret",
      aws_region: "eu-west-1",
      aws_endpoint: "http://127.0.0.1:9000",
      allow_http: "true",
    });
    expect(() => objectStorageOptions(s3, { AWS_ACCESS_KEY_ID: "id" })).toThrow(/AWS_SECRET_ACCESS_KEY is not set/);
    expect(() => objectStorageOptions(s3, {})).toThrow(/AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/);
    const gs = placeOf("gs://my-bucket") as Extract<ReturnType<typeof placeOf>, { kind: "object" }>;
    expect(objectStorageOptions(gs, { GOOGLE_SERVICE_ACCOUNT: "/k.json" })).toMatchObject({ google_service_account: "/k.json" });
    expect(() => objectStorageOptions(gs, {})).toThrow(/GOOGLE_SERVICE_ACCOUNT/);
  });

  it("keeps a URI as written (never a local directory) and coordinates in a state directory named after it", () => {
    expect(resolveStorePath("az://mm-store/prod", {})).toBe("az://mm-store/prod");
    expect(resolveStorePath(undefined, { MM_STORE: " s3://bucket-1/x " })).toBe("s3://bucket-1/x");
    const dir = coordinationDir(placeOf("az://mm-store/prod/"), { XDG_STATE_HOME: "/state" });
    expect(dir).toMatch(/^\/state\/mm\/stores\/[0-9a-f]{16}$/);
    expect(coordinationDir(placeOf("az://mm-store/prod"), { XDG_STATE_HOME: "/state" })).toBe(dir);
    expect(coordinationDir(placeOf("/a/local/store"), {})).toBe("/a/local/store");
  });
});
