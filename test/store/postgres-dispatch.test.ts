import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
import { SseStream } from "../support/sse.ts";

/**
 * A whole Dispatch on PostgreSQL: two real `dispatch serve` processes (replicas A and B) on one database
 * of a throwaway cluster, each with its own data directory, talked to over HTTP. A executes runs; B
 * (DISPATCH_MAX_CONCURRENT_RUNS=0) only serves the API, so whatever B shows of a run's execution came
 * to it through the database and its signals, never from its own executor.
 */
const missing = process.env.CI ? undefined : postgresUnavailable();
if (missing) console.warn(`PostgreSQL Dispatch tests SKIPPED: ${missing} (apt-get install -y postgresql)`);

// biome-ignore lint/suspicious/noExplicitAny: API bodies are asserted field by field
type Json = any;

/** Holds the run until the test creates `gate` in the run's workspace (on A, which executes it). */
const GATE = "$ until [ -e gate ]; do sleep 0.02; done";
const TERMINAL = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"];

let cluster: PostgresCluster;
let databaseUrl: string;
const dataDirs: string[] = [];
let a: ServerProcess;
let b: ServerProcess;

beforeAll(async () => {
  if (missing) return;
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase();
  const key = newAdminKey();
  const common = {
    DATABASE_URL: databaseUrl,
    DISPATCH_POLL_INTERVAL_MS: "200",
    // Links signed by one replica verify at the other.
    DISPATCH_SIGNING_KEY: randomBytes(32).toString("hex"),
  };
  for (let i = 0; i < 2; i++) dataDirs.push(await mkdtemp(join(tmpdir(), "dispatch-pg-replica-")));
  // Started together, as a deployment's replicas are: they race to migrate and to store the admin key.
  [a, b] = await Promise.all([
    startServerProcess({
      dataDir: dataDirs[0]!,
      key,
      env: { ...common, DISPATCH_MAX_CONCURRENT_RUNS: "2" },
      startTimeoutMs: 60_000,
    }),
    startServerProcess({
      dataDir: dataDirs[1]!,
      key,
      env: { ...common, DISPATCH_MAX_CONCURRENT_RUNS: "0" },
      startTimeoutMs: 60_000,
    }),
  ]);
}, 120_000);

afterAll(async () => {
  for (const server of [a, b]) if (server) await stopServerProcess(server);
  for (const dir of dataDirs) {
    await killAgentProcesses(dir);
    await rm(dir, { recursive: true, force: true });
  }
  await cluster?.stop();
}, 60_000);

async function ok(res: Promise<{ status: number; text: string; body: Json }>): Promise<Json> {
  const r = await res;
  expect(r.status, r.text).toBe(200);
  return r.body;
}

function getRun(server: ServerProcess, id: string): Promise<Json> {
  return ok(server.api("GET", `/api/v1/agent/runs/${id}`));
}

/** The run as a replica shows it, without the link to that replica's own session page. */
async function runAt(server: ServerProcess, id: string): Promise<Json> {
  const { session_link: link, ...rest } = await getRun(server, id);
  expect(link).toMatch(new RegExp(`^${server.url}/sessions/`));
  return rest;
}

async function transcript(server: ServerProcess, id: string): Promise<Json[]> {
  return (await ok(server.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`))).events;
}

async function waitForState(server: ServerProcess, id: string, states: string[]): Promise<Json> {
  let last: Json | undefined;
  try {
    return await waitFor(
      async () => {
        last = await getRun(server, id);
        return states.includes(last.state) ? last : undefined;
      },
      // A deadline for a hang, not a speed: CI machines run this beside the rest of the suite.
      { timeoutMs: 45_000, intervalMs: 50, what: `run ${id} to reach ${states.join("/")}` },
    );
  } catch (err) {
    // Say where the run stopped: its state and its transcript's last events.
    const events = await transcript(server, id).catch(() => []);
    const story = events
      .slice(-12)
      .map((e: Json) => `${e.seq} ${e.type} ${JSON.stringify(e.data).slice(0, 160)}`);
    throw new Error(`${(err as Error).message}; it is ${last?.state ?? "unknown"}:\n${story.join("\n")}`);
  }
}

/** Opens the gate of a run that A executes. */
async function openGate(id: string): Promise<void> {
  await writeFile(join(dataDirs[0]!, "workspaces", id, "gate"), "");
}

/** Waits until the run's agent is held at the gate (its command was called) on A. */
async function waitForGate(id: string): Promise<void> {
  await waitFor(
    async () =>
      (await transcript(b, id)).some((e) => e.type === "tool_call" && e.data.command.includes("gate")),
    { timeoutMs: 20_000, intervalMs: 50, what: `run ${id} to reach its gate` },
  );
}

describe.skipIf(Boolean(missing))("Dispatch on PostgreSQL: two replicas on one database", () => {
  it("a run created at A is executed, and its events stream live over SSE from B", async () => {
    const marker = randomUUID();
    const created = await ok(
      a.api("POST", "/api/v1/agent/runs", {
        prompt: `$ echo before ${marker}\n${GATE}\n$ echo after ${marker}`,
      }),
    );
    const id = created.run_id as string;
    const res = await SseStream.open(`${b.url}/api/v1/agent/runs/${id}/events`, {
      headers: { authorization: `Bearer ${b.key}` },
    });
    try {
      expect(res.status).toBe(200);
      const streamed: Json[] = [];
      let gateOpened = false;
      for await (const msg of res) {
        const event = JSON.parse(msg.data);
        expect(msg.id).toBe(String(event.seq));
        streamed.push(event);
        // The agent is held at the gate: what B streamed so far it cannot have read from a finished run.
        if (!gateOpened && event.type === "tool_call" && event.data.command.includes("gate")) {
          expect(
            streamed.some((e) => e.type === "tool_result" && e.data.output.includes(`before ${marker}`)),
          ).toBe(true);
          expect((await getRun(b, id)).state).toBe("INPROGRESS");
          await openGate(id);
          gateOpened = true;
        }
        if (event.type === "state" && TERMINAL.includes(event.data.state)) break;
      }
      expect(gateOpened).toBe(true);
      expect(streamed.at(-1)?.data.state).toBe("SUCCEEDED");
      expect(
        streamed.some((e) => e.type === "tool_result" && e.data.output.includes(`after ${marker}`)),
      ).toBe(true);
      // Every event once, in order, as A's API has them.
      expect(streamed.map((e) => e.seq)).toEqual(streamed.map((_, i) => i + 1));
      expect(await transcript(a, id)).toEqual(streamed);
      expect(await runAt(b, id)).toEqual(await runAt(a, id));
    } finally {
      res.close();
    }
  });

  it("an idempotent create retried at B returns A's run, and two racing at A and B make one run", async () => {
    const marker = randomUUID();
    const body = { prompt: `$ echo idempotent ${marker}`, title: `idempotent ${marker}` };
    const post = (server: ServerProcess, key: string) =>
      fetch(`${server.url}/api/v1/agent/runs`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${server.key}`,
          "content-type": "application/json",
          "idempotency-key": key,
        },
        body: JSON.stringify(body),
      });
    const retried = randomUUID();
    const first = await post(a, retried);
    expect(first.status).toBe(200);
    const original = await first.json();
    const again = await post(b, retried);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(original);

    // At the same moment on both: one creates, the other waits and replays (or answers 409, which
    // clients retry).
    const raced = randomUUID();
    const untilAnswered = async (server: ServerProcess) =>
      waitFor(
        async () => {
          const res = await post(server, raced);
          if (res.status === 409) return undefined;
          expect(res.status).toBe(200);
          return (await res.json()) as Json;
        },
        { timeoutMs: 10_000, intervalMs: 20, what: "an answer other than 409" },
      );
    const [atA, atB] = await Promise.all([untilAnswered(a), untilAnswered(b)]);
    expect(atA).toEqual(atB);
    expect(atA.run_id).not.toBe(original.run_id);

    const listed = await ok(b.api("GET", `/api/v1/agent/runs?q=${marker}&limit=100`));
    expect(listed.runs.map((r: Json) => r.run_id).sort()).toEqual([original.run_id, atA.run_id].sort());
  });

  it("a follow-up at A and a cancel at B racing leave one consistent outcome", async () => {
    for (let round = 0; round < 3; round++) {
      const marker = randomUUID();
      const id = (
        await ok(a.api("POST", "/api/v1/agent/runs", { prompt: `${GATE}\n$ echo never ${marker}` }))
      ).run_id as string;
      await waitForGate(id);
      const [followup, cancel] = await Promise.all([
        a.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: `$ echo followed ${marker}` }),
        b.api("POST", `/api/v1/agent/runs/${id}/cancel`),
      ]);
      // Whichever came first, both were accepted: the run was INPROGRESS for the cancel either way
      // (a follow-up to a running run leaves it INPROGRESS; one after the cancel starts a new execution).
      expect(followup.status, followup.text).toBe(200);
      expect(cancel.status, cancel.text).toBe(200);
      expect(cancel.body).toBe(id);
      const outcome = followup.body.outcome as string;
      expect(["live_session", "handoff_execution"]).toContain(outcome);
      // Both answers are in, so the follow-up's handoff (if any) is committed: the next terminal state is the last.
      const final = await waitForState(b, id, TERMINAL);
      const events = await transcript(b, id);
      // On failure, what the run went through instead says why (the transcript names the failing step).
      const story = events.map((e) => JSON.stringify(e.data)).join("\n");
      expect(final.state, story).toBe(outcome === "live_session" ? "CANCELLED" : "SUCCEEDED");
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const followups = events.filter((e) => e.type === "followup");
      expect(followups).toHaveLength(1);
      expect(followups[0].data).toMatchObject({ followup_id: followup.body.followup_id, outcome });
      const states = events.filter((e) => e.type === "state").map((e) => e.data.state);
      const cancelled = events.find((e) => e.type === "state" && e.data.state === "CANCELLED");
      expect(states.filter((s) => s === "CANCELLED")).toHaveLength(1);
      if (outcome === "live_session") {
        // Accepted while running, then the cancel ended the run: nothing ran after it.
        expect(followups[0].seq).toBeLessThan(cancelled.seq);
        expect(states).toEqual(["QUEUED", "INPROGRESS", "CANCELLED"]);
      } else {
        // The cancel ended the first execution; the follow-up started the second, which ran it.
        expect(cancelled.seq).toBeLessThan(followups[0].seq);
        expect(states).toEqual(["QUEUED", "INPROGRESS", "CANCELLED", "QUEUED", "INPROGRESS", "SUCCEEDED"]);
        expect(
          events.some((e) => e.type === "tool_result" && e.data.output.includes(`followed ${marker}`)),
        ).toBe(true);
      }
      expect(events.some((e) => e.type === "tool_result" && e.data.output.includes(`never ${marker}`))).toBe(
        false,
      );
      // Both replicas tell the same story.
      expect(await runAt(a, id)).toEqual(await runAt(b, id));
      expect(await transcript(a, id)).toEqual(events);
    }
  }, 120_000);
});
