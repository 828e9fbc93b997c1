import { describe, expect, it } from "vitest";
import {
  renderTrackingComment,
  trackingFingerprint,
} from "../../src/integrations/github/tracking-comment.ts";
import { cardFingerprint, renderStatusCard } from "../../src/integrations/slack/status-card.ts";
import { stalledFor, stallNote, stallWords } from "../../src/model/stall.ts";
import type { RunItem } from "../../src/runs/run-item.ts";

const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const at = (ms: number) => new Date(T0 + ms).toISOString();

describe("stall wording and detection (model/stall.ts)", () => {
  it("a run in progress stalls once its latest event is DISPATCH_STALL_AFTER_S old", () => {
    const run = { state: "INPROGRESS" as const, updatedAt: at(0), lastEventAt: at(60_000) };
    expect(stalledFor(run, T0 + 60_000 + 299_999, 300_000)).toBeUndefined();
    expect(stalledFor(run, T0 + 60_000 + 300_000, 300_000)).toBe(300_000);
    expect(stallNote(run, T0 + 60_000 + 300_000, 300_000)).toBe("no progress for 5 min");
    // A later state change counts as progress too.
    expect(stalledFor({ ...run, updatedAt: at(400_000) }, T0 + 400_000, 300_000)).toBeUndefined();
  });

  it("queued and finished runs never stall", () => {
    for (const state of ["QUEUED", "SUCCEEDED", "FAILED", "ERROR", "CANCELLED"] as const) {
      expect(
        stalledFor({ state, updatedAt: at(0), lastEventAt: at(0) }, T0 + 3_600_000, 300_000),
      ).toBeUndefined();
    }
  });

  it("says how long in words people read", () => {
    expect(stallWords(45_000)).toBe("no progress for 45s");
    expect(stallWords(12 * 60_000 + 30_000)).toBe("no progress for 12 min");
    expect(stallWords(65 * 60_000)).toBe("no progress for 1h 5m");
  });
});

describe("a stalled run on the Slack card and the GitHub comment", () => {
  const run = {
    run_id: "0193-run",
    title: "Fix the flaky test",
    prompt: "fix it",
    state: "INPROGRESS",
    created_at: at(0),
    updated_at: at(0),
    run_time: "PT6M",
    session_link: "https://dispatch.example/sessions/s1",
    artifacts: [],
    agent_config: {},
  } as unknown as RunItem;

  it("the Slack card shows the note and Retry only when stalled, and its fingerprint tells", () => {
    const stalled = JSON.stringify(renderStatusCard(run, null, T0, 300_000));
    expect(stalled).toContain("No progress for 5 min");
    expect(stalled).toContain('"action_id":"dispatch_retry"');
    const fine = JSON.stringify(renderStatusCard(run, null, T0));
    expect(fine).not.toContain("No progress");
    expect(fine).not.toContain("dispatch_retry");
    expect(cardFingerprint(run, true)).not.toBe(cardFingerprint(run));
  });

  it("the GitHub comment says it and how to start over", () => {
    const body = renderTrackingComment(run, T0, 300_000);
    expect(body).toContain("No progress for 5 min");
    expect(body).toContain("`cancel`");
    expect(renderTrackingComment(run, T0)).not.toContain("No progress");
    expect(trackingFingerprint(run, true)).not.toBe(trackingFingerprint(run));
  });
});
