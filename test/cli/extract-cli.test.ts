import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/run-cli.js";
import { useTempDirs } from "../helpers/temp.js";

const tempDir = useTempDirs();


const mm = (store: string, args: string[], input?: string) => runCli(store, args, { input });

describe("mm memories add --extract", () => {
  it("creates entities once, reuses them, links them, and reports on stderr", async () => {
    const store = await tempDir();
    const first = await mm(store, ["memories", "add", "My sister Maya moved from Lisbon to Berlin", "--user", "u", "--extract"]);
    expect(first.code, first.stderr).toBe(0);
    const report = JSON.parse(first.stderr).extracted as { name: string; type: string; created: boolean }[];
    expect(report.map((e) => [e.name, e.type, e.created])).toEqual([
      ["Maya", "PERSON", true],
      ["Lisbon", "LOCATION", true],
      ["Berlin", "LOCATION", true],
    ]);
    const memory = JSON.parse(first.stdout);
    expect(memory.entityIds).toHaveLength(3);

    const second = await mm(store, ["memories", "add", "Maya says Berlin is cold", "-u", "u", "-x"]);
    const again = JSON.parse(second.stderr).extracted as { name: string; created: boolean; id: string }[];
    expect(again.map((e) => [e.name, e.created])).toEqual([
      ["Maya", false],
      ["Berlin", false],
    ]);
    const entities = JSON.parse((await mm(store, ["entities", "list"])).stdout);
    expect(entities.pagination.total).toBe(3);
    const maya = again[0].id;
    const linked = JSON.parse((await mm(store, ["entities", "memories", maya])).stdout);
    expect(linked.items.map((m: { id: string }) => m.id)).toEqual([JSON.parse(second.stdout).id, memory.id]);
  });

  it("extracts per line in a batch without duplicating entities across lines", async () => {
    const store = await tempDir();
    const input = ["Tom flew to Paris", "Paris was rainy, Tom said", "nothing here"].map((content) => JSON.stringify({ content, userId: "u" })).join("\n");
    const r = await mm(store, ["memories", "add", "--batch", "-", "--extract", "--batch-size", "2"], input);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.map((l) => l.extracted.map((e: { name: string; created: boolean }) => `${e.name}:${e.created}`))).toEqual([["Tom:true", "Paris:true"], ["Paris:false", "Tom:false"], []]);
    expect(JSON.parse((await mm(store, ["entities", "list"])).stdout).pagination.total).toBe(2);
  });
});
