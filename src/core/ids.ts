import { createHash, randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"; // Crockford base32: sortable, no I L O U
const TIME_CHARS = 10; // 50 bits of milliseconds: good until the year 37,000
const RANDOM_CHARS = 14; // 70 bits

let lastTime = -1;
let lastRandom: number[] = [];

/**
 * `<prefix>_` + 24 characters: 10 of time, 14 of randomness, in an alphabet whose order matches
 * byte order. Ids sort by creation time, and within one millisecond the random part is
 * incremented (ULID-style monotonicity), so ids from one process are strictly increasing.
 */
export function newId(prefix: "mem" | "ent" | "rel" | "key" | "acct", now = Date.now()): string {
  let random: number[];
  if (now <= lastTime) {
    random = increment(lastRandom);
    now = lastTime;
  } else {
    random = Array.from(randomBytes(RANDOM_CHARS), (b) => b & 31);
  }
  lastTime = now;
  lastRandom = random;
  let time = "";
  for (let i = TIME_CHARS - 1, t = now; i >= 0; i--, t = Math.floor(t / 32)) time = ALPHABET[t % 32] + time;
  return `${prefix}_${time}${random.map((d) => ALPHABET[d]).join("")}`;
}

function increment(digits: number[]): number[] {
  const out = [...digits];
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i] < 31) {
      out[i]++;
      return out;
    }
    out[i] = 0;
  }
  return out; // 2^70 ids in one millisecond: wraps, still unique in practice
}

/**
 * An id of the usual form made from `seed` instead of chance: the same seed gives the same id, so
 * an import that renames ids (`--remap-ids`, or ids from another system) can be run again and
 * find what it wrote the first time. The time part is `time` (the record's creation), so derived
 * ids still sort by creation time.
 */
export function derivedId(prefix: "mem" | "ent" | "rel", seed: string, time: number): string {
  const digest = createHash("sha256").update(seed).digest();
  let out = "";
  for (let i = TIME_CHARS - 1, t = Math.max(0, Math.floor(time)); i >= 0; i--, t = Math.floor(t / 32)) out = ALPHABET[t % 32] + out;
  for (let i = 0; i < RANDOM_CHARS; i++) out += ALPHABET[digest[i] & 31];
  return `${prefix}_${out}`;
}
