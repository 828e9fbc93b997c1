/**
 * Checkpoint cost per step (docs/runtime.md#checkpoints): what saving a run's checkpoint costs after an
 * agent step, for a repository of 10,000 files. Report only (issue: "checkpoint cost per step").
 *
 *   node bench/failover/checkpoint.ts        (npm run bench:failover: this, then failover.ts)
 *
 * A bare repository of BENCH_CHECKPOINT_FILES files served over smart HTTP by git's own http-backend
 * (test/support/git-http-server.ts, with a token as GitHub takes it), a SQLite store, the default
 * sandbox (DISPATCH_SANDBOX, auto), all in this process. Each round is a new run: a checkout of the
 * repository, one file changed, the FIRST checkpoint; then BENCH_CHECKPOINT_STEPS steps of one more file
 * changed and an INCREMENTAL checkpoint each. Two kinds of run:
 *
 *   repository   the working tree and local commits as the hidden ref (commit in the sandbox with a
 *                temporary index, bundle into the mirror, push over HTTP) + the agent's area in the store
 *                baseline: `git status --porcelain` of the same workspace, right before each checkpoint
 *   no repo      the same 10,000 files (no .git) as a gzip'd tar in the store (not incremental: every
 *                checkpoint archives the whole workspace)
 *                baseline: `tar -czf` of the same directory (GNU tar, gzip), right before each checkpoint
 *
 * Then, per round and kind, a step that changed nothing: once the last edit has settled (tree-listing.ts),
 * one checkpoint, and the one measured after it with nothing changed.
 *
 * Each row: checkpoint p50 (ms), its size (bytes stored + pushed), and its ratio to the baseline measured
 * beside it. Knobs: BENCH_CHECKPOINT_FILES (10000), BENCH_CHECKPOINT_ROUNDS (3), BENCH_CHECKPOINT_STEPS (5).
 * Exits 1 when a checkpoint could not be taken (the bench went wrong), 0 otherwise.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { checkoutRepository, type DeliveryTarget } from "../../src/delivery/repository-checkout.ts";
import { type CheckpointSaved, RunCheckpoints } from "../../src/executor/run-checkpoints.ts";
import { createLogger } from "../../src/log.ts";
import { createSandboxProvider, type SandboxMode } from "../../src/sandbox/sandbox-provider.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { listTree } from "../../src/workspace/tree-listing.ts";
import { prepareWorkspace } from "../../src/workspace/workspace.ts";
import { storeSuite } from "../../test/store/conformance/suite.ts";
import { GitHttpServer } from "../../test/support/git-http-server.ts";
import { GitRemotes } from "../../test/support/git-remotes.ts";
import { percentile } from "../support/acks.ts";
import { bigRepoContent, bigRepoFiles, bigRepoPath } from "../support/big-repo.ts";
import { loadLine, loadNow, machineNow, ms, type ResultRow, recordResults } from "../support/results.ts";

const FILES = Number(process.env.BENCH_CHECKPOINT_FILES ?? 10_000);
const ROUNDS = Number(process.env.BENCH_CHECKPOINT_ROUNDS ?? 3);
const STEPS = Number(process.env.BENCH_CHECKPOINT_STEPS ?? 5);
const REPO = "bench/big";
const TOKEN = "ghs_benchcheckpoint0000000000";

const say = (line: string) => process.stderr.write(`${line}\n`);
const log = createLogger("silent");

interface Sample {
  ms: number;
  bytes: number;
  baselineMs: number;
}

function timed<T>(work: () => T): { value: T; ms: number } {
  const started = performance.now();
  const value = work();
  return { value, ms: performance.now() - started };
}

async function main(): Promise<void> {
  const started = machineNow();
  say(
    `checkpoint bench: ${FILES} files, ${ROUNDS} rounds of a first checkpoint and ${STEPS} incremental ones`,
  );
  say(loadLine(started));
  const dir = mkdtempSync(join(tmpdir(), "dispatch-bench-checkpoint-"));
  const remotes = new GitRemotes();
  remotes.create(REPO, bigRepoFiles(FILES));
  const server = await new GitHttpServer(remotes.root, TOKEN).start();
  const store = new SqliteStore(join(dir, "dispatch.db"));
  await store.migrate();
  await store.ensureTeam({ id: "t1", name: "Team one" });
  const runs = storeSuite(() => store);
  const provider = await createSandboxProvider({
    mode: (process.env.DISPATCH_SANDBOX as SandboxMode | undefined) ?? "auto",
    hide: [],
    limits: {},
    log,
  });
  const samples = {
    repoFirst: [] as Sample[],
    repoNext: [] as Sample[],
    plainFirst: [] as Sample[],
    plainNext: [] as Sample[],
    repoSame: [] as Sample[],
    plainSame: [] as Sample[],
  };
  const remotePolicy = { allowedHosts: [], lookup: async () => [] };
  let edits = 0;
  const edit = (workspace: string) => {
    const i = (edits++ * 7919) % FILES;
    writeFileSync(join(workspace, bigRepoPath(i)), `${bigRepoContent(i)}// step ${edits}\n`);
  };
  const checkpoint = async (checkpoints: RunCheckpoints, baseline: () => void): Promise<Sample> => {
    const base = timed(baseline);
    const saved: CheckpointSaved = await checkpoints.save();
    if (!saved.saved) throw new Error(`a checkpoint was not saved: ${saved.reason}`);
    return { ms: saved.ms, bytes: saved.bytes, baselineMs: base.ms };
  };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of ["repository", "plain"] as const) {
        const run = await runs.create();
        if ((await store.claimNextRun("bench-worker", 3_600_000))?.id !== run.id)
          throw new Error("not claimed");
        const { path: workspace } = await prepareWorkspace(join(dir, "data"), run.id);
        const sandbox = await provider.create({ workspace, runId: run.id, agentNetwork: false });
        const target: DeliveryTarget = {
          repository: REPO,
          remote: `${server.url}/${REPO}.git`,
          base: "main",
          branch: `dispatch/${run.id}`,
          mode: "branch",
        };
        if (kind === "repository") {
          const checkout = await checkoutRepository({
            target,
            remotes: remotePolicy,
            workspace,
            fresh: true,
            token: TOKEN,
            gitAuthor: { name: "Bench", email: "bench@example.com" },
            signal: new AbortController().signal,
            emit: async () => {},
            log,
            claimExistingBranch: async () => ({ kind: "new" }),
          });
          if (!checkout.ok) throw new Error("checkout failed");
        } else {
          const scratch = mkdtempSync(join(tmpdir(), "dispatch-bench-tree-"));
          execFileSync("git", ["clone", "--quiet", remotes.path(REPO), scratch]);
          rmSync(join(scratch, ".git"), { recursive: true });
          cpSync(scratch, workspace, { recursive: true });
          rmSync(scratch, { recursive: true });
        }
        const checkpoints = new RunCheckpoints({
          store,
          workerId: "bench-worker",
          run,
          workspace,
          log,
          ...(kind === "repository"
            ? { repository: { target, token: TOKEN, remotes: remotePolicy, sandbox } }
            : {}),
        });
        const baseline =
          kind === "repository"
            ? () => execFileSync("git", ["-C", workspace, "status", "--porcelain"], { stdio: "ignore" })
            : () => execFileSync("tar", ["-czf", join(dir, "baseline.tgz"), "-C", workspace, "."]);
        edit(workspace);
        const first = await checkpoint(checkpoints, baseline);
        (kind === "repository" ? samples.repoFirst : samples.plainFirst).push(first);
        for (let step = 0; step < STEPS; step++) {
          edit(workspace);
          (kind === "repository" ? samples.repoNext : samples.plainNext).push(
            await checkpoint(checkpoints, baseline),
          );
        }
        // A step that changed nothing (it read files, or ran the tests): once the last edit is past the
        // file system's timestamp granularity, one checkpoint of it, then another with nothing changed.
        const real = realpathSync(workspace);
        const deadline = Date.now() + 30_000;
        while (!(await listTree(dirname(real), [basename(real)])).settled && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 100));
        }
        await checkpoint(checkpoints, baseline);
        (kind === "repository" ? samples.repoSame : samples.plainSame).push(
          await checkpoint(checkpoints, baseline),
        );
        await sandbox.close?.();
        say(`round ${round + 1} ${kind}: first ${ms(first.ms)}, ${first.bytes} bytes`);
      }
    }
  } finally {
    await store.close();
    await server.stop();
    remotes.remove();
    rmSync(dir, { recursive: true, force: true });
  }

  const row = (name: string, list: Sample[], baselineName: string): ResultRow => {
    const p50 = median(list.map((s) => s.ms));
    const base = median(list.map((s) => s.baselineMs));
    const bytes = median(list.map((s) => s.bytes));
    return {
      benchmark: `checkpoint, ${name} (${FILES} files) p50`,
      measured: `${ms(p50)}, ${kib(bytes)}`,
      target: "report",
      note: `${(p50 / base).toFixed(1)}× ${baselineName} of the same workspace (${ms(base)}), ${list.length} samples`,
    };
  };
  const rows = [
    row("repository, first", samples.repoFirst, "`git status`"),
    row("repository, one file changed", samples.repoNext, "`git status`"),
    row("no repository, first", samples.plainFirst, "`tar -czf`"),
    row("no repository, one file changed", samples.plainNext, "`tar -czf`"),
    row("repository, nothing changed", samples.repoSame, "`git status`"),
    row("no repository, nothing changed", samples.plainSame, "`tar -czf`"),
  ];
  console.log("| checkpoint | p50 time, size | vs baseline |\n|---|---|---|");
  for (const r of rows) console.log(`| ${r.benchmark} | ${r.measured} | ${r.note} |`);
  say(loadLine(started, loadNow()));
  recordResults("failover-checkpoint", started, rows);
}

function median(values: number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

function kib(bytes: number): string {
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
