import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHANNEL, SIGNING_SECRET } from "../integrations/slack/support.ts";
import {
  FORM,
  JSON_TYPE,
  mentionEvent,
  postedFor,
  postSlack,
  settleDeliveries,
  slashCommand,
} from "../store/replica-support.ts";
import { waitFor } from "../support/dispatch.ts";
import { FakeSlack, type SlackCall } from "../support/fake-slack.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../support/postgres.ts";
import {
  killAgentProcesses,
  newAdminKey,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";

/**
 * kill -9 of the notifier replica during a burst of transitions: N (`--role api,notifier`)
 * takes the Slack deliveries and reports, W (`--role worker`) executes, both on one fresh PostgreSQL
 * database. While runs change state, Slack holds back the answers to N's posts (received, not yet carried
 * out), N is killed with SIGKILL with those outbox rows claimed, and then Slack carries the posts out: the
 * messages exist, N never learnt their ts. N2 (`--role notifier`), started after the kill, is the only
 * notifier left: once N's leases run out it takes the rows over, finds the messages by their metadata
 * instead of posting again, and reports the rest. Every run ends with one status card showing its final
 * state and one final reply. What is asserted is what Slack was sent (the fake's records).
 */
const missing = process.env.CI ? undefined : postgresUnavailable();
if (missing)
  console.warn(`PostgreSQL notifier kill test SKIPPED: ${missing} (apt-get install -y postgresql)`);

const RUNS = 10;
const TERMINAL = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"];
/** N's claimed rows wait out the outbox lease (60 s in production) before N2 may take them. */
const SETTLE_MS = 180_000;
/**
 * Kill N while its posts are held, well within the Slack client's 15 s request timeout: a timed-out
 * request that Slack later carries out is another edge than the one shown here (a crash mid-request).
 */
const HOLD_AT_MOST_MS = 6_000;

let cluster: PostgresCluster;
let db: pg.Client;
let slack: FakeSlack;
let configDir: string;
const dataDirs: string[] = [];
let common: Record<string, string>;
let key: string;
let n: ServerProcess;
let w: ServerProcess;
let n2: ServerProcess | undefined;

const start = async (roles: string) => {
  const dataDir = await mkdtemp(join(tmpdir(), "dispatch-notifier-kill-"));
  dataDirs.push(dataDir);
  return startServerProcess({ dataDir, key, env: common, args: ["--role", roles], startTimeoutMs: 60_000 });
};

beforeAll(async () => {
  if (missing) return;
  cluster = await startPostgres();
  const databaseUrl = await cluster.createDatabase();
  db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  slack = await new FakeSlack().start();
  slack.channelMembers.set(CHANNEL, ["U1", "U2", "U3"]);
  configDir = await mkdtemp(join(tmpdir(), "dispatch-notifier-kill-config-"));
  const settings = join(configDir, "dispatch.config.yaml");
  await writeFile(settings, "slack: {}\n");
  key = newAdminKey();
  common = {
    DATABASE_URL: databaseUrl,
    DISPATCH_POLL_INTERVAL_MS: "200",
    // Runs take turns, so transitions keep coming while N dies and after.
    DISPATCH_MAX_CONCURRENT_RUNS: "2",
    DISPATCH_SIGNING_KEY: randomBytes(32).toString("hex"),
    // One address for all replicas, as behind a load balancer: both notifiers render the same cards.
    DISPATCH_PUBLIC_URL: "https://dispatch.example.test",
    DISPATCH_CONFIG_FILE: settings,
    SLACK_BOT_TOKEN: slack.token,
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
    SLACK_API_URL: slack.url,
  };
  [n, w] = await Promise.all([start("api,notifier"), start("worker")]);
}, 120_000);

afterAll(async () => {
  for (const server of [n, w, n2]) if (server) await stopServerProcess(server);
  for (const dir of dataDirs) {
    await killAgentProcesses(dir);
    await rm(dir, { recursive: true, force: true });
  }
  await db?.end();
  await cluster?.stop();
  await slack?.stop();
  if (configDir) await rm(configDir, { recursive: true, force: true });
}, 60_000);

/** Messages Dispatch posted for a run, of one kind, that Slack carried out (edits are chat.update). */
function posted(runId: string, kind: "card" | "reply"): SlackCall[] {
  return slack
    .succeeded("chat.postMessage")
    .filter((c) => postedFor(c).run_id === runId && postedFor(c).kind === kind);
}

/** What the store holds of a run's reporting, for a failure's message. */
async function whereIs(runId: string): Promise<string> {
  const read = async (sql: string, values: unknown[] = [runId]) => (await db.query(sql, values)).rows;
  return JSON.stringify(
    {
      run: await read("SELECT state, created_at, updated_at, finished_at, worker_id FROM runs WHERE id = $1"),
      states: await read(
        "SELECT seq, at, data FROM run_events WHERE run_id = $1 AND type = 'state' ORDER BY seq",
      ),
      bindings: await read("SELECT * FROM thread_bindings WHERE run_id = $1"),
      cards: await read("SELECT * FROM notifier_cards WHERE run_id = $1"),
      outbox: await read(
        "SELECT kind, dedupe_key, state, attempts, last_error FROM outbox WHERE run_id = $1 ORDER BY id",
      ),
      cursor: await read("SELECT * FROM notifier_cursors", []),
      slack: slack.calls
        .filter((c) => postedFor(c).run_id === runId)
        .map((c) => [c.method, postedFor(c).kind]),
      logs: [n, w, n2].flatMap((p) => (p?.output() ?? "").split("\n").filter((l) => l.includes(runId))),
    },
    null,
    1,
  );
}

/** Posts Slack has received but not answered yet (held back). */
function heldPosts(): SlackCall[] {
  return slack.calls.filter((c) => c.method === "chat.postMessage" && !(c as { ok?: boolean }).ok);
}

/** Each marker's run id, once every one of them has a run. */
async function runIds(markers: string[]): Promise<string[]> {
  return waitFor(
    async () => {
      const { rows } = await db.query<{ id: string; prompt: string }>("SELECT id, prompt FROM runs");
      const ids = markers.map((m) => rows.find((r) => r.prompt.includes(m))?.id);
      return ids.every(Boolean) ? (ids as string[]) : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 100, what: `runs for ${markers.length} Slack deliveries` },
  );
}

/** A run started in the channel: half by /agent, half by a mention (whose card goes into its thread). */
function deliver(i: number, marker: string): Promise<number> {
  const prompt = `$ echo one ${marker}\n$ sleep 1\n$ echo two ${marker}\n$ echo three ${marker}`;
  return i % 2 === 0
    ? postSlack(n, slashCommand(prompt, `U${(i % 3) + 1}`), FORM)
    : postSlack(n, mentionEvent(prompt, { user: `U${(i % 3) + 1}` }), JSON_TYPE);
}

describe.skipIf(Boolean(missing))("faults: kill -9 of the notifier replica on PostgreSQL", () => {
  it("every status card reaches its final state once, each final reply is posted once, none twice", async () => {
    const markers = Array.from({ length: RUNS }, () => randomUUID());
    const half = RUNS / 2;

    // The first half of the burst is reported as usual: a few cards posted and answered.
    for (const status of await Promise.all(markers.slice(0, half).map((m, i) => deliver(i, m))))
      expect(status).toBe(200);
    const firstIds = await runIds(markers.slice(0, half));
    await waitFor(() => firstIds.filter((id) => posted(id, "card").length > 0).length >= 2, {
      timeoutMs: 60_000,
      what: "two status cards posted before the kill",
    });

    // From now on Slack receives N's posts but does not carry them out yet.
    const release = slack.holdBack("chat.postMessage");
    let held: SlackCall[];
    let releasedAt: number;
    try {
      for (const status of await Promise.all(markers.slice(half).map((m, i) => deliver(half + i, m))))
        expect(status).toBe(200);
      await runIds(markers);
      // N has handled every delivery (each run created and its thread bound) before it dies: a delivery
      // still in hand would wait for a replica with the api role (test/faults/inbox-recovery.test.ts), and
      // N2 has none, so its run would report nowhere. The edge shown here is the notifier's.
      await waitFor(
        async () => (await db.query("SELECT count(*)::int AS n FROM inbox_deliveries")).rows[0].n === 0,
        { timeoutMs: 60_000, intervalMs: 50, what: "N to handle every Slack delivery" },
      );
      held = await waitFor(
        () => {
          const now = heldPosts();
          const oldest = now[0]?.at ?? Date.now();
          return now.length >= 3 || (now.length > 0 && Date.now() - oldest > HOLD_AT_MOST_MS)
            ? now
            : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 20, what: "posts of N in flight at Slack" },
      );
      // Those posts are N's claimed outbox rows, mid-attempt.
      const { rows: sending } = await db.query<{ dedupe_key: string }>(
        "SELECT dedupe_key FROM outbox WHERE state = 'sending' AND attempts > 0",
      );
      const keys = sending.map((r) => r.dedupe_key);
      for (const call of held) expect(keys).toContain(postedFor(call).dedupe_key);

      n.child.kill("SIGKILL");
      expect((await n.exited).signal).toBe("SIGKILL");
    } finally {
      // Slack carries out what it had received: the messages exist, their answers reach no one.
      releasedAt = Date.now();
      release();
    }
    await waitFor(() => heldPosts().length === 0, {
      timeoutMs: 10_000,
      what: "Slack to carry out the posts",
    });
    const heldKeys = held.map((c) => postedFor(c).dedupe_key!);
    expect(heldKeys.every(Boolean)).toBe(true);
    // Among them a status card: the post a blind retry would duplicate.
    expect(held.map((c) => postedFor(c).kind)).toContain("card");

    // The other notifier replica: the only one left.
    n2 = await start("notifier");
    const ids = await runIds(markers);
    await waitFor(
      async () => {
        const { rows } = await db.query(
          "SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND state = ANY($2)",
          [ids, TERMINAL],
        );
        return rows[0].n === RUNS;
      },
      { timeoutMs: 120_000, intervalMs: 200, what: `${RUNS} runs to end` },
    );
    for (const id of ids) {
      await waitFor(() => posted(id, "reply").length > 0, {
        timeoutMs: SETTLE_MS,
        what: `the reply of ${id}`,
      }).catch(async (err) => {
        throw new Error(`${(err as Error).message}\n${await whereIs(id)}`);
      });
    }
    await settleDeliveries(db, "after the kill", SETTLE_MS);

    // N2 took N's in-flight rows over (a second attempt) and found the messages they had posted.
    const { rows: retaken } = await db.query<{ dedupe_key: string; state: string; attempts: number }>(
      "SELECT dedupe_key, state, attempts FROM outbox WHERE dedupe_key = ANY($1)",
      [heldKeys],
    );
    expect(retaken).toHaveLength(heldKeys.length);
    for (const row of retaken) {
      expect(row.state, row.dedupe_key).toMatch(/^(sent|superseded)$/);
      if (row.state === "sent") expect(row.attempts, row.dedupe_key).toBeGreaterThanOrEqual(2);
    }
    expect(
      slack.calls.filter((c) => c.at >= releasedAt && /^conversations\.(history|replies)$/.test(c.method))
        .length,
      "N2 read the channel back before posting again",
    ).toBeGreaterThan(0);

    const { rows: runs } = await db.query<{ id: string; state: string }>(
      "SELECT id, state FROM runs WHERE id = ANY($1)",
      [ids],
    );
    const { rows: cards } = await db.query<{ run_id: string; card_ts: string }>(
      "SELECT run_id, card_ts FROM notifier_cards WHERE run_id = ANY($1)",
      [ids],
    );
    for (const id of ids) {
      const state = runs.find((r) => r.id === id)?.state;
      expect(state, id).toBe("SUCCEEDED");
      // One card, the one Dispatch keeps editing, and its last edit shows how the run ended.
      expect(posted(id, "card"), `status cards of ${id}`).toHaveLength(1);
      const cardTs = cards.find((c) => c.run_id === id)?.card_ts;
      const card = slack.message(CHANNEL, String(cardTs));
      expect(card, `the card of ${id} at ${cardTs}`).toBeDefined();
      expect((card!.metadata as { event_payload?: { run_id?: string } })?.event_payload?.run_id).toBe(id);
      expect(String(card!.text), `the card of ${id}`).toMatch(/succeeded/i);
      // One execution, one final reply.
      const replies = posted(id, "reply");
      expect(replies, `final replies of ${id}`).toHaveLength(1);
      expect(String(replies[0]!.args.text)).toMatch(/succeeded/i);
    }
  }, 420_000);
});
