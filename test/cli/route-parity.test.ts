import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BUCKETS } from "../../src/cli/context.js";
import { ROUTES } from "../../src/http/routes.js";
import { runCli } from "../helpers/run-cli.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();

/** Every endpoint of the HTTP API has its `mm` command, counted in the same rate/quota bucket. */
describe("the route table and the CLI", () => {
  it("every route names a command that exists and bills like it; every billed command is a route", async () => {
    const store = join(await tempDir(), "store");
    const problems: string[] = [];
    for (const route of ROUTES) {
      const words = route.cli.split(" ");
      const help = await runCli(store, [...words, "--help"]);
      if (help.code !== 0 || !help.stdout.includes(`Usage: mm ${route.cli}`)) problems.push(`${route.method} ${route.path}: no \`mm ${route.cli}\``);
      const bucket = BUCKETS[words.join(".")];
      if (bucket !== route.bucket) problems.push(`${route.method} ${route.path}: \`mm ${route.cli}\` is billed as ${bucket}, the route as ${route.bucket}`);
    }
    const routed = new Set(ROUTES.map((r) => r.cli.replace(" ", ".")));
    for (const command of Object.keys(BUCKETS)) if (!routed.has(command)) problems.push(`\`mm ${command.replace(".", " ")}\` is billed but no route names it`);
    expect(problems).toEqual([]);
  });
});
