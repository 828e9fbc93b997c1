/**
 * Slack acknowledgement benchmark (target: Slack command acknowledgement p99 < 50 ms with 100
 * concurrent deliveries).
 *
 *   node bench/slack/run.ts
 *
 * Starts `dispatch serve` as a child process with the Slack app enabled and pointed at a FakeSlack in
 * this process, then fires 100 signed slash commands at POST /slack/events at the same moment and
 * measures each acknowledgement (request sent → response received). The baseline is a bare node:http
 * endpoint in its own child process (bare-ack.ts) that verifies the same signature and answers 200,
 * measured the same way. Afterwards it checks that exactly 100 runs exist (no command lost or doubled).
 *
 * Knobs: BENCH_SLACK_CONCURRENCY (default 100), BENCH_SLACK_WARMUP (warm-up bursts of `help`, default 2),
 * BENCH_SLACK_ROUNDS (measured bursts of each, default 1: the figures are each burst's own, pooled),
 * BENCH_CPU_PROF=<dir> (Dispatch writes dispatch-*.cpuprofile there when it stops; bench/README.md).
 * Exits 0 whether the target is met or not; 1 when the bench itself went wrong.
 */
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { signSlackRequest } from "../../src/integrations/slack/signature.ts";
import { waitFor } from "../../test/support/dispatch.ts";
import { FakeSlack } from "../../test/support/fake-slack.ts";
import { keepAlivePoster, latencySummary } from "../support/acks.ts";
import { startBareServer } from "../support/bare-server.ts";
import { type BenchDispatchProcess, startDispatchProcess } from "../support/dispatch.ts";
import { loadLine, loadNow, machineNow, ms, recordResults } from "../support/results.ts";

const CONCURRENCY = Number(process.env.BENCH_SLACK_CONCURRENCY ?? 100);
const WARMUP_BURSTS = Number(process.env.BENCH_SLACK_WARMUP ?? 2);
const ROUNDS = Math.max(1, Number(process.env.BENCH_SLACK_ROUNDS ?? 1));
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined;
const SECRET = randomBytes(16).toString("hex");
const TARGET_P99_MS = 50;
const post = keepAlivePoster(CONCURRENCY);

async function burst(url: string, n: number, text: (i: number) => string, tag: string): Promise<number[]> {
  const bodies = Array.from({ length: n }, (_, i) =>
    new URLSearchParams({
      team_id: "T0BENCH",
      team_domain: "bench",
      channel_id: "C0BENCH",
      channel_name: "bench",
      user_id: `U${tag}${i}`,
      user_name: `bench-${i}`,
      command: "/agent",
      text: text(i),
      api_app_id: "A0BENCH",
      response_url: "https://hooks.slack.invalid/commands/1",
      trigger_id: `${tag}.${i}.${randomBytes(4).toString("hex")}`,
    }).toString(),
  );
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signed = bodies.map((body) => ({
    body,
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "content-length": String(Buffer.byteLength(body)),
      "x-slack-request-timestamp": timestamp,
      "x-slack-signature": signSlackRequest(SECRET, timestamp, body),
    },
  }));
  return Promise.all(
    signed.map(async ({ body, headers }) => {
      const started = performance.now();
      const status = await post(url, headers, body);
      const ms = performance.now() - started;
      if (status !== 200) throw new Error(`acknowledgement answered ${status}`);
      return ms;
    }),
  );
}

/**
 * The runs Slack created, page by page (a page holds at most 500), once every one of them has finished:
 * the next round's burst then meets a Dispatch that is not still running the last round's commands.
 */
async function countSlackRuns(server: BenchDispatchProcess): Promise<number> {
  let n = 0;
  let finished = true;
  let cursor: string | undefined;
  do {
    const page = await server.api(
      "GET",
      `/api/v1/agent/runs?limit=500&source=SLACK${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    const runs = page.body.runs as Array<{ state: string }>;
    n += runs.length;
    finished &&= runs.every((run) => ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"].includes(run.state));
    cursor = page.body.page_info?.next_cursor;
  } while (cursor);
  return finished ? n : 0;
}

async function main(): Promise<number> {
  const machine = machineNow();
  process.stderr.write(`[bench:slack] ${loadLine(machine)}\n`);
  const fake = await new FakeSlack().start();
  const server = await startDispatchProcess({
    bench: "slack",
    env: {
      SLACK_BOT_TOKEN: fake.token,
      SLACK_SIGNING_SECRET: SECRET,
      SLACK_API_URL: fake.url,
      DISPATCH_LOG_LEVEL: "info",
    },
    nodeFlags: CPU_PROF_DIR
      ? ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF_DIR}`, `--cpu-prof-name=dispatch-${Date.now()}.cpuprofile`]
      : [],
  });
  const bare = await startBareServer(new URL("./bare-ack.ts", import.meta.url), {
    env: { BENCH_SIGNING_SECRET: SECRET },
  });
  try {
    const dispatchUrl = `${server.url}/slack/events`;
    const bareUrl = `${bare.url}/slack/events`;
    for (let w = 0; w < WARMUP_BURSTS; w++) {
      await burst(dispatchUrl, CONCURRENCY, () => "help", `W${w}x`);
      await burst(bareUrl, CONCURRENCY, () => "help", `W${w}x`);
    }
    const bareSamples: number[] = [];
    const samples: number[] = [];
    let runs = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const text = (i: number) => `$ echo bench ${round} ${i}`;
      bareSamples.push(...(await burst(bareUrl, CONCURRENCY, text, `B${round}x`)));
      samples.push(...(await burst(dispatchUrl, CONCURRENCY, text, `M${round}x`)));
      // Each round's runs are created and finished before the next burst: it measures the intake only.
      const expected = CONCURRENCY * (round + 1);
      runs = await waitFor(
        async () => {
          const n = await countSlackRuns(server);
          return n >= expected ? n : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100, what: `${expected} runs` },
      );
    }
    // Per round, as the target counts them: a command lost or doubled in any round shows.
    runs /= ROUNDS;
    const baseline = latencySummary(bareSamples);
    const measured = latencySummary(samples);

    const fmt = (n: number) => n.toFixed(1).padStart(7);
    const loadAfter = loadNow();
    process.stdout.write(
      [
        "",
        `Slack slash-command acknowledgement, ${CONCURRENCY} concurrent signed deliveries${ROUNDS > 1 ? `, ${ROUNDS} rounds` : ""} (ms)`,
        "                          p50      p99      max",
        `  bare node:http ack  ${fmt(baseline.p50)}  ${fmt(baseline.p99)}  ${fmt(baseline.max)}`,
        `  Dispatch            ${fmt(measured.p50)}  ${fmt(measured.p99)}  ${fmt(measured.max)}`,
        `  ratio to baseline   ${fmt(measured.p50 / baseline.p50)}x ${fmt(measured.p99 / baseline.p99)}x`,
        `  target p99 < ${TARGET_P99_MS} ms: ${measured.p99 < TARGET_P99_MS ? "met" : "NOT met"}`,
        `  runs created: ${runs} (expected ${CONCURRENCY}) ${runs === CONCURRENCY ? "ok" : "MISMATCH"}`,
        `  ${loadLine(machine, loadAfter)}`,
        "",
      ].join("\n"),
    );
    recordResults("slack", machine, [
      {
        benchmark: `Slack command acknowledgement, ${CONCURRENCY} concurrent deliveries`,
        measured: `p50 ${ms(measured.p50)}, p99 ${ms(measured.p99)}`,
        target: `p99 < ${TARGET_P99_MS} ms`,
        met: measured.p99 < TARGET_P99_MS,
        note: `bare node:http ack p99 ${ms(baseline.p99)} (${(measured.p99 / baseline.p99).toFixed(1)}×); ${runs} of ${CONCURRENCY} runs created`,
      },
    ]);
    return runs === CONCURRENCY ? 0 : 1;
  } finally {
    await bare.child.stop();
    await server.stop();
    await fake.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
