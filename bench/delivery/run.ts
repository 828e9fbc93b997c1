/**
 * Delivery benchmark (target: the agent's last step → the pull request on the run, p50 < 2 s).
 *
 *   node bench/delivery/run.ts
 *
 * A repository of 10,000 files in a local bare repository (GITHUB_SERVER_URL=file://…, as the tests'
 * GitRemotes) and a FakeGitHub in this process; `dispatch serve` in a child process with its default
 * sandbox. Runs one after another (an idle system), each a scripted agent that edits three files (two
 * existing, one new) of the repository. For each run, from its transcript's timestamps:
 *
 *   agent done   the agent's last transcript event (its last tool result or message)
 *   patch        the FILE artifact (commit in the sandbox, bundle out, fetch into the mirror, diff)
 *   pushed       delivery's "Pushed …" log event (git push to the remote)
 *   PR on run    the PULL_REQUEST artifact (GitHub: find the open PR, open one), i.e. the card's PR link
 *
 * git = agent done → pushed; GitHub = pushed → PR on run (FakeGitHub's recorded calls fall inside it).
 * The baseline, measured the same way on the same repository: plain `git add/commit/push` of the same
 * edits in a clone, then one POST /pulls to the same FakeGitHub, with no Dispatch around it.
 *
 * Knobs: BENCH_DELIVERY_RUNS (6), BENCH_DELIVERY_BURST (3), BENCH_DELIVERY_FILES (10000), DISPATCH_SANDBOX
 * (auto). Runs are paced ≥ 3 s apart (see PR_PACING_MS), so each idle run costs that much wall time. Exits 0
 * whether the target is met or not; 1 when the bench itself went wrong (a run did not deliver).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "../../test/support/dispatch.ts";
import { FakeGitHub } from "../../test/support/fake-github.ts";
import { GitRemotes } from "../../test/support/git-remotes.ts";
import { percentile } from "../support/acks.ts";
import { type BenchDispatchProcess, startDispatchProcess } from "../support/dispatch.ts";
import { machineNow, ms, type ResultRow, recordResults } from "../support/results.ts";

const RUNS = Number(process.env.BENCH_DELIVERY_RUNS ?? 6);
const FILES = Number(process.env.BENCH_DELIVERY_FILES ?? 10_000);
const REPO = "bench/big";
const TARGET_P50_MS = 2000;
const RUN_TIMEOUT_MS = 120_000;
const BURST = Number(process.env.BENCH_DELIVERY_BURST ?? 3);
/**
 * @octokit/plugin-throttling starts a notification-triggering write (opening a pull request, a comment)
 * at most every 3 s per process. The idle figure spaces runs so that no PR waits for the previous run's
 * writes (its PR and the comments on it);
 * the burst figure shows what that pacing costs when several runs deliver at once.
 */
const PR_PACING_MS = 3000;

interface Ev {
  seq: number;
  at: string;
  type: string;
  data: Record<string, unknown>;
}

interface Sample {
  /** Run created → the agent's first event (queue, fetch of the repository, checkout). */
  checkoutMs: number;
  /** Agent done → patch artifact. */
  patchMs: number;
  /** Patch artifact → pushed. */
  pushMs: number;
  /** Pushed → PULL_REQUEST artifact. */
  githubMs: number;
  totalMs: number;
  githubCalls: number;
}

const log = (line: string) => process.stderr.write(`${line}\n`);

/** The file at index `i`: 100 directories of 100 files (for 10,000), a few hundred bytes each. */
function filePath(i: number): string {
  return `src/d${String(Math.floor(i / 100)).padStart(3, "0")}/f${String(i).padStart(5, "0")}.ts`;
}

function fileContent(i: number): string {
  return `// generated file ${i}\nexport const value = 0;\n${`export const line${i} = "${"x".repeat(60)}";\n`.repeat(4)}`;
}

/** Three edits to files the other runs do not touch: two existing files and a new one. */
function edits(n: number): { a: string; b: string; added: string } {
  return {
    a: filePath((n * 7919) % FILES),
    b: filePath((n * 104_729 + 13) % FILES),
    added: `notes/run-${n}.md`,
  };
}

/** Waits until GitHub's pacing of pull-request creation no longer holds back a new one. */
async function pastPacing(github: FakeGitHub): Promise<void> {
  // Every notification-class write counts, not only pull requests: the run that opened a PR comments on
  // it afterwards (its status on the PR it owns), paced 3 s apart too. Wait until a whole pacing window
  // has passed with none, since a queued comment goes out just as the window ends.
  for (;;) {
    const last = github.calls.findLast((c) => c.method === "POST" && /\/(pulls|comments)$/.test(c.path));
    const wait = last ? last.at + PR_PACING_MS + 250 - Date.now() : 0;
    if (wait <= 0) return;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

async function measureRun(server: BenchDispatchProcess, github: FakeGitHub, n: number): Promise<Sample> {
  const { a, b, added } = edits(n);
  const created = await server.api("POST", "/api/v1/agent/runs", {
    title: `Bench delivery ${n}`,
    prompt: [
      `Edit three files (run ${n})`,
      `$ sed -i 's/value = 0/value = ${n}/' ${a}`,
      `$ echo '// touched by run ${n}' >> ${b}`,
      `$ mkdir -p notes && echo 'run ${n}' > ${added}`,
    ].join("\n"),
    config: { repository: REPO },
  });
  if (created.status !== 200)
    throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
  const runId = created.body.run_id as string;
  const run = await waitFor(
    async () => {
      const r = (await server.api("GET", `/api/v1/agent/runs/${runId}`)).body;
      return ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"].includes(r.state) ? r : undefined;
    },
    { timeoutMs: RUN_TIMEOUT_MS, intervalMs: 50, what: `run ${n} to finish` },
  );
  if (run.state !== "SUCCEEDED" || !/^PR #\d+ opened/.test(run.status_message?.message ?? "")) {
    throw new Error(`run ${n} ended ${run.state}: ${JSON.stringify(run.status_message)}`);
  }
  const events = (await server.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`)).body
    .events as Ev[];
  const at = (e: Ev | undefined, what: string) => {
    if (!e) throw new Error(`run ${n}: no ${what} event`);
    return Date.parse(e.at);
  };
  const agentTypes = new Set(["message", "tool_call", "tool_result"]);
  const firstAgent = events.find((e) => e.type === "tool_call");
  const agentDone = events.findLast((e) => agentTypes.has(e.type) && e.data.role !== "user");
  const patch = events.find((e) => e.type === "artifact" && e.data.artifact_type === "FILE");
  const pushed = events.find(
    (e) => e.type === "log" && e.data.phase === "delivery" && /^Pushed /.test(String(e.data.message)),
  );
  const pr = events.find((e) => e.type === "artifact" && e.data.artifact_type === "PULL_REQUEST");
  const t0 = at(agentDone, "agent");
  const tPatch = at(patch, "patch artifact");
  const tPushed = at(pushed, "pushed");
  const tPr = at(pr, "pull request artifact");
  return {
    checkoutMs: at(firstAgent, "first tool call") - Date.parse(run.created_at),
    patchMs: tPatch - t0,
    pushMs: tPushed - tPatch,
    githubMs: tPr - tPushed,
    totalMs: tPr - t0,
    githubCalls: github.calls.filter((c) => c.at >= tPushed && c.at <= tPr).length,
  };
}

/**
 * The clone the baseline commits in: made once, since cloning 10,000 files costs seconds that the
 * measured part (edit, commit, push, POST /pulls) does not include anyway.
 */
interface BaselineClone {
  dir: string;
  git(...args: string[]): string;
  remove(): void;
}

function baselineClone(remotes: GitRemotes): BaselineClone {
  const dir = mkdtempSync(join(tmpdir(), "dispatch-bench-delivery-base-"));
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: tmpdir(),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
  };
  try {
    execFileSync("git", ["clone", "--quiet", "--branch", "main", remotes.path(REPO), dir], { env });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    git: (...args) => execFileSync("git", ["-C", dir, ...args], { env, encoding: "utf8" }),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The same edits committed and pushed with plain git from the clone, then one POST /pulls. */
async function measureBaseline(clone: BaselineClone, github: FakeGitHub, n: number): Promise<Sample> {
  const { dir, git } = clone;
  // Back to main as cloned: the previous baseline's commit and new file gone, as in a fresh clone.
  git("checkout", "--quiet", "--force", "-B", "main", "origin/main");
  git("clean", "-fdq");
  const { a, b, added } = edits(n);
  const t0 = performance.now();
  writeFileSync(join(dir, a), readFileSync(join(dir, a), "utf8").replace("value = 0", `value = ${n}`));
  writeFileSync(join(dir, b), `${readFileSync(join(dir, b), "utf8")}// touched by baseline ${n}\n`);
  execFileSync("mkdir", ["-p", join(dir, "notes")]);
  writeFileSync(join(dir, added), `baseline ${n}\n`);
  git("add", "--all");
  git(
    "-c",
    "user.name=Bench",
    "-c",
    "user.email=bench@example.com",
    "commit",
    "--quiet",
    "-m",
    `baseline ${n}`,
  );
  const tCommitted = performance.now();
  const branch = `baseline/${n}`;
  git("push", "--quiet", "origin", `HEAD:refs/heads/${branch}`);
  const tPushed = performance.now();
  const res = await fetch(`${github.url}/repos/${REPO}/pulls`, {
    method: "POST",
    headers: { authorization: `token ${github.token}`, "content-type": "application/json" },
    body: JSON.stringify({ title: `baseline ${n}`, head: branch, base: "main", body: "", draft: true }),
  });
  if (res.status !== 201) throw new Error(`baseline POST /pulls answered ${res.status}: ${await res.text()}`);
  const tPr = performance.now();
  return {
    checkoutMs: Number.NaN,
    patchMs: tCommitted - t0,
    pushMs: tPushed - tCommitted,
    githubMs: tPr - tPushed,
    totalMs: tPr - t0,
    githubCalls: 1,
  };
}

function summarize(samples: Sample[], key: keyof Sample) {
  const sorted = samples.map((s) => s[key]).sort((x, y) => x - y);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

async function main(): Promise<number> {
  const machine = machineNow();
  const [load1, load5] = loadavg();
  const cores = availableParallelism();
  log(`load average ${load1!.toFixed(2)} (1 min), ${load5!.toFixed(2)} (5 min) on ${cores} cores`);
  if (load1! > 0.5) log("warning: other processes compete for the CPU; the numbers will be noisy");

  const remotes = new GitRemotes();
  const github = await new FakeGitHub().start();
  github.gitRoot = remotes.root;
  let server: BenchDispatchProcess | undefined;
  try {
    log(`generating ${FILES.toLocaleString("en")} files into ${REPO}…`);
    const seeded = performance.now();
    remotes.create(
      REPO,
      Object.fromEntries(Array.from({ length: FILES }, (_, i) => [filePath(i), fileContent(i)])),
    );
    const repoBytes = Number(
      execFileSync("du", ["-sb", remotes.path(REPO)], { encoding: "utf8" }).split("\t")[0] ?? 0,
    );
    log(
      `seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s (bare repository ${(repoBytes / 2 ** 20).toFixed(1)} MiB)`,
    );

    server = await startDispatchProcess({
      bench: "delivery",
      env: {
        GITHUB_SERVER_URL: remotes.serverUrl,
        GITHUB_API_URL: github.url,
        GITHUB_TOKEN: github.token,
        GITHUB_WEBHOOK_SECRET: "bench-webhook-secret",
        GITHUB_BOT_HANDLE: "dispatch",
        DISPATCH_ALLOW_FILE_REMOTES: "true",
        DISPATCH_LOG_LEVEL: "warn",
        DISPATCH_POLL_INTERVAL_MS: "200",
        ...(process.env.DISPATCH_SANDBOX ? { DISPATCH_SANDBOX: process.env.DISPATCH_SANDBOX } : {}),
      },
    });

    log("warm-up run…");
    await measureRun(server, github, 0);
    const samples: Sample[] = [];
    for (let n = 1; n <= RUNS; n++) {
      await pastPacing(github);
      samples.push(await measureRun(server, github, n));
      log(`run ${n}/${RUNS}: ${samples.at(-1)!.totalMs} ms`);
    }
    await pastPacing(github);
    log(`burst of ${BURST} runs at once…`);
    const burst = await Promise.all(
      Array.from({ length: BURST }, (_, i) => measureRun(server!, github, RUNS + 1 + i)),
    );
    const clone = baselineClone(remotes);
    const baseline: Sample[] = [];
    try {
      await measureBaseline(clone, github, 0);
      for (let n = 1; n <= RUNS; n++) baseline.push(await measureBaseline(clone, github, n));
    } finally {
      clone.remove();
    }

    const fmt = (x: number) => (Number.isNaN(x) ? "      –" : x.toFixed(0).padStart(7));
    const row = (label: string, key: keyof Sample) => {
      const d = summarize(samples, key);
      const b = summarize(baseline, key);
      return `  ${label.padEnd(38)}${fmt(d.p50)}  ${fmt(d.p99)}    ${fmt(b.p50)}  ${fmt(b.p99)}`;
    };
    const sum = (key: keyof Sample) => samples.reduce((acc, s) => acc + s[key], 0);
    const total = sum("totalMs");
    const gitShare = (sum("patchMs") + sum("pushMs")) / total;
    const githubShare = sum("githubMs") / total;
    const totals = summarize(samples, "totalMs");
    const baseTotals = summarize(baseline, "totalMs");
    const [after1] = loadavg();
    process.stdout.write(
      [
        "",
        `Delivery: agent's last step → PR on the run; ${REPO}, ${FILES.toLocaleString("en")} files, ${RUNS} runs one at a time (ms)`,
        `                                          Dispatch            baseline (plain git + POST /pulls)`,
        `                                          p50      p99        p50      p99`,
        row("agent done → PR on run (total)", "totalMs"),
        row("  git: commit, bundle, fetch, patch", "patchMs"),
        row("  git: push", "pushMs"),
        row("  GitHub: find + open PR, record", "githubMs"),
        row("(before) create → agent's first step", "checkoutMs"),
        `  share of the total: git ${(gitShare * 100).toFixed(0)} %, GitHub ${(githubShare * 100).toFixed(0)} % (${(sum("githubCalls") / samples.length).toFixed(1)} GitHub calls per run)`,
        `  ratio to baseline: p50 ${(totals.p50 / baseTotals.p50).toFixed(1)}x, p99 ${(totals.p99 / baseTotals.p99).toFixed(1)}x`,
        `  target p50 < ${TARGET_P50_MS} ms: ${totals.p50 < TARGET_P50_MS ? "met" : "NOT met"}`,
        ...(BURST > 0
          ? [
              `  burst: ${BURST} runs at once, agent done → PR on run p50 ${fmt(summarize(burst, "totalMs").p50).trim()}, max ${fmt(Math.max(...burst.map((s) => s.totalMs))).trim()}; GitHub part p50 ${fmt(summarize(burst, "githubMs").p50).trim()}, max ${fmt(Math.max(...burst.map((s) => s.githubMs))).trim()} (PRs opened ≥ ${PR_PACING_MS / 1000} s apart by the GitHub client's throttling)`,
            ]
          : []),
        `  machine: ${cores} cores, load average ${load1!.toFixed(2)} before, ${after1!.toFixed(2)} after; sandbox ${process.env.DISPATCH_SANDBOX ?? "auto"}`,
        "",
      ].join("\n"),
    );
    const rows: ResultRow[] = [
      {
        benchmark: `delivery: agent's last step → PR on the run (${FILES.toLocaleString("en")} files, ${RUNS} runs one at a time)`,
        measured: `p50 ${ms(totals.p50)}, p99 ${ms(totals.p99)}`,
        target: `p50 < ${TARGET_P50_MS} ms`,
        met: totals.p50 < TARGET_P50_MS,
        note: `plain git + POST /pulls p50 ${ms(baseTotals.p50)} (${(totals.p50 / baseTotals.p50).toFixed(1)}×); git ${(gitShare * 100).toFixed(0)} %, GitHub ${(githubShare * 100).toFixed(0)} % of the total`,
      },
    ];
    if (BURST > 0) {
      const b = summarize(burst, "totalMs");
      rows.push({
        benchmark: `delivery: ${BURST} runs at once, agent's last step → PR on the run`,
        measured: `p50 ${ms(b.p50)}, max ${ms(Math.max(...burst.map((s) => s.totalMs)))}`,
        target: "report",
        note: `PRs opened ≥ ${PR_PACING_MS / 1000} s apart by the GitHub client's throttling`,
      });
    }
    recordResults("delivery", machine, rows);
    return 0;
  } catch (err) {
    if (server?.child.exited) log(`Dispatch exited:\n${server.child.tail()}`);
    throw err;
  } finally {
    await server?.stop();
    await github.stop();
    remotes.remove();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    const cause =
      err instanceof Error && err.cause
        ? `\ncaused by: ${(err.cause as Error).stack ?? String(err.cause)}`
        : "";
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}${cause}\n`);
    process.exit(1);
  },
);
