import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
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
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";

/**
 * Faults of a replicated Dispatch (docs/architecture.md): three real `dispatch serve` processes on one fresh
 * PostgreSQL database — A (`--role api,notifier`) takes every request, B and C (`--role worker`) only
 * execute. Runs spread over both workers and execute once each; the runs of a worker killed with SIGKILL,
 * stopped for a deploy with SIGTERM, or paused past its lease continue on the other worker from their
 * checkpoints (docs/architecture.md, "Runs survive their worker"); PostgreSQL restarted under load turns into 503s that
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
let adminKey: string;
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
  adminKey = newAdminKey();
  common.DATABASE_URL = databaseUrl;
  for (let i = 0; i < 3; i++) dataDirs.push(await mkdtemp(join(tmpdir(), "dispatch-pg-fault-")));
  [a, b, c] = await Promise.all([
    start(dataDirs[0]!, "api,notifier", {
      DISPATCH_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      // The load below is many requests from one key; the rate limiter is not what is under test.
      DISPATCH_RATE_LIMIT_PER_MINUTE: "1000000",
      DISPATCH_RATE_LIMIT_BURST: "100000",
    }),
    startWorker(dataDirs[1]!),
    startWorker(dataDirs[2]!),
  ]);
  workers = [b, c];
}, 120_000);

const common: Record<string, string> = {
  DISPATCH_POLL_INTERVAL_MS: "200",
  DISPATCH_LEASE_MS: String(LEASE_MS),
  DISPATCH_SHUTDOWN_GRACE_MS: "500",
  DISPATCH_SIGNING_KEY: randomBytes(32).toString("hex"),
};

function start(dataDir: string, roles: string, env: Record<string, string>): Promise<ServerProcess> {
  return startServerProcess({
    dataDir,
    key: adminKey,
    env: { ...common, ...env },
    args: ["--role", roles],
    startTimeoutMs: 60_000,
  });
}

function startWorker(dataDir: string): Promise<ServerProcess> {
  return start(dataDir, "worker", { DISPATCH_MAX_CONCURRENT_RUNS: "4" });
}

/** A new worker process in place of one that was stopped (on its data directory). */
async function replace(stopped: ServerProcess): Promise<void> {
  const next = await startWorker(stopped.dataDir);
  if (stopped === b) b = next;
  else c = next;
  workers = [b, c];
}

/** The worker process holding the run now, by the pid in its worker id. */
async function holderOf(runId: string): Promise<ServerProcess | undefined> {
  const [row] = await query("SELECT worker_id FROM runs WHERE id = $1", [runId]);
  const pid = String(row?.worker_id ?? "").split(":")[1];
  return [b, c].find((w) => String(w.pid) === pid);
}

/** A run that writes its file, sleeps, then checks the file is still there and intact. */
function fileScript(tag: string, sleepS: number): string {
  return `$ echo ${tag} > data.txt\n$ sleep ${sleepS}\n$ grep -qx ${tag} data.txt`;
}

/** The run's transcript as A's API shows it. */
async function transcriptOf(runId: string): Promise<Json[]> {
  return (await ok(a.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`))).events;
}

/**
 * The run's first command has its result and the checkpoint taken after it is stored: the file is
 * written, the agent sleeps, and another worker could continue from here.
 */
async function waitFirstCommand(runId: string): Promise<void> {
  await waitFor(async () => (await transcriptOf(runId)).some((e: Json) => e.type === "tool_result"), {
    timeoutMs: 30_000,
    what: `the first command of ${runId}`,
  });
  await waitFor(
    async () => (await query("SELECT 1 FROM run_checkpoints WHERE run_id = $1", [runId])).length > 0,
    {
      timeoutMs: 30_000,
      what: `the checkpoint of ${runId}`,
    },
  );
}

/** Every run SUCCEEDED in one execution that stayed INPROGRESS, its check of the file passed. */
async function expectContinued(ids: string[], moved: RegExp[]): Promise<void> {
  const runs = await listed(ids);
  for (const id of ids) {
    expect(runs.get(id)?.state, id).toBe("SUCCEEDED");
    const transcript = await transcriptOf(id);
    expect(
      transcript.filter((e: Json) => e.type === "state").map((e: Json) => e.data.state),
      id,
    ).toEqual(["QUEUED", "INPROGRESS", "SUCCEEDED"]);
    const results = transcript.filter((e: Json) => e.type === "tool_result");
    expect(results.at(-1).data, id).toMatchObject({
      command: expect.stringMatching(/^grep -qx/),
      exit_code: 0,
    });
    // The file was written once, before the move: what the check read was restored from the checkpoint.
    expect(
      results.filter((e: Json) => e.data.command.startsWith("echo")),
      id,
    ).toHaveLength(1);
    const worker = transcript.filter((e: Json) => e.type === "log" && e.data.phase === "worker");
    expect(
      worker.map((e: Json) => e.data.message),
      id,
    ).toEqual(moved.map((m) => expect.stringMatching(m)));
  }
}

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

  it("kill -9 of a worker mid-run: its runs continue on the other worker from their checkpoints, each SUCCEEDED with its file intact", async () => {
    const ids = await Promise.all(Array.from({ length: 6 }, (_, i) => createRun(fileScript(`kill-${i}`, 6))));
    for (const id of ids) await waitFirstCommand(id);
    const victim = (await holderOf(ids[0]!))!;
    expect(victim, `the worker of ${ids[0]}`).toBeDefined();
    const survivor = victim === b ? c : b;
    const moved: string[] = [];
    for (const id of ids) if ((await holderOf(id)) === victim) moved.push(id);

    victim.child.kill("SIGKILL");
    expect((await victim.exited).signal).toBe("SIGKILL");
    workers = [survivor];
    // Runs created while the dead worker's lease has not run out yet: none may be lost.
    const meanwhile = await Promise.all(
      Array.from({ length: 4 }, (_, i) => createRun(`$ echo meanwhile-${i}`)),
    );

    await waitTerminal([...ids, ...meanwhile], 60_000);
    await expectContinued(moved, [
      /resume 1 of 3/,
      /^Moved to another worker \(its worker was lost\) and resumed from its checkpoint/,
    ]);
    await expectContinued(
      ids.filter((id) => !moved.includes(id)),
      [],
    );
    for (const id of moved) expect(executedBy(id), id).toContain(nameOf(survivor));
    const runs = await listed(meanwhile);
    for (const id of meanwhile) expect(runs.get(id)?.state, id).toBe("SUCCEEDED");
    await killAgentProcesses(victim.dataDir);
    await replace(victim);
  }, 120_000);

  it("SIGTERM of a worker during a deploy: its runs continue on the other worker without an ERROR", async () => {
    const ids = await Promise.all(
      Array.from({ length: 4 }, (_, i) => createRun(fileScript(`term-${i}`, 20))),
    );
    for (const id of ids) await waitFirstCommand(id);
    const stopping = (await holderOf(ids[0]!))!;
    const moved: string[] = [];
    for (const id of ids) if ((await holderOf(id)) === stopping) moved.push(id);

    stopping.child.kill("SIGTERM");
    expect(await stopping.exited, stopping.output()).toEqual({ code: 0, signal: null });
    await waitTerminal(ids, 90_000);
    await expectContinued(moved, [
      /shutting down/,
      /^Moved to another worker \(its worker shut down\) and resumed from its checkpoint/,
    ]);
    await replace(stopping);
  }, 150_000);

  it("a worker paused past its lease (SIGSTOP) and let go on cannot write to the run that moved", async () => {
    const runId = await createRun(
      `$ echo one > data.txt\n$ sleep 8\n$ echo two >> data.txt\n$ grep -c . data.txt`,
    );
    await waitFirstCommand(runId);
    const paused = (await holderOf(runId))!;
    paused.child.kill("SIGSTOP");
    try {
      // Its lease runs out; the other worker resumes the run.
      await waitFor(async () => (await holderOf(runId)) !== undefined && (await holderOf(runId)) !== paused, {
        timeoutMs: 30_000,
        what: "the run to move to the other worker",
      });
    } finally {
      paused.child.kill("SIGCONT");
    }
    await waitTerminal([runId], 60_000);
    // The paused worker's sleep ended while it was stopped; once let go, its write of that result is refused.
    await waitFor(() => paused.output().includes("no longer holds the run"), {
      timeoutMs: 30_000,
      what: "the paused worker to find it no longer holds the run",
    });
    const transcript = await transcriptOf(runId);
    const results = transcript.filter((e: Json) => e.type === "tool_result").map((e: Json) => e.data);
    expect(results.map((r: Json) => r.command)).toEqual([
      "echo one > data.txt",
      "sleep 8",
      "echo two >> data.txt",
      "grep -c . data.txt",
    ]);
    expect(results.at(-1).output).toBe("2\n");
    expect((await ok(a.api("GET", `/api/v1/agent/runs/${runId}`))).state).toBe("SUCCEEDED");
    // Nothing of the paused worker's execution after the move: its workspace never got the second line.
    const stale = join(paused.dataDir, "workspaces", runId, "data.txt");
    expect(existsSync(stale) ? readFileSync(stale, "utf8") : "one\n").toBe("one\n");
  }, 120_000);

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
