import type { Logger } from "pino";
import { type GitHubClients, splitRepo } from "./github-clients.ts";
import type { Payload } from "./webhook-events.ts";

/** What a failing check says, for the run that fixes it. */
export interface CiFailure {
  /** The check run's or job's name ("lint", "test (20.x)"). */
  name: string;
  conclusion: string;
  /** The check's own title, or the failing step's name. */
  title?: string;
  /** The check's output, or the failing part of the job's log, trimmed. */
  excerpt?: string;
}

/** Checks named in one follow-up, at most. */
const MAX_FAILURES = 5;
/** Characters of output per check (the end is kept: that is where a failure is told). */
const MAX_EXCERPT_CHARS = 3000;
/** Lines of a job's log around its first error. */
const LINES_BEFORE_ERROR = 30;
const LINES_AFTER_ERROR = 10;
/** Without an error marker, the log's last lines. */
const TAIL_LINES = 40;

const FAILED = new Set(["failure", "timed_out"]);

/**
 * The failing checks of a completed check suite (their output; for GitHub Actions, whose check runs are
 * its jobs, the failing step of the job's log) or of a workflow run (its failed jobs and their logs). What
 * GitHub cannot give (a log already expired, a permission the installation lacks) is left out with a log
 * line: the follow-up still names the check.
 */
export async function ciFailures(
  clients: Pick<GitHubClients, "forRepo">,
  kind: "check_suite" | "workflow_run",
  repo: string,
  p: Payload,
  log: Logger,
): Promise<CiFailure[]> {
  const [owner, name] = splitRepo(repo);
  try {
    const octokit = await clients.forRepo(repo);
    const jobLog = async (jobId: number): Promise<string | undefined> => {
      try {
        const { data } = await octokit.rest.actions.downloadJobLogsForWorkflowRun({
          owner,
          repo: name,
          job_id: jobId,
        });
        return logExcerpt(
          typeof data === "string" ? data : Buffer.from(data as ArrayBuffer).toString("utf8"),
        );
      } catch (err) {
        log.warn({ err, repo, jobId }, "could not read a CI job's log (does the App have actions: read?)");
        return undefined;
      }
    };
    if (kind === "check_suite") {
      const { data } = await octokit.rest.checks.listForSuite({
        owner,
        repo: name,
        check_suite_id: Number(p.check_suite.id),
        filter: "latest",
        per_page: 100,
      });
      const failing = data.check_runs.filter((r) => FAILED.has(String(r.conclusion))).slice(0, MAX_FAILURES);
      return Promise.all(
        failing.map(async (r) => {
          const output = [r.output?.summary, r.output?.text]
            .filter((t): t is string => Boolean(t))
            .join("\n\n");
          // A GitHub Actions check run is a job (same id): its log says what failed.
          const excerpt = output
            ? trimTail(output)
            : r.app?.slug === "github-actions"
              ? await jobLog(r.id)
              : undefined;
          return {
            name: r.name,
            conclusion: String(r.conclusion),
            ...(r.output?.title ? { title: r.output.title } : {}),
            ...(excerpt ? { excerpt } : {}),
          };
        }),
      );
    }
    const { data } = await octokit.rest.actions.listJobsForWorkflowRun({
      owner,
      repo: name,
      run_id: Number(p.workflow_run.id),
      filter: "latest",
      per_page: 100,
    });
    const failing = data.jobs.filter((j) => FAILED.has(String(j.conclusion))).slice(0, MAX_FAILURES);
    return Promise.all(
      failing.map(async (j) => {
        const step = j.steps?.find((s) => FAILED.has(String(s.conclusion)));
        const excerpt = await jobLog(j.id);
        return {
          name: j.name,
          conclusion: String(j.conclusion),
          ...(step ? { title: `Step "${step.name}" failed` } : {}),
          ...(excerpt ? { excerpt } : {}),
        };
      }),
    );
  } catch (err) {
    log.warn({ err, repo, kind }, "could not read a CI failure's checks (does the App have checks: read?)");
    const run = kind === "check_suite" ? p.check_suite : p.workflow_run;
    const label = kind === "workflow_run" ? String(run.name ?? "workflow") : String(run.app?.name ?? "CI");
    return [{ name: label, conclusion: String(run.conclusion) }];
  }
}

/** The failing part of a GitHub Actions job log: around its first `##[error]`, else its end; no timestamps. */
export function logExcerpt(raw: string): string | undefined {
  const lines = raw
    .split(/\r?\n/)
    .map((l) => l.replace(/^\d{4}-\d\d-\d\dT[\d:.]+Z ?/, ""))
    .filter((l) => !/^##\[(?:end)?group\]$/.test(l));
  const error = lines.findIndex((l) => l.includes("##[error]"));
  const picked =
    error >= 0
      ? lines.slice(Math.max(0, error - LINES_BEFORE_ERROR), error + LINES_AFTER_ERROR + 1)
      : lines.slice(-TAIL_LINES);
  const text = picked.join("\n").trim();
  return text ? trimTail(text) : undefined;
}

function trimTail(text: string): string {
  return text.length <= MAX_EXCERPT_CHARS ? text : `…${text.slice(-MAX_EXCERPT_CHARS)}`;
}
