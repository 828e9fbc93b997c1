import { randomBytes, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/dispatch.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../support/postgres.ts";
import {
  killAgentProcesses,
  newAdminKey,
  runProcesses,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";

/**
 * Faults of a replicated Dispatch (docs/architecture.md): three real `dispatch serve` processes on one fresh
 * PostgreSQL database — A (`--role api,notifier`) takes every request, B and C (`--role worker`) only
 * execute. Runs spread over both workers and execute once each; a worker killed with SIGKILL loses its
 * run to the lease rules and the other carries on; PostgreSQL restarted under load turns into 503s that
 * clients may retry, and everything recovers without restarting Dispatch. What the API answers is the
 * user's view; how often a run was executed and by whom is read from the runs table and its events.
 */
const missing = process.env.CI ? undefined : postgresUnavailable();
if (missing)
  console.warn(`PostgreSQL replica fault tests SKIPPED: ${missing} (apt-get install -y postgresql)`);

// biome-ignore lint/suspicious/noExplicitAny: API bodies are asserted field by field
type Json = any;

const TERMINAL = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"];
const LEASE_MS = 3_000;
/** A's own bound on a request; the clients below give up a little after it (a hang fails the test). */
const REQUEST_TIMEOUT_MS = 8_000;

let cluster: PostgresCluster;
let databaseUrl: string;
const dataDirs: string[] = [];
let a: ServerProcess;
let b: ServerProcess;
let c: ServerProcess;
/** The workers still alive (the kill -9 test takes one away). */
let workers: ServerProcess[] = [];

beforeAll(async () => {
  if (missing) return;
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase();
  const key = newAdminKey();
  const common = {
    DATABASE_URL: databaseUrl,
    DISPATCH_POLL_INTERVAL_MS: "200",
    DISPATCH_LEASE_MS: String(LEASE_MS),
    DISPATCH_SIGNING_KEY: randomBytes(32).toString("hex"),
  };
  for (let i = 0; i < 3; i++) dataDirs.push(await mkdtemp(join(tmpdir(), "dispatch-pg-fault-")));
  const start = (dataDir: string, roles: string, env: Record<string, string>) =>
    startServerProcess({
      dataDir,
      key,
      env: { ...common, ...env },
      args: ["--role", roles],
      startTimeoutMs: 60_000,
    });
  [a, b, c] = await Promise.all([
    start(dataDirs[0]!, "api,notifier", {
      DISPATCH_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      // The load below is many requests from one key; the rate limiter is not what is under test.
      DISPATCH_RATE_LIMIT_PER_MINUTE: "1000000",
      DISPATCH_RATE_LIMIT_BURST: "100000",
    }),
    start(dataDirs[1]!, "worker", { DISPATCH_MAX_CONCURRENT_RUNS: "4" }),
    start(dataDirs[2]!, "worker", { DISPATCH_MAX_CONCURRENT_RUNS: "4" }),
  ]);
  workers = [b, c];
}, 120_000);

afterAll(async () => {
  for (const server of [a, b, c]) if (server) await stopServerProcess(server);
  for (const dir of dataDirs) {
    await killAgentProcesses(dir);
    await rm(dir, { recursive: true, force: true });
  }
  await cluster?.stop();
}, 60_000);

/** One statement on a connection of its own (a kept connection would not survive the restart test). */
async function query(text: string, values: unknown[] = []): Promise<Json[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}

async function ok(res: Promise<{ status: number; text: string; body: Json }>): Promise<Json> {
  const r = await res;
  expect(r.status, r.text).toBe(200);
  return r.body;
}

async function createRun(prompt: string): Promise<string> {
  const run = await ok(a.api("POST", "/api/v1/agent/runs", { prompt }));
  expect(run.state).toBe("QUEUED");
  return run.run_id as string;
}

/**
 * The workers whose data directory holds the run's workspace: the ones that executed it. (The run's
 * worker_id is cleared when the run ends; the workspace stays for DISPATCH_WORKSPACE_RETENTION_HOURS.)
 */
function executedBy(runId: string): string[] {
  return [
    { name: "B", server: b },
    { name: "C", server: c },
  ]
    .filter(({ server }) => existsSync(join(server.dataDir, "workspaces", runId)))
    .map(({ name }) => name);
}

function nameOf(server: ServerProcess): string {
  return server === b ? "B" : "C";
}

/** Waits until every run is terminal (read from the table: one query, whatever the number of runs). */
async function waitTerminal(ids: string[], timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      const rows = await query("SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND state = ANY($2)", [
        ids,
        TERMINAL,
      ]);
      return rows[0].n === ids.length;
    },
    { timeoutMs, intervalMs: 200, what: `${ids.length} runs to end` },
  );
}

/** Each run as A's API shows it, by id (paged through the list). */
async function listed(ids: string[]): Promise<Map<string, Json>> {
  const wanted = new Set(ids);
  const found = new Map<string, Json>();
  let cursor: string | undefined;
  do {
    const page = await ok(
      a.api("GET", `/api/v1/agent/runs?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`),
    );
    for (const run of page.runs) if (wanted.has(run.run_id)) found.set(run.run_id, run);
    cursor = page.page_info?.has_next_page ? page.page_info.next_cursor : undefined;
  } while (cursor);
  return found;
}

/** Per run: its INPROGRESS transitions (claims) and its command results, from the events table. */
async function executions(ids: string[]): Promise<Map<string, { claims: number; results: string[] }>> {
  const out = new Map(ids.map((id) => [id, { claims: 0, results: [] as string[] }]));
  const rows = await query(
    `SELECT run_id, type, data FROM run_events WHERE run_id = ANY($1) AND type IN ('state', 'tool_result')
      ORDER BY run_id, seq`,
    [ids],
  );
  for (const row of rows) {
    const data = JSON.parse(row.data);
    const entry = out.get(row.run_id)!;
    if (row.type === "state" && data.state === "INPROGRESS") entry.claims += 1;
    if (row.type === "tool_result") entry.results.push(data.output);
  }
  return out;
}

describe.skipIf(Boolean(missing))("faults: three replicas on one PostgreSQL database", () => {
  it("200 runs spread over both workers, each executed exactly once", async () => {
    const ids: string[] = [];
    const numbers = new Map<string, number>();
    // Created concurrently, in batches, as many clients would.
    for (let batch = 0; batch < 10; batch++) {
      const created = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const n = batch * 20 + i;
          const id = await createRun(`$ echo ${n}`);
          numbers.set(id, n);
          return id;
        }),
      );
      ids.push(...created);
    }
    expect(new Set(ids).size).toBe(200);
    await waitTerminal(ids, 90_000);

    const runs = await listed(ids);
    expect(runs.size).toBe(200);
    for (const id of ids) expect(runs.get(id)?.state, id).toBe("SUCCEEDED");

    // Exactly one execution each: claimed once, never re-queued, its one command run once.
    const done = await executions(ids);
    for (const id of ids) {
      expect(done.get(id), id).toEqual({ claims: 1, results: [`${numbers.get(id)}\n`] });
    }
    const rows = await query("SELECT id, execution, requeue_count FROM runs WHERE id = ANY($1)", [ids]);
    expect(rows).toHaveLength(200);
    for (const row of rows) expect(row, row.id).toMatchObject({ execution: 1, requeue_count: 0 });
    const perWorker = { B: 0, C: 0 };
    for (const id of ids) {
      const by = executedBy(id);
      expect(by, `the workers with a workspace of ${id}`).toHaveLength(1);
      perWorker[by[0] as "B" | "C"] += 1;
    }
    // Both workers took part (SKIP LOCKED lets them claim side by side).
    expect(perWorker.B, JSON.stringify(perWorker)).toBeGreaterThan(0);
    expect(perWorker.C, JSON.stringify(perWorker)).toBeGreaterThan(0);
  }, 120_000);

  it("kill -9 of a worker mid-run: its run is recovered under the lease rules, the other worker takes all new work", async () => {
    const held = await createRun("$ sleep 30");
    // The agent has started: its command runs as a process on one of the workers.
    await waitFor(() => runProcesses(held).length > 0, { timeoutMs: 20_000, what: `the sleep of ${held}` });
    const [owner] = await query("SELECT worker_id, agent_started FROM runs WHERE id = $1", [held]);
    expect(owner.agent_started).toBe(1);
    const victim = [b, c].find((w) => String(owner.worker_id).split(":")[1] === String(w.pid))!;
    expect(victim, `run ${held} held by ${owner.worker_id} (B ${b.pid}, C ${c.pid})`).toBeDefined();
    const survivor = victim === b ? c : b;

    victim.child.kill("SIGKILL");
    expect((await victim.exited).signal).toBe("SIGKILL");
    workers = [survivor];
    // Runs created while the dead worker's lease has not run out yet: none may be lost.
    const meanwhile = await Promise.all(
      Array.from({ length: 8 }, (_, i) => createRun(`$ echo meanwhile-${i}`)),
    );

    // The agent had started, so the run is not repeated: it ends ERROR worker_lost, retryable (a
    // follow-up continues it). A run whose agent had not started would have been re-queued once.
    await waitTerminal([held, ...meanwhile], 30_000);
    const run = await ok(a.api("GET", `/api/v1/agent/runs/${held}`));
    expect(run.state).toBe("ERROR");
    expect(run.status_message).toMatchObject({
      error_code: "internal_error",
      reason: "worker_lost",
      retryable: true,
    });
    const transcript = (await ok(a.api("GET", `/api/v1/agent/runs/${held}/events?limit=1000`))).events;
    expect(transcript.filter((e: Json) => e.type === "state").map((e: Json) => e.data.state)).toEqual([
      "QUEUED",
      "INPROGRESS",
      "ERROR",
    ]);

    // Nothing lost: every run created meanwhile ran once, on the survivor.
    const runs = await listed(meanwhile);
    for (const id of meanwhile) expect(runs.get(id)?.state, id).toBe("SUCCEEDED");
    const done = await executions(meanwhile);
    for (const [i, id] of meanwhile.entries()) {
      expect(done.get(id), id).toEqual({ claims: 1, results: [`meanwhile-${i}\n`] });
    }
    for (const id of meanwhile) expect(executedBy(id), id).toEqual([nameOf(survivor)]);

    // The survivor keeps taking new work once the dead worker's lease is gone too.
    const after = await createRun("$ echo after-kill");
    await waitTerminal([after], 20_000);
    expect((await ok(a.api("GET", `/api/v1/agent/runs/${after}`))).state).toBe("SUCCEEDED");
  }, 90_000);

  it("PostgreSQL restarted under load: 503 retryable meanwhile, then recovery by itself with no run lost", async () => {
    const marker = randomUUID().slice(0, 8);
    const accepted: string[] = [];
    const statuses = { ok: 0, unavailable: 0 };
    const failures: string[] = [];
    let phase: "before" | "down" | "after" = "before";
    let afterOk = 0;
    let running = true;

    /** One request as a client makes it: a 200, or a 503 problem saying to retry; anything else is a failure. */
    const call = async (method: string, path: string, body?: unknown): Promise<Json | undefined> => {
      let res: Response;
      try {
        res = await fetch(a.url + path, {
          method,
          headers: {
            authorization: `Bearer ${a.key}`,
            ...(body !== undefined ? { "content-type": "application/json" } : {}),
          },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS + 5_000),
        });
      } catch (err) {
        failures.push(`${method} ${path} (${phase}): ${err instanceof Error ? err.message : String(err)}`);
        return undefined;
      }
      const text = await res.text();
      if (res.status === 200) {
        statuses.ok += 1;
        if (phase === "after") afterOk += 1;
        return JSON.parse(text);
      }
      const problem = res.headers.get("content-type")?.startsWith("application/problem+json")
        ? JSON.parse(text)
        : undefined;
      if (res.status === 503 && problem?.retryable === true) statuses.unavailable += 1;
      else failures.push(`${method} ${path} (${phase}): ${res.status} ${text}`);
      return undefined;
    };
    const client = async (n: number) => {
      for (let i = 0; running; i++) {
        const created = await call("POST", "/api/v1/agent/runs", {
          prompt: `$ echo load-${marker}-${n}-${i}`,
        });
        if (created) accepted.push(created.run_id);
        await call("GET", "/api/v1/agent/runs?limit=5");
        // A client backs off a little after a refusal instead of spinning on it.
        if (!created) await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    /** Dispatch rides the outage out: no process of it exits. */
    const alive = () => {
      for (const server of [a, ...workers]) {
        if (server.child.exitCode !== null) throw new Error(`a replica exited:\n${server.output()}`);
      }
      return true;
    };
    const clients = Promise.all([0, 1, 2].map(client));
    try {
      await waitFor(() => accepted.length >= 6, { timeoutMs: 20_000, what: "runs created under load" });
      await cluster.restart(async () => {
        phase = "down";
        const seen = statuses.unavailable;
        // While it is down the API keeps answering: 503 retryable, neither 500 nor a hang.
        await waitFor(() => alive() && statuses.unavailable >= seen + 6, {
          timeoutMs: 30_000,
          what: "503 answers while PostgreSQL is down",
        });
      });
      phase = "after";
      // Back by itself: requests succeed again through the same, never restarted, processes.
      await waitFor(() => alive() && afterOk >= 10, {
        timeoutMs: 30_000,
        what: "requests to succeed after the restart",
      });
    } finally {
      running = false;
      await clients;
    }
    expect(failures).toEqual([]);
    alive();

    // The LISTEN connections came back: one for A and one for each live worker.
    await waitFor(
      async () =>
        (
          await query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'dispatch-listen'",
          )
        )[0].n ===
        1 + workers.length,
      { timeoutMs: 20_000, what: "the LISTEN connections to be back" },
    );
    const fresh = await createRun(`$ echo fresh-${marker}`);
    await waitTerminal([fresh], 20_000);
    expect((await ok(a.api("GET", `/api/v1/agent/runs/${fresh}`))).state).toBe("SUCCEEDED");

    // Every create that was answered 200 has its run, and it ended. One that was executing when the
    // database went away may have lost its execution (ERROR, retryable: a follow-up continues it);
    // none is stuck or gone.
    expect(new Set(accepted).size).toBe(accepted.length);
    await waitTerminal(accepted, 60_000);
    const runs = await listed(accepted);
    expect(runs.size).toBe(accepted.length);
    const outcomes = new Map<string, number>();
    for (const id of accepted) {
      const run = runs.get(id);
      const outcome = run.state === "ERROR" ? `ERROR ${run.status_message?.reason}` : run.state;
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      if (run.state !== "SUCCEEDED") {
        expect(run.state, `${id}: ${JSON.stringify(run.status_message)}`).toBe("ERROR");
        expect(run.status_message.retryable, id).toBe(true);
      }
    }
    console.info(
      `PostgreSQL restart under load: ${JSON.stringify({ ...statuses, outcomes: Object.fromEntries(outcomes) })}`,
    );
  }, 120_000);
});
