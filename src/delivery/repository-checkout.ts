import { existsSync } from "node:fs";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { AgentConfig, RunEventType } from "../model/run.ts";
import { displayUrl } from "../workspace/git.ts";
import { mirrorPath } from "../workspace/workspace.ts";
import { type BranchClaim, notOwnBranch } from "./branch-ownership.ts";
import { hostGit, reason, text } from "./host-git.ts";
import { type RemotePolicy, remoteAccess } from "./remote-access.ts";

const REMOTE_TIMEOUT_MS = 10 * 60 * 1000;

/** Files tools write into HOME (the workspace) that are never part of the work. */
const HOME_LITTER = [
  "/.cache/",
  "/.npm/",
  "/.config/",
  "/.local/",
  "/.bash_history",
  "/.python_history",
  "/.node_repl_history",
  "/.wget-hsts",
  "/.lesshst",
];

/** The run's repository as delivery sees it: where it is fetched from and pushed to. */
export interface DeliveryTarget {
  /** `owner/repo` or a git URL. */
  repository: string;
  /** The git remote: `${GITHUB_SERVER_URL}/owner/repo.git` or the URL. */
  remote: string;
  base?: string;
  branch?: string;
  mode: NonNullable<AgentConfig["delivery"]>;
  /** Why the branch is the run's own, as the checkout found (absent before it, and without delivery). */
  claim?: BranchClaim;
}

export interface CheckoutContext {
  target: DeliveryTarget;
  /** Which remotes Dispatch may reach for a run, and how (remote-access.ts). */
  remotes: RemotePolicy;
  workspace: string;
  /** Whether the workspace is new (first execution, or a removed workspace): only then is it checked out. */
  fresh: boolean;
  token: string | undefined;
  gitAuthor: { name: string; email: string };
  signal: AbortSignal;
  emit(type: RunEventType, data: Record<string, unknown>): Promise<void>;
  /** Dispatch's log: why a remote could not be reached (the run's creator is told only that it could not). */
  log: Pick<Logger, "warn">;
  /** How the work branch, which exists on the remote, is the run's own; undefined when it is not. */
  claimExistingBranch(): Promise<BranchClaim | undefined>;
}

export type CheckoutResult =
  /** `claim`: why the run may push to its branch (none without delivery). */
  | { ok: true; base: string; claim?: BranchClaim }
  | { ok: false; aborted: true }
  | { ok: false; aborted?: false; message: string; errorCode: string };

/**
 * Fetches the run's repository into the private mirror (Dispatch's process, with the token) and, for a
 * fresh workspace, checks the work branch out there: from the remote branch when it exists (a pull
 * request's head, or the run's own branch from an earlier execution), else from the base. The agent gets a
 * clone with `origin` naming the repository (no credentials) and origin/<base> to compare against.
 */
export async function checkoutRepository(ctx: CheckoutContext): Promise<CheckoutResult> {
  const { target, signal } = ctx;
  const shown = displayUrl(target.remote);
  // What the run's creator hears when the remote cannot be reached or read: never why (refused, timed out,
  // not public), which would let whoever names a URL probe hosts and ports from Dispatch's network.
  const unreadable = (detail: string): CheckoutResult => {
    ctx.log.warn(
      { repository: target.repository, remote: shown, detail },
      "a run's repository could not be read",
    );
    return fail(
      `Repository ${target.repository} (${shown}) could not be read. Check that it exists and that Dispatch's GitHub App or GITHUB_TOKEN can read it; Dispatch's log has the details.`,
      "repository_unavailable",
    );
  };
  const access = await remoteAccess(target, ctx.remotes);
  if (!access.ok) return unreadable(access.detail);
  const remote = {
    remote: target.remote,
    remoteConfig: access.gitConfig,
    ...(ctx.token ? { token: ctx.token } : {}),
    signal,
  };
  const mirror = mirrorPath(ctx.workspace);
  if (!existsSync(mirror)) {
    await mkdir(mirror, { recursive: true });
    const init = await hostGit(["init", "--quiet", "--bare", mirror]);
    if (!init.ok) return fail(`Could not prepare a git mirror: ${reason(init)}`, "internal_error");
  }

  await ctx.emit("log", {
    level: "info",
    phase: "repository",
    message: `Fetching ${target.repository}${target.base ? `@${target.base}` : ""}`,
  });
  const heads = [target.base, target.branch].filter((b): b is string => !!b).map((b) => `refs/heads/${b}`);
  const listed = await hostGit(["ls-remote", "--symref", "--", target.remote, "HEAD", ...heads], {
    ...remote,
    timeoutMs: REMOTE_TIMEOUT_MS,
  });
  if (listed.aborted || signal.aborted) return { ok: false, aborted: true };
  if (!listed.ok) return unreadable(reason(listed));
  const refs = parseLsRemote(text(listed));
  const base = target.base ?? refs.defaultBranch;
  if (!base) {
    return fail(
      `Repository ${target.repository} has no default branch (is it empty?); give a base branch with owner/repo@branch`,
      "repository_unavailable",
    );
  }
  if (!refs.heads.has(base)) {
    return fail(
      `Repository ${target.repository} has no branch "${base}"; give an existing base branch`,
      "repository_unavailable",
    );
  }
  const branchExists = !!target.branch && refs.heads.has(target.branch);
  // Decided before anything of the branch is fetched: a branch that is not the run's is never worked on.
  let claim: BranchClaim | undefined;
  if (target.branch && target.mode !== "none") {
    claim = branchExists ? await ctx.claimExistingBranch() : { kind: "new" };
    if (signal.aborted) return { ok: false, aborted: true };
    if (!claim) return fail(notOwnBranch(target.repository, target.branch), "branch_not_owned");
  }
  const fetch = await hostGit(
    [
      "fetch",
      "--quiet",
      "--no-tags",
      "--",
      target.remote,
      `+refs/heads/${base}:refs/heads/${base}`,
      ...(branchExists ? [`+refs/heads/${target.branch}:refs/heads/${target.branch}`] : []),
    ],
    { ...remote, gitDir: mirror, timeoutMs: REMOTE_TIMEOUT_MS },
  );
  if (fetch.aborted || signal.aborted) return { ok: false, aborted: true };
  if (!fetch.ok) return unreadable(reason(fetch));
  await hostGit(["symbolic-ref", "HEAD", `refs/heads/${base}`], { gitDir: mirror });

  // Where delivery starts from: kept across executions (the last pushed commit once there is one).
  const delivered = await hostGit(["rev-parse", "--verify", "--quiet", "refs/dispatch/delivered"], {
    gitDir: mirror,
  });
  if (!delivered.ok) {
    const start = branchExists ? `refs/heads/${target.branch}` : `refs/heads/${base}`;
    for (const [ref, from] of [
      ["refs/dispatch/delivered", start],
      ["refs/dispatch/base", `refs/heads/${base}`],
    ] as const) {
      const set = await hostGit(["update-ref", ref, from], { gitDir: mirror });
      if (!set.ok) return fail(`Could not record ${ref}: ${reason(set)}`, "internal_error");
    }
  }
  if (ctx.fresh) {
    const made = await checkoutWorkspace(ctx, mirror, base, shown);
    if (!made.ok) return made;
  }
  return { ok: true, base, ...(claim ? { claim } : {}) };
}

async function checkoutWorkspace(
  ctx: CheckoutContext,
  mirror: string,
  base: string,
  shown: string,
): Promise<CheckoutResult> {
  const { target, workspace } = ctx;
  if ((await readdir(workspace)).length > 0) {
    return fail("The workspace is not empty; the repository cannot be checked out into it", "internal_error");
  }
  const start = text(await hostGit(["rev-parse", "refs/dispatch/delivered"], { gitDir: mirror }));
  const local = target.branch ?? base;
  const steps: string[][] = [
    ["clone", "--quiet", "--no-hardlinks", "--no-checkout", "--", mirror, workspace],
    ["-C", workspace, "checkout", "--quiet", "-B", local, start],
    ["-C", workspace, "remote", "set-url", "origin", shown],
    ["-C", workspace, "config", "user.name", ctx.gitAuthor.name],
    ["-C", workspace, "config", "user.email", ctx.gitAuthor.email],
  ];
  for (const step of steps) {
    const result = await hostGit(step, { signal: ctx.signal, timeoutMs: REMOTE_TIMEOUT_MS });
    if (result.aborted) return { ok: false, aborted: true };
    if (!result.ok)
      return fail(`Checking out ${target.repository} failed: ${reason(result)}`, "internal_error");
  }
  await writeFile(join(workspace, ".git", "info", "exclude"), `${HOME_LITTER.join("\n")}\n`);
  await ctx.emit("log", {
    level: "info",
    phase: "repository",
    message: `Checked out ${target.repository} on ${local}${local === base ? "" : ` (base ${base})`} at ${start.slice(0, 12)}`,
  });
  return { ok: true, base };
}

function parseLsRemote(output: string): { defaultBranch?: string; heads: Map<string, string> } {
  const heads = new Map<string, string>();
  let defaultBranch: string | undefined;
  let headSha: string | undefined;
  for (const line of output.split("\n")) {
    const symref = /^ref: refs\/heads\/(\S+)\s+HEAD$/.exec(line);
    if (symref) defaultBranch = symref[1];
    const head = /^([0-9a-f]{40,64})\s+(HEAD|refs\/heads\/(\S+))$/.exec(line);
    if (head?.[3]) heads.set(head[3], head[1]!);
    else if (head) headSha = head[1];
  }
  // The default branch is listed as HEAD (its sha) when it was not asked for by name.
  if (defaultBranch && headSha && !heads.has(defaultBranch)) heads.set(defaultBranch, headSha);
  return { ...(defaultBranch ? { defaultBranch } : {}), heads };
}

function fail(message: string, errorCode: string): CheckoutResult {
  return { ok: false, message, errorCode };
}
