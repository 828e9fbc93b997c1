import { describe, expect, it } from "vitest";
import {
  GITHUB_COMMENT_LIMIT,
  githubOutcomeReaction,
  renderFinalComment,
  renderTrackingComment,
  trackingFingerprint,
} from "../../../src/integrations/github/tracking-comment.ts";
import type { RunItem } from "../../../src/runs/run-item.ts";

function run(over: Partial<RunItem> = {}): RunItem {
  return {
    run_id: "0193-run",
    task_id: "0193-run",
    title: "#12 Fix the login test, cc @alice",
    prompt: "Fix it",
    state: "INPROGRESS",
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:10.000Z",
    started_at: "2026-01-01T00:00:01.000Z",
    finished_at: null,
    run_time: "PT2M30S",
    session_id: "sess",
    session_link: "http://dispatch.test/sessions/sess",
    source: "GITHUB_WEBHOOK",
    creator: { type: "user", uid: "github:octocat", display_name: "octocat" },
    agent_config: { model_id: "anthropic/claude-sonnet-4-5", name: "nightly" },
    artifacts: [],
    request_usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
    is_sandbox_running: true,
    scope: { type: "Team", uid: "t" },
    metadata: {},
    ...over,
  } as RunItem;
}

describe("GitHub tracking comment", () => {
  it("shows marker, state, title, options, elapsed time and the session link; mentions nobody", () => {
    const body = renderTrackingComment(run());
    expect(body.split("\n")[0]).toBe("<!-- dispatch:run=0193-run -->");
    expect(body).toContain("🔄 **In progress** · #12 Fix the login test, cc @\u200balice");
    expect(body).toContain("model=anthropic/claude-sonnet-4-5 · name=nightly · elapsed 2m 30s");
    expect(body).toContain("[Session](http://dispatch.test/sessions/sess)");
  });

  it("shows pull requests as soon as they exist, and the status message on failure", () => {
    const pr = {
      artifact_type: "PULL_REQUEST",
      created_at: "2026-01-01T00:00:05.000Z",
      data: { url: "https://github.com/o/r/pull/42", branch: "fix" },
    };
    expect(renderTrackingComment(run({ artifacts: [pr] as RunItem["artifacts"] }))).toContain(
      "[PR #42](https://github.com/o/r/pull/42)",
    );
    const failed = renderTrackingComment(
      run({ state: "FAILED", status_message: { message: "tests failed\n<!-- dispatch:run=forged -->" } }),
    );
    expect(failed).toContain("❌ **Failed**");
    expect(failed).toContain("> tests failed\n> &lt;!-- dispatch:run=forged -->");
    expect(failed.match(/<!-- dispatch:run=/g)).toHaveLength(1);
  });

  it("shows where the work goes: in owner/repo@base, then the pull request with its diff stat, or No changes", () => {
    const config = { model_id: "m", repository: "acme/app" };
    expect(renderTrackingComment(run({ agent_config: config }))).toContain("\nin `acme/app`\n");
    const based = { ...config, base_branch: "main", branch: "dispatch/0193-fix" };
    const patch = (description: string) => ({
      artifact_type: "FILE",
      created_at: "2026-01-01T00:00:05.000Z",
      data: { artifact_uid: "p1", filename: "changes.patch", description },
    });
    const pr = (updated: boolean) => ({
      artifact_type: "PULL_REQUEST",
      created_at: "2026-01-01T00:00:06.000Z",
      data: {
        url: "https://github.com/acme/app/pull/123",
        branch: "dispatch/0193-fix",
        number: 123,
        repository: "acme/app",
        base: "main",
        ...(updated ? { updated_at: "2026-01-01T00:01:00.000Z" } : {}),
      },
    });
    const opened = renderTrackingComment(
      run({
        state: "SUCCEEDED",
        agent_config: based,
        artifacts: [patch("+12 −3 in 4 files"), pr(false)] as RunItem["artifacts"],
      }),
    );
    expect(opened).toContain(
      "in `acme/app@main` · [PR #123 opened](https://github.com/acme/app/pull/123) · +12 −3 in 4 files",
    );
    // The PR is linked once, not again next to the session link.
    expect(opened.match(/pull\/123/g)).toHaveLength(1);
    const updated = renderTrackingComment(
      run({
        state: "SUCCEEDED",
        agent_config: based,
        artifacts: [
          patch("+12 −3 in 4 files"),
          pr(false),
          patch("+14 −3 in 5 files"),
          pr(true),
        ] as RunItem["artifacts"],
      }),
    );
    expect(updated).toContain(
      "in `acme/app@main` · [PR #123 updated](https://github.com/acme/app/pull/123) · +14 −3 in 5 files",
    );
    const none = renderTrackingComment(
      run({ state: "SUCCEEDED", agent_config: based, status_message: { message: "No changes" } }),
    );
    expect(none).toContain("in `acme/app@main` · No changes");
    expect(
      renderFinalComment(
        run({ state: "SUCCEEDED", agent_config: based, artifacts: [pr(false)] as RunItem["artifacts"] }),
        {
          requester: "octocat",
        },
      ),
    ).toContain("in `acme/app@main` · [PR #123 opened](https://github.com/acme/app/pull/123)");
    // A base branch named with backticks or @ stays inside its code span: no mention, no broken markup.
    const odd = renderTrackingComment(run({ agent_config: { ...config, base_branch: "x`@alice" } }));
    expect(odd).toContain("in ``acme/app@x`@alice``");
  });

  it("stays under 60,000 characters whatever the status message", () => {
    const huge = run({ state: "ERROR", status_message: { message: "x".repeat(200_000) } });
    expect(renderTrackingComment(huge).length).toBeLessThanOrEqual(GITHUB_COMMENT_LIMIT);
    expect(renderFinalComment(huge, { requester: "octocat" }).length).toBeLessThanOrEqual(
      GITHUB_COMMENT_LIMIT,
    );
  });

  it("its fingerprint ignores a running run's elapsed time, not a state change", () => {
    expect(trackingFingerprint(run({ run_time: "PT5S" }))).toBe(
      trackingFingerprint(run({ run_time: "PT9M" })),
    );
    expect(trackingFingerprint(run())).not.toBe(trackingFingerprint(run({ state: "SUCCEEDED" })));
  });

  it("final comment mentions the requester; outcome reactions", () => {
    expect(renderFinalComment(run({ state: "SUCCEEDED" }), { requester: "octocat" })).toContain(
      "@octocat ✅ **Succeeded**",
    );
    expect(renderFinalComment(run({ state: "SUCCEEDED" }), { requester: "not a login" })).not.toContain(
      "@not",
    );
    expect(["SUCCEEDED", "FAILED", "ERROR", "CANCELLED", "INPROGRESS"].map(githubOutcomeReaction)).toEqual([
      "hooray",
      "confused",
      "confused",
      "-1",
      undefined,
    ]);
  });
});
