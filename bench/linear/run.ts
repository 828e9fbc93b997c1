/**
 * Linear agent benchmark (target: webhook → first `thought` activity p99 < 1 s; also run end → final
 * activity).
 *
 *   node bench/linear/run.ts
 *
 * Starts `dispatch serve` as a child process with the Linear agent enabled and pointed at a FakeLinear in
 * this process (Linear's GraphQL API on loopback), then delivers signed AgentSessionEvent `created`
 * webhooks, BENCH_LINEAR_BURST at a time, each a delegated issue whose run echoes once. It measures, per
 * session, the time from sending the webhook to Linear receiving the "On it" thought, and from the run's
 * finished_at (as the API reports it) to Linear receiving its final activity; then checks that every
 * session got exactly one run, one thought and one final.
 *
 * Knobs: BENCH_LINEAR_SESSIONS (default 40), BENCH_LINEAR_BURST (default 10).
 * Exits 0 whether the target is met or not; 1 when the bench itself went wrong.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { user } from "../../test/integrations/linear/support.ts";
import { waitFor } from "../../test/support/dispatch.ts";
import { FakeLinear } from "../../test/support/fake-linear.ts";
import { GitRemotes } from "../../test/support/git-remotes.ts";
import { latencySummary } from "../support/acks.ts";
import { startDispatchProcess } from "../support/dispatch.ts";
import { loadLine, loadNow, machineNow, ms, recordResults } from "../support/results.ts";

const SESSIONS = Number(process.env.BENCH_LINEAR_SESSIONS ?? 40);
const BURST = Number(process.env.BENCH_LINEAR_BURST ?? 10);
const TARGET_P99_MS = 1_000;
const REPO = "acme/app";

async function main(): Promise<number> {
  const machine = machineNow();
  process.stderr.write(`[bench:linear] ${loadLine(machine)}\n`);
  const fake = await new FakeLinear().start();
  const remotes = new GitRemotes();
  remotes.create(REPO, { "README.md": "# app\n" });
  const dir = await mkdtemp(join(tmpdir(), "dispatch-bench-linear-"));
  const settings = join(dir, "dispatch.config.yaml");
  await writeFile(settings, `linear:\n  teams:\n    ENG:\n      repository: ${REPO}\n`);
  const ada = user("Ada");
  const team = fake.team("ENG", [ada.id]);
  const server = await startDispatchProcess({
    bench: "linear",
    env: {
      LINEAR_ACCESS_TOKEN: fake.token,
      LINEAR_WEBHOOK_SECRET: fake.webhookSecret,
      LINEAR_API_URL: fake.url,
      DISPATCH_CONFIG_FILE: settings,
      GITHUB_SERVER_URL: remotes.serverUrl,
      DISPATCH_ALLOW_FILE_REMOTES: "true",
      DISPATCH_LOG_LEVEL: "info",
    },
  });
  try {
    const sent = new Map<string, number>();
    const events = Array.from({ length: SESSIONS }, (_, i) =>
      fake.created(fake.issue(team, { title: `Bench ${i}`, description: `$ echo bench-${i}` }), ada),
    );
    for (let i = 0; i < events.length; i += BURST) {
      await Promise.all(
        events.slice(i, i + BURST).map(async (event) => {
          const { headers, body } = fake.signed(event);
          sent.set(event.agentSession.id, Date.now());
          const res = await fetch(`${server.url}/linear/webhooks`, { method: "POST", headers, body });
          if (res.status !== 200) throw new Error(`the webhook was answered ${res.status}`);
        }),
      );
    }
    const finalOf = (sessionId: string) =>
      fake.activitiesOf(sessionId).find((a) => a.content.type === "response" || a.content.type === "error");
    await waitFor(() => events.every((e) => finalOf(e.agentSession.id)), {
      timeoutMs: 240_000,
      intervalMs: 200,
      what: `${SESSIONS} final activities`,
    });

    const firstThought: number[] = [];
    const finalLag: number[] = [];
    const runs = (await server.api("GET", "/api/v1/agent/runs?limit=500&source=LINEAR")).body.runs as Array<{
      trigger_url: string;
      finished_at: string;
    }>;
    let consistent = runs.length === SESSIONS;
    for (const event of events) {
      const sessionId = event.agentSession.id;
      const activities = fake.activitiesOf(sessionId);
      const thoughts = activities.filter((a) => String(a.content.body ?? "").startsWith("On it"));
      const finals = activities.filter((a) => a.content.type === "response" || a.content.type === "error");
      const run = runs.find((r) => r.trigger_url === event.agentSession.issue?.url);
      if (thoughts.length !== 1 || finals.length !== 1 || !run) {
        consistent = false;
        continue;
      }
      firstThought.push(thoughts[0]!.at - sent.get(sessionId)!);
      finalLag.push(finals[0]!.at - Date.parse(run.finished_at));
    }
    const thought = latencySummary(firstThought);
    const final = latencySummary(finalLag);
    const fmt = (n: number) => n.toFixed(1).padStart(8);
    const loadAfter = loadNow();
    process.stdout.write(
      [
        "",
        `Linear agent, ${SESSIONS} delegated issues, ${BURST} webhooks at a time (ms)`,
        "                               p50       p99       max",
        `  webhook → first thought  ${fmt(thought.p50)}  ${fmt(thought.p99)}  ${fmt(thought.max)}`,
        `  run end → final activity ${fmt(final.p50)}  ${fmt(final.p99)}  ${fmt(final.max)}`,
        `  target first thought p99 < ${TARGET_P99_MS} ms: ${thought.p99 < TARGET_P99_MS ? "met" : "NOT met"}`,
        `  one run, one thought and one final per session: ${consistent ? "ok" : "MISMATCH"}`,
        `  ${loadLine(machine, loadAfter)}`,
        "",
      ].join("\n"),
    );
    recordResults("linear", machine, [
      {
        benchmark: `Linear webhook → first thought, ${SESSIONS} sessions, ${BURST} at a time`,
        measured: `p50 ${ms(thought.p50)}, p99 ${ms(thought.p99)}`,
        target: `p99 < ${TARGET_P99_MS} ms`,
        met: thought.p99 < TARGET_P99_MS,
        note: `one run, thought and final per session: ${consistent ? "yes" : "NO"}`,
      },
      {
        benchmark: "Linear run end → final activity",
        measured: `p50 ${ms(final.p50)}, p99 ${ms(final.p99)}`,
        target: "report",
        note: "finished_at to Linear receiving the response or error activity",
      },
    ]);
    return consistent ? 0 : 1;
  } finally {
    await server.stop();
    await fake.stop();
    remotes.remove();
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
