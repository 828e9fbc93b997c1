import { describe, expect, it } from "vitest";
import { listText } from "../../../src/integrations/slack/messages.ts";
import {
  ACTION_CANCEL,
  ACTION_OPEN_SESSION,
  cardFingerprint,
  renderFinalReply,
  renderStatusCard,
  SLACK_LIMITS,
} from "../../../src/integrations/slack/status-card.ts";
import { stateWords } from "../../../src/model/run-wording.ts";
import type { RunItem } from "../../../src/runs/run-item.ts";

const binding = { requester: "U123ABC" };

function run(over: Partial<RunItem> = {}): RunItem {
  return {
    run_id: "0193-run",
    task_id: "0193-run",
    title: "Fix the <flaky> login test & more",
    prompt: "Fix it",
    state: "INPROGRESS",
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:10.000Z",
    started_at: "2026-01-01T00:00:01.000Z",
    finished_at: null,
    run_time: "PT2M30S",
    session_id: "sess",
    session_link: "http://dispatch.test/sessions/sess",
    source: "SLACK",
    creator: { type: "user", uid: "slack:T1:U123ABC", display_name: "Alice" },
    agent_config: { model_id: "anthropic/claude-sonnet-4-5", environment_id: "web", name: "nightly" },
    artifacts: [],
    request_usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
    is_sandbox_running: true,
    scope: { type: "Team", uid: "t" },
    metadata: {},
    ...over,
  } as RunItem;
}

const allText = (card: { blocks: unknown[] }) => JSON.stringify(card.blocks);
// biome-ignore lint/suspicious/noExplicitAny: blocks are inspected structurally
const actions = (card: { blocks: any[] }) => card.blocks.find((b) => b.type === "actions")?.elements ?? [];

describe("renderStatusCard", () => {
  it("shows state, escaped title, resolved options, elapsed time, links and both buttons while running", () => {
    const card = renderStatusCard(run(), binding, Date.parse("2026-01-01T00:03:00.000Z"));
    const text = allText(card);
    expect(text).toContain(":arrows_counterclockwise: *In progress*");
    expect(text).toContain("Fix the &lt;flaky&gt; login test &amp; more");
    expect(text).toContain("model=anthropic/claude-sonnet-4-5 · env=web · name=nightly");
    expect(text).toContain("elapsed 2m 30s");
    expect(text).toContain("<http://dispatch.test/sessions/sess|Session>");
    const [open, cancel] = actions(card);
    expect(open).toMatchObject({ action_id: ACTION_OPEN_SESSION, url: "http://dispatch.test/sessions/sess" });
    expect(cancel).toMatchObject({ action_id: ACTION_CANCEL, value: "0193-run", style: "danger" });
    expect(cancel.confirm).toMatchObject({ title: { type: "plain_text" }, confirm: { type: "plain_text" } });
    expect(card.text).toContain("In progress: Fix the <flaky> login test & more");
  });

  it("has no Cancel button once terminal, and shows the status message on failure", () => {
    const failed = renderStatusCard(
      run({ state: "FAILED", status_message: { message: "command exited with 3" } }),
      binding,
      0,
    );
    expect(allText(failed)).toContain("*Failed*");
    expect(allText(failed)).toContain("command exited with 3");
    expect(failed.text).toContain("command exited with 3");
    expect(actions(failed).map((b: { action_id: string }) => b.action_id)).toEqual([ACTION_OPEN_SESSION]);
  });

  it("uses the state words every surface uses", () => {
    expect(stateWords(run({ state: "QUEUED" }))).toBe("Queued");
    expect(stateWords(run({ state: "INPROGRESS" }))).toBe("In progress");
    expect(stateWords(run({ state: "SUCCEEDED" }))).toBe("Succeeded");
    expect(stateWords(run({ state: "ERROR" }))).toBe("Failed");
    expect(stateWords(run({ state: "CANCELLED", status_message: { message: "Cancelled by Bob" } }))).toBe(
      "Cancelled by Bob",
    );
  });

  it("links pull requests", () => {
    const card = renderStatusCard(
      run({
        artifacts: [
          {
            artifact_type: "PULL_REQUEST",
            created_at: "2026-01-01T00:00:00.000Z",
            data: { url: "https://github.com/o/r/pull/42", branch: "fix" },
          },
        ],
      }),
      binding,
      0,
    );
    expect(allText(card)).toContain("<https://github.com/o/r/pull/42|PR #42>");
  });

  describe("delivery", () => {
    const at = "2026-01-01T00:00:00.000Z";
    const inRepo = (over: Partial<RunItem> = {}) =>
      run({
        agent_config: { model_id: "m", repository: "acme/app", base_branch: "develop" },
        ...over,
      } as Partial<RunItem>);
    const pr = (data: Record<string, unknown> = {}) => ({
      artifact_type: "PULL_REQUEST",
      created_at: at,
      data: { url: "https://github.com/acme/app/pull/123", number: 123, branch: "dispatch/x", ...data },
    });
    const patch = {
      artifact_type: "FILE",
      created_at: at,
      data: { artifact_uid: "a1", filename: "changes.patch", description: "+12 −3 in 4 files" },
    };

    it("shows 'in owner/repo@base' while running", () => {
      const card = renderStatusCard(inRepo(), binding, 0);
      expect(allText(card)).toContain("in acme/app@develop · model=m");
      expect(card.text).toContain("In progress: Fix the <flaky> login test & more (in acme/app@develop)");
      expect(allText(card)).not.toContain("PR #");
    });

    it("then the PR line, its words linking to the PR, once (not again among the links)", () => {
      const card = renderStatusCard(
        inRepo({ state: "SUCCEEDED", artifacts: [pr(), patch] as RunItem["artifacts"] }),
        binding,
        0,
      );
      const text = allText(card);
      expect(text).toContain("<https://github.com/acme/app/pull/123|PR #123 opened> · +12 −3 in 4 files");
      expect(text.match(/pull\/123/g)).toHaveLength(1);
      expect(card.text).toContain("PR #123 opened · +12 −3 in 4 files https://github.com/acme/app/pull/123");
      const reply = renderFinalReply(
        inRepo({ state: "SUCCEEDED", artifacts: [pr(), patch] as RunItem["artifacts"] }),
        binding,
      );
      expect(reply.text).toContain(
        "<https://github.com/acme/app/pull/123|PR #123 opened> · +12 −3 in 4 files",
      );
    });

    it("says 'updated' after a follow-up pushed to the same PR, and 'No changes' when nothing was delivered", () => {
      const updated = renderStatusCard(
        inRepo({ state: "SUCCEEDED", artifacts: [pr({ updated_at: at }), patch] as RunItem["artifacts"] }),
        binding,
        0,
      );
      expect(allText(updated)).toContain("|PR #123 updated> · +12 −3 in 4 files");
      const none = inRepo({ state: "SUCCEEDED", status_message: { message: "No changes" } });
      expect(allText(renderStatusCard(none, binding, 0))).toContain("No changes");
      expect(renderFinalReply(none, binding).text).toContain("No changes");
    });

    it("changes the fingerprint when the PR appears", () => {
      expect(cardFingerprint(inRepo())).not.toBe(
        cardFingerprint(inRepo({ artifacts: [pr()] as RunItem["artifacts"] })),
      );
    });
  });

  it("respects Slack's limits with huge titles, messages and many PRs", () => {
    const card = renderStatusCard(
      run({
        state: "FAILED",
        title: "t".repeat(300),
        status_message: { message: "x".repeat(100_000) },
        artifacts: Array.from({ length: 500 }, (_, i) => ({
          artifact_type: "PULL_REQUEST",
          created_at: "2026-01-01T00:00:00.000Z",
          data: { url: `https://github.com/o/r/pull/${i}`, branch: "b" },
        })),
      }),
      binding,
      0,
    );
    expect(card.text.length).toBeLessThanOrEqual(SLACK_LIMITS.text);
    expect(card.text.length).toBeGreaterThan(0);
    expect(card.blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocks);
    for (const block of card.blocks as Array<{ text?: { text: string } }>) {
      if (block.text) expect(block.text.text.length).toBeLessThanOrEqual(SLACK_LIMITS.section);
    }
  });

  it("the fingerprint ignores elapsed time while running, but not a change people see", () => {
    const a = run({ run_time: "PT1S" });
    const b = run({ run_time: "PT9M" });
    expect(cardFingerprint(a)).toBe(cardFingerprint(b));
    expect(cardFingerprint(a)).not.toBe(cardFingerprint(run({ state: "SUCCEEDED" })));
    expect(cardFingerprint(a)).not.toBe(cardFingerprint(run({ title: "other" })));
  });
});

describe("renderFinalReply", () => {
  it("mentions the requester once with the outcome and status message", () => {
    const reply = renderFinalReply(
      run({ state: "ERROR", status_message: { message: "worker lost" } }),
      binding,
    );
    expect(reply.text.match(/<@U123ABC>/g)).toHaveLength(1);
    expect(reply.text).toContain("*Failed*");
    expect(reply.text).toContain("worker lost");
  });
});

describe("list and status lines", () => {
  it("use the status card's emoji and the same state words", () => {
    const text = listText(
      [run(), run({ run_id: "0193-other", state: "ERROR", title: "Other" })],
      "Recent runs from Slack",
    );
    expect(text).toContain(
      ":arrows_counterclockwise: *Fix the &lt;flaky&gt; login test &amp; more* — In progress",
    );
    expect(text).toContain(":x: *Other* — Failed");
  });
});
