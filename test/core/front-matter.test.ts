import { describe, expect, it } from "vitest";
import { emitFrontMatter, parseMarkdownFile } from "../../src/core/front-matter.js";

/** core/front-matter.ts: what mm writes it reads back as written; what it doesn't write, it refuses with the line. */
describe("front matter", () => {
  it("reads back every value it writes, strings that look like other YAML types included", () => {
    const fields = {
      id: "mem_01M992XB964VRK3YZA3DT73T",
      plain: "user-0",
      words: ["no", "yes", "true", "null", "~", "123", "1e5", "0x1F", "2026-11-23", "-", "- x", "a: b", "a #b", "#x", " lead", "trail ", "", "'q'", '"dq"', "&a", "*a", "!tag", "|", ">", "日本語", "tab\there", "line\nbreak", "\u2028", "\u0085", "\u2029", "\\"],
      number: 1.5,
      yes: true,
      nothing: null,
      metadata: { z: 1, a: [1, "two", null], nested: { "__proto__": 1 } },
      history: [{ type: "version", at: "2026-01-01T00:00:00.000Z", content: "old" }],
    };
    const text = emitFrontMatter(fields) + "body\n";
    const parsed = parseMarkdownFile(text, "f.md");
    expect(parsed.body).toBe("body\n");
    expect({ ...parsed.fields }).toEqual(JSON.parse(JSON.stringify(fields)));
  });

  it("reads what people write by hand: comments, block lists, single quotes, CRLF, a key with nothing under it", () => {
    const { fields, body } = parseMarkdownFile("---\r\n# a comment\r\ntags:\r\n  - one\r\n  - 'it''s'\r\nempty:\r\nagentId: bot # trailing\r\n---\r\ntext", "f.md");
    expect({ ...fields }).toEqual({ tags: ["one", "it's"], empty: null, agentId: "bot" });
    expect(body).toBe("text");
    expect(parseMarkdownFile("no front matter\n", "f.md")).toEqual({ fields: null, body: "no front matter\n" });
  });

  it.each([
    ["a: &x [1]\nb: *x", /line 2: YAML anchors and aliases/],
    ["a: !!str x", /line 2: YAML tags/],
    ["a: |\n  text", /line 2: block scalars/],
    ["a:\n  b: 1", /line 3: nested mappings/],
    ["<<: {}", /line 2: "<<" is not a field name/],
    ["a: 1\na: 2", /line 3: a is given twice/],
    ["a: [1,", /line 2: a flow value/],
    ['a: "\\x41"', /line 2: a double-quoted string/],
    ["  - stray", /line 2: a list item belongs under a key/],
    ["just words", /line 2: not YAML/],
    ["a: @x", /line 2: "@x" must be quoted/],
  ])("refuses %j", (yaml, message) => {
    expect(() => parseMarkdownFile(`---\n${yaml}\n---\nbody\n`, "notes/x.md")).toThrow(message);
    expect(() => parseMarkdownFile(`---\n${yaml}\n---\nbody\n`, "notes/x.md")).toThrow(/^notes\/x\.md, line/);
  });

  it("refuses front matter that never closes", () => {
    expect(() => parseMarkdownFile("---\na: 1\nbody\n", "x.md")).toThrow(/x\.md, line 1: its front matter opens with --- and never closes/);
  });
});
