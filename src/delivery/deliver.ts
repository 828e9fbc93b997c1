import { createWriteStream } from "node:fs";
import { realpath, rm } from "node:fs/promises";
import { pipeline } from "node:stream/promises";
import pRetry, { AbortError } from "p-retry";
import type { Logger } from "pino";
import { v7 as uuidv7 } from "uuid";
import { triggerOf } from "../model/repository.ts";
import type { Artifact, RunRecord } from "../model/run.ts";
import type { Sandbox } from "../sandbox/sandbox.ts";
import type { NewArtifactFile } from "../store/store.ts";
import { inSpan } from "../telemetry/spans.ts";
import { bundlePath, mirrorPath } from "../workspace/workspace.ts";
import { notOwnBranch, pushedEvent } from "./branch-ownership.ts";
import { diffStat } from "./diff-stat.ts";
import { HARDENED_CONFIG, type HostGitResult, hostGit, reason, text } from "./host-git.ts";
import type { PullRequestHost, PullRequestRef } from "./pull-request-host.ts";
import { type RemotePolicy, remoteAccess } from "./remote-access.ts";
import type { DeliveryTarget } from "./repository-checkout.ts";

const LOCAL_TIMEOUT_MS = 5 * 60 * 1000;
const PUSH_TIMEOUT_MS = 10 * 60 * 1000;
/** The largest patch kept as a FILE artifact; a bigger diff is delivered but its patch is not stored. */
const MAX_PATCH_BYTES = 32 * 1024 * 1024;
/** The largest bundle of new commits taken out of a workspace. */
const MAX_BUNDLE_BYTES = 2 * 1024 * 1024 * 1024;
const PR_BODY_SUMMARY_CHARS = 3000;

export interface DeliverContext {
  run: RunRecord;
  target: DeliveryTarget & { base: string; branch: string };
  workspace: string;
  sandbox: Sandbox;
  /** Whether to push and open the pull request (a succeeded execution), or only keep the patch. */
  publish: boolean;
  token: string | undefined;
  /** Which remotes Dispatch may reach for a run, and how (remote-access.ts). */
  remotes: RemotePolicy;
  /** Dispatch's log: why a push could not reach the remote (the run's creator is told only that it could not). */
  log: Pick<Logger, "warn">;
  pullRequests: PullRequestHost | undefined;
  gitAuthor: { name: string; email: string };
  prDraft: boolean;
  sessionLink: string;
  /** The agent's last message, for the PR body. */
  summary: string;
  /** The follow-up that led to this execution, for the PR comment of a later push. */
  followup: string | undefined;
  /**
   * What is left of the run's disk quota: the most the bundle of new commits, written next to the
   * workspace, may take (with MAX_BUNDLE_BYTES above it). No quota when absent.
   */
  quotaLeftBytes?: number;
  /** Aborted on cancel: what has not started by then does not start (a started push completes). */
  signal: AbortSignal;
  recordArtifact(artifact: Artifact, file?: NewArtifactFile): Promise<void>;
  emit(type: "log", data: Record<string, unknown>): Promise<void>;
}

export type DeliveryOutcome =
  /** Nothing new in this execution; `earlier` when an earlier execution already pushed work. */
  | { kind: "no_changes"; earlier: boolean }
  | { kind: "kept"; message: string }
  | { kind: "delivered"; message: string; pullRequest?: PullRequestRef }
  | { kind: "failed"; message: string };

/**
 * Takes the execution's work out of the workspace and delivers it (docs/delivery.md). What reads the
 * workspace runs inside the sandbox (the commit of uncommitted changes, and a bundle of the new commits
 * streamed out), so the agent's git config and hooks can run nothing in Dispatch's process. Dispatch then
 * fetches the bundle into its private mirror, keeps the cumulative diff as a patch artifact, pushes the
 * new commits (never forced) with a token the sandbox never sees, and opens or updates the pull request.
 */
export function deliverChanges(ctx: DeliverContext): Promise<DeliveryOutcome> {
  const attributes = {
    "dispatch.run.repository": ctx.target.repository,
    "dispatch.delivery.mode": ctx.target.mode,
  };
  return inSpan(
    "deliver changes",
    attributes,
    () => deliver(ctx),
    (outcome, span) => span.setAttribute("dispatch.delivery.outcome", outcome.kind),
  );
}

async function deliver(ctx: DeliverContext): Promise<DeliveryOutcome> {
  const mirror = mirrorPath(ctx.workspace);
  const delivered = text(await hostGit(["rev-parse", "refs/dispatch/delivered"], { gitDir: mirror }));
  const base = text(await hostGit(["rev-parse", "refs/dispatch/base"], { gitDir: mirror }));
  const local = new AbortController();
  const timer = setTimeout(() => local.abort(), LOCAL_TIMEOUT_MS);
  try {
    const head = await commitInSandbox(ctx, local.signal);
    if (typeof head !== "string") return head;
    if (head === delivered) {
      return { kind: "no_changes", earlier: await pushedBefore(mirror) };
    }
    const fetched = await fetchFromWorkspace(ctx, mirror, delivered, local.signal);
    if (fetched) return fetched;
  } finally {
    clearTimeout(timer);
  }
  const incoming = text(await hostGit(["rev-parse", "refs/dispatch/incoming"], { gitDir: mirror }));
  const ancestor = await hostGit(["merge-base", "--is-ancestor", delivered, incoming], { gitDir: mirror });
  if (!ancestor.ok) {
    return {
      kind: "failed",
      message: `The workspace's history no longer contains what was already pushed to ${ctx.target.branch} (the agent rewrote it); Dispatch never force-pushes. The patch is kept as an artifact.`,
    };
  }
  const stat = await recordPatch(ctx, mirror, base, incoming);
  if (!ctx.publish) return { kind: "kept", message: stat };
  if (ctx.target.mode === "none") return { kind: "kept", message: stat };
  if (ctx.signal.aborted) return { kind: "kept", message: stat };

  const allowed = await mayPushTo(ctx);
  if (allowed !== true) return { kind: "failed", message: allowed };
  const first = !(await pushedBefore(mirror));
  const refused = await inSpan("git push", { "dispatch.delivery.branch": ctx.target.branch }, () =>
    push(ctx, mirror, incoming),
  );
  if (refused) return refused;
  await hostGit(["update-ref", "refs/dispatch/delivered", incoming], { gitDir: mirror });
  await hostGit(["update-ref", "refs/dispatch/pushed", incoming], { gitDir: mirror });
  await ctx.emit("log", pushedEvent(ctx.target.branch, incoming, stat));
  if (ctx.target.mode === "branch") {
    return { kind: "delivered", message: `Pushed branch ${ctx.target.branch} (${stat})` };
  }
  // A cancel that came during the push: the push is recorded, no pull request is opened after it.
  if (ctx.signal.aborted) return { kind: "kept", message: stat };
  return inSpan("github pull request", { "dispatch.run.repository": ctx.target.repository }, () =>
    pullRequest(ctx, incoming, first, stat),
  );
}

/** Commits what is uncommitted (inside the sandbox) and answers HEAD, or the failure. */
async function commitInSandbox(ctx: DeliverContext, signal: AbortSignal): Promise<string | DeliveryOutcome> {
  const git = [
    "git",
    ...HARDENED_CONFIG,
    "-c",
    "safe.directory=*",
    "-c",
    `user.name=${ctx.gitAuthor.name}`,
    "-c",
    `user.email=${ctx.gitAuthor.email}`,
  ]
    .map(shellQuote)
    .join(" ");
  const message = [ctx.run.title, `Run ${ctx.sessionLink}`, coAuthor(ctx.run)].filter(
    (m): m is string => !!m,
  );
  const script = [
    "set -e",
    `if ! ${git} rev-parse --git-dir >/dev/null 2>&1; then echo "dispatch: the workspace is no longer a git repository" >&2; exit 3; fi`,
    `if [ -n "$(${git} status --porcelain --untracked-files=all)" ]; then`,
    `  ${git} add --all`,
    `  ${git} commit --quiet --no-verify ${message.map((m) => `-m ${shellQuote(m)}`).join(" ")}`,
    "fi",
    `echo "dispatch-head $(${git} rev-parse HEAD)"`,
  ].join("\n");
  const result = await ctx.sandbox.exec(script, {
    timeoutMs: LOCAL_TIMEOUT_MS,
    signal,
    outputLimit: 16 * 1024,
  });
  const head = /dispatch-head ([0-9a-f]{40,64})/.exec(result.output)?.[1];
  if (result.exitCode !== 0 || !head) {
    const why = result.output.trim().split("\n").slice(-3).join("; ");
    return {
      kind: "failed",
      message: `Committing the changes in the workspace failed: ${why || "no output"}`,
    };
  }
  return head;
}

/** Streams a bundle of HEAD's new commits out of the sandbox and fetches it into the mirror. */
async function fetchFromWorkspace(
  ctx: DeliverContext,
  mirror: string,
  delivered: string,
  signal: AbortSignal,
): Promise<DeliveryOutcome | undefined> {
  const bundle = bundlePath(ctx.workspace, "incoming");
  const checkpoint = await mirrorCheckpoint(mirror);
  const proc = ctx.sandbox.start(
    [
      "git",
      ...HARDENED_CONFIG,
      "-c",
      "safe.directory=*",
      "bundle",
      "create",
      "--quiet",
      "-",
      "HEAD",
      `^${delivered}`,
      ...(checkpoint ? [`^${checkpoint.sha}`] : []),
    ],
    {
      signal,
      ...(checkpoint
        ? {
            env: { GIT_ALTERNATE_OBJECT_DIRECTORIES: gitQuote(checkpoint.objects) },
            mounts: [{ path: checkpoint.objects, writable: false }],
          }
        : {}),
    },
  );
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
      const mb = Math.floor(limit / 2 ** 20);
      return {
        kind: "failed",
        message:
          limit < MAX_BUNDLE_BYTES
            ? `The new commits take more than the ${mb} MB left of the run's disk quota, so they were not taken out of the workspace; remove large files from them, or raise DISPATCH_RUN_DISK_QUOTA_MB on the server`
            : `The new commits take more than ${mb} MB, the most Dispatch takes out of a workspace; remove large files from them`,
      };
    }
    if (exit.code !== 0) {
      return {
        kind: "failed",
        message: `Taking the new commits out of the workspace failed: ${stderr.trim().split("\n").slice(-2).join("; ") || `exit ${exit.code ?? exit.signal}`}`,
      };
    }
    const fetch = await hostGit(["fetch", "--quiet", "--no-tags", bundle, "+HEAD:refs/dispatch/incoming"], {
      gitDir: mirror,
      timeoutMs: LOCAL_TIMEOUT_MS,
    });
    if (!fetch.ok) return { kind: "failed", message: `Reading the new commits failed: ${reason(fetch)}` };
    return undefined;
  } finally {
    await rm(bundle, { force: true });
  }
}

/**
 * The run's latest checkpoint commit where the mirror holds it (checkpoint-ref.ts), and the mirror's
 * objects: the bundle of new commits leaves out what the checkpoint already brought into the mirror,
 * reading it from the mirror's objects (shown read-only to that one command), so the commits are not
 * taken out a second time beside the mirror's copy, which the quota counts (docs/runtime.md#workspace).
 */
async function mirrorCheckpoint(mirror: string): Promise<{ sha: string; objects: string } | undefined> {
  const sha = text(
    await hostGit(["rev-parse", "--verify", "--quiet", "refs/dispatch/checkpoint^{commit}"], {
      gitDir: mirror,
    }),
  );
  if (!/^[0-9a-f]{40,64}$/.test(sha)) return undefined;
  const objects = await realpath(`${mirror}/objects`).catch(() => undefined);
  return objects ? { sha, objects } : undefined;
}

/** A path as GIT_ALTERNATE_OBJECT_DIRECTORIES takes it: quoted, as a colon would separate two. */
function gitQuote(path: string): string {
  return `"${path.replace(/["\\]/g, "\\$&")}"`;
}

/** Whether an earlier execution already pushed work (then "no new changes" is still a delivered run). */
async function pushedBefore(mirror: string): Promise<boolean> {
  return (await hostGit(["rev-parse", "--verify", "--quiet", "refs/dispatch/pushed"], { gitDir: mirror })).ok;
}

/** The cumulative diff against the base as a FILE artifact; answers its diff stat. */
async function recordPatch(
  ctx: DeliverContext,
  mirror: string,
  base: string,
  incoming: string,
): Promise<string> {
  const range = [`${base}`, incoming];
  const short = await hostGit(["diff", "--shortstat", "--no-ext-diff", "--no-textconv", ...range], {
    gitDir: mirror,
  });
  const stat = diffStat(text(short));
  const patch = await hostGit(
    ["diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--full-index", ...range],
    { gitDir: mirror, maxStdoutBytes: MAX_PATCH_BYTES, timeoutMs: LOCAL_TIMEOUT_MS },
  );
  if (!patch.ok) {
    await ctx.emit("log", {
      level: "warn",
      phase: "delivery",
      message: patch.stdoutOverflow
        ? `The patch is larger than ${MAX_PATCH_BYTES / 2 ** 20} MiB and is not kept as an artifact`
        : `The patch could not be made: ${reason(patch)}`,
    });
    return stat;
  }
  const uid = uuidv7();
  await ctx.recordArtifact(
    {
      artifact_type: "FILE",
      created_at: new Date().toISOString(),
      data: {
        artifact_uid: uid,
        filepath: "changes.patch",
        filename: "changes.patch",
        mime_type: "text/x-diff",
        size_bytes: patch.stdout.length,
        description: stat,
      },
    },
    { uid, contentType: "text/x-diff", content: patch.stdout },
  );
  return stat;
}

/**
 * Dispatch pushes only to the run's own branch, as its checkout established (branch-ownership.ts); the
 * branch of a pull request the run was started on only while that pull request is still open.
 */
async function mayPushTo(ctx: DeliverContext): Promise<true | string> {
  const { branch, repository, claim } = ctx.target;
  if (!claim) return `${notOwnBranch(repository, branch)} The patch is kept as an artifact.`;
  if (claim.kind !== "pull_request") return true;
  const pr = await ctx.pullRequests?.findOpen(repository, branch, ctx.signal).catch(() => undefined);
  if (pr?.number === claim.number) return true;
  return `Pull request #${claim.number}, whose branch ${branch} this run works on, is no longer open; Dispatch pushes to a pull request's branch only while it is. The patch is kept as an artifact.`;
}

async function push(
  ctx: DeliverContext,
  mirror: string,
  incoming: string,
): Promise<DeliveryOutcome | undefined> {
  const { branch, remote } = ctx.target;
  const access = await remoteAccess(ctx.target, ctx.remotes);
  if (!access.ok) {
    ctx.log.warn({ repository: ctx.target.repository, detail: access.detail }, "a run's push was not made");
    return {
      kind: "failed",
      message: `Push to ${branch} refused: ${UNREACHABLE}. The patch is kept as an artifact.`,
    };
  }
  let last: HostGitResult | undefined;
  try {
    await pRetry(
      async () => {
        // Not aborted by a cancel once started: the push completes, or never started.
        last = await hostGit(
          ["push", "--quiet", "--porcelain", "--no-verify", "--", remote, `${incoming}:refs/heads/${branch}`],
          {
            gitDir: mirror,
            remote,
            remoteConfig: access.gitConfig,
            ...(ctx.token ? { token: ctx.token } : {}),
            timeoutMs: PUSH_TIMEOUT_MS,
          },
        );
        if (last.ok) return;
        const refused =
          /\[rejected\]|\[remote rejected\]|! \S+|non-fast-forward|protected|denied|403|permission/i;
        if (refused.test(last.stderr) || refused.test(last.stdout.toString()))
          throw new AbortError(reason(last));
        throw new Error(reason(last));
      },
      { retries: 2, minTimeout: 500, maxTimeout: 4000 },
    );
    return undefined;
  } catch {
    const why = pushReason(last);
    if (!why && last) {
      ctx.log.warn({ repository: ctx.target.repository, detail: reason(last) }, "a run's push failed");
    }
    return {
      kind: "failed",
      message: `Push to ${branch} refused: ${why ?? UNREACHABLE}. The patch is kept as an artifact.`,
    };
  }
}

/** A push that got no answer from the remote, in words that say nothing of the network (hosts, ports). */
const UNREACHABLE = "the remote could not be reached (Dispatch's log has the details)";

/**
 * Why the remote refused the push, from git's porcelain lines ("! src:dst [remote rejected] (reason)")
 * and the remote's own `remote:` lines; undefined when the remote did not answer (git's own words about
 * the connection go to the log only).
 */
function pushReason(result: HostGitResult | undefined): string | undefined {
  if (!result) return undefined;
  const porcelain = result.stdout.toString("utf8");
  const line = /^!\t[^\t]*\t\[(?:remote )?rejected\]\s*\(?([^)\n]*)\)?/m.exec(porcelain);
  const remoteLines = result.stderr
    .split("\n")
    .filter((l) => /^remote:/.test(l))
    .map((l) => l.replace(/^remote:\s*/, "").trim())
    .filter((l) => l !== "" && !/^(error:\s*)?$/.test(l));
  const detail = remoteLines.at(-1)?.replace(/^error:\s*/i, "");
  if (line?.[1]) return detail && !line[1].includes(detail) ? `${line[1]} (${detail})` : line[1];
  return detail;
}

async function pullRequest(
  ctx: DeliverContext,
  sha: string,
  first: boolean,
  stat: string,
): Promise<DeliveryOutcome> {
  const host = ctx.pullRequests;
  const { repository, branch, base } = ctx.target;
  if (!host)
    return {
      kind: "failed",
      message: "Pull requests need the GitHub integration (GITHUB_TOKEN or GITHUB_APP_ID)",
    };
  try {
    let pr = await host.findOpen(repository, branch, ctx.signal);
    let opened = false;
    if (!pr) {
      if (ctx.signal.aborted) return { kind: "kept", message: stat };
      pr = await host.open(
        repository,
        { title: ctx.run.title, body: prBody(ctx), head: branch, base, draft: ctx.prDraft },
        ctx.signal,
      );
      opened = true;
    } else if (!first || !branch.startsWith("dispatch/")) {
      const what = firstLine(ctx.followup ?? "") || ctx.run.title;
      await host.comment(
        repository,
        pr.number,
        `Follow-up pushed: ${sha.slice(0, 12)} \u2014 ${what}\n\n${ctx.sessionLink}`,
        ctx.signal,
      );
    }
    await ctx.recordArtifact({
      artifact_type: "PULL_REQUEST",
      created_at: new Date().toISOString(),
      data: {
        url: pr.url,
        branch,
        number: pr.number,
        repository,
        base: pr.base,
        head_sha: sha,
        ...(opened ? {} : { updated_at: new Date().toISOString() }),
      },
    });
    await host.adopt(ctx.run, repository, pr).catch((err) => {
      // The pull request is there and linked from the run; only steering from it is missing.
      ctx.log.warn({ err, repository, number: pr.number }, "a run's pull request could not be bound to it");
    });
    return {
      kind: "delivered",
      message: `PR #${pr.number} ${opened ? "opened" : "updated"}: ${pr.url} (${stat})`,
      pullRequest: pr,
    };
  } catch (err) {
    const why = (err as { response?: { data?: { message?: string; errors?: Array<{ message?: string }> } } })
      .response?.data;
    const detail =
      why?.errors
        ?.map((e) => e.message)
        .filter(Boolean)
        .join("; ") ||
      why?.message ||
      (err instanceof Error ? err.message : String(err));
    return {
      kind: "failed",
      message: `Opening the pull request for ${branch} failed: ${detail}. The branch is pushed and the patch is kept as an artifact.`,
    };
  }
}

function prBody(ctx: DeliverContext): string {
  const summary =
    ctx.summary.length > PR_BODY_SUMMARY_CHARS
      ? `${ctx.summary.slice(0, PR_BODY_SUMMARY_CHARS)}…`
      : ctx.summary;
  const parts = [
    summary.trim() || "_(The agent left no summary.)_",
    "---",
    `Session: ${ctx.sessionLink}`,
    `Requested by ${ctx.run.creator.display_name}`,
  ];
  const trigger = triggerOf(ctx.run.triggerUrl, ctx.target.repository);
  if (trigger?.kind === "issues") parts.push(`Closes #${trigger.number}`);
  // A run started on a pull request it cannot push to (a fork's) delivers its own PR, pointing back.
  if (trigger?.kind === "pull") parts.push(`Follows up #${trigger.number}`);
  // A tracker issue the run works on (`metadata.fixes`, such as Linear's ENG-123), named the way the
  // tracker's GitHub integration links and closes it (docs/delivery.md).
  const fixes = ctx.run.metadata.fixes;
  if (fixes && TRACKER_ISSUE.test(fixes)) parts.push(`Fixes ${fixes}`);
  return parts.join("\n\n");
}

/** A tracker's issue key: team or project key, dash, number (ENG-123). Anything else is not written. */
const TRACKER_ISSUE = /^[A-Za-z][A-Za-z0-9_]{0,19}-\d{1,9}$/;

function coAuthor(run: RunRecord): string | undefined {
  const m = /^github:([A-Za-z0-9-]{1,39})$/.exec(run.creator.uid);
  return m ? `Co-authored-by: ${m[1]} <${m[1]}@users.noreply.github.com>` : undefined;
}

function firstLine(s: string): string {
  const line = s.trim().split("\n")[0] ?? "";
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The words a run's status message uses for a delivery outcome. */
export function outcomeWords(result: DeliveryOutcome): string {
  switch (result.kind) {
    case "no_changes":
      return result.earlier ? "No new changes since the last push" : "No changes";
    case "kept":
      return `Changes kept as a patch (${result.message})`;
    case "delivered":
    case "failed":
      return result.message;
  }
}
