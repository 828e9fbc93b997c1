import { type AddressInfo, createServer } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { waitFor } from "../support/dispatch.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../support/postgres.ts";
import { storeConformance } from "./conformance/index.ts";
import { newSchedule } from "./conformance/schedules.ts";

/**
 * The conformance suite on PostgreSQL, plus what only a networked store has: several stores (replicas) on
 * one database. Needs Debian's `postgresql` package; without it the file is skipped with a notice, except
 * under CI, where a PostgreSQL that cannot be started fails the tests.
 */
const missing = process.env.CI ? undefined : postgresUnavailable();
if (missing) console.warn(`PostgreSQL store tests SKIPPED: ${missing} (apt-get install -y postgresql)`);

const TEMPLATE = "dispatch_template";
let cluster: PostgresCluster;

beforeAll(async () => {
  if (missing) return;
  cluster = await startPostgres();
  // Every test gets a copy of a migrated database: CREATE DATABASE … TEMPLATE is a file copy, far quicker
  // than migrating each one.
  await cluster.createDatabase({ name: TEMPLATE });
  const store = new PostgresStore(cluster.url(TEMPLATE));
  await store.migrate();
  await store.close();
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

/** A fresh migrated database and a store on it. */
async function freshStore(): Promise<{ store: PostgresStore; url: string }> {
  const url = await cluster.createDatabase({ template: TEMPLATE });
  return { store: new PostgresStore(url), url };
}

describe.skipIf(Boolean(missing))("PostgreSQL store", () => {
  storeConformance("postgres", async () => {
    const { store, url } = await freshStore();
    return { store, cleanup: () => cluster.dropDatabase(url) };
  });
});

/** Resolves once `store` signals `name` for a run (and seq) that `match` accepts. */
function nextSignal(
  store: PostgresStore,
  name: "event_appended" | "run_queued",
  match: (runId: string, seq?: number) => boolean,
): Promise<void> {
  return new Promise((resolve) => {
    const listener = (runId: string, seq?: number) => {
      if (!match(runId, seq)) return;
      store.signals.off(name, listener);
      resolve();
    };
    store.signals.on(name, listener);
  });
}

describe.skipIf(Boolean(missing))("PostgreSQL replicas: two stores on one database", () => {
  const run = (id: string) => ({
    id,
    teamId: "t1",
    title: "a run",
    prompt: "do it",
    state: "QUEUED" as const,
    createdAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
    startedAt: null,
    finishedAt: null,
    runTimeMs: 0,
    executionStartedAt: null,
    execution: 1,
    sessionId: `session-${id}`,
    triggerUrl: null,
    source: "API",
    creator: { type: "user" as const, uid: "u1", display_name: "U One" },
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
  });
  let n = 0;
  const newId = () => `run-${process.pid}-${++n}`;

  /** Replica A and replica B, both listening, on a fresh database; closed and dropped afterwards. */
  const replicas = async (
    body: (a: PostgresStore, b: PostgresStore, url: string) => Promise<void>,
  ): Promise<void> => {
    const url = await cluster.createDatabase({ template: TEMPLATE });
    const a = new PostgresStore(url);
    const b = new PostgresStore(url);
    try {
      await Promise.all([a.migrate(), b.migrate()]);
      expect(await a.listening(10_000)).toBe(true);
      expect(await b.listening(10_000)).toBe(true);
      await a.ensureTeam({ id: "t1", name: "Team one" });
      await body(a, b, url);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await cluster.dropDatabase(url);
    }
  };

  it("an event appended on A is signalled on B (an event stream there reads it at once)", async () => {
    await replicas(async (a, b) => {
      const created = await a.createRun(run(newId()));
      if (created.kind !== "created") throw new Error("not created");
      const id = created.value.id;
      const heard = nextSignal(b, "event_appended", (runId, seq) => runId === id && seq === 2);
      const event = await a.appendEvent(id, "log", { line: "from A" });
      expect(event.seq).toBe(2);
      await heard;
      expect(await b.listEvents(id, 1, 10)).toEqual([event]);
    });
  });

  it("a run queued on A wakes a waiter on B, whose worker then claims it", async () => {
    await replicas(async (a, b) => {
      const id = newId();
      const woken = nextSignal(b, "run_queued", (runId) => runId === id);
      await a.createRun(run(id));
      await woken;
      expect((await b.claimNextRun("worker-b", 60_000))?.id).toBe(id);
    });
  });

  it("a create by a key revoked on B writes nothing on A once the revocation committed, in every path", async () => {
    await replicas(async (a, b) => {
      await a.ensurePrincipal({ id: "u1", teamId: "t1", type: "user", displayName: "U One", email: null });
      const key = {
        id: "key-1",
        principalId: "u1",
        name: "ci",
        role: "member" as const,
        hash: "h1",
        prefix: "dsp_ab",
        createdAt: new Date().toISOString(),
      };
      await a.insertApiKey(key);
      const audit = (target: string) => ({
        teamId: "t1",
        at: new Date().toISOString(),
        actor: "u1",
        actorName: "U One",
        action: "run.created" as const,
        target,
        details: {},
      });
      const live = run(newId());
      const created = await a.createRun(live, undefined, [], { audit: audit(live.id), liveKeyId: key.id });
      expect(created.kind).toBe("created");

      expect(await b.revokeApiKey(key.id, new Date().toISOString())).toBeDefined();
      // No notification awaited: A may not have heard of the revocation, its statement sees it anyway.
      const plain = run(newId());
      expect(await a.createRun(plain, undefined, [], { audit: audit(plain.id), liveKeyId: key.id })).toEqual({
        kind: "key_revoked",
      });
      const claim = {
        principalId: "u1",
        key: "idem-1",
        requestHash: "x",
        respond: () => ({}),
        notBefore: "2000-01-01T00:00:00.000Z",
      };
      const idempotent = run(newId());
      expect((await a.createRun(idempotent, claim, [], { liveKeyId: key.id })).kind).toBe("key_revoked");
      // An endpoint taking run.created sends the create to its transaction, which checks the key too.
      await a.createWebhookEndpoint({
        id: "wh_0000000000000001",
        teamId: "t1",
        url: "https://hooks.example/run",
        events: ["run.created"],
        description: null,
        secret: "whsec_c2VjcmV0",
        createdBy: "u1",
        createdAt: new Date().toISOString(),
      });
      const withEndpoint = run(newId());
      expect((await a.createRun(withEndpoint, undefined, [], { liveKeyId: key.id })).kind).toBe(
        "key_revoked",
      );

      for (const refused of [plain, idempotent, withEndpoint]) {
        expect(await b.getRun("t1", refused.id)).toBeUndefined();
      }
      const { events } = await b.listAuditEvents("t1", { limit: 10 });
      expect(events.map((e) => e.target)).toEqual([live.id]);
      // Without a key to check (a surface of this process), the create is as before.
      expect((await a.createRun(run(newId()))).kind).toBe("created");
    });
  });

  it("a store hears its own signals once, not again through LISTEN", async () => {
    await replicas(async (a, b) => {
      const created = await a.createRun(run(newId()));
      if (created.kind !== "created") throw new Error("not created");
      const id = created.value.id;
      const onA: number[] = [];
      a.signals.on("event_appended", (runId, seq) => {
        if (runId === id) onA.push(seq);
      });
      await a.appendEvent(id, "log", { line: "A" });
      // PostgreSQL delivers notifications in commit order: once B's (later) signal reaches A, a copy of
      // A's own signal would have arrived before it.
      const fromB = nextSignal(a, "event_appended", (runId, seq) => runId === id && seq === 3);
      await b.appendEvent(id, "log", { line: "B" });
      await fromB;
      expect(onA).toEqual([2, 3]);
    });
  });

  it("concurrent claims of one run by A and B give it to exactly one", async () => {
    await replicas(async (a, b) => {
      for (let i = 0; i < 20; i++) {
        const id = newId();
        await a.createRun(run(id));
        const [byA, byB] = await Promise.all([
          a.claimNextRun("worker-a", 60_000),
          b.claimNextRun("worker-b", 60_000),
        ]);
        expect([byA?.id, byB?.id].filter(Boolean)).toEqual([id]);
        const events = await a.listEvents(id, 0, 10);
        expect(events.filter((e) => e.data.state === "INPROGRESS")).toHaveLength(1);
      }
    });
  });

  it("20 creates of schedules racing on A and B stop at the team's limit", async () => {
    await replicas(async (a, b) => {
      const limits = { perTeam: 5, perCreator: 100 };
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? a : b).createSchedule(newSchedule({ name: `race-${i}` }), limits),
        ),
      );
      expect(results.filter((r) => typeof r !== "string" && r.kind === "created")).toHaveLength(5);
      expect(results.filter((r) => r === "team_limit")).toHaveLength(15);
      expect(await b.listSchedules("t1")).toHaveLength(5);
    });
  });

  it("20 firings of one (schedule, fire time) racing on A and B make exactly one run", async () => {
    await replicas(async (a, b) => {
      const created = await a.createSchedule(
        {
          id: `schedule-${process.pid}`,
          teamId: "t1",
          name: "nightly",
          cronSchedule: "0 3 * * *",
          timezone: "UTC",
          enabled: true,
          prompt: "$ echo nightly",
          agentConfig: {},
          metadata: {},
          createdBy: { type: "user", uid: "u1", display_name: "U One" },
          updatedBy: { type: "user", uid: "u1", display_name: "U One" },
          createdAt: "2026-01-01T00:00:00.000Z",
          updatedAt: "2026-01-01T00:00:00.000Z",
          revision: 1,
          activeSince: "2026-01-01T00:00:00.000Z",
          lastFireTime: null,
          lastRan: null,
          lastSpawnError: null,
          reportTo: null,
        },
        { perTeam: 100, perCreator: 100 },
      );
      if (typeof created === "string" || created.kind !== "created") throw new Error("not created");
      const schedule = created.value;
      const fireTime = "2026-01-02T03:00:00.000Z";
      // Each replica's scheduler prepares its own run (its own id) for the slot, as the real ones do.
      const firings = Array.from({ length: 20 }, (_, i) => {
        const store = i % 2 === 0 ? a : b;
        const candidate = {
          ...run(newId()),
          source: "SCHEDULED_AGENT",
          schedule: {
            scheduleId: schedule.id,
            scheduleName: schedule.name,
            cronSchedule: "0 3 * * *",
            fireTime,
          },
        };
        return store.fireSchedule(
          { scheduleId: schedule.id, revision: schedule.revision, fireTime, at: fireTime },
          candidate,
        );
      });
      const results = await Promise.all(firings);
      const fired = results.filter((r) => r.kind === "fired");
      expect(fired).toHaveLength(1);
      expect(results.filter((r) => r.kind === "already_fired")).toHaveLength(19);
      const listed = await b.listRuns("t1", {
        limit: 100,
        sortBy: "created_at",
        sortOrder: "asc",
        scheduleId: schedule.id,
      });
      expect(listed.runs.map((r) => r.id)).toEqual([fired[0]!.kind === "fired" ? fired[0]!.run.id : ""]);
      expect(await a.countActiveRuns(100)).toBe(1);
      expect(await b.getSchedule("t1", schedule.id)).toMatchObject({ lastFireTime: fireTime });
    });
  });

  it("B hears A again after its LISTEN connection was cut", async () => {
    await replicas(async (a, b, url) => {
      const created = await a.createRun(run(newId()));
      if (created.kind !== "created") throw new Error("not created");
      const id = created.value.id;
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        const cut = await admin.query(
          `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'dispatch-listen' AND query ILIKE 'LISTEN%'`,
        );
        expect(cut.rows.length).toBeGreaterThanOrEqual(2);
      } finally {
        await admin.end();
      }
      // Until B has reconnected, A's signals are lost; keep appending until one gets through.
      let heard = false;
      void nextSignal(b, "event_appended", (runId) => runId === id).then(() => (heard = true));
      await waitFor(
        async () => {
          if (!heard) await a.appendEvent(id, "log", { line: "are you there?" });
          return heard;
        },
        { timeoutMs: 20_000, intervalMs: 50, what: "B to hear A after reconnecting" },
      );
    });
  });

  it("migrations started by two stores at once are applied once", async () => {
    const url = await cluster.createDatabase();
    const a = new PostgresStore(url);
    const b = new PostgresStore(url);
    try {
      await Promise.all([a.migrate(), b.migrate()]);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query(
          "SELECT version, COUNT(*) AS n FROM schema_migrations GROUP BY version",
        );
        expect(rows.length).toBeGreaterThanOrEqual(8);
        expect(rows.every((r) => Number(r.n) === 1)).toBe(true);
      } finally {
        await client.end();
      }
      expect(await a.countActiveRuns(10)).toBe(0);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await cluster.dropDatabase(url);
    }
  });
});

describe.skipIf(Boolean(missing))("PostgreSQL errors are classified as on SQLite", () => {
  it("a unique key taken is a conflict (409)", async () => {
    const { store, url } = await freshStore();
    try {
      await store.migrate();
      await store.ensureTeam({ id: "t1", name: "Team one" });
      const key = {
        principalId: "p1",
        name: "k",
        role: "member" as const,
        prefix: "dsp_x",
        createdAt: "2026-01-01T00:00:00.000Z",
      };
      await store.ensurePrincipal({ id: "p1", teamId: "t1", type: "user", displayName: "P", email: null });
      await store.insertApiKey({ ...key, id: "k1", hash: "h" });
      const err = await store.insertApiKey({ ...key, id: "k2", hash: "h" }).catch((e: unknown) => e);
      expect(store.classifyError(err)).toBe("conflict");
      expect(store.classifyError(new Error("a bug"))).toBeUndefined();
    } finally {
      await store.close();
      await cluster.dropDatabase(url);
    }
  });

  it("a database that cannot be reached is unavailable (503)", async () => {
    const closed = new URL(cluster.url("postgres"));
    closed.port = String(await unusedPort());
    const store = new PostgresStore(closed.toString());
    try {
      const err = await store.ping().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(store.classifyError(err)).toBe("unavailable");
    } finally {
      await store.close();
    }
  });
});

/** A loopback port that nothing listens on (it was free a moment ago). */
async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
