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
 * Knobs: BENCH_SLACK_CONCURRENCY (default 100), BENCH_SLACK_WARMUP (warm-up bursts of `help`, default 2).
 * Exits 0 whether the target is met or not; 1 when the bench itself went wrong.
 */
import { randomBytes } from "node:crypto";
import { signSlackRequest } from "../../src/integrations/slack/signature.ts";
import { waitFor } from "../../test/support/dispatch.ts";
import { FakeSlack } from "../../test/support/fake-slack.ts";
import { keepAlivePoster, latencySummary } from "../support/acks.ts";
import { startBareServer } from "../support/bare-server.ts";
import { startDispatchProcess } from "../support/dispatch.ts";
import { loadLine, loadNow, machineNow, ms, recordResults } from "../support/results.ts";

const CONCURRENCY = Number(process.env.BENCH_SLACK_CONCURRENCY ?? 100);
const WARMUP_BURSTS = Number(process.env.BENCH_SLACK_WARMUP ?? 2);
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
    const baseline = latencySummary(await burst(bareUrl, CONCURRENCY, (i) => `$ echo bench ${i}`, "B"));
    const measured = latencySummary(await burst(dispatchUrl, CONCURRENCY, (i) => `$ echo bench ${i}`, "M"));

    const runs = await waitFor(
      async () => {
        const res = await server.api("GET", "/api/v1/agent/runs?limit=500&source=SLACK");
        const n = (res.body.runs as unknown[]).length;
        return n >= CONCURRENCY ? n : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: `${CONCURRENCY} runs` },
    );

    const fmt = (n: number) => n.toFixed(1).padStart(7);
    const loadAfter = loadNow();
    process.stdout.write(
      [
        "",
        `Slack slash-command acknowledgement, ${CONCURRENCY} concurrent signed deliveries (ms)`,
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
