import { describe, expect, it } from "vitest";
import { maskSecrets } from "../src/secrets.js";

const KEY = "sk-live-4fJ9qLmZ2xTb7Rw1Nc8Vd3Hs";

describe("maskSecrets", () => {
  it("masks the key whole, any prefix or suffix of 6+ characters, URL-encoded, and inside base64 at every alignment", () => {
    const forms = [
      KEY,
      KEY.slice(0, 6),
      KEY.slice(0, 20),
      KEY.slice(-6),
      KEY.slice(-11),
      encodeURIComponent(`${KEY}&x=1`),
      ...["", "B", "Be", "Bearer ", "user:"].flatMap((before) =>
        (["base64", "base64url"] as const).map((enc) => Buffer.from(`${before}${KEY} trailing`).toString(enc)),
      ),
    ];
    for (const form of forms) {
      const masked = maskSecrets(`error: ${form} (end)`, [KEY]);
      expect(masked, form).toContain("***");
      // What is left of a base64 form spells at most two of the key's bytes.
      for (let i = 0; i + 6 <= KEY.length; i++) expect(masked, form).not.toContain(KEY.slice(i, i + 6));
      for (const enc of ["base64", "base64url"] as const) expect(masked).not.toContain(Buffer.from(KEY).toString(enc).slice(4, 12));
    }
  });

  it("masks the key's hex (either case), a lowercased or uppercased copy, and any 8+ characters from its middle", () => {
    const hex = Buffer.from(KEY).toString("hex");
    for (const form of [hex, hex.toUpperCase(), KEY.toLowerCase(), KEY.toUpperCase(), KEY.slice(9, 18), KEY.slice(12, 20).toLowerCase(), hex.slice(10, 30)]) {
      const masked = maskSecrets(`error: ${form} (end)`, [KEY]);
      expect(masked, form).toBe("error: *** (end)");
    }
  });

  it("leaves other text alone, and masks a short secret only whole", () => {
    expect(maskSecrets("nothing secret here: sk-other-key", [KEY])).toBe("nothing secret here: sk-other-key");
    expect(maskSecrets("pin 1234 and 12345", ["1234"])).toBe("pin *** and ***5");
    expect(maskSecrets("no secrets configured", [undefined, ""])).toBe("no secrets configured");
  });
});
