import { describe, expect, it } from "vitest";
import { AZURITE_KEY, type Azurite } from "../helpers/azurite.js";
import { useAzuriteCluster } from "../helpers/serve-replica.js";

interface Outcome {
  replica: number;
  kind: "create" | "search";
  /** When the request was sent and answered, in ms since the test's start. */
  sent: number;
  answered: number;
  status: number;
  code?: string;
  retryAfter?: string | null;
  id?: string;
}

/**
 * Issue #57, item 3: two replicas on one Azurite store, clients writing and searching through
 * both, Azurite killed (-9) and started again 10 s later on the same folder and port. During the
 * outage every answer is a prompt 503 STORE_UNAVAILABLE with Retry-After; after it, both replicas
 * serve again within 30 s without a restart, and every 5xx is logged with its cause.
 */
describe("replicas on an object store that goes away and comes back (spawned, real Azurite and Redis)", () => {
  const cluster = useAzuriteCluster();

  /**
   * Four clients creating and searching through both replicas; once 8 creates are stored, the store
   * goes away (`goAway`) for `downMs`, then comes back; the clients go on until both replicas have
   * served creates and searches for 5 s, or for 60 s. Asserts what issue #57 requires.
   */
  async function outage(goAway: (azurite: Azurite) => Promise<void> | void, comeBack: (azurite: Azurite) => Promise<void> | void, downMs: number) {
    const { azurite, replicas, key } = cluster();
    const t0 = Date.now();
    const now = () => Date.now() - t0;
    const outcomes: Outcome[] = [];
    let stop = false;
    const send = async (replicaIndex: number, kind: Outcome["kind"], n: number): Promise<void> => {
      const url = replicas[replicaIndex].url;
      const sent = now();
      const res = await fetch(url + (kind === "create" ? "/v1/memories" : "/v1/memories/search"), {
        method: "POST",
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
        body: JSON.stringify(kind === "create" ? { content: `client note ${n} about the harbour at dawn`, userId: `u${n % 3}` } : { query: "harbour", userId: `u${n % 3}` }),
      });
      const body = (await res.json()) as { id?: string; error?: { code: string } };
      outcomes.push({ replica: replicaIndex, kind, sent, answered: now(), status: res.status, code: body.error?.code, retryAfter: res.headers.get("Retry-After"), id: body.id });
    };
    // Four clients, each alternating replicas and creates with searches, until told to stop.
    const clients = Array.from({ length: 4 }, async (_, c) => {
      for (let i = 0; !stop; i++) {
        await send((c + i) % 2, (c + i) % 3 === 0 ? "search" : "create", c * 10_000 + i);
        await new Promise((r) => setTimeout(r, 100));
      }
    });
    while (outcomes.filter((o) => o.status === 201).length < 8) await new Promise((r) => setTimeout(r, 50));

    const killedAt = now();
    await goAway(azurite);
    await new Promise((r) => setTimeout(r, downMs));
    await comeBack(azurite);
    const backAt = now();
    // Clients keep going until both replicas have answered creates and searches with success for 5 s,
    // or 60 s after the store's return.
    const healedAt = (r: number): number | undefined => {
      const mine = outcomes.filter((o) => o.replica === r && o.sent >= backAt);
      const lastFailure = Math.max(backAt, ...mine.filter((o) => o.status >= 500).map((o) => o.answered));
      const after = mine.filter((o) => o.sent > lastFailure);
      return after.some((o) => o.kind === "create" && o.status === 201) && after.some((o) => o.kind === "search" && o.status === 200) && now() - lastFailure > 5_000 ? lastFailure : undefined;
    };
    while (now() - backAt < 60_000 && !(healedAt(0) !== undefined && healedAt(1) !== undefined)) await new Promise((r) => setTimeout(r, 200));
    stop = true;
    await Promise.all(clients);

    const during = outcomes.filter((o) => o.sent >= killedAt + 100 && o.answered < backAt);
    const summary = {
      killedAt,
      backAt,
      healed: [healedAt(0), healedAt(1)],
      statuses: [...new Set(outcomes.filter((o) => o.sent >= killedAt).map((o) => `${o.status} ${o.code ?? ""}`))],
      slowest: Math.max(...outcomes.map((o) => o.answered - o.sent)),
      firstOutageAnswer: Math.min(...during.filter((o) => o.status === 503).map((o) => o.answered)) - killedAt,
    };
    // The figures docs/object-storage.md quotes; MM_TEST_OUTAGE_LOG=file keeps every answer and log line.
    console.log(JSON.stringify(summary));
    if (process.env.MM_TEST_OUTAGE_LOG) {
      const { writeFile } = await import("node:fs/promises");
      await writeFile(process.env.MM_TEST_OUTAGE_LOG, JSON.stringify({ summary, outcomes, logs: replicas.map((r) => r.logs) }, null, 1));
    }

    // Every failure is 503 STORE_UNAVAILABLE with Retry-After (there are some), none waiting long:
    // the server's own bound is its 10 s deadline (MM_STORE_DEADLINE_S); the test allows 25 s, room
    // for a loaded machine (15.9 s seen with two busy processes beside the suite), still far below
    // the 15-183 s a hung store took before the deadline. What was sent while the store was away
    // got nothing else.
    const failed = outcomes.filter((o) => o.status >= 300);
    expect(failed.length).toBeGreaterThan(0);
    for (const o of [...failed, ...during]) {
      expect(`${o.status} ${o.code}`).toBe("503 STORE_UNAVAILABLE");
      expect(Number(o.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    for (const o of outcomes) expect(o.answered - o.sent).toBeLessThan(25_000);
    // After it: each replica serves again within 30 s of the store's return, with no restart.
    for (const r of [0, 1]) {
      const healed = healedAt(r);
      expect(healed, `replica ${r}`).toBeDefined();
      expect(healed! - backAt).toBeLessThan(30_000);
      expect(replicas[r].child.exitCode).toBeNull();
    }
    // Every 5xx a replica answered is logged with its cause, and no log line holds the store's key.
    for (const r of replicas) {
      const entries = r.logs.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>);
      const failed = entries.filter((e) => typeof e.status === "number" && e.status >= 500);
      const errors = entries.filter((e) => e.level === "error");
      expect(errors.length).toBeGreaterThanOrEqual(failed.length);
      for (const e of errors) expect(String(e.error)).not.toMatch(/^An internal error occurred\.?$/);
      // The outage and its end, each said once per replica.
      expect(entries.filter((e) => e.event === "store-lost").length).toBeGreaterThanOrEqual(1);
      expect(entries.filter((e) => e.event === "store-back").length).toBeGreaterThanOrEqual(1);
      expect(r.logs.join("\n")).not.toContain(AZURITE_KEY);
    }
    expect(outcomes.filter((o) => o.status === 201 && o.sent >= backAt).length).toBeGreaterThan(0);
    return { outcomes, backAt };
  }

  /** Every create in `outcomes` acknowledged at or after `since` is readable by id on both replicas. */
  async function expectReadable(outcomes: Outcome[], since: number) {
    const { replicas, key } = cluster();
    for (const r of replicas) {
      for (const o of outcomes.filter((o) => o.status === 201 && o.sent >= since)) {
        const res = await fetch(`${r.url}/v1/memories/${o.id}`, { headers: { Authorization: `Bearer ${key}` } });
        expect(res.status, o.id).toBe(200);
        await res.arrayBuffer();
      }
    }
  }

  it("Azurite killed (-9) and started again 10 s later: 503 STORE_UNAVAILABLE with Retry-After meanwhile, serving again within 30 s of its return", async () => {
    // Azurite saves what it holds every 5 s, so a kill -9 loses its last seconds of writes (the
    // store comes back older than the replicas' handles): the store as set up is saved first.
    await new Promise((r) => setTimeout(r, 6_000));
    const { outcomes, backAt } = await outage((a) => a.kill(), (a) => a.start(), 10_000);
    // What Azurite had not saved when it was killed is gone: the creates after its return are there.
    await expectReadable(outcomes, backAt);
  }, 180_000);

  it("Azurite hung (SIGSTOP) for 15 s: no answer waits past the 10 s deadline and a loaded machine's margin, 503 meanwhile, serving again within 30 s, every acknowledged create kept", async () => {
    const { outcomes } = await outage((a) => a.pause(), (a) => a.resume(), 15_000);
    await expectReadable(outcomes, 0);
  }, 180_000);
});
