import { existsSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { expect } from "vitest";

export const CHROMIUM = process.env.MM_TEST_CHROMIUM ?? "/usr/bin/chromium";
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** Screenshots of every screen from the last run (gitignored); docs/console/ holds the chosen ones. */
export const SCREENSHOT_DIR = join(ROOT, "test-results", "console");
const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
let axeText: Promise<string> | undefined;
const axeSource = () => (axeText ??= readFile(AXE, "utf8"));

/**
 * Whether the browser tests can run: on a machine without chromium they are skipped with one
 * line saying why, so `npm test` passes on a fresh clone; in CI (CI set to anything but "false"
 * or "0") a missing browser is a failure instead, so CI never skips them quietly.
 */
export function browserGate(env: Record<string, string | undefined> = process.env, path = CHROMIUM): { run: true } | { run: false; reason: string } {
  if (existsSync(path)) return { run: true };
  const ci = env.CI !== undefined && env.CI !== "" && env.CI !== "false" && env.CI !== "0";
  if (ci) return { run: true }; // launchBrowser() fails with what to install
  return { run: false, reason: `skipping the console's browser tests: no browser at ${path} (apt-get install -y chromium runs them; with CI=true a missing browser fails)` };
}

/**
 * Debian's chromium, driven by playwright-core: no browser download. The flags keep it off the
 * network, which this machine's closed network would refuse noisily.
 */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`No browser at ${CHROMIUM}: install Debian's chromium (apt-get install -y chromium), as .ci/run does.`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/** Collects what a page must never show: script errors and Content-Security-Policy refusals. */
export function watchPage(page: Page): { problems: string[] } {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    // Error pages (401, 403, 404) are expected here; a script error or a CSP refusal never is.
    if (/Content Security Policy|Uncaught|TypeError|ReferenceError/i.test(m.text())) problems.push(`console ${m.type()}: ${m.text()}`);
  });
  return { problems };
}

/** Runs axe-core in the page; fails on any violation of impact serious or critical. */
export async function expectAccessible(page: Page, screen: string): Promise<void> {
  // Evaluated through the DevTools protocol: the console's CSP (rightly) refuses an injected <script>.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(`${await axeSource()}\n;0`);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> } }).axe;
    const result = await axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
  });
  const bad = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad, `${screen}: ${JSON.stringify(bad, null, 1)}`).toEqual([]);
}

/** Screenshots of the page at 1440 and 375 CSS pixels wide, full length, into SCREENSHOT_DIR. */
export async function screenshots(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const before = page.viewportSize() ?? { width: 1440, height: 900 };
  for (const width of [1440, 375]) {
    await page.setViewportSize({ width, height: width === 375 ? 812 : 900 });
    await page.waitForTimeout(150); // the graph and the chart redraw on resize
    expect(await page.evaluate(() => document.documentElement.scrollWidth), `${name} at ${width}px scrolls sideways`).toBeLessThanOrEqual(width);
    await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize(before);
}

/** Each screen: accessible, and photographed at both widths. */
export async function checkScreen(page: Page, name: string): Promise<void> {
  await expectAccessible(page, name);
  await screenshots(page, name);
}
