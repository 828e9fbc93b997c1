import type { Logger } from "pino";
import type { GitHubSettings } from "../../config-file.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import { describeError } from "../run-errors.ts";
import { type CiFailure, ciFailures } from "./ci-failures.ts";
import type { GitHubClients } from "./github-clients.ts";
import { idempotencyKey } from "./idempotency-key.ts";
import { IssueThread } from "./issue-thread.ts";
import type { Payload } from "./webhook-events.ts";

export interface CiAutofixDeps {
  botHandle: string;
  settings: Pick<GitHubSettings, "autofix" | "repositories">;
  store: Pick<Store, "findLatestBinding" | "claimInbound" | "enqueueOutbox" | "markThreadAsked">;
  runs: Pick<RunsApi, "get" | "followup">;
  clients: Pick<GitHubClients, "forRepo">;
  log: Logger;
}

/**
 * Red CI on a pull request a run owns steers that run (docs/surfaces.md, GitHub): a check suite or
 * workflow run that completed with a failure on the pull request's head commit — the commit the run last
 * pushed — is an automatic follow-up naming the failing checks with an excerpt of their output, at most
 * `github.autofix.max_attempts` times per pull request. A failure on another commit (someone else pushed
 * since, or an older run) does nothing. Each commit gets one follow-up, whichever of its events comes first.
 */
export class CiAutofix {
  private readonly deps: CiAutofixDeps;

  constructor(deps: CiAutofixDeps) {
    this.deps = deps;
  }

  async onFailure(kind: "check_suite" | "workflow_run", p: Payload): Promise<void> {
    const repo = String(p.repository.full_name);
    const run = kind === "check_suite" ? p.check_suite : p.workflow_run;
    for (const pr of run.pull_requests as Array<{ number: number }>) {
      await this.onPullRequest(kind, p, repo, Number(pr.number), String(run.head_sha));
    }
  }

  private async onPullRequest(
    kind: "check_suite" | "workflow_run",
    p: Payload,
    repo: string,
    number: number,
    sha: string,
  ): Promise<void> {
    const { store, runs, log } = this.deps;
    const owner = await store.findLatestBinding({
      platform: "github",
      workspace: repo,
      channel: String(number),
      thread: null,
    });
    if (!owner || owner.ended) return;
    const run = await runs.get(owner.runId).catch(() => undefined);
    const pr = run?.artifacts?.findLast(
      (a) => a.artifact_type === "PULL_REQUEST" && Number(a.data?.number) === number,
    );
    if (pr?.data?.head_sha !== sha) return; // not the commit the run pushed last
    const max = this.maxAttempts(repo);
    if (max === 0) return;
    if (!(await store.claimInbound(`github:autofix:${repo}#${number}:${sha}`, "github"))) return;
    let attempt = 0;
    for (let i = 1; i <= max && attempt === 0; i++) {
      if (await store.claimInbound(`github:autofix:${repo}#${number}:attempt:${i}`, "github")) attempt = i;
    }
    const failures = await ciFailures(this.deps.clients, kind, repo, p, log);
    const names = [...new Set(failures.map((f) => f.name))].join(", ") || "CI";
    const thread = new IssueThread(store, repo, number, `autofix:${sha}`);
    if (attempt === 0) {
      return thread.reply(
        "autofix-used-up",
        `CI failed (${names}) on ${sha.slice(0, 7)}: the ${max} automatic fix attempts for this pull request are used up, so Dispatch stops here. \`@${this.deps.botHandle} <what to do>\` continues run \`${owner.runId}\`.`,
      );
    }
    await thread.reply("autofix", `CI failed (${names}): fixing, attempt ${attempt} of ${max}.`);
    try {
      await runs.followup(owner.runId, followupText(sha, attempt, max, failures), {
        idempotencyKey: idempotencyKey("autofix", repo, `${number}:${sha}`),
      });
    } catch (err) {
      log.warn({ err, runId: owner.runId, repo, number }, "could not send a CI autofix follow-up");
      return thread.reply(
        "autofix-failed",
        `Could not send the fix to run \`${owner.runId}\`: ${describeError(err)}. \`@${this.deps.botHandle} fix the CI failure\` tries again.`,
      );
    }
    await store.markThreadAsked(owner.runId, thread.threadKey, new Date().toISOString());
    log.info(
      { runId: owner.runId, repo, number, sha, attempt },
      "CI failure sent to the run that owns the PR",
    );
  }

  /** The repository's own limit, else the server's (0: off). */
  private maxAttempts(repo: string): number {
    const { settings } = this.deps;
    const own = Object.entries(settings.repositories).find(
      ([name]) => name.toLowerCase() === repo.toLowerCase(),
    );
    return own?.[1].autofix?.max_attempts ?? settings.autofix.max_attempts;
  }
}

function followupText(sha: string, attempt: number, max: number, failures: CiFailure[]): string {
  const sections = failures.map((f) =>
    [
      `### ${f.name} (${f.conclusion})`,
      ...(f.title ? [f.title] : []),
      ...(f.excerpt ? ["```", f.excerpt, "```"] : []),
    ].join("\n"),
  );
  return [
    `CI failed on ${sha.slice(0, 12)}, the commit you pushed to this pull request (automatic fix attempt ${attempt} of ${max}).`,
    "Find the cause, fix it, and make sure the failing checks pass before you finish.",
    "",
    ...(sections.length
      ? sections
      : ["GitHub did not say which check failed: run the project's checks to find it."]),
  ].join("\n");
}
