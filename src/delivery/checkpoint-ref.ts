import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { pipeline } from "node:stream/promises";
import type { Logger } from "pino";
import type { Sandbox } from "../sandbox/sandbox.ts";
import { bundlePath, mirrorPath } from "../workspace/workspace.ts";
import { HARDENED_CONFIG, type HostGitResult, hostGit, reason, text } from "./host-git.ts";
import { type RemotePolicy, remoteAccess } from "./remote-access.ts";
import type { DeliveryTarget } from "./repository-checkout.ts";

/**
 * A run's workspace as a hidden ref on its repository's remote (docs/runtime.md#checkpoints):
 * `refs/dispatch/checkpoints/<run>`, never a branch, so no pull request ever shows it. Its commit's tree
 * is the working tree (tracked and untracked files; what .gitignore ignores is not in it), its first
 * parent the workspace's HEAD (so local commits travel with it), its second the checkpoint before it (so
 * a recorded checkpoint stays reachable whoever moved the ref since). The commit is made inside the
 * sandbox with a temporary index, as delivery commits (the agent's git config and hooks run nothing in
 * Dispatch's process; its index and branch are untouched), streamed out as a bundle into the private
 * mirror and pushed from there with Dispatch's token, which the sandbox never sees.
 */

const LOCAL_TIMEOUT_MS = 5 * 60 * 1000;
const REMOTE_TIMEOUT_MS = 10 * 60 * 1000;
/** The largest bundle taken out of a workspace for a checkpoint. */
const MAX_BUNDLE_BYTES = 2 * 1024 * 1024 * 1024;
/** In the workspace and the mirror: the latest checkpoint commit (keeps it from git gc, and bundles it). */
const LOCAL_REF = "refs/dispatch/checkpoint";
const AUTHOR = ["GIT_AUTHOR_NAME=Dispatch", "GIT_AUTHOR_EMAIL=dispatch@localhost"];

export function checkpointRef(runId: string): string {
  return `refs/dispatch/checkpoints/${runId}`;
}

interface RemoteContext {
  runId: string;
  target: DeliveryTarget;
  workspace: string;
  token: string | undefined;
  remotes: RemotePolicy;
  signal: AbortSignal;
  /** Dispatch's log: why the remote could not be reached. */
  log: Pick<Logger, "warn">;
}

export interface SaveRefContext extends RemoteContext {
  sandbox: Sandbox;
  /** The checkpoint commit this worker last pushed or restored: the ref is moved only from there. */
  expected: string | undefined;
  /** Whether this worker still holds the run: asked before it overwrites a ref that moved meanwhile. */
  holdsRun(): Promise<boolean>;
  /** What is left of the run's disk quota: the most the bundle, written next to the workspace, may take. */
  quotaLeftBytes?: number;
}

export type RefSave =
  /** `unchanged`: the working tree and HEAD are the expected checkpoint's, which stays. */
  | { ok: true; sha: string; bundleBytes: number; unchanged: boolean }
  /** `notRepository`: the workspace is no git repository (any more); its files need another way. */
  | { ok: false; reason: string; notRepository?: boolean };

export async function saveCheckpointRef(ctx: SaveRefContext): Promise<RefSave> {
  const made = await commitInSandbox(ctx);
  if (!made.ok) return made;
  if (made.unchanged) return { ok: true, sha: made.sha, bundleBytes: 0, unchanged: true };
  const mirror = mirrorPath(ctx.workspace);
  const present = async (sha: string) =>
    (await hostGit(["cat-file", "-e", `${sha}^{commit}`], { gitDir: mirror })).ok;
  // Only what the mirror has may be left out of the bundle: its fetch needs every prerequisite.
  const known = made.exclude.filter((sha, i, all) => all.indexOf(sha) === i);
  const exclude: string[] = [];
  for (const sha of known) if (await present(sha)) exclude.push(sha);
  const bundled = await bundleIntoMirror(ctx, mirror, exclude);
  if (!bundled.ok) return bundled;
  const fetched = text(await hostGit(["rev-parse", "--verify", "--quiet", LOCAL_REF], { gitDir: mirror }));
  if (fetched !== made.sha) return { ok: false, reason: "the bundle did not hold the checkpoint's commit" };
  const pushed = await pushRef(ctx, mirror, made.sha);
  if (!pushed.ok) return pushed;
  return { ok: true, sha: made.sha, bundleBytes: bundled.bytes, unchanged: false };
}

type Made =
  | { ok: true; sha: string; unchanged: boolean; exclude: string[] }
  | { ok: false; reason: string; notRepository?: boolean };

async function commitInSandbox(ctx: SaveRefContext): Promise<Made> {
  const mirror = mirrorPath(ctx.workspace);
  const delivered = text(
    await hostGit(["rev-parse", "--verify", "--quiet", "refs/dispatch/delivered"], { gitDir: mirror }),
  ).replace(/[^0-9a-f]/g, "");
  const git = ["git", ...HARDENED_CONFIG, "-c", "safe.directory=*"].map(shellQuote).join(" ");
  const prev = ctx.expected && /^[0-9a-f]{40,64}$/.test(ctx.expected) ? ctx.expected : "";
  const script = [
    "set -e",
    `g() { ${git} "$@"; }`,
    `if ! g rev-parse --git-dir >/dev/null 2>&1; then echo "dispatch: the workspace is no git repository" >&2; exit 3; fi`,
    `head=$(g rev-parse --verify --quiet 'HEAD^{commit}') || { echo "dispatch: HEAD names no commit" >&2; exit 3; }`,
    `prev=${prev}`,
    `if [ -n "$prev" ] && ! g cat-file -e "$prev^{commit}" 2>/dev/null; then prev=; fi`,
    // A copy of the agent's index: its stat data spares hashing the files that did not change.
    `idx=$(mktemp)`,
    `trap 'rm -f "$idx" "$idx.lock"' EXIT`,
    `index=$(g rev-parse --git-path index)`,
    `if [ -f "$index" ]; then cp "$index" "$idx"; else rm -f "$idx"; fi`,
    `export GIT_INDEX_FILE="$idx"`,
    `[ -f "$idx" ] || g read-tree "$head"`,
    "g add --all",
    "tree=$(g write-tree)",
    `if [ -n "$prev" ] && [ "$(g rev-parse "$prev^{tree}")" = "$tree" ] && [ "$(g rev-parse "$prev^1")" = "$head" ]; then`,
    `  echo "dispatch-checkpoint $prev unchanged"; exit 0`,
    "fi",
    `set -- -p "$head"; [ -z "$prev" ] || set -- "$@" -p "$prev"`,
    `commit=$(${AUTHOR.join(" ")} GIT_COMMITTER_NAME=Dispatch GIT_COMMITTER_EMAIL=dispatch@localhost g commit-tree "$tree" "$@" -m ${shellQuote(`Checkpoint of run ${ctx.runId}`)})`,
    `g update-ref ${LOCAL_REF} "$commit"`,
    `echo "dispatch-checkpoint $commit"`,
    `for sha in $prev ${delivered}; do if g cat-file -e "$sha^{commit}" 2>/dev/null; then echo "dispatch-exclude $sha"; fi; done`,
  ].join("\n");
  const result = await ctx.sandbox.exec(script, {
    timeoutMs: LOCAL_TIMEOUT_MS,
    signal: ctx.signal,
    outputLimit: 16 * 1024,
  });
  const found = /dispatch-checkpoint ([0-9a-f]{40,64})( unchanged)?/.exec(result.output);
  if (result.exitCode !== 0 || !found) {
    const why = result.output.trim().split("\n").slice(-3).join("; ") || `exit ${result.exitCode}`;
    return {
      ok: false,
      reason: `committing the working tree failed: ${why}`,
      ...(result.exitCode === 3 ? { notRepository: true } : {}),
    };
  }
  const exclude = [...result.output.matchAll(/dispatch-exclude ([0-9a-f]{40,64})/g)].map((m) => m[1]!);
  return { ok: true, sha: found[1]!, unchanged: !!found[2], exclude };
}

/** Streams a bundle of the checkpoint commit out of the sandbox and fetches it into the mirror. */
async function bundleIntoMirror(
  ctx: SaveRefContext,
  mirror: string,
  exclude: string[],
): Promise<{ ok: true; bytes: number } | { ok: false; reason: string }> {
  const bundle = bundlePath(ctx.workspace, "checkpoint");
  const argv = ["git", ...HARDENED_CONFIG, "-c", "safe.directory=*", "bundle", "create", "--quiet", "-"];
  const proc = ctx.sandbox.start([...argv, LOCAL_REF, ...exclude.map((sha) => `^${sha}`)], {
    signal: ctx.signal,
  });
  const limit = Math.min(MAX_BUNDLE_BYTES, ctx.quotaLeftBytes ?? Number.POSITIVE_INFINITY);
  let size = 0;
  let stderr = "";
  proc.child.stderr.setEncoding("utf8");
  proc.child.stderr.on("data", (c: string) => {
    stderr = (stderr + c).slice(-2000);
  });
  proc.child.stdout.on("data", (c: Buffer) => {
    size += c.length;
    if (size > limit) void proc.stop();
  });
  try {
    await pipeline(proc.child.stdout, createWriteStream(bundle, { mode: 0o600 }));
    const exit = await proc.exited;
    if (size > limit) {
      return {
        ok: false,
        reason: `the workspace's changes take more than the ${Math.floor(limit / 2 ** 20)} MB left of its disk quota`,
      };
    }
    if (exit.code !== 0) {
      const why = stderr.trim().split("\n").slice(-2).join("; ") || `exit ${exit.code ?? exit.signal}`;
      return { ok: false, reason: `bundling the checkpoint failed: ${why}` };
    }
    const fetch = await hostGit(["fetch", "--quiet", "--no-tags", bundle, `+${LOCAL_REF}:${LOCAL_REF}`], {
      gitDir: mirror,
      timeoutMs: LOCAL_TIMEOUT_MS,
    });
    if (!fetch.ok) return { ok: false, reason: `reading the checkpoint's bundle failed: ${reason(fetch)}` };
    return { ok: true, bytes: size };
  } finally {
    await rm(bundle, { force: true });
  }
}

/**
 * Pushes `sha` to the hidden ref, moving it only from the commit this worker expects there. When it moved
 * meanwhile (another worker's checkpoint, or one whose record was lost), the worker overwrites it only if
 * it still holds the run: a stale worker never replaces the checkpoint of a run that moved on.
 */
async function pushRef(
  ctx: SaveRefContext,
  mirror: string,
  sha: string,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const access = await remoteAccess(ctx.target, ctx.remotes);
  if (!access.ok) {
    ctx.log.warn({ repository: ctx.target.repository, detail: access.detail }, "a checkpoint was not pushed");
    return { ok: false, reason: UNREACHABLE };
  }
  const ref = checkpointRef(ctx.runId);
  const remote = remoteOptions(ctx, access.gitConfig);
  const push = (lease: string) =>
    hostGit(
      [
        "push",
        "--quiet",
        "--porcelain",
        "--no-verify",
        `--force-with-lease=${ref}:${lease}`,
        "--",
        ctx.target.remote,
        `${sha}:${ref}`,
      ],
      { ...remote, gitDir: mirror, timeoutMs: REMOTE_TIMEOUT_MS },
    );
  let pushed = await push(ctx.expected ?? "");
  if (!pushed.ok && /stale info|fetch first|non-fast-forward/.test(porcelain(pushed))) {
    if (!(await ctx.holdsRun())) return { ok: false, reason: "the run is no longer this worker's" };
    const listed = await hostGit(["ls-remote", "--", ctx.target.remote, ref], {
      ...remote,
      timeoutMs: REMOTE_TIMEOUT_MS,
    });
    if (!listed.ok) return failed(ctx, listed);
    pushed = await push(text(listed).split(/\s/)[0] ?? "");
  }
  return pushed.ok ? { ok: true } : failed(ctx, pushed);
}

export interface RestoreRefContext extends RemoteContext {
  /** The recorded checkpoint commit. */
  sha: string;
}

/**
 * Puts the checkpoint `sha` into a workspace the checkout just made (Dispatch's own clone, which no agent
 * touched yet): HEAD is its first parent on the work branch, the working tree its tree (files it lacks
 * deleted), so uncommitted changes are uncommitted again and local commits are there.
 */
export async function restoreCheckpointRef(
  ctx: RestoreRefContext,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const access = await remoteAccess(ctx.target, ctx.remotes);
  if (!access.ok) {
    ctx.log.warn(
      { repository: ctx.target.repository, detail: access.detail },
      "a checkpoint was not fetched",
    );
    return { ok: false, reason: UNREACHABLE };
  }
  const mirror = mirrorPath(ctx.workspace);
  const fetched = await hostGit(
    ["fetch", "--quiet", "--no-tags", "--", ctx.target.remote, `+${checkpointRef(ctx.runId)}:${LOCAL_REF}`],
    { ...remoteOptions(ctx, access.gitConfig), gitDir: mirror, timeoutMs: REMOTE_TIMEOUT_MS },
  );
  if (fetched.aborted) return { ok: false, reason: "stopped" };
  if (!fetched.ok) return failed(ctx, fetched);
  if (!(await hostGit(["cat-file", "-e", `${ctx.sha}^{commit}`], { gitDir: mirror })).ok) {
    return {
      ok: false,
      reason: `its commit ${ctx.sha.slice(0, 12)} is not on ${checkpointRef(ctx.runId)} of the remote`,
    };
  }
  const steps: string[][] = [
    ["fetch", "--quiet", "--no-tags", mirror, LOCAL_REF],
    ["update-ref", LOCAL_REF, ctx.sha],
    ["reset", "--hard", "--quiet", ctx.sha],
    ["reset", "--quiet", `${ctx.sha}^1`],
  ];
  for (const step of steps) {
    const result = await hostGit(["-C", ctx.workspace, ...step], {
      signal: ctx.signal,
      timeoutMs: LOCAL_TIMEOUT_MS,
    });
    if (result.aborted) return { ok: false, reason: "stopped" };
    if (!result.ok) return { ok: false, reason: `git ${step[0]} failed: ${reason(result)}` };
  }
  return { ok: true };
}

/** Removes the hidden ref from the remote (the run's checkpoint is given up). */
export async function deleteCheckpointRef(
  ctx: RemoteContext,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const access = await remoteAccess(ctx.target, ctx.remotes);
  if (!access.ok) return { ok: false, reason: UNREACHABLE };
  const removed = await hostGit(
    [
      "push",
      "--quiet",
      "--porcelain",
      "--no-verify",
      "--",
      ctx.target.remote,
      `:${checkpointRef(ctx.runId)}`,
    ],
    {
      ...remoteOptions(ctx, access.gitConfig),
      gitDir: mirrorPath(ctx.workspace),
      timeoutMs: REMOTE_TIMEOUT_MS,
    },
  );
  return removed.ok ? { ok: true } : failed(ctx, removed);
}

function remoteOptions(ctx: RemoteContext, gitConfig: string[]) {
  return {
    remote: ctx.target.remote,
    remoteConfig: gitConfig,
    ...(ctx.token ? { token: ctx.token } : {}),
  };
}

/** Said to the run (and its operator's log has why): never the network's details. */
const UNREACHABLE = "the remote could not be reached (Dispatch's log has the details)";

function failed(ctx: RemoteContext, result: HostGitResult): { ok: false; reason: string } {
  ctx.log.warn(
    { repository: ctx.target.repository, detail: reason(result) },
    "a checkpoint's git command failed",
  );
  const refused = /^!\t[^\t]*\t\[(?:remote )?rejected\]\s*\(?([^)\n]*)\)?/m.exec(porcelain(result))?.[1];
  return { ok: false, reason: refused ? `the remote refused it: ${refused}` : UNREACHABLE };
}

function porcelain(result: HostGitResult): string {
  return `${result.stdout.toString("utf8")}\n${result.stderr}`;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
