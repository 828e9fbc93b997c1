import type { JiraSettings } from "../../config-file.ts";
import type { NotifierPlatform } from "../../notifier/platform.ts";
import type { RunItem } from "../../runs/run-item.ts";
import type { JiraOperation } from "./issue-messages.ts";
import type { JiraSender } from "./jira-sender.ts";
import { cardFingerprint, renderCard, renderFinal } from "./tracking-comment.ts";

/** The run source of runs started from Jira. */
export const JIRA_SOURCE = "JIRA";

/**
 * A Jira issue as the notifier sees it (docs/surfaces.md, Jira): the card is one comment per run, posted
 * once and edited as the run moves on; the final reply is a comment mentioning the requester, sent after
 * the run's pull request is linked on the issue and the issue moved by `transitions.pull_request`. A
 * binding's workspace is the project key, its channel the issue id; the issue key is in the run's
 * `metadata.fixes`.
 */
export function jiraNotifierPlatform(deps: {
  sender: JiraSender;
  target: string;
  settings: JiraSettings;
  editIntervalMs: number;
  publicUrl: () => string;
}): NotifierPlatform {
  const issueOf = (run: RunItem, issueId: string) => ({
    id: issueId,
    key: typeof run.metadata?.fixes === "string" ? run.metadata.fixes : issueId,
  });
  return {
    platform: "jira",
    source: JIRA_SOURCE,
    editIntervalMs: deps.editIntervalMs,
    target: () => deps.target,
    fingerprint: cardFingerprint,
    card: (run, b, now, stalledMs) => {
      const payload: JiraOperation = {
        op: "comment",
        issue: issueOf(run, b.channel),
        doc: renderCard(run, deps.publicUrl(), now, stalledMs),
        marker: `card:${run.run_id}`,
      };
      return payload;
    },
    finalReply: (run, b) => {
      const pr = pullRequestOf(run);
      const transition = pr ? deps.settings.projects[b.workspace]?.transitions.pull_request : undefined;
      const requester = {
        id: b.requester,
        name:
          run.creator?.uid === `jira:${b.requester}`
            ? (run.creator.display_name ?? b.requester)
            : b.requester,
      };
      const payload: JiraOperation = {
        op: "comment",
        issue: issueOf(run, b.channel),
        doc: renderFinal(run, deps.publicUrl(), requester),
        // One final per execution: a follow-up that runs the agent again ends with a final of its own.
        marker: `final:${run.run_id}:${run.finished_at}`,
        ...(pr ? { link: { url: pr.url, title: `PR #${pr.number}: ${run.title}` } } : {}),
        ...(transition ? { transition } : {}),
      };
      return payload;
    },
    outcomeReaction: () => undefined,
    send: (row) => deps.sender.send(row),
  };
}

function pullRequestOf(run: RunItem): { url: string; number: string } | undefined {
  const pr = (run.artifacts ?? []).findLast(
    (a) => a.artifact_type === "PULL_REQUEST" && typeof a.data?.url === "string",
  );
  if (!pr) return undefined;
  const url = String(pr.data.url);
  return { url, number: /\/pull\/(\d+)/.exec(url)?.[1] ?? "" };
}
