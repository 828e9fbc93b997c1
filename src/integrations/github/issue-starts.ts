import type { Logger } from "pino";
import { isTerminal } from "../../model/run-state.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import type { GitHubAudience } from "./github-audience.ts";
import { githubPrincipalId } from "./github-audience.ts";
import { idempotencyKey } from "./idempotency-key.ts";
import { IssueThread } from "./issue-thread.ts";
import type { Verbs } from "./verbs.ts";
import type { Payload } from "./webhook-events.ts";

export interface IssueStartsDeps {
  store: Pick<Store, "findLatestBinding" | "enqueueOutbox">;
  runs: Pick<RunsApi, "get">;
  audience: GitHubAudience;
  verbs: Verbs;
  log: Logger;
}

/**
 * Issues labelled with `github.label` (default `dispatch`), or in token mode assigned to the bot's user,
 * start a run from the issue's title and body, for whoever labelled or assigned it (they must be in the
 * repository's audience, as a commenter must). One active run per issue: labelling again while a run is
 * working on it starts nothing and says so.
 */
export class IssueStarts {
  private readonly deps: IssueStartsDeps;

  constructor(deps: IssueStartsDeps) {
    this.deps = deps;
  }

  async onIssue(delivery: string, p: Payload): Promise<void> {
    const { store, runs, audience, verbs } = this.deps;
    const repo = String(p.repository.full_name);
    const number = Number(p.issue.number);
    const login = String(p.sender.login);
    const thread = new IssueThread(store, repo, number, delivery);
    const membership = await audience.includes(githubPrincipalId(login), audience.place({ workspace: repo }));
    if (membership.kind === "unknown") {
      return verbs.notice(
        thread,
        login,
        "I could not check your permission on this repository just now; label the issue again in a moment.",
      );
    }
    if (membership.kind === "not_member") return verbs.refuse(thread, login);

    const current = await store.findLatestBinding({
      platform: "github",
      workspace: repo,
      channel: String(number),
      thread: null,
    });
    const run = current ? await runs.get(current.runId).catch(() => undefined) : undefined;
    if (run && !isTerminal(run.state)) {
      return verbs.notice(
        thread,
        login,
        `Run \`${run.run_id}\` is already working on this issue; its tracking comment shows how far it is.`,
      );
    }
    const isPullRequest = Boolean(p.issue.pull_request);
    const how = p.action === "labeled" ? `labelled "${p.label.name}"` : "assigned to Dispatch";
    await verbs.start(
      thread,
      {
        issue: {
          number,
          title: String(p.issue.title ?? ""),
          body: p.issue.body,
          html_url: String(p.issue.html_url),
          isPullRequest,
        },
        requester: login,
        triggerUrl: String(p.issue.html_url),
        triggerRef: null,
      },
      { type: "user", uid: githubPrincipalId(login), display_name: login },
      {
        verb: "run",
        prompt: `Resolve this ${isPullRequest ? "pull request" : "issue"} as it describes (it was ${how}).`,
        options: {},
        forceNew: true,
      },
      idempotencyKey("label", repo, delivery),
    );
  }
}
