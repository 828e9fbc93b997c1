import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { trackingMarker } from "../../src/integrations/github/tracking-comment.ts";
import {
  commentPayload,
  HANDLE,
  type Payload,
  signGitHub,
  uniqueIssue,
  WEBHOOK_SECRET,
} from "../integrations/github/support.ts";
import { CHANNEL, SIGNING_SECRET, TEAM } from "../integrations/slack/support.ts";
import { waitFor } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { FakeSlack, type SlackCall } from "../support/fake-slack.ts";
import { GitRemotes } from "../support/git-remotes.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../support/postgres.ts";
import {
  killAgentProcesses,
  newAdminKey,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";
import {
  FORM,
  JSON_TYPE,
  mentionEvent,
  postedFor,
  postSlack,
  settleDeliveries,
  slashCommand,
} from "./replica-support.ts";

/**
 * Exactly once across replicas: two real `dispatch serve` processes, A and B, with every role
 * (api, worker, notifier, scheduler) on one fresh PostgreSQL database, both with Slack and GitHub pointed
 * at the same loopback fakes. A Slack retry or a GitHub redelivery that lands on the other replica makes
 * no second run, and the two notifiers never post a run's status card or tracking comment twice. What is
 * asserted is what Slack and GitHub were sent (the fakes' records) and what the API shows.
 */
const missing = process.env.CI ? undefined : postgresUnavailable();
if (missing) console.warn(`PostgreSQL replica tests SKIPPED: ${missing} (apt-get install -y postgresql)`);

// biome-ignore lint/suspicious/noExplicitAny: API bodies and Slack arguments are read field by field
type Json = any;

const TERMINAL = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"];
/** The notifiers run with production timings (1 s ticks, 5 s Slack and 10 s GitHub edit windows). */
const SETTLE_MS = 90_000;

let cluster: PostgresCluster;
let databaseUrl: string;
let db: pg.Client;
let slack: FakeSlack;
let github: FakeGitHub;
let remotes: GitRemotes;
let repo: string;
let configDir: string;
const dataDirs: string[] = [];
let a: ServerProcess;
let b: ServerProcess;

beforeAll(async () => {
  if (missing) return;
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase();
  db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();

  slack = await new FakeSlack().start();
  // The channel's people: members under the default `channel` policy.
  slack.channelMembers.set(CHANNEL, ["U1", "U2", "U3"]);
  github = await new FakeGitHub().start();
  github.permissions.set("octocat", "write");
  remotes = new GitRemotes();
  const example = commentPayload({ body: "" }).repository;
  repo = example.full_name as string;
  remotes.create(repo, { "README.md": "# Hello-World\n" }, example.default_branch);
  github.gitRoot = remotes.root;

  configDir = await mkdtemp(join(tmpdir(), "dispatch-replicas-config-"));
  const settings = join(configDir, "dispatch.config.yaml");
  await writeFile(settings, "slack: {}\ngithub: {}\n");
  const common = {
    DATABASE_URL: databaseUrl,
    DISPATCH_POLL_INTERVAL_MS: "200",
    DISPATCH_MAX_CONCURRENT_RUNS: "2",
    DISPATCH_SIGNING_KEY: randomBytes(32).toString("hex"),
    // One address for all replicas, as behind a deployment's load balancer: the session links on cards are
    // the same whichever notifier renders them (each replica's own address would differ from card to card,
    // and the notifiers would take turns editing every recent card back to their own link).
    DISPATCH_PUBLIC_URL: "https://dispatch.example.test",
    DISPATCH_CONFIG_FILE: settings,
    SLACK_BOT_TOKEN: slack.token,
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
    SLACK_API_URL: slack.url,
    GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
    GITHUB_API_URL: github.url,
    GITHUB_TOKEN: github.token,
    GITHUB_BOT_HANDLE: HANDLE,
    GITHUB_SERVER_URL: remotes.serverUrl,
    DISPATCH_ALLOW_FILE_REMOTES: "true",
  };
  const key = newAdminKey();
  for (let i = 0; i < 2; i++) dataDirs.push(await mkdtemp(join(tmpdir(), "dispatch-replica-")));
  // Started together, as a deployment's replicas are.
  const start = (dataDir: string) =>
    startServerProcess({ dataDir, key, env: common, startTimeoutMs: 60_000 });
  [a, b] = await Promise.all([start(dataDirs[0]!), start(dataDirs[1]!)]);
}, 120_000);

afterAll(async () => {
  for (const server of [a, b]) if (server) await stopServerProcess(server);
  for (const dir of dataDirs) {
    await killAgentProcesses(dir);
    await rm(dir, { recursive: true, force: true });
  }
  await db?.end();
  await cluster?.stop();
  await slack?.stop();
  await github?.stop();
  remotes?.remove();
  if (configDir) await rm(configDir, { recursive: true, force: true });
}, 60_000);

// --- Slack, as it signs and delivers ------------------------------------------------------------

/** Slack's headers on its n-th retry of a delivery whose acknowledgement it did not see in time. */
const retry = (n: number) => ({ "x-slack-retry-num": String(n), "x-slack-retry-reason": "http_timeout" });

/** A click on a status card's Cancel button, as Slack posts block_actions. */
function cancelClick(runId: string, cardTs: string, user = "U1"): string {
  const payload = {
    type: "block_actions",
    team: { id: TEAM, domain: "acme" },
    user: { id: user, username: "ada", team_id: TEAM },
    api_app_id: "A0APP",
    trigger_id: `${Date.now()}.${randomBytes(4).toString("hex")}`,
    container: { type: "message", message_ts: cardTs, channel_id: CHANNEL, is_ephemeral: false },
    channel: { id: CHANNEL, name: "dev" },
    message: { type: "message", ts: cardTs, text: "status card" },
    response_url: "https://hooks.slack.invalid/actions/1",
    actions: [
      {
        type: "button",
        action_id: "dispatch_cancel",
        block_id: "dispatch_run_actions",
        value: runId,
        style: "danger",
        text: { type: "plain_text", text: "Cancel" },
        action_ts: `${(Date.now() / 1000).toFixed(6)}${randomBytes(2).toString("hex")}`,
      },
    ],
  };
  return new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
}

/** Status cards posted for a run (edits are chat.update: any number of them is fine). */
function slackCards(runId: string): SlackCall[] {
  return slack
    .succeeded("chat.postMessage")
    .filter((c) => postedFor(c).run_id === runId && postedFor(c).kind === "card");
}

function slackReplies(runId: string): SlackCall[] {
  return slack
    .succeeded("chat.postMessage")
    .filter((c) => postedFor(c).run_id === runId && postedFor(c).kind === "reply");
}

// --- GitHub, as it signs and delivers -----------------------------------------------------------

async function deliverGitHub(server: ServerProcess, payload: Payload, delivery: string): Promise<number> {
  const body = JSON.stringify(payload);
  const res = await fetch(`${server.url}/github/webhooks`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "user-agent": "GitHub-Hookshot/7a5f1e2",
      "x-github-event": "issue_comment",
      "x-github-delivery": delivery,
      "x-github-hook-id": "1234567",
      "x-hub-signature-256": signGitHub(WEBHOOK_SECRET, body),
    },
    body,
  });
  await res.text();
  return res.status;
}

/** Tracking comments created for a run (POSTs carrying its marker; edits are PATCHes). */
function trackingPosts(runId: string): number {
  return github
    .succeeded("POST", /^\/repos\/[^/]+\/[^/]+\/issues\/\d+\/comments$/)
    .filter((c) => String(c.body?.body).includes(trackingMarker(runId))).length;
}

function finalComments(runId: string): number {
  return [...github.comments.values()].filter((c) => c.body.includes(`<!-- dispatch:final run=${runId} -->`))
    .length;
}

// --- the API and the shared database ------------------------------------------------------------

async function listRuns(server: ServerProcess): Promise<Json[]> {
  const res = await server.api("GET", "/api/v1/agent/runs?limit=500");
  expect(res.status, res.text).toBe(200);
  return res.body.runs;
}

async function runsWith(server: ServerProcess, marker: string): Promise<Json[]> {
  return (await listRuns(server)).filter((r) => String(r.prompt).includes(marker));
}

async function getRun(server: ServerProcess, id: string): Promise<Json> {
  const res = await server.api("GET", `/api/v1/agent/runs/${id}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** The one run whose prompt carries `marker`, once it exists. */
function theRun(marker: string): Promise<Json> {
  return waitFor(async () => (await runsWith(a, marker))[0], {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: `a run for ${marker}`,
  });
}

async function waitForState(id: string, states: string[]): Promise<Json> {
  let last: Json | undefined;
  try {
    return await waitFor(
      async () => {
        last = await getRun(b, id);
        return states.includes(last.state) ? last : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100, what: `run ${id} to reach ${states.join("/")}` },
    );
  } catch (err) {
    // What the run went through, and what each replica logged about it: the failure explains itself.
    const events = (await b.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events as Json[];
    const story = events.map((e) => `${e.type} ${JSON.stringify(e.data)}`).join("\n");
    const logs = [a, b].map((s, i) =>
      s
        .output()
        .split("\n")
        .filter((line) => line.includes(id))
        .map((line) => `replica ${i}: ${line}`)
        .join("\n"),
    );
    throw new Error(
      `${(err as Error).message}\nrun: ${JSON.stringify(last)}\nevents:\n${story}\nlogs:\n${logs.join("\n")}`,
    );
  }
}

/** The replicas have nothing left to send (see settleDeliveries). */
const settle = (what: string) => settleDeliveries(db, what, SETTLE_MS);

describe.skipIf(Boolean(missing))("exactly once across two replicas on one PostgreSQL database", () => {
  it("a Slack delivery and its retry at the other replica make one run and one status card", async () => {
    const cases: Array<{ marker: string; original: ServerProcess; copy: ServerProcess; send: Json }> = [];
    for (const [i, [original, copy]] of [
      [a, b],
      [b, a],
      [a, b],
      [b, a],
    ].entries()) {
      const marker = randomUUID();
      // Slash commands are deduped on (team, user, channel, text) within 60 s, events on their event_id.
      const command = i % 2 === 0;
      const body = command ? slashCommand(`$ echo cmd ${marker}`) : mentionEvent(`$ echo mention ${marker}`);
      const type = command ? FORM : JSON_TYPE;
      cases.push({ marker, original: original!, copy: copy!, send: { body, type } });
    }
    // At the same moment: the delivery at one replica, Slack's retry of it at the other.
    const concurrent = await Promise.all(
      cases.map(({ original, copy, send }) =>
        Promise.all([
          postSlack(original, send.body, send.type),
          postSlack(copy, send.body, send.type, retry(1)),
        ]),
      ),
    );
    for (const statuses of concurrent) expect(statuses).toEqual([200, 200]);
    // Later: a second retry once both were acknowledged, at the replica that took the first copy.
    for (const { original, send } of cases)
      expect(await postSlack(original, send.body, send.type, retry(2))).toBe(200);

    const runs = await Promise.all(cases.map(({ marker }) => theRun(marker)));
    for (const run of runs) {
      const final = await waitForState(run.run_id, TERMINAL);
      expect(final.state).toBe("SUCCEEDED");
      await waitFor(() => slackReplies(run.run_id).length > 0, {
        timeoutMs: SETTLE_MS,
        what: `the terminal reply of ${run.run_id}`,
      });
    }
    await settle("Slack retries");
    for (const [i, { marker }] of cases.entries()) {
      const mine = await runsWith(b, marker);
      expect(mine.map((r) => r.run_id)).toEqual([runs[i].run_id]);
      expect(mine[0].source).toBe("SLACK");
      expect(slackCards(runs[i].run_id), `status cards of case ${i}`).toHaveLength(1);
      expect(slackReplies(runs[i].run_id), `terminal replies of case ${i}`).toHaveLength(1);
    }
  }, 240_000);

  it("a GitHub delivery at both replicas at once, or redelivered to the other, makes one run and one tracking comment", async () => {
    const cases = Array.from({ length: 4 }, (_, i) => {
      const marker = randomUUID();
      const issue = uniqueIssue();
      const payload = commentPayload({ issue, login: "octocat", body: `@${HANDLE} $ echo gh ${marker}` });
      const [original, copy] = i % 2 === 0 ? [a, b] : [b, a];
      return { marker, issue, payload, original, copy, delivery: randomUUID() };
    });
    const statuses = await Promise.all(
      cases.map(({ payload, original, copy, delivery }) =>
        Promise.all([deliverGitHub(original, payload, delivery), deliverGitHub(copy, payload, delivery)]),
      ),
    );
    // One replica stored it (202), the other recognised the same X-GitHub-Delivery (200, a duplicate).
    for (const pair of statuses) expect(pair.sort()).toEqual([200, 202]);
    // A redelivery from GitHub's settings page, after both answered, at the other replica.
    for (const { payload, copy, delivery } of cases)
      expect(await deliverGitHub(copy, payload, delivery)).toBe(200);

    const runs = await Promise.all(cases.map(({ marker }) => theRun(marker)));
    for (const run of runs) {
      expect((await waitForState(run.run_id, TERMINAL)).state).toBe("SUCCEEDED");
      await waitFor(() => finalComments(run.run_id) > 0, {
        timeoutMs: SETTLE_MS,
        what: `the final comment of ${run.run_id}`,
      });
    }
    await settle("GitHub redeliveries");
    for (const [i, { marker, issue, payload }] of cases.entries()) {
      const id = runs[i].run_id as string;
      const mine = await runsWith(b, marker);
      expect(mine.map((r) => r.run_id)).toEqual([id]);
      expect(mine[0].trigger_url).toBe(payload.comment.html_url);
      expect(trackingPosts(id), `tracking comments of case ${i}`).toBe(1);
      expect(github.botComments(repo, issue).filter((c) => c.body.includes(trackingMarker(id)))).toHaveLength(
        1,
      );
      expect(finalComments(id), `final comments of case ${i}`).toBe(1);
      expect(github.reactionsOn(payload.comment.id).filter((r) => r === "eyes")).toHaveLength(1);
    }
  }, 240_000);

  it("two notifiers over many runs and state changes post each card and tracking comment once", async () => {
    // Runs from both surfaces at both replicas; each changes state several times (queued, in progress,
    // succeeded; some are followed up after they finished and run again; one is cancelled while running).
    const slackRuns: Array<{ marker: string; followup: boolean }> = [];
    const githubRuns: Array<{ marker: string; issue: number; followup: boolean }> = [];
    const starts: Promise<number>[] = [];
    for (let i = 0; i < 4; i++) {
      const server = i % 2 === 0 ? a : b;
      const marker = randomUUID();
      const followup = i < 2;
      slackRuns.push({ marker, followup });
      starts.push(
        i % 2 === 0
          ? postSlack(server, slashCommand(`$ echo s1 ${marker}\n$ echo s2 ${marker}`, `U${i + 1}`), FORM)
          : postSlack(server, mentionEvent(`$ echo s1 ${marker}\n$ echo s2 ${marker}`), JSON_TYPE),
      );
      const ghMarker = randomUUID();
      const issue = uniqueIssue();
      githubRuns.push({ marker: ghMarker, issue, followup });
      starts.push(
        deliverGitHub(
          server,
          commentPayload({
            issue,
            login: "octocat",
            body: `@${HANDLE} $ echo g1 ${ghMarker}\n$ echo g2 ${ghMarker}`,
          }),
          randomUUID(),
        ),
      );
    }
    // One to cancel while it runs: held until the cancel, at the replica that did not start it.
    const cancelMarker = randomUUID();
    starts.push(postSlack(b, slashCommand(`$ echo c1 ${cancelMarker}\n$ sleep 120`, "U3"), FORM));
    for (const status of await Promise.all(starts)) expect([200, 202]).toContain(status);

    const slackIds = await Promise.all(
      slackRuns.map(async ({ marker }) => (await theRun(marker)).run_id as string),
    );
    const githubIds = await Promise.all(
      githubRuns.map(async ({ marker }) => (await theRun(marker)).run_id as string),
    );
    const cancelId = (await theRun(cancelMarker)).run_id as string;

    // Each first execution has finished and been reported before the follow-ups start a second one.
    for (const id of [...slackIds, ...githubIds])
      expect((await waitForState(id, TERMINAL)).state).toBe("SUCCEEDED");
    for (const id of slackIds) {
      await waitFor(() => slackReplies(id).length > 0, { timeoutMs: SETTLE_MS, what: `the reply of ${id}` });
    }
    for (const id of githubIds) {
      await waitFor(() => finalComments(id) > 0, {
        timeoutMs: SETTLE_MS,
        what: `the final comment of ${id}`,
      });
    }
    await waitFor(
      async () => (await getRun(a, cancelId)).state === "INPROGRESS" && slackCards(cancelId).length > 0,
      {
        timeoutMs: SETTLE_MS,
        what: "the run to cancel to be running with its card posted",
      },
    );

    const followedUp = [
      ...slackRuns.flatMap((r, i) => (r.followup ? [{ id: slackIds[i]!, marker: r.marker }] : [])),
      ...githubRuns.flatMap((r, i) => (r.followup ? [{ id: githubIds[i]!, marker: r.marker }] : [])),
    ];
    const [cancelled, ...followups] = await Promise.all([
      a.api("POST", `/api/v1/agent/runs/${cancelId}/cancel`),
      ...followedUp.map(({ id, marker }, i) =>
        (i % 2 === 0 ? b : a).api("POST", `/api/v1/agent/runs/${id}/followups`, {
          message: `$ echo again ${marker}`,
        }),
      ),
    ]);
    expect(cancelled!.status, cancelled!.text).toBe(200);
    for (const res of followups) {
      expect(res.status, res.text).toBe(200);
      expect(res.body.outcome).toBe("handoff_execution");
    }
    expect((await waitForState(cancelId, TERMINAL)).state).toBe("CANCELLED");
    for (const { id } of followedUp) {
      await waitFor(
        async () => {
          const events = (await b.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body
            .events as Json[];
          return events.filter((e) => e.type === "state" && e.data.state === "SUCCEEDED").length === 2;
        },
        { timeoutMs: 60_000, intervalMs: 100, what: `the second execution of ${id} to succeed` },
      );
    }
    const executions = (id: string) => (followedUp.some((f) => f.id === id) ? 2 : 1);
    for (const id of slackIds) {
      await waitFor(() => slackReplies(id).length === executions(id), {
        timeoutMs: SETTLE_MS,
        what: `${executions(id)} terminal replies of ${id}`,
      });
    }
    for (const id of githubIds) {
      await waitFor(() => finalComments(id) === executions(id), {
        timeoutMs: SETTLE_MS,
        what: `${executions(id)} final comments of ${id}`,
      });
    }
    await settle("two notifiers");

    for (const id of [...slackIds, cancelId]) {
      expect(slackCards(id), `status cards of ${id}`).toHaveLength(1);
      const replies = slackReplies(id);
      // One reply per terminal state reached, each posted once.
      expect(new Set(replies.map((c) => postedFor(c).dedupe_key)).size, `replies of ${id}`).toBe(
        replies.length,
      );
      // The card Dispatch keeps editing is that one message.
      expect(slack.message(CHANNEL, await cardTsOf(id))).toBeDefined();
    }
    for (const id of slackIds) expect(slackReplies(id)).toHaveLength(executions(id));
    expect(slackReplies(cancelId)).toHaveLength(1);
    expect(String(slack.message(CHANNEL, await cardTsOf(cancelId))?.text)).toMatch(/cancel/i);
    for (const [i, id] of githubIds.entries()) {
      expect(trackingPosts(id), `tracking comments of ${id}`).toBe(1);
      expect(
        github.botComments(repo, githubRuns[i]!.issue).filter((c) => c.body.includes(trackingMarker(id))),
      ).toHaveLength(1);
      expect(finalComments(id)).toBe(executions(id));
    }
  }, 360_000);
  it("a follow-up in the thread at one replica and Cancel on the card at the other leave one outcome", async () => {
    for (const [round, [followAt, cancelAt]] of [
      [a, b],
      [b, a],
    ].entries()) {
      const marker = randomUUID();
      expect(
        await postSlack(followAt!, slashCommand(`$ echo first ${marker}\n$ sleep 120`, "U2"), FORM),
      ).toBe(200);
      const id = (await theRun(marker)).run_id as string;
      // The agent at work (its first command's output is in the transcript), so the follow-up goes to it or
      // to a new execution: not to the prompt of an agent still being prepared.
      await waitFor(
        async () =>
          slackCards(id).length > 0 &&
          ((await b.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events as Json[]).some(
            (e) => e.type === "tool_result" && String(e.data.output).includes(`first ${marker}`),
          ),
        { timeoutMs: SETTLE_MS, intervalMs: 100, what: `run ${id} to be running with its card posted` },
      );
      const cardTs = await cardTsOf(id);
      // The card is the run's thread: a mention there steers the run; its Cancel button stops it.
      const [followed, cancelled] = await Promise.all([
        postSlack(
          followAt!,
          mentionEvent(`$ echo followed ${marker}`, { threadTs: cardTs, user: "U2" }),
          JSON_TYPE,
        ),
        postSlack(cancelAt!, cancelClick(id, cardTs, "U2"), FORM),
      ]);
      expect([followed, cancelled]).toEqual([200, 200]);
      // Both deliveries handled: a follow-up handed to a new execution is committed, so the next terminal
      // state is the last one.
      await waitFor(async () => (await db.query("SELECT 1 FROM inbox_deliveries")).rows.length === 0, {
        timeoutMs: SETTLE_MS,
        what: "both deliveries to be handled",
      });
      const final = await waitForState(id, TERMINAL);
      const events = (await b.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events as Json[];
      const story = events.map((e) => JSON.stringify(e.data)).join("\n");
      const followups = events.filter((e) => e.type === "followup");
      expect(followups, story).toHaveLength(1);
      const outcome = followups[0].data.outcome as string;
      expect(["live_session", "handoff_execution"], story).toContain(outcome);
      const states = events.filter((e) => e.type === "state").map((e) => e.data.state);
      expect(
        states.filter((s) => s === "CANCELLED"),
        story,
      ).toHaveLength(1);
      const ran = events.some(
        (e) => e.type === "tool_result" && String(e.data.output).includes(`followed ${marker}`),
      );
      if (outcome === "live_session") {
        // Taken by the running execution, which the cancel then ended: the follow-up never ran.
        expect(final.state, story).toBe("CANCELLED");
        expect(states, story).toEqual(["QUEUED", "INPROGRESS", "CANCELLED"]);
        expect(ran, story).toBe(false);
      } else {
        // The cancel ended the first execution; the follow-up started and finished the second.
        expect(final.state, story).toBe("SUCCEEDED");
        expect(states, story).toEqual([
          "QUEUED",
          "INPROGRESS",
          "CANCELLED",
          "QUEUED",
          "INPROGRESS",
          "SUCCEEDED",
        ]);
        expect(ran, story).toBe(true);
      }
      await waitFor(
        () =>
          slackReplies(id).some((c) =>
            String(c.args.text).includes(final.state === "SUCCEEDED" ? "Succeeded" : "Cancelled"),
          ),
        { timeoutMs: SETTLE_MS, what: `the reply saying how run ${id} ended (round ${round})` },
      );
      await settle(`follow-up and cancel, round ${round}`);
      // Reported once: one card, each terminal reply once, and the card shows how the run ended.
      expect(slackCards(id)).toHaveLength(1);
      const replies = slackReplies(id);
      expect(new Set(replies.map((c) => postedFor(c).dedupe_key)).size).toBe(replies.length);
      expect(String(slack.message(CHANNEL, cardTs)?.text)).toMatch(
        final.state === "SUCCEEDED" ? /succeeded/i : /cancel/i,
      );
      // Both replicas tell the same story.
      expect((await a.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events).toEqual(events);
    }
  }, 300_000);
});

/** The ts of the run's status card, once recorded: Slack's answer to the post is what names it. */
async function cardTsOf(runId: string): Promise<string> {
  return waitFor(
    async () => {
      const { rows } = await db.query("SELECT card_ts FROM notifier_cards WHERE run_id = $1", [runId]);
      return rows[0]?.card_ts as string | undefined;
    },
    { timeoutMs: SETTLE_MS, intervalMs: 50, what: `the status card of ${runId} to be recorded` },
  );
}
