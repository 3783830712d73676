/**
 * Masking of secrets (an embedding provider's API key) in text that leaves the process: error
 * messages, the server log. Servers echo the keys they reject in many shapes, so one
 * `split(key)` is not enough: a truncated copy, a piece from its middle, a lowercased or
 * uppercased copy, its hex, the key inside a base64 `Authorization` or basic-auth value, a
 * URL-encoded copy all give it away.
 */

const MASK = "***";
/** Prefixes and suffixes shorter than this are too common to mask and give too little away to matter. */
const MIN_PART = 6;
/** Any run of this many characters of the key (or of its hex), wherever in the key it starts, is masked. */
const MIN_PIECE = 8;

/** `text` with every form of every secret replaced by `***`. Secrets shorter than 6 characters are masked only whole. */
export function maskSecrets(text: string, secrets: readonly (string | undefined)[]): string {
  const spans: [number, number][] = [];
  const lower = text.toLowerCase();
  for (const secret of secrets) {
    if (!secret) continue;
    for (const form of encodedForms(secret)) spans.push(...occurrences(text, form, form.length));
    // Case-insensitive: the key itself and its hex, whole or in pieces.
    const folded = secret.toLowerCase();
    const hex = Buffer.from(secret, "utf8").toString("hex");
    for (const form of [folded, hex]) {
      spans.push(...occurrences(lower, form, form.length));
      spans.push(...pieces(lower, form));
    }
    if (secret.length >= MIN_PART) {
      spans.push(...occurrences(lower, folded.slice(0, MIN_PART), MIN_PART));
      spans.push(...occurrences(lower, folded.slice(-MIN_PART), MIN_PART));
    }
  }
  return replaceSpans(text, spans);
}

/** The whole secret as it may be written: URL-encoded, and base64 of any text holding it (case matters in these). */
function encodedForms(secret: string): string[] {
  const forms = new Set([secret, encodeURIComponent(secret)]);
  const bytes = Buffer.from(secret, "utf8");
  // base64 of a text that contains the secret at byte offset k depends on k mod 3. For each of
  // the three alignments, the characters computed from the secret's bytes alone are the same
  // whatever surrounds it: mask those (dropping the partial groups at both ends).
  for (let offset = 0; offset < 3; offset++) {
    const shifted = Buffer.concat([Buffer.alloc(offset), bytes]);
    for (const encoding of ["base64", "base64url"] as const) {
      const b64 = shifted.toString(encoding).replace(/=+$/, "");
      const core = b64.slice(offset ? 4 : 0, -4);
      if (core.length >= 8) forms.add(core);
      if (offset === 0) forms.add(b64);
    }
  }
  return [...forms];
}

function occurrences(text: string, needle: string, length: number): [number, number][] {
  const out: [number, number][] = [];
  if (!needle) return out;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) out.push([at, at + length]);
  return out;
}

/** Every run of MIN_PIECE characters of `text` that also occurs in `secret`; overlapping runs merge into one. */
function pieces(text: string, secret: string): [number, number][] {
  if (secret.length < MIN_PIECE) return [];
  const grams = new Set<string>();
  for (let i = 0; i + MIN_PIECE <= secret.length; i++) grams.add(secret.slice(i, i + MIN_PIECE));
  const out: [number, number][] = [];
  for (let i = 0; i + MIN_PIECE <= text.length; i++) if (grams.has(text.slice(i, i + MIN_PIECE))) out.push([i, i + MIN_PIECE]);
  return out;
}

/** `text` with each union of overlapping spans replaced by one mask. */
function replaceSpans(text: string, spans: [number, number][]): string {
  if (!spans.length) return text;
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = "";
  let from = 0;
  let open: [number, number] | undefined;
  for (const [start, end] of spans) {
    if (open && start <= open[1]) {
      open[1] = Math.max(open[1], end);
      continue;
    }
    if (open) {
      out += text.slice(from, open[0]) + MASK;
      from = open[1];
    }
    open = [start, end];
  }
  out += text.slice(from, open![0]) + MASK;
  return out + text.slice(open![1]);
}
