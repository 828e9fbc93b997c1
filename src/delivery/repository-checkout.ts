import { existsSync } from "node:fs";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import type { AgentConfig, RunEventType } from "../model/run.ts";
import { inSpan } from "../telemetry/spans.ts";
import { displayUrl } from "../workspace/git.ts";
import { mirrorPath, repositoryCachePath } from "../workspace/workspace.ts";
import { type BranchClaim, notOwnBranch } from "./branch-ownership.ts";
import { hostGit, reason, text } from "./host-git.ts";
import { type RemotePolicy, remoteAccess } from "./remote-access.ts";
import { type CacheFill, fillFromCache } from "./repository-cache.ts";

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
  const unreadable = (detail: string): Failure => {
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
  const newMirror = !existsSync(mirror);
  if (newMirror) {
    await mkdir(mirror, { recursive: true });
    const init = await hostGit(["init", "--quiet", "--bare", mirror]);
    if (!init.ok) return fail(`Could not prepare a git mirror: ${reason(init)}`, "internal_error");
  }

  await ctx.emit("log", {
    level: "info",
    phase: "repository",
    message: `Fetching ${target.repository}${target.base ? `@${target.base}` : ""}`,
  });
  const fetched = await inSpan("repository fetch", {}, () =>
    fetchRepository(ctx, { mirror, newMirror }, remote, unreadable),
  );
  if (!fetched.ok) return fetched;
  const { base, claim, start } = fetched;
  if (ctx.fresh) {
    const made = await inSpan("repository checkout", {}, () =>
      checkoutWorkspace(ctx, { mirror, base, start, shown }),
    );
    if (!made.ok) return made;
  }
  return { ok: true, base, ...(claim ? { claim } : {}) };
}

type RemoteOptions = { remote: string; remoteConfig: string[]; token?: string; signal: AbortSignal };

type Fetched =
  /** `start`: the commit the work branch starts from (delivery's, kept across executions). */
  { ok: true; base: string; claim?: BranchClaim; start: string } | Exclude<CheckoutResult, { ok: true }>;

/**
 * Lists the remote's branches, decides the base and whether the work branch is the run's, and brings
 * their commits into the mirror: refs/heads/<base> (and <branch> when it exists), and, on the mirror's
 * first execution, refs/dispatch/delivered and refs/dispatch/base where delivery starts from.
 */
async function fetchRepository(
  ctx: CheckoutContext,
  { mirror, newMirror }: { mirror: string; newMirror: boolean },
  remote: RemoteOptions,
  unreadable: (detail: string) => Failure,
): Promise<Fetched> {
  const { target, signal } = ctx;
  const asked = [target.base, target.branch].filter((b): b is string => !!b).map((b) => `refs/heads/${b}`);
  const lsRemote = await hostGit(["ls-remote", "--symref", "--", target.remote, "HEAD", ...asked], {
    ...remote,
    timeoutMs: REMOTE_TIMEOUT_MS,
  });
  if (lsRemote.aborted || signal.aborted) return { ok: false, aborted: true };
  if (!lsRemote.ok) return unreadable(reason(lsRemote));
  const refs = parseLsRemote(text(lsRemote));
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
  const listed = new Map([[base, refs.heads.get(base)!]]);
  if (branchExists) listed.set(target.branch!, refs.heads.get(target.branch!)!);
  const heads = await fetchIntoMirror(ctx, mirror, listed, remote);
  if (!heads.ok) return heads.aborted ? { ok: false, aborted: true } : unreadable(heads.detail);
  // Where delivery starts from: kept across executions (the last pushed commit once there is one).
  const delivered = newMirror ? undefined : (await mirrorRefs(mirror)).get("refs/dispatch/delivered");
  const start = delivered ?? heads.shas.get(branchExists ? target.branch! : base)!;
  const updates = [...heads.shas].map(([branch, sha]) => `update refs/heads/${branch} ${sha}`);
  if (!delivered) {
    updates.push(
      `update refs/dispatch/delivered ${start}`,
      `update refs/dispatch/base ${heads.shas.get(base)}`,
    );
  }
  const set = await hostGit(["update-ref", "--stdin"], { gitDir: mirror, input: `${updates.join("\n")}\n` });
  if (!set.ok) return fail(`Could not record the fetched branches: ${reason(set)}`, "internal_error");
  await hostGit(["symbolic-ref", "HEAD", `refs/heads/${base}`], { gitDir: mirror });
  return { ok: true, base, start, ...(claim ? { claim } : {}) };
}

/**
 * The brought commits into the mirror as `listed` names them: through the worker's cache of the
 * repository (repository-cache.ts), or, when the cache cannot serve (its disk, a concurrent process), by a
 * fetch of its own. `shas`: each branch's commit as the mirror now has it.
 */
async function fetchIntoMirror(
  ctx: CheckoutContext,
  mirror: string,
  listed: Map<string, string>,
  remote: RemoteOptions,
): Promise<{ ok: true; shas: Map<string, string> } | { ok: false; aborted: boolean; detail: string }> {
  const { target, signal } = ctx;
  const filled = await fillFromCache({
    cache: repositoryCachePath(ctx.workspace, target.remote),
    mirror,
    listed,
    remote: { ...remote, timeoutMs: REMOTE_TIMEOUT_MS },
  }).catch((err: unknown): CacheFill => ({ ok: false, step: "cache", detail: String(err) }));
  if (signal.aborted) return { ok: false, aborted: true, detail: "stopped" };
  if (filled.ok) return { ok: true, shas: filled.heads };
  ctx.log.warn(
    { repository: target.repository, step: filled.step, detail: filled.detail },
    "the repository cache could not serve a run; fetching into its mirror",
  );
  const branches = [...listed.keys()];
  const fetch = await hostGit(
    [
      "fetch",
      "--quiet",
      "--no-tags",
      "--",
      target.remote,
      ...branches.map((b) => `+refs/heads/${b}:refs/heads/${b}`),
    ],
    { ...remote, gitDir: mirror, timeoutMs: REMOTE_TIMEOUT_MS },
  );
  if (fetch.aborted || signal.aborted) return { ok: false, aborted: true, detail: "stopped" };
  if (!fetch.ok) return { ok: false, aborted: false, detail: reason(fetch) };
  const refs = await mirrorRefs(mirror);
  return { ok: true, shas: new Map(branches.map((b) => [b, refs.get(`refs/heads/${b}`)!])) };
}

/** Every ref of the mirror, refname → commit. */
async function mirrorRefs(mirror: string): Promise<Map<string, string>> {
  const listed = await hostGit(["for-each-ref", "--format=%(objectname) %(refname)"], { gitDir: mirror });
  const refs = new Map<string, string>();
  for (const line of text(listed).split("\n")) {
    const at = line.indexOf(" ");
    if (at > 0) refs.set(line.slice(at + 1), line.slice(0, at));
  }
  return refs;
}

async function checkoutWorkspace(
  ctx: CheckoutContext,
  { mirror, base, start, shown }: { mirror: string; base: string; start: string; shown: string },
): Promise<CheckoutResult> {
  const { target, workspace } = ctx;
  if ((await readdir(workspace)).length > 0) {
    return fail("The workspace is not empty; the repository cannot be checked out into it", "internal_error");
  }
  const local = target.branch ?? base;
  const steps: string[][] = [
    [
      "clone",
      "--quiet",
      "--no-hardlinks",
      "--no-checkout",
      `--config=user.name=${ctx.gitAuthor.name}`,
      `--config=user.email=${ctx.gitAuthor.email}`,
      "--",
      mirror,
      workspace,
    ],
    // Files written by a worker per core: writing thousands of files waits on the file system more than
    // it computes (bench/README.md, "Third round: run start and checkpoints").
    ["-C", workspace, "-c", "checkout.workers=0", "checkout", "--quiet", "-B", local, start],
    ["-C", workspace, "remote", "set-url", "origin", shown],
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

type Failure = Extract<CheckoutResult, { message: string }>;

function fail(message: string, errorCode: string): Failure {
  return { ok: false, message, errorCode };
}
