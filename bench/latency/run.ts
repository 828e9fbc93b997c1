/**
 * End-to-end latency benchmark: what a person waits for, through the loopback fakes.
 *
 *   npm run bench:latency          (= node bench/latency/run.ts)
 *
 * `dispatch serve` in a child process with Slack and GitHub pointed at a FakeSlack and a FakeGitHub in
 * this process (both record when each call arrives, on this machine's clock). Runs are started one every
 * BENCH_LATENCY_GAP_MS, each a scripted `$ sleep BENCH_LATENCY_RUN_S`, so a few overlap as they would in
 * a busy channel; every figure is one run's own:
 *
 *   Slack command → card posted     signed /agent request sent → chat.postMessage of its card received
 *   finish → card edited            the run's finished_at → chat.update showing "Succeeded"
 *   finish → thread reply           the run's finished_at → the terminal reply in the card's thread
 *   GitHub comment → tracking       signed issue_comment webhook sent → tracking comment created
 *   finish → final comment          the run's finished_at → the short terminal comment on the issue
 *   queue → INPROGRESS              a run created over the API on an idle Dispatch in this process:
 *                                   created_at → started_at, and request sent → INPROGRESS seen through
 *                                   the store's run_changed signal
 *
 * A card edit waits for the card's throttle (at most one edit per run per editIntervalMs, Slack's own
 * per-message limit): runs last longer than that window so the "finish" figures measure the path, not
 * the window; the window's own cost is printed separately as "edit inside the window".
 *
 * GitHub comments go one at a time (see measureGitHub): GitHub's pacing of comments is not Dispatch's.
 *
 * Knobs: BENCH_LATENCY_SAMPLES (30 Slack commands), BENCH_LATENCY_GAP_MS (300), BENCH_LATENCY_RUN_S (1.5),
 * BENCH_LATENCY_GITHUB_SAMPLES (5: each costs ≥ 7 s of GitHub's comment pacing), BENCH_LATENCY_QUEUE_SAMPLES (50). Exits 0 whether targets are met or not; 1 when the bench went wrong.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { signSlackRequest } from "../../src/integrations/slack/signature.ts";
import { commentPayload, signGitHub } from "../../test/integrations/github/support.ts";
import { waitFor } from "../../test/support/dispatch.ts";
import { FakeGitHub } from "../../test/support/fake-github.ts";
import { FakeSlack } from "../../test/support/fake-slack.ts";
import { GitRemotes } from "../../test/support/git-remotes.ts";
import { keepAlivePoster, latencySummary } from "../support/acks.ts";
import {
  type BenchDispatchProcess,
  startDispatchInProcess,
  startDispatchProcess,
} from "../support/dispatch.ts";
import { machineNow, ms, type ResultRow, recordResults } from "../support/results.ts";

const SAMPLES = Number(process.env.BENCH_LATENCY_SAMPLES ?? 30);
const GAP_MS = Number(process.env.BENCH_LATENCY_GAP_MS ?? 300);
const RUN_S = Number(process.env.BENCH_LATENCY_RUN_S ?? 1.5);
const GITHUB_SAMPLES = Number(process.env.BENCH_LATENCY_GITHUB_SAMPLES ?? 5);
/** @octokit/plugin-throttling's spacing of notification-triggering writes per client. */
const GITHUB_PACING_MS = 3000;
const QUEUE_SAMPLES = Number(process.env.BENCH_LATENCY_QUEUE_SAMPLES ?? 50);
const SLACK_SECRET = randomBytes(16).toString("hex");
const GITHUB_SECRET = randomBytes(16).toString("hex");
const HANDLE = "dispatch";
const WAIT_MS = 60_000;
const CARD = { p50: 250, p99: 1000 };
const QUEUE_P50_MS = 10;

const post = keepAlivePoster(8);
const log = (line: string) => process.stderr.write(`[bench:latency] ${line}\n`);
const sleep = (msecs: number) => new Promise((r) => setTimeout(r, msecs));

interface Sample {
  tag: string;
  sentAt: number;
}

/** Sends `n` deliveries, one every GAP_MS, each to its own channel/issue so they can be told apart. */
async function staggered(n: number, send: (i: number) => Promise<Sample>): Promise<Sample[]> {
  const sent: Array<Promise<Sample>> = [];
  for (let i = 0; i < n; i++) {
    sent.push(send(i));
    await sleep(GAP_MS);
  }
  return Promise.all(sent);
}

function slackCommand(url: string, i: number): Promise<Sample> {
  const tag = `lat${i}`;
  const body = new URLSearchParams({
    team_id: "T0BENCH",
    team_domain: "bench",
    channel_id: `C0LAT${i}`,
    channel_name: `lat-${i}`,
    user_id: `U0LAT${i}`,
    user_name: `bench-${i}`,
    command: "/agent",
    text: `$ sleep ${RUN_S} # ${tag}`,
    api_app_id: "A0BENCH",
    response_url: "https://hooks.slack.invalid/commands/1",
    trigger_id: `${tag}.${randomBytes(4).toString("hex")}`,
  }).toString();
  const timestamp = String(Math.floor(Date.now() / 1000));
  const headers = {
    "content-type": "application/x-www-form-urlencoded",
    "content-length": String(Buffer.byteLength(body)),
    "x-slack-request-timestamp": timestamp,
    "x-slack-signature": signSlackRequest(SLACK_SECRET, timestamp, body),
  };
  const sentAt = Date.now();
  return post(`${url}/slack/events`, headers, body).then((status) => {
    if (status !== 200) throw new Error(`Slack command answered ${status}`);
    return { tag, sentAt };
  });
}

function githubComment(url: string, i: number): Promise<Sample> {
  const tag = `lat${i}`;
  const body = JSON.stringify(
    commentPayload({
      issue: 7000 + i,
      login: "writer0",
      body: `@${HANDLE} $ sleep ${(GITHUB_PACING_MS + 200) / 1000} # ${tag}`,
    }),
  );
  const headers = {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    "user-agent": "GitHub-Hookshot/bench",
    "x-github-event": "issue_comment",
    "x-github-delivery": randomUUID(),
    "x-hub-signature-256": signGitHub(GITHUB_SECRET, body),
  };
  const sentAt = Date.now();
  return post(`${url}/github/webhooks`, headers, body).then((status) => {
    if (status !== 202 && status !== 200) throw new Error(`GitHub webhook answered ${status}`);
    return { tag, sentAt };
  });
}

interface RunTimes {
  tag: string;
  runId: string;
  startedAt: number;
  finishedAt: number;
}

/** The runs of `source` tagged `tags` in their prompts, once every one has succeeded. */
async function finishedRuns(
  server: BenchDispatchProcess,
  source: string,
  tags: string[],
): Promise<RunTimes[]> {
  return waitFor(
    async () => {
      const res = await server.api("GET", `/api/v1/agent/runs?limit=500&source=${source}`);
      // biome-ignore lint/suspicious/noExplicitAny: API answer read field by field
      const runs = res.body.runs as any[];
      const bad = runs.filter((r) => ["FAILED", "ERROR", "CANCELLED"].includes(r.state));
      if (bad.length > 0) throw new Error(`a ${source} run ended ${bad[0].state}: ${JSON.stringify(bad[0])}`);
      const done = runs
        .filter((r) => r.state === "SUCCEEDED")
        .map((r) => ({
          tag: String(/# (lat\d+)/.exec(r.prompt)?.[1]),
          runId: r.run_id as string,
          startedAt: Date.parse(r.started_at),
          finishedAt: Date.parse(r.finished_at),
        }))
        .filter((r) => tags.includes(r.tag));
      return done.length === tags.length ? done : undefined;
    },
    { timeoutMs: WAIT_MS, intervalMs: 200, what: `${tags.length} ${source} runs to succeed` },
  );
}

interface PathFigures {
  name: string;
  samples: number[];
  target?: { p50: number; p99: number };
  note?: string;
}

async function measureSlack(server: BenchDispatchProcess, fake: FakeSlack): Promise<PathFigures[]> {
  const sent = await staggered(SAMPLES, (i) => slackCommand(server.url, i));
  const runs = await finishedRuns(
    server,
    "SLACK",
    sent.map((x) => x.tag),
  );
  const posted: number[] = [];
  const edited: number[] = [];
  const replied: number[] = [];
  const windowed: number[] = [];
  for (const s of sent) {
    const channel = `C0LAT${s.tag.slice(3)}`;
    const run = runs.find((r) => r.tag === s.tag);
    if (!run) throw new Error(`no run for ${s.tag}`);
    const card = await waitFor(
      () => fake.calls.find((c) => c.method === "chat.postMessage" && c.args.channel === channel),
      { timeoutMs: WAIT_MS, what: `the card of ${s.tag}` },
    );
    posted.push(card.at - s.sentAt);
    const update = await waitFor(
      () =>
        fake.calls.find(
          (c) =>
            c.method === "chat.update" &&
            c.args.channel === channel &&
            String(c.args.text).includes("Succeeded"),
        ),
      { timeoutMs: WAIT_MS, what: `the terminal card edit of ${s.tag}` },
    );
    edited.push(update.at - run.finishedAt);
    const reply = await waitFor(
      () =>
        fake.calls.find(
          (c) =>
            c.method === "chat.postMessage" && c.args.channel === channel && c.args.thread_ts !== undefined,
        ),
      { timeoutMs: WAIT_MS, what: `the thread reply of ${s.tag}` },
    );
    replied.push(reply.at - run.finishedAt);
    // A card first posted as QUEUED is edited to INPROGRESS inside the edit window of its post.
    if (!String(card.args.text).includes("In progress")) {
      const started = fake.calls.find(
        (c) =>
          c.method === "chat.update" &&
          c.args.channel === channel &&
          String(c.args.text).includes("In progress"),
      );
      if (started) windowed.push(started.at - run.startedAt);
    }
  }
  const figures: PathFigures[] = [
    { name: "Slack command → card posted", samples: posted, target: CARD },
    { name: "Slack finish → card edited", samples: edited, target: CARD },
    { name: "Slack finish → thread reply", samples: replied },
  ];
  if (windowed.length > 0) {
    figures.push({
      name: "Slack start → card edited (inside the edit window)",
      samples: windowed,
      note: "waits for the per-card edit throttle",
    });
  }
  return figures;
}

/**
 * One comment at a time on an idle client: @octokit/plugin-throttling (GitHub's etiquette) starts a
 * notification-triggering write (a comment) at most every 3 s per client, so comments sent together would
 * measure that queue. Each run outlasts that pacing, and the next comment waits for it to pass.
 */
async function measureGitHub(server: BenchDispatchProcess, fake: FakeGitHub): Promise<PathFigures[]> {
  const eyes: number[] = [];
  const tracked: number[] = [];
  const finals: number[] = [];
  for (let i = 0; i < GITHUB_SAMPLES; i++) {
    const s = await githubComment(server.url, i);
    const issue = 7000 + i;
    const onIssue = () =>
      fake.calls.filter((c) => c.method === "POST" && c.path.endsWith(`/issues/${issue}/comments`));
    const tracking = await waitFor(
      () => onIssue().find((c) => String(c.body?.body).includes("dispatch:run=")),
      { timeoutMs: WAIT_MS, what: `the tracking comment of ${s.tag}` },
    );
    tracked.push(tracking.at - s.sentAt);
    const reaction = fake.calls.find(
      (c) =>
        c.method === "POST" &&
        c.path.endsWith("/reactions") &&
        c.at >= s.sentAt &&
        c.body?.content === "eyes",
    );
    if (reaction) eyes.push(reaction.at - s.sentAt);
    const [run] = await finishedRuns(server, "GITHUB_WEBHOOK", [s.tag]);
    const final = await waitFor(
      () => onIssue().find((c) => c.at >= run!.finishedAt && !String(c.body?.body).includes("dispatch:run=")),
      { timeoutMs: WAIT_MS, what: `the final comment of ${s.tag}` },
    );
    finals.push(final.at - run!.finishedAt);
    await sleep(GITHUB_PACING_MS);
  }
  return [
    { name: "GitHub comment → 👀 reaction", samples: eyes },
    {
      name: "GitHub comment → tracking comment",
      samples: tracked,
      note: "GitHub's write pacing: ≥ 1 s after the 👀 reaction (@octokit/plugin-throttling)",
    },
    {
      name: "GitHub finish → final comment",
      samples: finals,
      note: "comments are paced 3 s apart per client (@octokit/plugin-throttling)",
    },
  ];
}

/** QUEUED → INPROGRESS on an idle Dispatch in this process, one run at a time. */
async function measureQueue(): Promise<PathFigures[]> {
  const bench = await startDispatchInProcess({ bench: "latency-queue" });
  try {
    const store = bench.dispatch.store;
    const team = (await store.listApiKeys())[0]!.principal.teamId;
    const claim: number[] = [];
    const seen: number[] = [];
    for (let i = 0; i < QUEUE_SAMPLES + 3; i++) {
      let runId: string | undefined;
      let observed: number | undefined;
      let resolve!: () => void;
      const inProgress = new Promise<void>((r) => (resolve = r));
      const onChanged = (id: string) => {
        if (id !== runId || observed !== undefined) return;
        void store.getRun(team, id).then((run) => {
          if (observed === undefined && run && run.state !== "QUEUED") {
            observed = performance.now();
            resolve();
          }
        });
      };
      store.signals.on("run_changed", onChanged);
      const sentAt = performance.now();
      const created = await bench.api("POST", "/api/v1/agent/runs", { prompt: "$ true" });
      if (created.status !== 201 && created.status !== 200)
        throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
      runId = created.body.run_id as string;
      onChanged(runId); // it may have been claimed before the answer arrived
      await Promise.race([
        inProgress,
        sleep(WAIT_MS).then(() => {
          throw new Error(`run ${runId} was not claimed within ${WAIT_MS} ms`);
        }),
      ]);
      store.signals.off("run_changed", onChanged);
      const run = await waitFor(
        async () => {
          const r = await store.getRun(team, runId!);
          return r && ["SUCCEEDED", "FAILED", "ERROR"].includes(r.state) ? r : undefined;
        },
        { timeoutMs: WAIT_MS, intervalMs: 5, what: `run ${runId} to finish` },
      );
      if (i < 3) continue; // warm-up
      claim.push(Date.parse(run.startedAt!) - Date.parse(run.createdAt));
      seen.push(observed! - sentAt);
    }
    return [
      {
        name: "queue → INPROGRESS (created_at → started_at)",
        samples: claim,
        target: { p50: QUEUE_P50_MS, p99: Number.POSITIVE_INFINITY },
      },
      {
        name: "API create sent → INPROGRESS seen (run_changed)",
        samples: seen,
        note: "includes the durable create and its answer",
      },
    ];
  } finally {
    await bench.stop();
  }
}

async function main(): Promise<number> {
  const machine = machineNow();
  log(`${machine.cores} cores, load average ${machine.loadBefore} (1 min), Node.js ${machine.node}`);
  const slack = await new FakeSlack().start();
  const github = await new FakeGitHub().start();
  github.permissions.set("writer0", "write");
  // GitHub runs clone the issue's repository: a small one in a local bare repository.
  const remotes = new GitRemotes();
  remotes.create("Codertocat/Hello-World", { "README.md": "# Hello World\n" });
  github.gitRoot = remotes.root;
  const server = await startDispatchProcess({
    bench: "latency",
    env: {
      SLACK_BOT_TOKEN: slack.token,
      SLACK_SIGNING_SECRET: SLACK_SECRET,
      SLACK_API_URL: slack.url,
      GITHUB_TOKEN: github.token,
      GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
      GITHUB_API_URL: github.url,
      GITHUB_BOT_HANDLE: HANDLE,
      GITHUB_SERVER_URL: remotes.serverUrl,
      DISPATCH_ALLOW_FILE_REMOTES: "true",
      DISPATCH_MAX_CONCURRENT_RUNS: "8",
      DISPATCH_LOG_LEVEL: "warn",
    },
  });
  const figures: PathFigures[] = [];
  try {
    // Warm-up: the first command of each kind loads code paths; not counted.
    await slackCommand(server.url, 900);
    await githubComment(server.url, 900);
    await finishedRuns(server, "SLACK", ["lat900"]);
    await finishedRuns(server, "GITHUB_WEBHOOK", ["lat900"]);
    slack.calls.length = 0;
    github.calls.length = 0;
    log(`Slack: ${SAMPLES} commands, one every ${GAP_MS} ms, each a ${RUN_S} s run`);
    figures.push(...(await measureSlack(server, slack)));
    log(`GitHub: ${GITHUB_SAMPLES} comments, one at a time`);
    figures.push(...(await measureGitHub(server, github)));
  } catch (err) {
    process.stderr.write(`Dispatch output:\n${server.child.tail()}\n`);
    throw err;
  } finally {
    await server.stop();
    await slack.stop();
    await github.stop();
    remotes.remove();
  }
  log(`queue → INPROGRESS: ${QUEUE_SAMPLES} runs one at a time`);
  figures.push(...(await measureQueue()));

  const rows: ResultRow[] = [];
  const lines = [
    "",
    `End-to-end latency through the loopback fakes (ms)`,
    "  path                                                     n      p50      p99      max   target",
  ];
  const fmt = (n: number) => n.toFixed(1).padStart(7);
  for (const f of figures) {
    const s = latencySummary(f.samples);
    const t = f.target;
    const met = t ? s.p50 < t.p50 && s.p99 < t.p99 : undefined;
    const targetText = t
      ? `p50 < ${t.p50} ms${Number.isFinite(t.p99) ? `, p99 < ${t.p99} ms` : ""}`
      : "report";
    lines.push(
      `  ${f.name.padEnd(52)} ${String(f.samples.length).padStart(4)} ${fmt(s.p50)}  ${fmt(s.p99)}  ${fmt(s.max)}   ${targetText}${met === undefined ? "" : met ? " met" : " NOT met"}`,
    );
    rows.push({
      benchmark: f.name,
      measured: `p50 ${ms(s.p50)}, p99 ${ms(s.p99)} (n=${f.samples.length})`,
      target: targetText,
      ...(met === undefined ? {} : { met }),
      ...(f.note ? { note: f.note } : {}),
    });
  }
  lines.push(`  load average after: ${machineNow().loadBefore} (1 min)`, "");
  process.stdout.write(lines.join("\n"));
  recordResults("latency", machine, rows);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
