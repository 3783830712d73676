/**
 * Masking of secrets (an embedding provider's API key) in text that leaves the process: error
 * messages, the server log. Servers echo the keys they reject in many shapes, so one
 * `split(key)` is not enough: a truncated copy, the key inside a base64 `Authorization` or
 * basic-auth value, a URL-encoded copy all give it away.
 */

const MASK = "***";
/** Prefixes and suffixes shorter than this are too common to mask and give too little away to matter. */
const MIN_PART = 6;

/** `text` with every form of every secret replaced by `***`. Secrets shorter than 6 characters are masked only whole. */
export function maskSecrets(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (!secret) continue;
    for (const form of encodedForms(secret)) out = out.split(form).join(MASK);
    if (secret.length >= MIN_PART) out = maskParts(out, secret);
  }
  return out;
}

/** The whole secret as it may be written: itself, URL-encoded, and base64 of any text holding it. */
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
  return [...forms].sort((a, b) => b.length - a.length);
}

/** Masks every run of text that is a prefix or a suffix of `secret` at least MIN_PART characters long. */
function maskParts(text: string, secret: string): string {
  const spans: [number, number][] = [];
  const head = secret.slice(0, MIN_PART);
  for (let at = text.indexOf(head); at !== -1; at = text.indexOf(head, at + 1)) {
    let end = at + MIN_PART;
    while (end - at < secret.length && text[end] === secret[end - at]) end++;
    spans.push([at, end]);
  }
  const tail = secret.slice(-MIN_PART);
  for (let at = text.indexOf(tail); at !== -1; at = text.indexOf(tail, at + 1)) {
    let start = at;
    while (secret.length - (at + MIN_PART - start) > 0 && start > 0 && text[start - 1] === secret[secret.length - (at + MIN_PART - start) - 1]) start--;
    spans.push([start, at + MIN_PART]);
  }
  if (!spans.length) return text;
  spans.sort((a, b) => a[0] - b[0]);
  let out = "";
  let from = 0;
  for (const [start, end] of spans) {
    if (end <= from) continue;
    out += text.slice(from, Math.max(from, start)) + (start >= from ? MASK : "");
    from = end;
  }
  return out + text.slice(from);
}
