// A second process on a store, for the maintenance race and crash tests (test/storage/maintenance-race.test.ts).
// Runs the built code (dist/), as `mm` would. Every line it prints is an acknowledgement: printed
// only after the commit it reports returned.
//   write <dir> <name> <rounds> [<until-file> <most>]   add 1-3 memories per round; every third round
//     delete one of its own; with an until-file, go on past <rounds> until that file exists (at most <most> rounds)
//   maintain <dir>                print "started", then run a forced maintenance pass without the write lock
// The store's tuning comes from MM_TEST_TUNING (JSON); KILL_AT=<hook point> kills the process there.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { Store } = await import(join(root, "dist/storage/store.js"));
const { maintain } = await import(join(root, "dist/storage/maintenance.js"));
const [mode, dir, name, rounds, untilFile, most] = process.argv.slice(2);
const tuning = JSON.parse(process.env.MM_TEST_TUNING ?? "{}");
const store = await Store.open(dir, { tuning });
store.hooks = (point) => {
  if (point === process.env.KILL_AT) process.kill(process.pid, "SIGKILL");
};
const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");

if (mode === "write") {
  let seed = [...name].reduce((a, c) => a * 31 + c.charCodeAt(0), 7);
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const mine = [];
  const more = (i) => i < Number(rounds) || (untilFile !== undefined && i < Number(most) && !existsSync(untilFile));
  for (let i = 0; more(i); i++) {
    const at = new Date().toISOString();
    const rows = Array.from({ length: 1 + Math.floor(random() * 3) }, (_, j) => ({
      id: `mem_${name}_${String(i).padStart(4, "0")}_${j}`,
      accountId: "acct_default",
      content: `${name} round ${i} item ${j}`,
      userId: `u${Math.floor(random() * 4)}`,
      agentId: null,
      tags: [],
      metadata: null,
      entityIds: [],
      createdAt: at,
      updatedAt: at,
      seq: 0,
      vector: unit(Array.from({ length: 16 }, () => random() - 0.5)),
    }));
    await store.write((w) => w.insertMemories(rows));
    say({ added: rows.map((r) => r.id) });
    mine.push(...rows.map((r) => r.id));
    if (i % 3 === 2) {
      const victim = mine.splice(Math.floor(random() * mine.length), 1)[0];
      await store.write((w) => w.deleteMemory("acct_default", victim));
      say({ deleted: victim });
    }
  }
} else if (mode === "maintain") {
  say({ started: true });
  const pass = await maintain(store, { force: true, keepVersionsMs: 0 });
  say({ done: pass.work.length });
}
store.close();

function unit(v) {
  const n = Math.hypot(...v);
  return Float32Array.from(v, (x) => x / n);
}
