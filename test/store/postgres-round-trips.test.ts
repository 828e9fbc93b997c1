import { randomBytes } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/model/run.ts";
import { Database, migrate } from "../../src/store/postgres/database.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { NewRunEvent } from "../../src/store/store.ts";
import { newAttachment, PNG_1x1 } from "../attachments/images.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../support/postgres.ts";
import { storeSuite, W } from "./conformance/suite.ts";

/**
 * The round trips a run waits for at its start and its end on PostgreSQL (bench/README.md, "Sixth round:
 * PostgreSQL round trips"), counted by the store itself (Store.activity), and what those fewer round
 * trips still carry: the follow-ups taken and the run's attachments, the notifications other replicas hear, the checkpoint dropped,
 * the webhook deliveries written with the change, and the run answered as it is stored.
 */
const missing = process.env.CI ? undefined : postgresUnavailable();
let cluster: PostgresCluster;
const open: PostgresStore[] = [];

beforeAll(async () => {
  if (!missing) cluster = await startPostgres();
}, 120_000);
afterEach(async () => {
  for (const store of open.splice(0)) await store.close();
});
afterAll(async () => {
  await cluster?.stop();
});

/** A store on a fresh migrated database with team t1, and a second store (another replica) on it. */
async function replicas(): Promise<{ store: PostgresStore; other: PostgresStore }> {
  const url = await cluster.createDatabase();
  const store = new PostgresStore(url);
  const other = new PostgresStore(url);
  open.push(store, other);
  await store.migrate();
  await store.ensureTeam({ id: "t1", name: "Team one" });
  expect(await other.listening(10_000)).toBe(true);
  return { store, other };
}

/** What `work` cost `store`: its round trips and commits. */
async function counted<T>(
  store: PostgresStore,
  work: () => Promise<T>,
): Promise<{ value: T; roundTrips: number; commits: number }> {
  const before = { ...store.activity };
  const value = await work();
  return {
    value,
    roundTrips: store.activity.statements - before.statements,
    commits: store.activity.commits - before.commits,
  };
}

/** Resolves when `store` hears `name` for `runId`. */
function heard(store: PostgresStore, name: "event_appended" | "run_changed", runId: string): Promise<void> {
  return new Promise((resolve) => {
    const listener = (id: string) => {
      if (id !== runId) return;
      store.signals.off(name, listener);
      resolve();
    };
    store.signals.on(name, listener);
  });
}

/** A new run, claimed by W: the run as W holds it. */
async function claimed(store: PostgresStore): Promise<RunRecord> {
  const run = await storeSuite(() => store).create();
  const held = await store.claimNextRun(W, 60_000);
  expect(held?.id).toBe(run.id);
  return held!;
}

const prompt: NewRunEvent = { type: "message", data: { role: "user", text: "do it" } };
const answer: NewRunEvent = { type: "message", data: { role: "assistant", text: "done" } };
const checkpoint = () => ({
  takenAt: new Date().toISOString(),
  sizeBytes: 3,
  refSha: null,
  snapshot: randomBytes(3),
});

describe.skipIf(Boolean(missing))("a run's start and end on PostgreSQL", () => {
  it("the start is one round trip: its events, the follow-ups waiting, the run's attachments, the signal another replica hears", async () => {
    const { store, other } = await replicas();
    const run = storeSuite(() => store).newRun();
    const own = newAttachment("own.png", PNG_1x1);
    expect((await store.createRun(run, undefined, [own])).kind).toBe("created");
    expect((await store.claimNextRun(W, 60_000))?.id).toBe(run.id);
    const shot = newAttachment("shot.png", PNG_1x1);
    await store.addFollowup("t1", run.id, {
      id: uuidv7(),
      message: "also this",
      mode: "normal",
      attachments: [shot],
    });
    const signalled = heard(other, "event_appended", run.id);
    const start = await counted(store, () => store.startAgent(run.id, W, [prompt]));
    expect(start.value?.followups.map((f) => f.message)).toEqual(["also this"]);
    expect(start.value?.attachments.map((a) => a.id)).toEqual([own.id, shot.id]);
    expect({ roundTrips: start.roundTrips, commits: start.commits }).toEqual({ roundTrips: 1, commits: 1 });
    await signalled;
    expect((await store.getRun("t1", run.id))?.agentStarted).toBe(true);
    const events = await store.listEvents(run.id, 0, 100);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)?.data).toEqual(prompt.data);
    // A worker that does not hold the run starts nothing and takes nothing.
    await store.addFollowup("t1", run.id, { id: uuidv7(), message: "later", mode: "normal" });
    expect(await store.startAgent(run.id, "someone-else", [prompt])).toBeUndefined();
    expect((await store.listEvents(run.id, 0, 100)).length).toBe(events.length + 1); // the follow-up's event
  });

  for (const [trigger, patch, state] of [
    ["succeed", {}, "SUCCEEDED"],
    ["fail", { statusMessage: { message: "no", error_code: "agent_failed", retryable: false } }, "FAILED"],
    [
      "block",
      { statusMessage: { message: "which?", error_code: "awaiting_input", retryable: false } },
      "BLOCKED",
    ],
  ] as const) {
    it(`an end no webhook reports (${trigger}) is two round trips, answering the run as stored`, async () => {
      const { store, other } = await replicas();
      const run = await claimed(store);
      await store.startAgent(run.id, W, [prompt]);
      expect(await store.saveCheckpoint(run.id, W, checkpoint())).toBe(true);
      const signalled = heard(other, "run_changed", run.id);
      const end = await counted(store, () => store.finishExecution(run.id, W, trigger, patch, [answer]));
      expect({ roundTrips: end.roundTrips, commits: end.commits }).toEqual({ roundTrips: 2, commits: 1 });
      expect(end.value.run?.state).toBe(state);
      expect(end.value.run).toEqual(await store.getRun("t1", run.id));
      await signalled;
      const events = await store.listEvents(run.id, 0, 100);
      expect(events.slice(-2).map((e) => e.type)).toEqual(["message", "state"]);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      // A blocked run continues from its checkpoint; an ended one has none left.
      if (state === "BLOCKED") expect(await store.loadCheckpoint(run.id)).toBeDefined();
      else expect(await store.loadCheckpoint(run.id)).toBeUndefined();
      // Once ended, the worker no longer holds it: nothing more is written.
      expect(await store.finishExecution(run.id, W, "succeed", {}, [answer])).toEqual({ pending: [] });
    });
  }

  it("an end that claims the next run for its slot is still two round trips and one commit", async () => {
    const { store, other } = await replicas();
    const run = await claimed(store);
    await store.startAgent(run.id, W, [prompt]);
    const waiting = await storeSuite(() => store).create();
    const signalled = heard(other, "run_changed", waiting.id);
    const end = await counted(store, () =>
      store.finishExecution(run.id, W, "succeed", {}, [answer], {
        next: { workerId: "worker-b/1", leaseMs: 60_000 },
      }),
    );
    expect({ roundTrips: end.roundTrips, commits: end.commits }).toEqual({ roundTrips: 2, commits: 1 });
    expect(end.value.run?.state).toBe("SUCCEEDED");
    expect(end.value.next).toEqual(await store.getRun("t1", waiting.id));
    expect(end.value.next?.workerId).toBe("worker-b/1");
    // Another replica hears of the claim, as of any.
    await signalled;
  });

  it("an end computed from the run as its worker holds it is one round trip, with the next run's claim", async () => {
    const { store, other } = await replicas();
    const run = await claimed(store);
    await store.startAgent(run.id, W, [prompt]);
    expect(await store.saveCheckpoint(run.id, W, checkpoint())).toBe(true);
    const waiting = await storeSuite(() => store).create();
    const ended = heard(other, "run_changed", run.id);
    const claim = heard(other, "run_changed", waiting.id);
    const next = { workerId: "worker-b/1", leaseMs: 60_000 };
    const end = await counted(store, () =>
      store.finishExecution(run.id, W, "succeed", {}, [answer], { next, held: run }),
    );
    expect({ roundTrips: end.roundTrips, commits: end.commits }).toEqual({ roundTrips: 1, commits: 1 });
    expect(end.value.run?.state).toBe("SUCCEEDED");
    expect(end.value.run).toEqual(await store.getRun("t1", run.id));
    expect(end.value.next).toEqual(await store.getRun("t1", waiting.id));
    expect(end.value.next?.workerId).toBe("worker-b/1");
    await ended;
    await claim;
    const events = await store.listEvents(run.id, 0, 100);
    expect(events.slice(-2).map((e) => e.type)).toEqual(["message", "state"]);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(await store.loadCheckpoint(run.id)).toBeUndefined();
    // The same end as written from the locked row (the run time counts the execution's time).
    expect(end.value.run?.runTimeMs).toBeGreaterThanOrEqual(0);
    expect(end.value.run?.finishedAt).toBe(end.value.run?.updatedAt);
  });

  it("an end computed from a copy the run no longer matches is decided on the locked row", async () => {
    const { store } = await replicas();
    const run = await claimed(store);
    await store.startAgent(run.id, W, [prompt]);
    // The copy says the execution started at another time than the run does.
    const stale = { ...run, executionStartedAt: "2000-01-01T00:00:00.000Z" };
    const waiting = await storeSuite(() => store).create();
    const end = await counted(store, () =>
      store.finishExecution(run.id, W, "succeed", {}, [answer], {
        next: { workerId: "worker-b/1", leaseMs: 60_000 },
        held: stale,
      }),
    );
    expect(end.roundTrips).toBe(3);
    expect(end.value.run).toEqual(await store.getRun("t1", run.id));
    // Its run time is the run's, not the copy's 26 years.
    expect(end.value.run!.runTimeMs).toBeLessThan(60_000);
    expect(end.value.next?.id).toBe(waiting.id);
    const events = await store.listEvents(run.id, 0, 100);
    expect(events.slice(-2).map((e) => e.type)).toEqual(["message", "state"]);
  });

  it("an end a webhook reports writes its delivery with it", async () => {
    const { store } = await replicas();
    await store.createWebhookEndpoint({
      id: "wh_states",
      teamId: "t1",
      url: "https://hooks.example.com/states",
      events: ["run.state_changed"],
      description: null,
      secret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0",
      createdBy: "u1",
      createdAt: new Date().toISOString(),
    });
    const run = await claimed(store);
    await store.startAgent(run.id, W, [prompt]);
    expect(await store.saveCheckpoint(run.id, W, checkpoint())).toBe(true);
    const waiting = await storeSuite(() => store).create();
    const next = { workerId: "worker-b/1", leaseMs: 60_000 };
    // The run as held does not decide an end a webhook reports: the locked row does.
    const end = await store.finishExecution(run.id, W, "succeed", {}, [answer], { next, held: run });
    expect(end.run).toEqual(await store.getRun("t1", run.id));
    // A claim the webhook reports is not the end's to make: claimNextRun makes it, with its delivery.
    expect(end.next).toBeUndefined();
    expect((await store.claimNextRun(next.workerId, next.leaseMs))?.id).toBe(waiting.id);
    const deliveries = await store.listWebhookDeliveries("t1", "wh_states", { limit: 10 });
    expect(deliveries?.deliveries.map((d) => [d.eventType, d.runId])).toEqual([
      ["run.state_changed", waiting.id], // the next run's claim
      ["run.state_changed", run.id], // the end
      ["run.state_changed", run.id], // the claim
    ]);
    expect(await store.loadCheckpoint(run.id)).toBeUndefined();
  });
});

describe.skipIf(Boolean(missing))("a transaction written in one round trip (Database.transaction)", () => {
  it("commits all of its statements, or none when one fails, and the connection serves the next", async () => {
    const db = new Database(await cluster.createDatabase(), { poolSize: 1 });
    try {
      await migrate(db);
      const team = (id: string): [string, unknown[]] => [
        "INSERT INTO teams (id, name, created_at) VALUES ($1, $2, $3)",
        [id, id, new Date().toISOString()],
      ];
      const teams = async () => (await db.rows("SELECT id FROM teams ORDER BY id")).map((r) => r.id);
      const before = { ...db.activity };
      await db.transaction([team("a"), team("b")]);
      expect({
        roundTrips: db.activity.statements - before.statements,
        commits: db.activity.commits - before.commits,
      }).toEqual({ roundTrips: 1, commits: 1 });
      // The second statement breaks the primary key: the first is not kept either.
      await expect(db.transaction([team("c"), team("a")])).rejects.toMatchObject({ code: "23505" });
      // Its first statement failing, the second is not run on its own.
      await expect(db.transaction([team("a"), team("d")])).rejects.toMatchObject({ code: "23505" });
      expect(await teams()).toEqual(["a", "b"]);
      await db.transaction([team("e")]);
      expect(await teams()).toEqual(["a", "b", "e"]);
    } finally {
      await db.close();
    }
  });
});
