import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { TOOLS } from "../../src/mcp/tools.js";
import { documentedFiles, runShell, shellBlocks, showsOutput, type ShellBlock } from "../helpers/doc-examples.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

/**
 * Every ```sh example in the README, CONTRIBUTING and docs/ runs here, exactly as printed (see
 * runShell for the two conventions), and must exit 0. Where a ```output block follows, the example
 * must print it (`…` stands for ids, times and scores).
 */
const files = await documentedFiles();
const blocks: ShellBlock[] = (await Promise.all(files.map(shellBlocks))).flat();
/** What each example printed, by block: the pages below are checked against it, rather than run a second time. */
const printed = new Map<ShellBlock, string>();

/**
 * What these pages' examples print, beyond exiting 0 and showing their ```output blocks: `outputs`
 * is each block's stdout, in the page's order.
 */
const PAGES_SAY: Record<string, (outputs: string[]) => void> = {
  "docs/agents.md": (outputs) => {
    expect(outputs.join("")).toMatch(new RegExp(`^${TOOLS.length}$`, "m"));
    expect(outputs.join("")).toMatch(/^Alice switched from coffee to green tea$/m);
  },
  "docs/import-export.md": (outputs) => {
    expect(outputs.join("")).toContain("identical but for the header's exportedAt");
    expect(outputs.join("")).toMatch(/^John_Smith: Speaks fluent Spanish$/m);
    expect(outputs.join("")).toMatch(/^2024-07-20T17:15:30\.123Z Prefers vegetarian food$/m);
  },
  "docs/safety.md": (outputs) => {
    expect(outputs).toHaveLength(3);
    const [modes, billing, depth] = outputs;
    expect(modes.trim().split("\n")).toEqual([expect.stringMatching(/^700 .*\/store$/), expect.stringMatching(/^600 .*config\.json$/), expect.stringMatching(/^700 .*ledger$/), "0"]);
    expect(JSON.parse(billing.trim().split("\n").pop()!)).toMatchObject({ name: "docs-demo", used: 2, limit: 1000 });
    expect(depth.trim()).toBe("refused, exit 2");
  },
};

describe("documented shell examples", () => {
  it("exist, and only the README's set-up commands are not run here (CI runs those)", () => {
    expect(blocks.length).toBeGreaterThan(10);
    const skipped = blocks.filter((b) => b.skip);
    for (const b of skipped) expect(b.file, `${b.file}:${b.line} is skipped: ${b.skip}`).toBe("README.md");
    expect(skipped.length).toBeLessThanOrEqual(1);
  });

  const runnable = blocks.filter((b) => !b.skip);
  it.each(runnable.map((b) => [`${b.file}:${b.line} (${b.heading})`, b] as const))("%s", async (_name, block) => {
    const r = await runShell(block.code, await tempDir());
    expect(r.code, `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`).toBe(0);
    printed.set(block, r.stdout);
    if (block.output !== undefined) {
      // runShell serves on a free port in place of 8080; what the reader sees says 8080.
      const shown = showsOutput(r.stdout.replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:8080"), block.output);
      expect(shown.ok, `missing line: ${shown.missing}\n--- stdout\n${r.stdout}`).toBe(true);
    }
  });
});

describe.each(Object.keys(PAGES_SAY))("%s", (file) => {
  it("its examples print what the page says", () => {
    const mine = blocks.filter((b) => b.file === file);
    expect(mine.length).toBeGreaterThan(0);
    const missing = mine.filter((b) => !printed.has(b)).map((b) => `${b.file}:${b.line}`);
    expect(missing, "examples that did not run, or failed, above").toEqual([]);
    PAGES_SAY[file](mine.map((b) => printed.get(b)!));
  });
});

describe("the README's first example", () => {
  it("adds a memory and finds it again at the default threshold", async () => {
    const first = blocks.find((b) => b.file === "README.md" && /mm memories add/.test(b.code) && /mm memories search/.test(b.code));
    expect(first, "a README block that adds and searches").toBeDefined();
    const added = first!.code.match(/mm memories add "([^"]+)"/)![1];
    const r = await runShell(first!.code, await tempDir());
    expect(r.code, r.stderr).toBe(0);
    // Piped, every command prints the API's JSON body on one line; each search finds the memory.
    const searches = r.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .filter((body) => "results" in body);
    expect(searches.length).toBeGreaterThan(0);
    for (const body of searches) expect(body.results.map((h: { content: string }) => h.content)).toContain(added);
  });
});

describe("the README's console commands", () => {
  it("print a link that signs in to the console the block's mm serve serves, and shows the memory", async () => {
    const block = blocks.find((b) => b.file === "README.md" && /^mm console$/m.test(b.code) && /mm serve/.test(b.code));
    expect(block, "a README block with mm serve and mm console").toBeDefined();
    const added = block!.code.match(/mm memories add "([^"]+)"/)![1];
    // The block's mm serve listens on a free port in place of 8080 (runShell): mm console finds
    // that port itself, from the record the running server keeps in the store.
    const code = block!.code.replace(/^mm console$/m, "LINK=$(mm console)");
    const r = await runShell(
      `${code}
curl -s -c cookies.txt -o /dev/null -w '%{http_code}\\n' "$LINK"
curl -s -b cookies.txt http://127.0.0.1:8080/console/memories`,
      await tempDir(),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split("\n")[0]).toBe("303");
    expect(r.stdout).toContain(added);
    expect(r.stdout).toContain("default");
  });
});

describe("documentation links", () => {
  it("every relative link points at a file of the repository, and nothing points outside it", async () => {
    const { readFile } = await import("node:fs/promises");
    const { dirname, join, normalize } = await import("node:path");
    const { ROOT } = await import("../helpers/doc-examples.js");
    for (const file of files) {
      const text = await readFile(join(ROOT, file), "utf8");
      expect(text, file).not.toMatch(/\.\.\/shared|decisions\.md|semantic-memory-api\.md/);
      // Links in running text (code spans and blocks only show what a link looks like).
      const prose = text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
      for (const [, target] of prose.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const resolved = normalize(join(dirname(join(ROOT, file)), target));
        expect(resolved.startsWith(ROOT), `${file} → ${target}`).toBe(true);
        expect(existsSync(resolved), `${file} → ${target}`).toBe(true);
      }
    }
  });

  it("every anchor names a heading of its file, and every (FILE, \"Section\") reference a section that exists", async () => {
    const { readFile, readdir } = await import("node:fs/promises");
    const { dirname, join, normalize, relative } = await import("node:path");
    const { ROOT } = await import("../helpers/doc-examples.js");
    const anchorsOf = async (path: string) => {
      const text = (await readFile(path, "utf8")).replace(/```[\s\S]*?```/g, "");
      return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => githubSlug(m[1])));
    };
    const titlesOf = async (path: string) => {
      const text = (await readFile(path, "utf8")).replace(/```[\s\S]*?```/g, "");
      return [...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1].replace(/`/g, "").trim());
    };
    const bad: string[] = [];
    for (const file of files) {
      const text = await readFile(join(ROOT, file), "utf8");
      const prose = text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
      for (const [, target, anchor] of prose.matchAll(/\]\(([^)#\s]*)#([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const path = target ? normalize(join(dirname(join(ROOT, file)), target)) : join(ROOT, file);
        if (!(await anchorsOf(path)).has(anchor)) bad.push(`${file} → ${target}#${anchor}`);
      }
    }
    // Cross-references in words, in the docs and in the code's comments: (README, "Cold start").
    const sources = (await readdir(join(ROOT, "src"), { recursive: true })).filter((f) => f.endsWith(".ts") || f.endsWith(".tsx")).map((f) => `src/${f}`);
    for (const file of [...files, ...sources]) {
      const text = await readFile(join(ROOT, file), "utf8");
      for (const [, ref, section] of text.matchAll(/\((README|CONTRIBUTING|(?:docs\/)?[\w-]+\.md), "([^"]+)"\)/g)) {
        const name = ref === "README" || ref === "CONTRIBUTING" ? `${ref}.md` : ref;
        const path = [join(ROOT, name), join(ROOT, "docs", name)].find((p) => existsSync(p));
        const titles = path ? await titlesOf(path) : [];
        if (!titles.some((t) => t === section || t.replace(/^`?mm /, "") === section)) bad.push(`${file}: (${ref}, "${section}") → ${path ? relative(ROOT, path) : "no such file"}`);
      }
    }
    expect(bad).toEqual([]);
  });
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function githubSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/ /g, "-");
}

describe("examples with mm serve", () => {
  it("say that the commands after a foreground mm serve go in a second terminal", () => {
    const missing: string[] = [];
    for (const b of blocks) {
      const lines = b.code.split("\n");
      lines.forEach((line, i) => {
        if (!/^\s*mm serve\b/.test(line) || /&\s*$/.test(line) || i === lines.length - 1) return;
        if (!/^# .*second (one|terminal)/.test(lines[i + 1])) missing.push(`${b.file}:${b.line + i}`);
      });
    }
    expect(missing).toEqual([]);
  });
});

describe("docs/http-api.md", () => {
  it("its endpoint table lists every route the server has", async () => {
    const { readFile } = await import("node:fs/promises");
    const { join } = await import("node:path");
    const { ROOT } = await import("../helpers/doc-examples.js");
    const { ROUTES } = await import("../../src/http/routes.js");
    const text = await readFile(join(ROOT, "docs", "http-api.md"), "utf8");
    const rows = new Set([...text.matchAll(/^\| (GET|POST|PATCH|DELETE)(?: †)? \| (\/v1\/[^ |]+) \|/gm)].map((m) => `${m[1]} ${m[2]}`));
    expect(ROUTES.map((r) => `${r.method} ${r.path}`).filter((r) => !rows.has(r))).toEqual([]);
  });
});
