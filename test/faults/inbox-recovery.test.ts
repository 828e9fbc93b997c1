import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { signSlackRequest } from "../../src/integrations/slack/signature.ts";
import { commentPayload, HANDLE, signGitHub, WEBHOOK_SECRET } from "../integrations/github/support.ts";
import { waitFor } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { FakeSlack } from "../support/fake-slack.ts";
import {
  newAdminKey,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";

// Fault tests: a Slack command or GitHub webhook is acknowledged, the real `dispatch serve` is killed
// before it has handled it, and a restart on the same data dir handles it exactly once.

const SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const CHANNEL = "C0CHAN";

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function fixture(settings: string) {
  const dataDir = await mkdtemp(join(tmpdir(), "dispatch-inbox-faults-"));
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const configFile = join(dataDir, "dispatch.config.yaml");
  await writeFile(configFile, settings);
  const servers: ServerProcess[] = [];
  cleanups.push(async () => {
    for (const server of servers) await stopServerProcess(server);
  });
  const key = newAdminKey();
  return {
    dataDir,
    async start(env: Record<string, string>) {
      const server = await startServerProcess({
        dataDir,
        key,
        env: {
          DISPATCH_CONFIG_FILE: configFile,
          // No executor: the run stays QUEUED; what is asserted is that it exists once, with one card.
          DISPATCH_MAX_CONCURRENT_RUNS: "0",
          DISPATCH_POLL_INTERVAL_MS: "50",
          // A dead process's claim on a delivery blocks it this long.
          DISPATCH_LEASE_MS: "1000",
          ...env,
        },
      });
      servers.push(server);
      return server;
    },
    /** Deliveries stored but not handled yet (none once the restarted process is done). */
    unhandledDeliveries(): number {
      const db = new DatabaseSync(join(dataDir, "dispatch.db"), { readOnly: true });
      try {
        const row = db.prepare("SELECT count(*) AS n FROM inbox_deliveries").get();
        return Number(row?.n);
      } finally {
        db.close();
      }
    },
  };
}

async function runs(server: ServerProcess): Promise<Array<Record<string, unknown>>> {
  const res = await server.api("GET", "/api/v1/agent/runs?limit=100");
  expect(res.status, res.text).toBe(200);
  return res.body.runs;
}

async function killHard(server: ServerProcess): Promise<void> {
  server.child.kill("SIGKILL");
  expect((await server.exited).signal).toBe("SIGKILL");
}

describe("faults: kill -9 between the acknowledgement and the handling", () => {
  it("Slack: the acknowledged slash command is handled after the restart, into exactly one run and one card", async () => {
    const slack = await new FakeSlack().start();
    cleanups.push(() => slack.stop());
    const f = await fixture("slack: {}\n");
    const env = {
      SLACK_BOT_TOKEN: slack.token,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.url,
    };
    const first = await f.start(env);

    // The handling stops at the requester's lookup, after the acknowledgement.
    const release = slack.holdBack("users.info");
    const form = new URLSearchParams({
      team_id: "T0TEAM",
      channel_id: CHANNEL,
      user_id: "U1",
      command: "/agent",
      text: "$ echo survived",
      trigger_id: `${Date.now()}.trigger`,
      response_url: "https://hooks.slack.invalid/commands/1",
    }).toString();
    const timestamp = String(Math.floor(Date.now() / 1000));
    const ack = await fetch(`${first.url}/slack/events`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": signSlackRequest(SIGNING_SECRET, timestamp, form),
      },
      body: form,
    });
    expect(ack.status).toBe(200);
    await waitFor(() => slack.calls.some((c) => c.method === "users.info"), {
      what: "the handling to start",
    });
    await killHard(first);
    release();

    const second = await f.start(env);
    const run = await waitFor(async () => (await runs(second))[0], {
      timeoutMs: 15_000,
      what: "the run of the acknowledged command",
    });
    expect(run.prompt).toBe("$ echo survived");
    const cards = () =>
      slack.succeeded("chat.postMessage").filter((c) => c.args.channel === CHANNEL && c.args.blocks);
    await waitFor(() => cards().length > 0 && f.unhandledDeliveries() === 0, {
      timeoutMs: 15_000,
      what: "the status card, and the delivery handled",
    });
    expect(await runs(second)).toHaveLength(1);
    expect(cards()).toHaveLength(1);
  });

  it("GitHub: the acknowledged mention is handled after the restart, into exactly one run and one tracking comment", async () => {
    const github = await new FakeGitHub().start();
    cleanups.push(() => github.stop());
    github.permissions.set("octocat", "write");
    const f = await fixture("github: {}\n");
    const env = {
      GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
      GITHUB_API_URL: github.url,
      GITHUB_BOT_HANDLE: HANDLE,
      GITHUB_TOKEN: github.token,
    };
    const first = await f.start(env);

    // The handling stops at the commenter's permission lookup, after the acknowledgement.
    const release = github.holdBack("GET /repos/*/*/collaborators/*/permission");
    const payload = commentPayload({ body: `@${HANDLE} $ echo survived`, login: "octocat", issue: 7 });
    const repo = payload.repository.full_name as string;
    const body = JSON.stringify(payload);
    const ack = await fetch(`${first.url}/github/webhooks`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "issue_comment",
        "x-github-delivery": randomUUID(),
        "x-hub-signature-256": signGitHub(WEBHOOK_SECRET, body),
      },
      body,
    });
    expect(ack.status).toBe(202);
    await waitFor(() => github.calls.some((c) => c.path.endsWith("/permission")), {
      what: "the handling to start",
    });
    await killHard(first);
    release();

    const second = await f.start(env);
    const run = await waitFor(async () => (await runs(second))[0], {
      timeoutMs: 15_000,
      what: "the run of the acknowledged mention",
    });
    expect(String(run.prompt)).toContain("$ echo survived");
    const tracking = () =>
      github
        .botComments(repo, 7)
        .filter((c) => c.body.includes(`<!-- dispatch:run=${String(run.run_id)} -->`));
    await waitFor(() => tracking().length > 0 && f.unhandledDeliveries() === 0, {
      timeoutMs: 15_000,
      what: "the tracking comment, and the delivery handled",
    });
    expect(await runs(second)).toHaveLength(1);
    expect(tracking()).toHaveLength(1);
  });
});
