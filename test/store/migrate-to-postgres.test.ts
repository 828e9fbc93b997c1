import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { GIF_1x1, PNG_1x1, wireAttachment } from "../attachments/images.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../support/postgres.ts";
import {
  killAgentProcesses,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";

/**
 * `dispatch migrate-to-postgres` end to end: a SQLite database written by a real Dispatch (runs executed
 * by the scripted harness, a follow-up, attachments, a fired schedule, keys, an identity, and the Slack
 * side's bindings, channel settings, notifier state, outbox and inbound queue written through the store),
 * copied by the real CLI into a fresh PostgreSQL database; then a real `dispatch serve` on that database
 * answers the same admin key with the same runs, events (same seqs), attachments, schedule and artifact.
 */
const missing = process.env.CI ? undefined : postgresUnavailable();
if (missing) console.warn(`migrate-to-postgres tests SKIPPED: ${missing} (apt-get install -y postgresql)`);

// biome-ignore lint/suspicious/noExplicitAny: API bodies are asserted field by field
type Json = any;

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const START = Date.parse("2030-01-02T00:00:30.000Z");
let clock = START;

let cluster: PostgresCluster;
let targetUrl: string;
let t: TestDispatch;
let sqlitePath: string;
let server: ServerProcess | undefined;
let serverDir: string | undefined;
let first: { code: number | null; stdout: string; stderr: string };

/** What the SQLite-backed Dispatch answered, to compare with the PostgreSQL-backed one. */
const before: {
  runs: Json[];
  events: Map<string, Json[]>;
  attachments: Json[];
  schedule: Json;
  identities: Json;
  memberKey: string;
  artifactUid: string;
  runA: string;
  runB: string;
  sqliteCounts: Map<string, number>;
} = {
  runs: [],
  events: new Map(),
  attachments: [],
  schedule: undefined,
  identities: undefined,
  memberKey: "",
  artifactUid: "",
  runA: "",
  runB: "",
  sqliteCounts: new Map(),
};

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["src/main.ts", "migrate-to-postgres", ...args], {
      cwd: REPO_ROOT,
      // Nothing from this process's environment: the flags alone say where to copy.
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

async function ok(res: Promise<{ status: number; text: string; body: Json }>): Promise<Json> {
  const r = await res;
  expect(r.status, r.text).toBeLessThan(300);
  return r.body;
}

async function allEvents(api: TestDispatch["api"] | ServerProcess["api"], runId: string): Promise<Json[]> {
  return (await ok(api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`))).events;
}

/** The run fields that do not depend on the server answering (signed links carry their own signature). */
function stable(run: Json): Json {
  const { session_link: _link, artifacts, ...rest } = run;
  return {
    ...rest,
    artifacts: (artifacts ?? []).map((a: Json) => ({
      ...a,
      data: { ...a.data, download_url: undefined, expires_at: undefined },
    })),
  };
}

function countsIn(sqlite: string): Map<string, number> {
  const db = new DatabaseSync(sqlite, { readOnly: true });
  try {
    const tables = (
      db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all() as Array<{ name: string }>
    ).map((r) => r.name);
    return new Map(
      tables.map((name) => [
        name,
        Number((db.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as Json).n),
      ]),
    );
  } finally {
    db.close();
  }
}

/** The count table of the CLI's stdout: table → [sqlite, postgres, status]. */
function countTable(stdout: string): Map<string, [string, number, string]> {
  const rows = new Map<string, [string, number, string]>();
  for (const line of stdout.split("\n").slice(1)) {
    if (line.trim() === "") break;
    const m = /^(\S+)\s+(\S+)\s+(\d+)\s+(.*)$/.exec(line);
    if (m) rows.set(m[1]!, [m[2]!, Number(m[3]), m[4]!]);
  }
  return rows;
}

beforeAll(async () => {
  if (missing) return;
  cluster = await startPostgres();
  targetUrl = await cluster.createDatabase();
  t = await startTestDispatch({}, { scheduler: { now: () => clock, maxSleepMs: 50, retryMs: 60_000 } });

  // Run A: attachments and an Idempotency-Key on create, then a follow-up with another image.
  const a = await ok(
    t.api(
      "POST",
      "/api/v1/agent/runs",
      {
        title: "Straße migration",
        prompt: "Look at this\n$ echo one\n$ echo two",
        attachments: [wireAttachment("screen.png", PNG_1x1)],
      },
      { "idempotency-key": "migrate-a" },
    ),
  );
  before.runA = a.run_id;
  await waitForState(t, before.runA, ["SUCCEEDED"], 30_000);
  await ok(
    t.api("POST", `/api/v1/agent/runs/${before.runA}/followups`, {
      message: "and this\n$ echo three",
      attachments: [wireAttachment("later.gif", GIF_1x1, "image/gif")],
    }),
  );
  await waitFor(
    async () => {
      const events = await allEvents(t.api, before.runA);
      const run = (await t.api("GET", `/api/v1/agent/runs/${before.runA}`)).body;
      return run.state === "SUCCEEDED" && events.some((e) => e.data?.output === "three\n");
    },
    { timeoutMs: 30_000, what: "the follow-up's execution to finish" },
  );

  // Run B: plain.
  before.runB = (await ok(t.api("POST", "/api/v1/agent/runs", { prompt: "$ echo bee" }))).run_id;
  await waitForState(t, before.runB, ["SUCCEEDED"], 30_000);

  // A schedule that fires once on the test clock (a schedule_fires row and a SCHEDULED_AGENT run).
  before.schedule = await ok(
    t.api("POST", "/api/v1/agent/schedules", {
      name: "nightly",
      cron_schedule: "* * * * *",
      prompt: "$ echo scheduled",
    }),
  );
  clock = Date.parse("2030-01-02T00:01:00.000Z");
  const scheduled = await waitFor(
    async () =>
      (await t.api("GET", `/api/v1/agent/runs?schedule_id=${before.schedule.id}`)).body.runs?.[0] as Json,
    { timeoutMs: 30_000, what: "the schedule to fire" },
  );
  await waitForState(t, scheduled.run_id, ["SUCCEEDED"], 30_000);
  before.schedule = await ok(t.api("GET", `/api/v1/agent/schedules/${before.schedule.id}`));

  // Keys and an identity.
  before.memberKey = await t.newKey("team_default", { displayName: "Member" });
  await ok(t.api("POST", "/api/v1/agent/identities", { name: "Reviewer bot" }));
  before.identities = await ok(t.api("GET", "/api/v1/agent/identities"));

  // What the Slack side and delivery write, through the store.
  const store = t.dispatch.store;
  const now = new Date().toISOString();
  await store.bindThread({
    runId: before.runB,
    platform: "slack",
    workspace: "T1",
    channel: "C1",
    thread: "1.1",
    triggerRef: "1.1",
    requester: "U1",
    createdAt: now,
  });
  await store.setChannelRepository(
    { platform: "slack", workspace: "T1", channel: "C1" },
    { repository: "acme/app", base: "main" },
    "U1",
    now,
  );
  await store.setNotifierCursor("notifier", { updatedAt: now, runId: before.runB });
  await store.recordCardChange({
    runId: before.runB,
    threadKey: "slack:T1:C1",
    expectedVersion: 0,
    fingerprint: "fp",
    runUpdatedAt: now,
    lastFinal: null,
    card: {
      stream: `card:${before.runB}`,
      target: "slack:T1:C1",
      payload: { text: "card" },
      editIntervalMs: 0,
    },
    messages: [],
    now,
  });
  await store.enqueueOutbox(before.runB, [
    {
      dedupeKey: `final:${before.runB}`,
      kind: "reply",
      stream: "s1",
      target: "slack:T1:C1",
      payload: { n: 1 },
    },
  ]);
  await store.acceptInbound({
    source: "slack",
    kind: "slack",
    deliveryId: "Ev1",
    payload: JSON.stringify({ event: "x" }),
    keys: [{ key: "slack:event:Ev1" }],
  });
  before.artifactUid = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
  await store.recordArtifact(
    before.runB,
    {
      artifact_type: "FILE",
      created_at: now,
      data: {
        artifact_uid: before.artifactUid,
        filepath: "changes.patch",
        filename: "changes.patch",
        mime_type: "text/x-diff",
        size_bytes: 12,
        description: "+1 −0 in 1 file",
      },
    },
    {
      uid: before.artifactUid,
      contentType: "text/x-diff",
      content: new TextEncoder().encode("+hello\n-bye\n"),
    },
  );

  for (const id of [before.runA, before.runB, scheduled.run_id]) {
    before.runs.push(await ok(t.api("GET", `/api/v1/agent/runs/${id}`)));
    before.events.set(id, await allEvents(t.api, id));
  }
  before.attachments = (
    await ok(t.api("GET", `/api/v1/agent/runs/${before.runA}/handoff/attachments`))
  ).attachments;

  // Stopped, not removed: its database is what gets copied.
  await t.dispatch.stop();
  sqlitePath = join(t.dataDir, "dispatch.db");
  before.sqliteCounts = countsIn(sqlitePath);
  // A small batch size, so that every table with more than a few rows is copied over several pages.
  first = await cli(["--from", sqlitePath, "--to", targetUrl, "--batch-size", "3"]);
}, 240_000);

afterAll(async () => {
  if (server) await stopServerProcess(server);
  if (serverDir) {
    await killAgentProcesses(serverDir);
    await rm(serverDir, { recursive: true, force: true });
  }
  if (t) await rm(t.dataDir, { recursive: true, force: true });
  await cluster?.stop();
}, 60_000);

describe.skipIf(Boolean(missing))("dispatch migrate-to-postgres", () => {
  it("copies every table, prints each one's counts (equal on both sides) and names what it left out", () => {
    expect(first.code, `${first.stdout}\n${first.stderr}`).toBe(0);
    const table = countTable(first.stdout);
    const stateTables = [...before.sqliteCounts.keys()].filter(
      (n) => n !== "schema_migrations" && !n.startsWith("sqlite_"),
    );
    expect(stateTables.length).toBeGreaterThanOrEqual(19);
    for (const name of stateTables) {
      const n = before.sqliteCounts.get(name)!;
      expect(table.get(name), name).toEqual([String(n), n, "ok"]);
    }
    // The state written above reaches every table of the Dispatch schema.
    for (const name of [
      "teams",
      "principals",
      "api_keys",
      "runs",
      "run_events",
      "followups",
      "idempotency_keys",
      "inbox",
      "inbox_deliveries",
      "thread_bindings",
      "notifier_cursors",
      "notifier_cards",
      "outbox",
      "artifact_files",
      "channel_settings",
      "schedules",
      "schedule_fires",
      "attachment_blobs",
      "run_attachments",
    ]) {
      expect(before.sqliteCounts.get(name), name).toBeGreaterThan(0);
    }
    expect(before.sqliteCounts.get("run_events")).toBeGreaterThan(3); // more than one page
    expect(table.get("run_search_text")).toEqual(["-", before.sqliteCounts.get("runs"), "ok"]);
    expect(first.stdout).toMatch(/Not copied:\n(.*\n)*\s+schema_migrations: /);
    expect(first.stdout).toMatch(/\s+sqlite_sequence: /);
  });

  it("shows no API key, key hash or database password", () => {
    const db = new DatabaseSync(sqlitePath, { readOnly: true });
    const hashes = (db.prepare("SELECT hash FROM api_keys").all() as Array<{ hash: string }>).map(
      (r) => r.hash,
    );
    db.close();
    const output = first.stdout + first.stderr;
    for (const secret of [t.key, before.memberKey, ...hashes]) expect(output).not.toContain(secret);
  });

  it("a Dispatch on the PostgreSQL database answers the same admin key with the same runs, events and more", async () => {
    serverDir = await mkdtemp(join(tmpdir(), "dispatch-migrated-"));
    server = await startServerProcess({
      dataDir: serverDir,
      key: t.key,
      env: { DATABASE_URL: targetUrl, DISPATCH_POLL_INTERVAL_MS: "200" },
      startTimeoutMs: 60_000,
    });
    const api = server.api;

    // The key was copied, not made anew at start-up.
    const client = new pg.Client({ connectionString: targetUrl });
    await client.connect();
    try {
      const keys = await client.query("SELECT count(*)::int AS n FROM api_keys");
      expect(keys.rows[0].n).toBe(before.sqliteCounts.get("api_keys"));
    } finally {
      await client.end();
    }

    for (const run of before.runs) {
      const now = await ok(api("GET", `/api/v1/agent/runs/${run.run_id}`));
      expect(stable(now)).toEqual(stable(run));
      const events = await allEvents(api, run.run_id);
      expect(events).toEqual(before.events.get(run.run_id));
      expect(events.map((e: Json) => e.seq)).toEqual(events.map((_: Json, i: number) => i + 1));
    }

    // Attachments: the same rows (the follow-up's names its follow-up) and the same bytes.
    const attachments = (await ok(api("GET", `/api/v1/agent/runs/${before.runA}/handoff/attachments`)))
      .attachments;
    const shape = (a: Json) => [a.attachment_id, a.filename, a.mime_type, a.followup_id];
    expect(attachments.map(shape)).toEqual(before.attachments.map(shape));
    expect(attachments[1].followup_id).toEqual(expect.any(String));
    const bytes = await Promise.all(
      attachments.map(async (a: Json) => Buffer.from(await (await fetch(a.download_url)).arrayBuffer())),
    );
    expect(bytes).toEqual([PNG_1x1, GIF_1x1]);

    // The schedule with its history, the identities, the member's key, the patch artifact.
    const schedule = await ok(api("GET", `/api/v1/agent/schedules/${before.schedule.id}`));
    expect({ ...schedule, history: { last_ran: schedule.history.last_ran } }).toEqual({
      ...before.schedule,
      history: { last_ran: before.schedule.history.last_ran },
    });
    expect(schedule.history.last_ran).toEqual(expect.any(String));
    expect(await ok(api("GET", "/api/v1/agent/identities"))).toEqual(before.identities);
    // runA has no thread: its audience is the team, the member included. runB is bound to a Slack thread
    // this server has no Slack for: it is not the member's to see.
    const url = server.url;
    const asMember = (runId: string) =>
      fetch(`${url}/api/v1/agent/runs/${runId}`, {
        headers: { authorization: `Bearer ${before.memberKey}` },
      });
    expect((await asMember(before.runA)).status).toBe(200);
    expect((await asMember(before.runB)).status).toBe(404);
    const artifact = await ok(api("GET", `/api/v1/agent/artifacts/${before.artifactUid}`));
    const patch = await fetch(artifact.data.download_url);
    expect(await patch.text()).toBe("+hello\n-bye\n");

    // `q` finds the copied run through run_search_text, folded as at create (ß matches "STRASSE").
    const found = await ok(api("GET", "/api/v1/agent/runs?q=STRASSE"));
    expect(found.runs.map((r: Json) => r.run_id)).toEqual([before.runA]);

    // The database takes new work: a run executes, and its events are numbered from 1.
    const fresh = (await ok(api("POST", "/api/v1/agent/runs", { prompt: "$ echo after" }))).run_id;
    await waitFor(async () => (await api("GET", `/api/v1/agent/runs/${fresh}`)).body.state === "SUCCEEDED", {
      timeoutMs: 30_000,
      what: "a run on the migrated database to succeed",
    });
    expect((await allEvents(api, fresh))[0].seq).toBe(1);
  }, 120_000);

  it("carries the Slack side's state over, and new outbox ids follow the copied ones", async () => {
    const store = new PostgresStore(targetUrl);
    try {
      const channel = { platform: "slack" as const, workspace: "T1", channel: "C1" };
      expect(await store.getChannelSettings(channel)).toMatchObject({ repository: "acme/app" });
      expect(await store.getThreadBinding(before.runB)).toMatchObject({ thread: "1.1", requester: "U1" });
      expect(await store.getNotifierCursor("notifier")).toMatchObject({ runId: before.runB });
      expect(await store.getCardState(before.runB)).toMatchObject({ version: 1, fingerprint: "fp" });
      expect(await store.claimInbound("slack:event:Ev1", "slack")).toBe(false); // already seen
      const copied = (await store.listOutbox(before.runB)).map((r) => r.id);
      expect(copied).toHaveLength(2);
      await store.enqueueOutbox(before.runB, [
        { dedupeKey: `late:${before.runB}`, kind: "reply", stream: "s2", target: "slack:T1:C1", payload: {} },
      ]);
      const ids = (await store.listOutbox(before.runB)).map((r) => r.id);
      expect(ids).toHaveLength(3);
      expect(Math.max(...ids)).toBeGreaterThan(Math.max(...copied));
    } finally {
      await store.close();
    }
  });

  it("refuses a second copy into the now non-empty database, and a --from that is not a Dispatch database", async () => {
    const again = await cli(["--from", sqlitePath, "--to", targetUrl]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /Refused: The PostgreSQL database is not empty \(.*runs.*api_keys|api_keys.*runs/,
    );
    expect(again.stderr).toContain("nothing was copied");

    const nowhere = await cli(["--from", join(t.dataDir, "nope.db"), "--to", targetUrl]);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toContain("There is no SQLite database at");

    const stranger = join(t.dataDir, "other.db");
    await writeFile(stranger, "");
    const notOurs = await cli(["--from", stranger, "--to", targetUrl]);
    expect(notOurs.code).toBe(1);
    expect(notOurs.stderr).toContain("is not a Dispatch database");
    expect((await readFile(stranger)).length).toBe(0); // left as it was

    const noTarget = await cli(["--from", sqlitePath]);
    expect(noTarget.code).toBe(2);
    expect(noTarget.stderr).toContain("--to postgres://");
  });
});
