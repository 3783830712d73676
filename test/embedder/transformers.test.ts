import { createServer as createHttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MmError } from "../../src/errors.js";
import { rejection } from "../helpers/errors.js";
import { importTransformers, transformersProvider } from "../../src/embedder/transformers.js";
import type { Embedder, EmbedderConfig } from "../../src/embedder/types.js";
import {
  TINY_DEFAULT_HIDDEN as H,
  TINY_IDS,
  tinyEmbeddingTable,
  tinyRow,
  tinyTokenIds,
  writeTinyModel,
} from "../helpers/tiny-onnx-model.js";

const env = {};
const TEXTS = ["The cat sat on the mat.", "Alice likes coffee in the morning", "bob works at the bank", "red car"];

let dir: string;
let open: Embedder[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "mm-transformers-"));
  open = [];
});
afterEach(async () => {
  await Promise.all(open.map((e) => e.close?.()));
  await rm(dir, { recursive: true, force: true });
});

function create(config: EmbedderConfig): Embedder {
  const e = transformersProvider.create(config, env);
  open.push(e);
  return e;
}

async function tinyModel(opts: Parameters<typeof writeTinyModel>[1] = {}): Promise<string> {
  const modelDir = join(dir, "model");
  await writeTinyModel(modelDir, opts);
  return modelDir;
}

function norm(v: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  return Math.sqrt(s);
}

function unit(v: ArrayLike<number>): number[] {
  const n = norm(v);
  return Array.from(v, (x) => x / n);
}

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) expect(actual[i]).toBeCloseTo(expected[i], 5);
}

const caught = (p: Promise<unknown>) => rejection(p, MmError);

/** A TCP server that accepts connections and never answers: a network that hangs. */
async function hangingServer(): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  let count = 0;
  const server: Server = createServer((s) => {
    count++;
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => count,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A stand-in for the Hugging Face Hub serving `/<org>/<name>/resolve/main/<file>` from `root`. */
async function fakeHub(root: string): Promise<{ url: string; requests: string[]; close: () => Promise<void> }> {
  const requests: string[] = [];
  const server = createHttpServer(async (req, res) => {
    requests.push(req.url ?? "");
    const m = /^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/.exec(req.url ?? "");
    const file = m ? join(root, m[1], decodeURIComponent(m[2])) : "";
    if (!m || file.includes("..") || !existsSync(file)) {
      res.writeHead(404).end("Entry not found");
      return;
    }
    const body = await readFile(file);
    res.writeHead(200, { "content-length": body.length, "content-type": "application/octet-stream" }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe("configure", () => {
  it("reads dims from the model and pooling from 1_Pooling/config.json", async () => {
    const model = await tinyModel({ pooling: "cls", normalize: true, hidden: 24 });
    const config = await transformersProvider.configure({ model, env });
    expect(config).toEqual({
      provider: "transformers",
      model,
      dims: 24,
      options: { pooling: "cls", normalize: true, maxLength: 128 },
    });
  });

  it("records mean pooling and no normalisation from a mean-pooling config", async () => {
    const config = await transformersProvider.configure({ model: await tinyModel({ pooling: "mean" }), env });
    expect(config.dims).toBe(H);
    expect(config.options).toMatchObject({ pooling: "mean", normalize: false });
  });

  it("defaults to mean pooling when the model has no sentence-transformers config", async () => {
    const config = await transformersProvider.configure({ model: await tinyModel({ pooling: "none" }), env });
    expect(config.dims).toBe(H);
    expect(config.options).toEqual({ pooling: "mean", normalize: false });
  });

  it("accepts matching dims and rejects others with VALIDATION_ERROR", async () => {
    const model = await tinyModel();
    expect((await transformersProvider.configure({ model, dims: H, env })).dims).toBe(H);
    const err = await caught(transformersProvider.configure({ model, dims: 384, env }));
    expect(err.code).toBe("VALIDATION_ERROR");
    expect(err.message).toContain(`${H} dims, not 384`);
  });

  it("refuses a model whose modules it cannot apply (a Dense layer)", async () => {
    const model = await tinyModel();
    await writeFile(
      join(model, "modules.json"),
      JSON.stringify([
        { idx: 0, name: "0", path: "", type: "sentence_transformers.models.Transformer" },
        { idx: 1, name: "1", path: "1_Pooling", type: "sentence_transformers.models.Pooling" },
        { idx: 2, name: "2", path: "2_Dense", type: "sentence_transformers.models.Dense" },
      ]),
    );
    const err = await caught(transformersProvider.configure({ model, env }));
    expect(err.code).toBe("VALIDATION_ERROR");
    expect(err.message).toContain("sentence_transformers.models.Dense");
  });

  it("loads a Hub model id from the cache dir without touching the network", async () => {
    const cacheDir = join(dir, "cache");
    await writeTinyModel(join(cacheDir, "test-org", "tiny-bert"), { pooling: "cls" });
    const hub = await hangingServer();
    try {
      const config = await transformersProvider.configure({ model: "test-org/tiny-bert", cacheDir, env });
      expect(config).toMatchObject({ model: "test-org/tiny-bert", dims: H, options: { pooling: "cls", cacheDir } });
      const e = create({ ...config, options: { ...config.options, remoteHost: hub.url } });
      expect(e.id).toBe("transformers:test-org/tiny-bert");
      const [v] = await e.embed(["hello"]);
      expectClose(v, unit(tinyRow(tinyEmbeddingTable(), TINY_IDS.cls)));
      expect(hub.connections()).toBe(0);
    } finally {
      await hub.close();
    }
  });
});

describe("download", () => {
  it("downloads a Hub model into the cache dir, then loads it with no network", async () => {
    await writeTinyModel(join(dir, "hub", "test-org", "served"), { pooling: "cls", normalize: true });
    const cacheDir = join(dir, "cache");
    const hub = await fakeHub(join(dir, "hub"));
    let config: EmbedderConfig;
    try {
      config = await transformersProvider.configure({ model: "test-org/served", cacheDir, env: { HF_ENDPOINT: hub.url } });
      expect(hub.requests.some((u) => u.endsWith("/onnx/model.onnx"))).toBe(true);
      expect(hub.requests.some((u) => u.endsWith("/1_Pooling/config.json"))).toBe(true);
    } finally {
      await hub.close();
    }
    expect(config).toEqual({
      provider: "transformers",
      model: "test-org/served",
      dims: H,
      options: { pooling: "cls", normalize: true, maxLength: 128, cacheDir },
    });
    for (const f of ["config.json", "tokenizer.json", "onnx/model.onnx", "modules.json", "1_Pooling/config.json"]) {
      expect(existsSync(join(cacheDir, "test-org", "served", f)), f).toBe(true);
    }
    // The hub is gone; a fresh embedder (no pooling in options) reads everything from the cache.
    const e = create({ ...config, options: { cacheDir, timeoutMs: 3000 } });
    expectClose((await e.embed(["river bank"]))[0], unit(tinyRow(tinyEmbeddingTable(), TINY_IDS.cls)));
  });
});

describe("create", () => {
  it("is lazy: a missing model fails on the first embed, not at construction", async () => {
    const model = join(dir, "does-not-exist");
    const e = create({ provider: "transformers", model, dims: H });
    expect(e).toMatchObject({ id: `transformers:${model}`, provider: "transformers", model, dims: H });
    const err = await caught(e.embed(["hello"]));
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
  });

  it("rejects bad settings with VALIDATION_ERROR", () => {
    const base = { provider: "transformers", model: "/nowhere", dims: H };
    for (const config of [
      { ...base, dims: 0 },
      { ...base, dims: 1.5 },
      { ...base, options: { pooling: "median" } },
      { ...base, options: { timeoutMs: -1 } },
      { ...base, options: { batchSize: "32" } },
      { ...base, model: "" },
    ]) {
      expect(() => transformersProvider.create(config, env), JSON.stringify(config)).toThrow(
        expect.objectContaining({ code: "VALIDATION_ERROR" }),
      );
    }
  });
});

describe("embed", () => {
  it("returns unit vectors of the configured length, deterministically", async () => {
    const config = await transformersProvider.configure({ model: await tinyModel(), env });
    const e = create(config);
    const a = await e.embed(TEXTS);
    expect(a).toHaveLength(TEXTS.length);
    for (const v of a) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v).toHaveLength(H);
      expect(norm(v)).toBeCloseTo(1, 5);
    }
    expect(await e.embed(TEXTS)).toEqual(a);
    expect(await create(config).embed([...TEXTS].reverse())).toEqual([...a].reverse());
    const [x, y] = await e.embed(["same text", "same text"]);
    expect(x).toEqual(y);
    for (let i = 1; i < a.length; i++) expect(a[i]).not.toEqual(a[0]);
    expect(await e.embed([])).toEqual([]);
  });

  it("batches internally without padding changing any vector", async () => {
    const e = create(await transformersProvider.configure({ model: await tinyModel(), env }));
    const texts = Array.from({ length: 70 }, (_, i) => (i % 7 === 0 ? TEXTS[1] : TEXTS[i % 4].split(" ").slice(0, 1 + (i % 5)).join(" ")));
    const all = await e.embed(texts);
    expect(all).toHaveLength(70);
    for (const i of [0, 1, 33, 69]) expectClose(all[i], (await e.embed([texts[i]]))[0]);
  });

  it("CLS pooling gives the normalised [CLS] row for every input", async () => {
    const e = create(await transformersProvider.configure({ model: await tinyModel({ pooling: "cls" }), env }));
    const expected = unit(tinyRow(tinyEmbeddingTable(), TINY_IDS.cls));
    for (const v of await e.embed(TEXTS)) expectClose(v, expected);
  });

  it("mean pooling gives the normalised mean of the token rows, padding excluded", async () => {
    const table = tinyEmbeddingTable();
    const e = create(await transformersProvider.configure({ model: await tinyModel({ pooling: "mean" }), env }));
    const texts = [...TEXTS, "zebra unknown words"];
    const vectors = await e.embed(texts);
    texts.forEach((text, i) => {
      const ids = tinyTokenIds(text);
      const mean = new Array<number>(H).fill(0);
      for (const id of ids) tinyRow(table, id).forEach((x, d) => (mean[d] += x / ids.length));
      expectClose(vectors[i], unit(mean));
    });
  });

  it("max pooling takes the element-wise maximum over real tokens", async () => {
    const table = tinyEmbeddingTable();
    const e = create(await transformersProvider.configure({ model: await tinyModel({ pooling: "max" }), env }));
    const vectors = await e.embed(TEXTS);
    TEXTS.forEach((text, i) => {
      const max = new Array<number>(H).fill(-Infinity);
      for (const id of tinyTokenIds(text)) tinyRow(table, id).forEach((x, d) => (max[d] = Math.max(max[d], x)));
      expectClose(vectors[i], unit(max));
    });
  });

  it("follows options.pooling from the stored config, not the model's files", async () => {
    const model = await tinyModel({ pooling: "mean" });
    const e = create({ provider: "transformers", model, dims: H, options: { pooling: "cls" } });
    expectClose((await e.embed(["bob"]))[0], unit(tinyRow(tinyEmbeddingTable(), TINY_IDS.cls)));
  });

  it("concatenates several pooling modes like sentence-transformers", async () => {
    const model = await tinyModel();
    const e = create({ provider: "transformers", model, dims: 2 * H, options: { pooling: "cls+mean" } });
    const [v] = await e.embed(["red car"]);
    expect(v).toHaveLength(2 * H);
    expect(norm(v)).toBeCloseTo(1, 5);
  });

  it("throws EMBEDDER_MISMATCH naming both dims when the config's dims are wrong", async () => {
    const config = await transformersProvider.configure({ model: await tinyModel(), env });
    const err = await caught(create({ ...config, dims: 384 }).embed(["hello"]));
    expect(err.code).toBe("EMBEDDER_MISMATCH");
    expect(err.message).toContain(String(H));
    expect(err.message).toContain("384");
  });
});

describe("unavailable model", () => {
  it("a missing local directory fails fast, naming the path", async () => {
    const model = join(dir, "no-such-model");
    const started = Date.now();
    const err = await caught(create({ provider: "transformers", model, dims: H }).embed(["hello"]));
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
    expect(err.message).toContain(model);
    expect(err.message).toMatch(/local copy/);
  });

  it("a directory without model files says which are missing", async () => {
    const model = await tinyModel();
    await rm(join(model, "tokenizer.json"));
    const err = await caught(transformersProvider.configure({ model, env }));
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
    expect(err.message).toContain("tokenizer.json");
  });

  it("an unknown Hub id with no network and no cached copy fails fast, naming the model", async () => {
    const cacheDir = join(dir, "cache");
    const started = Date.now();
    const err = await caught(
      create({ provider: "transformers", model: "mm-test/no-such-model", dims: H, options: { cacheDir, timeoutMs: 3000 } }).embed(["hello"]),
    );
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
    expect(err.message).toContain('"mm-test/no-such-model"');
    expect(err.message).toMatch(/local copy/);
    expect(err.message).toMatch(/network/);
  });

  it("a Hub that never answers times out after options.timeoutMs instead of hanging", async () => {
    const hub = await hangingServer();
    try {
      const started = Date.now();
      const e = create({
        provider: "transformers",
        model: "mm-test/hangs",
        dims: H,
        options: { cacheDir: join(dir, "cache"), timeoutMs: 3000, remoteHost: hub.url },
      });
      const err = await caught(e.embed(["hello"]));
      const elapsed = Date.now() - started;
      expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
      expect(err.message).toContain("mm-test/hangs");
      expect(err.message).toContain("3000 ms");
      expect(hub.connections()).toBeGreaterThan(0);
      expect(elapsed).toBeGreaterThanOrEqual(2_500);
      expect(elapsed).toBeLessThan(15_000);
    } finally {
      await hub.close();
    }
  });

  it("configure fails the same way, so mm init reports it", async () => {
    const err = await caught(transformersProvider.configure({ model: join(dir, "absent"), env }));
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
  });

  it("says to install the package when @huggingface/transformers is absent", async () => {
    const err = await caught(importTransformers("@huggingface/transformers-not-installed"));
    expect(err.code).toBe("EMBEDDER_UNAVAILABLE");
    expect(err.message).toContain("install @huggingface/transformers");
  });
});
