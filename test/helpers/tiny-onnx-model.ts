import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * A complete, tiny Hugging Face–style sentence-embedding model written from scratch, so the
 * transformers provider can be tested with real loading code and no network. The ONNX graph is
 * one `Gather` of a seeded embedding table by `input_ids`: every token's hidden state is its own
 * table row (no attention), which makes the expected pooled vectors computable by hand.
 */

export type TinyPooling = "mean" | "cls" | "max" | "none";

export interface TinyModelOptions {
  /** Written to `1_Pooling/config.json`; "none" writes no sentence-transformers files at all. */
  pooling?: TinyPooling;
  /** Adds a `sentence_transformers.models.Normalize` module to `modules.json`. */
  normalize?: boolean;
  hidden?: number;
  /** PRNG seed of the embedding table. */
  seed?: number;
}

export const TINY_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] as const;
export const TINY_WORDS = [
  "the", "a", "cat", "dog", "sat", "on", "mat", "user", "likes", "coffee",
  "tea", "in", "morning", "evening", "works", "at", "bank", "river", "lives", "paris",
  "london", "berlin", "red", "blue", "green", "car", "bike", "train", "reads", "books",
  "memory", "search", "vector", "local", "first", "alice", "bob", "and", "is", "my",
] as const;
/** Token id = index in this list. */
export const TINY_VOCAB: readonly string[] = [...TINY_SPECIAL, ...TINY_WORDS, ".", ",", "!", "?"];
export const TINY_IDS = { pad: 0, unk: 1, cls: 2, sep: 3, mask: 4 } as const;
export const TINY_DEFAULT_HIDDEN = 16;
const DEFAULT_SEED = 1234;

/** mulberry32: small, seeded, identical on every platform. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The model's embedding table, row-major [vocab][hidden], values in [-1, 1). */
export function tinyEmbeddingTable(hidden = TINY_DEFAULT_HIDDEN, seed = DEFAULT_SEED): Float32Array {
  const next = rng(seed);
  const table = new Float32Array(TINY_VOCAB.length * hidden);
  for (let i = 0; i < table.length; i++) table[i] = next() * 2 - 1;
  return table;
}

export function tinyRow(table: Float32Array, id: number, hidden = TINY_DEFAULT_HIDDEN): Float32Array {
  return table.subarray(id * hidden, (id + 1) * hidden);
}

/**
 * What the BERT tokenizer yields for simple texts (lower-cased words and . , ! ?), with
 * [CLS] and [SEP] around them. Enough for tests to compute expected vectors independently.
 */
export function tinyTokenIds(text: string): number[] {
  const ids: number[] = [TINY_IDS.cls];
  for (const piece of text.toLowerCase().match(/[a-z0-9]+|[^\sa-z0-9]/g) ?? []) {
    const id = TINY_VOCAB.indexOf(piece);
    ids.push(id >= 0 ? id : TINY_IDS.unk);
  }
  ids.push(TINY_IDS.sep);
  return ids;
}

// ---------------------------------------------------------------------------------------------
// A minimal protobuf writer: just the wire types ONNX's ModelProto needs.

type Bytes = number[];

function varint(n: number | bigint): Bytes {
  let v = BigInt(n);
  if (v < 0n) v = BigInt.asUintN(64, v);
  const out: Bytes = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return out;
}

const key = (field: number, wire: number): Bytes => varint((field << 3) | wire);
const int = (field: number, n: number | bigint): Bytes => [...key(field, 0), ...varint(n)];
function bytes(field: number, data: Bytes | Uint8Array): Bytes {
  return [...key(field, 2), ...varint(data.length), ...data];
}
const str = (field: number, s: string): Bytes => bytes(field, [...Buffer.from(s, "utf8")]);
const msg = (field: number, ...parts: Bytes[]): Bytes => bytes(field, parts.flat());

const FLOAT = 1;
const INT64 = 7;

/** TensorShapeProto.Dimension: a number is dim_value, a string is a symbolic dim_param. */
function shape(dims: (number | string)[]): Bytes {
  return dims.flatMap((d) => msg(1, typeof d === "number" ? int(1, d) : str(2, d)));
}

function valueInfo(field: number, name: string, elemType: number, dims: (number | string)[]): Bytes {
  const tensorType = [...int(1, elemType), ...msg(2, shape(dims))];
  return msg(field, str(1, name), msg(2, msg(1, tensorType)));
}

/** The ONNX bytes of `last_hidden_state = Gather(embeddings, input_ids, axis=0)`. */
export function tinyOnnxModel(table: Float32Array, vocab: number, hidden: number): Uint8Array {
  const raw = new Uint8Array(table.buffer, table.byteOffset, table.byteLength);
  const initializer = msg(5, int(1, vocab), int(1, hidden), int(2, FLOAT), str(8, "embeddings"), bytes(9, raw));
  const node = msg(
    1,
    str(1, "embeddings"),
    str(1, "input_ids"),
    str(2, "last_hidden_state"),
    str(3, "gather"),
    str(4, "Gather"),
    msg(5, str(1, "axis"), int(3, 0), int(20, 2 /* AttributeProto.INT */)),
  );
  const graph = msg(
    7,
    node,
    str(2, "tiny_bert"),
    initializer,
    // transformers.js feeds every input a BERT session declares, so declare all three even
    // though only input_ids is used; ONNX Runtime accepts unused graph inputs.
    valueInfo(11, "input_ids", INT64, ["batch_size", "sequence_length"]),
    valueInfo(11, "attention_mask", INT64, ["batch_size", "sequence_length"]),
    valueInfo(11, "token_type_ids", INT64, ["batch_size", "sequence_length"]),
    valueInfo(12, "last_hidden_state", FLOAT, ["batch_size", "sequence_length", hidden]),
  );
  return Uint8Array.from([
    ...int(1, 8), // ir_version
    ...str(2, "mm-tests"), // producer_name
    ...graph,
    ...msg(8, str(1, ""), int(2, 13)), // opset_import
  ]);
}

// ---------------------------------------------------------------------------------------------

function tokenizerJson(): unknown {
  const vocab = Object.fromEntries(TINY_VOCAB.map((t, i) => [t, i]));
  const special = (id: string) => ({ SpecialToken: { id, type_id: 0 } });
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: TINY_SPECIAL.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: {
      type: "TemplateProcessing",
      single: [special("[CLS]"), { Sequence: { id: "A", type_id: 0 } }, special("[SEP]")],
      pair: [
        special("[CLS]"),
        { Sequence: { id: "A", type_id: 0 } },
        special("[SEP]"),
        { Sequence: { id: "B", type_id: 1 } },
        { SpecialToken: { id: "[SEP]", type_id: 1 } },
      ],
      special_tokens: {
        "[CLS]": { id: "[CLS]", ids: [TINY_IDS.cls], tokens: ["[CLS]"] },
        "[SEP]": { id: "[SEP]", ids: [TINY_IDS.sep], tokens: ["[SEP]"] },
      },
    },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab },
  };
}

/**
 * Writes a tiny local model directory laid out like a sentence-transformers repo exported to
 * ONNX: config.json, tokenizer files, modules.json, 1_Pooling/config.json and onnx/model.onnx.
 * transformers.js 4 loads fp32 (`onnx/model.onnx`) on CPU by default; the quantized name is
 * written too, so a loader asking for q8 finds a file.
 */
export async function writeTinyModel(dir: string, opts: TinyModelOptions = {}): Promise<void> {
  const hidden = opts.hidden ?? TINY_DEFAULT_HIDDEN;
  const pooling = opts.pooling ?? "mean";
  const table = tinyEmbeddingTable(hidden, opts.seed ?? DEFAULT_SEED);
  const onnx = tinyOnnxModel(table, TINY_VOCAB.length, hidden);
  const json = (file: string, value: unknown) => writeFile(join(dir, file), JSON.stringify(value, null, 2));

  await mkdir(join(dir, "onnx"), { recursive: true });
  await writeFile(join(dir, "onnx", "model.onnx"), onnx);
  await writeFile(join(dir, "onnx", "model_quantized.onnx"), onnx);
  await json("config.json", {
    architectures: ["BertModel"],
    model_type: "bert",
    hidden_size: hidden,
    vocab_size: TINY_VOCAB.length,
    num_hidden_layers: 1,
    num_attention_heads: 1,
    intermediate_size: hidden,
    hidden_act: "gelu",
    max_position_embeddings: 512,
    type_vocab_size: 2,
    pad_token_id: TINY_IDS.pad,
    layer_norm_eps: 1e-12,
    transformers_version: "4.44.0",
  });
  await json("tokenizer.json", tokenizerJson());
  await json("tokenizer_config.json", {
    tokenizer_class: "BertTokenizer",
    do_lower_case: true,
    model_max_length: 512,
    cls_token: "[CLS]",
    sep_token: "[SEP]",
    pad_token: "[PAD]",
    unk_token: "[UNK]",
    mask_token: "[MASK]",
    clean_up_tokenization_spaces: true,
  });
  await json("special_tokens_map.json", {
    cls_token: "[CLS]",
    sep_token: "[SEP]",
    pad_token: "[PAD]",
    unk_token: "[UNK]",
    mask_token: "[MASK]",
  });
  if (pooling === "none") return;

  const modules: unknown[] = [
    { idx: 0, name: "0", path: "", type: "sentence_transformers.models.Transformer" },
    { idx: 1, name: "1", path: "1_Pooling", type: "sentence_transformers.models.Pooling" },
  ];
  if (opts.normalize) modules.push({ idx: 2, name: "2", path: "2_Normalize", type: "sentence_transformers.models.Normalize" });
  await json("modules.json", modules);
  await json("sentence_bert_config.json", { max_seq_length: 128, do_lower_case: false });
  await mkdir(join(dir, "1_Pooling"), { recursive: true });
  await json("1_Pooling/config.json", {
    word_embedding_dimension: hidden,
    pooling_mode_cls_token: pooling === "cls",
    pooling_mode_mean_tokens: pooling === "mean",
    pooling_mode_max_tokens: pooling === "max",
    pooling_mode_mean_sqrt_len_tokens: false,
    pooling_mode_weightedmean_tokens: false,
    pooling_mode_lasttoken: false,
    include_prompt: true,
  });
}
