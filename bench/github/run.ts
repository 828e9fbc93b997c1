/**
 * GitHub webhook acknowledgement benchmark (target: GitHub webhook acknowledgement p99 < 50 ms with
 * 100 concurrent deliveries).
 *
 *   node bench/github/run.ts
 *
 * Starts `dispatch serve` as a child process with the GitHub integration enabled (token mode) and pointed
 * at a FakeGitHub in this process, then fires 100 signed `issue_comment.created` webhooks (real payload
 * shapes from @octokit/webhooks-examples, each a writer mentioning the bot on its own issue) at
 * POST /github/webhooks at the same moment and measures each acknowledgement (request sent → response
 * received). The baseline is a bare node:http endpoint in its own child process (bare-ack.ts) that
 * verifies the same X-Hub-Signature-256 and answers 202, measured the same way. Afterwards it checks that exactly 100 runs
 * exist (no delivery lost or doubled), also after every delivery was sent a second time (redeliveries).
 *
 * Knobs: BENCH_GITHUB_CONCURRENCY (default 100), BENCH_GITHUB_WARMUP (warm-up bursts, default 2).
 * Exits 0 whether the target is met or not; 1 when the bench itself went wrong.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { commentPayload, signGitHub } from "../../test/integrations/github/support.ts";
import { waitFor } from "../../test/support/dispatch.ts";
import { FakeGitHub } from "../../test/support/fake-github.ts";
import { keepAlivePoster, latencySummary } from "../support/acks.ts";
import { startBareServer } from "../support/bare-server.ts";
import { type BenchDispatchProcess, startDispatchProcess } from "../support/dispatch.ts";
import { loadLine, loadNow, machineNow, ms, recordResults } from "../support/results.ts";

const CONCURRENCY = Number(process.env.BENCH_GITHUB_CONCURRENCY ?? 100);
const WARMUP_BURSTS = Number(process.env.BENCH_GITHUB_WARMUP ?? 2);
const SECRET = randomBytes(16).toString("hex");
const HANDLE = "dispatch";
const TARGET_P99_MS = 50;
const post = keepAlivePoster(CONCURRENCY);

interface Delivery {
  body: string;
  headers: Record<string, string>;
}

function deliveries(n: number, issueBase: number, text: (i: number) => string): Delivery[] {
  return Array.from({ length: n }, (_, i) => {
    const body = JSON.stringify(
      commentPayload({ issue: issueBase + i, login: `writer${i % 10}`, body: `@${HANDLE} ${text(i)}` }),
    );
    return {
      body,
      headers: {
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(body)),
        "user-agent": "GitHub-Hookshot/bench",
        "x-github-event": "issue_comment",
        "x-github-delivery": randomUUID(),
        "x-hub-signature-256": signGitHub(SECRET, body),
      },
    };
  });
}

async function burst(url: string, batch: Delivery[]): Promise<number[]> {
  return Promise.all(
    batch.map(async ({ body, headers }) => {
      const started = performance.now();
      const status = await post(url, headers, body);
      const ms = performance.now() - started;
      if (status !== 202 && status !== 200) throw new Error(`acknowledgement answered ${status}`);
      return ms;
    }),
  );
}

async function countRuns(server: BenchDispatchProcess): Promise<number> {
  const res = await server.api("GET", "/api/v1/agent/runs?limit=500&source=GITHUB_WEBHOOK");
  return (res.body.runs as unknown[]).length;
}

async function main(): Promise<number> {
  const machine = machineNow();
  process.stderr.write(`[bench:github] ${loadLine(machine)}\n`);
  const fake = await new FakeGitHub().start();
  for (let i = 0; i < 10; i++) fake.permissions.set(`writer${i}`, "write");
  const server = await startDispatchProcess({
    bench: "github",
    env: {
      GITHUB_TOKEN: fake.token,
      GITHUB_WEBHOOK_SECRET: SECRET,
      GITHUB_API_URL: fake.url,
      GITHUB_BOT_HANDLE: HANDLE,
      DISPATCH_LOG_LEVEL: "info",
    },
  });
  const bare = await startBareServer(new URL("./bare-ack.ts", import.meta.url), {
    env: { BENCH_WEBHOOK_SECRET: SECRET },
  });
  try {
    const dispatchUrl = `${server.url}/github/webhooks`;
    const bareUrl = `${bare.url}/github/webhooks`;
    for (let w = 0; w < WARMUP_BURSTS; w++) {
      // `help` goes through everything but creates no run.
      await burst(
        dispatchUrl,
        deliveries(CONCURRENCY, 10_000 * (w + 1), () => "help"),
      );
      await burst(
        bareUrl,
        deliveries(CONCURRENCY, 10_000 * (w + 1), () => "help"),
      );
    }
    const baseline = latencySummary(
      await burst(
        bareUrl,
        deliveries(CONCURRENCY, 100_000, (i) => `$ echo bench ${i}`),
      ),
    );
    const batch = deliveries(CONCURRENCY, 200_000, (i) => `$ echo bench ${i}`);
    const measured = latencySummary(await burst(dispatchUrl, batch));

    const runs = await waitFor(
      async () => {
        const n = await countRuns(server);
        return n >= CONCURRENCY ? n : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: `${CONCURRENCY} runs` },
    );
    // GitHub redelivers with the same X-GitHub-Delivery: every one is acknowledged, none is a new run.
    await burst(dispatchUrl, batch);
    const afterRedelivery = await countRuns(server);

    const fmt = (n: number) => n.toFixed(1).padStart(7);
    const ok = runs === CONCURRENCY && afterRedelivery === CONCURRENCY;
    const loadAfter = loadNow();
    process.stdout.write(
      [
        "",
        `GitHub webhook acknowledgement, ${CONCURRENCY} concurrent signed issue_comment deliveries (ms)`,
        "                          p50      p99      max",
        `  bare node:http ack  ${fmt(baseline.p50)}  ${fmt(baseline.p99)}  ${fmt(baseline.max)}`,
        `  Dispatch            ${fmt(measured.p50)}  ${fmt(measured.p99)}  ${fmt(measured.max)}`,
        `  ratio to baseline   ${fmt(measured.p50 / baseline.p50)}x ${fmt(measured.p99 / baseline.p99)}x`,
        `  target p99 < ${TARGET_P99_MS} ms: ${measured.p99 < TARGET_P99_MS ? "met" : "NOT met"}`,
        `  runs created: ${runs}, after redelivering all: ${afterRedelivery} (expected ${CONCURRENCY}) ${ok ? "ok" : "MISMATCH"}`,
        `  ${loadLine(machine, loadAfter)}`,
        "",
      ].join("\n"),
    );
    recordResults("github", machine, [
      {
        benchmark: `GitHub webhook acknowledgement, ${CONCURRENCY} concurrent deliveries`,
        measured: `p50 ${ms(measured.p50)}, p99 ${ms(measured.p99)}`,
        target: `p99 < ${TARGET_P99_MS} ms`,
        met: measured.p99 < TARGET_P99_MS,
        note: `bare node:http ack p99 ${ms(baseline.p99)} (${(measured.p99 / baseline.p99).toFixed(1)}×); ${runs} runs, ${afterRedelivery} after redelivering all (expected ${CONCURRENCY})`,
      },
    ]);
    return ok ? 0 : 1;
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
