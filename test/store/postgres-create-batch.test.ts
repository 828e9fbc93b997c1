import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/model/run.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../support/postgres.ts";

/**
 * The group commit of plain creates on PostgreSQL (src/store/postgres/run-create-batch.ts): creates that
 * arrive in one event-loop turn are one statement, each refused or sent to the transaction path on its own.
 */
const missing = process.env.CI ? undefined : postgresUnavailable();
if (missing) console.warn(`PostgreSQL create batch tests SKIPPED: ${missing}`);

let cluster: PostgresCluster;

beforeAll(async () => {
  if (missing) return;
  cluster = await startPostgres();
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

let n = 0;
function newRun(teamId = "t1", prompt = "do it"): RunRecord {
  const id = `run-${process.pid}-${++n}`;
  const now = new Date().toISOString();
  return {
    id,
    teamId,
    title: "a run",
    prompt,
    state: "QUEUED",
    createdAt: now,
    updatedAt: now,
    startedAt: null,
    finishedAt: null,
    runTimeMs: 0,
    executionStartedAt: null,
    execution: 1,
    sessionId: `session-${id}`,
    triggerUrl: null,
    source: "API",
    creator: { type: "user", uid: "u1", display_name: "U One" },
    agentConfig: {},
    agentSkill: null,
    statusMessage: null,
    artifacts: [],
    requestUsage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
    metadata: {},
    workerId: null,
    leaseExpiresAt: null,
    agentStarted: false,
    requeueCount: 0,
  } as RunRecord;
}

const audit = (teamId: string, target: string) => ({
  teamId,
  at: new Date().toISOString(),
  actor: "u1",
  actorName: "U One",
  action: "run.created" as const,
  target,
  details: {},
});

const apiKey = (id: string, principalId: string) => ({
  id,
  principalId,
  name: id,
  role: "member" as const,
  hash: `hash-${id}`,
  prefix: `dsp_${id}`,
  createdAt: new Date().toISOString(),
});

describe.skipIf(Boolean(missing))("PostgreSQL: plain creates of one turn in one statement", () => {
  let a: PostgresStore;
  /** Another replica on the same database: it hears A's notifications and reads what A committed. */
  let b: PostgresStore;

  beforeAll(async () => {
    const url = await cluster.createDatabase();
    a = new PostgresStore(url);
    b = new PostgresStore(url);
    await a.migrate();
    expect(await b.listening(10_000)).toBe(true);
    for (const team of ["t1", "t2"]) {
      await a.ensureTeam({ id: team, name: team });
      await a.ensurePrincipal({ id: `u-${team}`, teamId: team, type: "user", displayName: "U", email: null });
    }
    await a.insertApiKey(apiKey("k1", "u-t1"));
    await a.insertApiKey(apiKey("k2", "u-t1"));
    await a.insertApiKey(apiKey("k3", "u-t2"));
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  it("32 creates sent at once: one statement and one commit, each run with its event, audit entry and notification once", async () => {
    const runs = Array.from({ length: 32 }, (_, i) => newRun("t1", `together ${i} end`));
    const queued = new Set<string>();
    const heardAll = new Promise<void>((resolve) => {
      const listener = (runId: string) => {
        if (runs.some((r) => r.id === runId)) queued.add(runId);
        if (queued.size === runs.length) resolve();
      };
      b.signals.on("run_queued", listener);
    });
    const before = { ...a.activity };
    const answers = await Promise.all(
      runs.map((r) => a.createRun(r, undefined, [], { audit: audit("t1", r.id), liveKeyId: "k1" })),
    );
    expect(answers.map((x) => x.kind)).toEqual(runs.map(() => "created"));
    expect(a.activity.statements - before.statements).toBe(1);
    expect(a.activity.commits - before.commits).toBe(1);
    await heardAll;
    for (const r of runs) {
      expect((await b.getRun("t1", r.id))?.prompt).toBe(r.prompt);
      expect((await b.listEvents(r.id, 0, 10)).map((e) => [e.seq, e.type])).toEqual([[1, "state"]]);
      expect(
        (await b.listRuns("t1", { q: r.prompt, limit: 5, sortBy: "created_at", sortOrder: "desc" })).runs.map(
          (x) => x.id,
        ),
      ).toEqual([r.id]);
    }
    const { events } = await b.listAuditEvents("t1", { limit: 100 });
    const targets = events.filter((e) => runs.some((r) => r.id === e.target)).map((e) => e.target);
    expect(targets.sort()).toEqual(runs.map((r) => r.id).sort());
  });

  it("a create whose key was revoked is refused in its batch, the others are created", async () => {
    expect(await b.revokeApiKey("k2", new Date().toISOString())).toBeDefined();
    const runs = Array.from({ length: 6 }, () => newRun("t1"));
    const keys = runs.map((_, i) => (i === 3 ? "k2" : "k1"));
    const before = a.activity.statements;
    const answers = await Promise.all(
      runs.map((r, i) => a.createRun(r, undefined, [], { audit: audit("t1", r.id), liveKeyId: keys[i] })),
    );
    expect(answers.map((x) => x.kind)).toEqual(keys.map((k) => (k === "k2" ? "key_revoked" : "created")));
    expect(a.activity.statements - before).toBe(1);
    expect(await b.getRun("t1", runs[3]!.id)).toBeUndefined();
    expect(await b.listEvents(runs[3]!.id, 0, 10)).toEqual([]);
    const { events } = await b.listAuditEvents("t1", { limit: 200 });
    expect(events.some((e) => e.target === runs[3]!.id)).toBe(false);
    for (const [i, r] of runs.entries()) if (i !== 3) expect(await b.getRun("t1", r.id)).toBeDefined();
  });

  it("a create of a team with a run.created endpoint goes the transaction path and gets its delivery", async () => {
    await a.createWebhookEndpoint({
      id: "wh_0000000000000002",
      teamId: "t2",
      url: "https://hooks.example/run",
      events: ["run.created"],
      description: null,
      secret: "whsec_c2VjcmV0",
      createdBy: "u-t2",
      createdAt: new Date().toISOString(),
    });
    const runs = [newRun("t1"), newRun("t2"), newRun("t1"), newRun("t1")];
    const answers = await Promise.all(
      runs.map((r) =>
        a.createRun(r, undefined, [], {
          audit: audit(r.teamId, r.id),
          liveKeyId: r.teamId === "t2" ? "k3" : "k1",
        }),
      ),
    );
    expect(answers.map((x) => x.kind)).toEqual(["created", "created", "created", "created"]);
    const page = await b.listWebhookDeliveries("t2", "wh_0000000000000002", { limit: 10 });
    expect(page?.deliveries.map((d) => [d.runId, d.eventType])).toEqual([[runs[1]!.id, "run.created"]]);
    for (const r of runs) {
      expect((await b.listEvents(r.id, 0, 10)).map((e) => e.seq)).toEqual([1]);
      const { events } = await b.listAuditEvents(r.teamId, { limit: 200 });
      expect(events.filter((e) => e.target === r.id)).toHaveLength(1);
    }
  });

  it("a batch whose statement fails retries each create alone: only the bad one fails", async () => {
    const taken = newRun("t1");
    expect((await a.createRun(taken)).kind).toBe("created");
    const runs = [newRun("t1"), { ...newRun("t1"), sessionId: taken.sessionId }, newRun("t1")];
    const answers = await Promise.allSettled(
      runs.map((r) => a.createRun(r, undefined, [], { liveKeyId: "k1" })),
    );
    expect(answers.map((x) => x.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(await b.getRun("t1", runs[0]!.id)).toBeDefined();
    expect(await b.getRun("t1", runs[1]!.id)).toBeUndefined();
    expect(await b.getRun("t1", runs[2]!.id)).toBeDefined();
  });
});
