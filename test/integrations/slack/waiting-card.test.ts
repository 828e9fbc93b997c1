import { describe, expect, it } from "vitest";
import { cardFingerprint, renderStatusCard } from "../../../src/integrations/slack/status-card.ts";
import { reviseModal, reviseOrigin } from "../../../src/integrations/slack/waiting-card.ts";
import type { RunView } from "../../../src/runs/waiting-run.ts";

/** A BLOCKED run's card (docs/surfaces.md, "Waiting for you"), rendered from the run as RunsApi gives it. */
function waiting(reason: string, message: string, plan?: string): RunView {
  return {
    run_id: "0193-run",
    task_id: "0193-run",
    title: "Add a cache",
    prompt: "Add a cache",
    state: "BLOCKED",
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:10.000Z",
    started_at: "2026-01-01T00:00:01.000Z",
    finished_at: null,
    run_time: "PT10S",
    session_id: "sess",
    session_link: "http://dispatch.test/sessions/sess",
    source: "SLACK",
    creator: { type: "user", uid: "slack:T1:U1", display_name: "Ada" },
    agent_config: {},
    status_message: { message, reason },
    artifacts: [],
    request_usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
    is_sandbox_running: false,
    scope: { type: "Team", uid: "t" },
    metadata: {},
    ...(plan ? { plan } : {}),
  } as unknown as RunView;
}

// biome-ignore lint/suspicious/noExplicitAny: blocks are inspected structurally
const buttons = (card: { blocks: any[] }) =>
  card.blocks.find((b) => b.type === "actions")?.elements.map((e: { text: { text: string } }) => e.text.text);

describe("the card of a waiting run", () => {
  it("a long plan: its first lines, escaped, and the run page for the rest; Approve, Request changes, Cancel", () => {
    const plan = Array.from({ length: 40 }, (_, i) => `${i + 1}. step <${i + 1}>`).join("\n");
    const card = renderStatusCard(waiting("awaiting_approval", "The plan is ready", plan), null, 0);
    const text = JSON.stringify(card.blocks);
    expect(text).toContain(":raised_hand: *Waiting for you*");
    expect(text).toContain("*Waiting for approval of its plan*");
    expect(text).toContain("> 1. step &lt;1&gt;");
    expect(text).toContain("> 15. step &lt;15&gt;");
    expect(text).not.toContain("16. step");
    expect(text).toContain(
      "The plan goes on: read the whole on <http://dispatch.test/runs/0193-run|the run page>",
    );
    expect(buttons(card)).toEqual(["Open session", "Approve", "Request changes", "Cancel"]);
    // The plan is part of what the card shows: a revised plan is an edit.
    expect(cardFingerprint(waiting("awaiting_approval", "m", "a"))).not.toBe(
      cardFingerprint(waiting("awaiting_approval", "m", "b")),
    );
  });

  it("waiting for an answer: the reason and its message, and no plan buttons", () => {
    const asked = renderStatusCard(waiting("awaiting_input", "Which database: Postgres or SQLite?"), null, 0);
    expect(JSON.stringify(asked.blocks)).toContain("*Waiting for an answer to its question*");
    expect(JSON.stringify(asked.blocks)).toContain("Which database: Postgres or SQLite?");
    expect(asked.text).toContain("Waiting for an answer to its question: Which database");
    expect(buttons(asked)).toEqual(["Open session", "Cancel"]);
  });

  it("waiting for budget: Extend by what it needs, rounded up to a whole dollar (at least $1), and Stop here", () => {
    const needs = (needs_usd?: number) => ({
      ...waiting("awaiting_budget", "Spent $5.00 of $5.00"),
      ...(needs_usd !== undefined ? { budget: { needs_usd } } : {}),
    });
    const budget = renderStatusCard(needs(4.2), null, 0);
    expect(JSON.stringify(budget.blocks)).toContain("*Waiting for more budget*");
    expect(buttons(budget)).toEqual(["Open session", "Extend by $5", "Stop here", "Cancel"]);
    expect(buttons(renderStatusCard(needs(0.011), null, 0))).toContain("Extend by $1");
    expect(buttons(renderStatusCard(needs(3), null, 0))).toContain("Extend by $3");
    expect(buttons(renderStatusCard(needs(), null, 0))).toContain("Extend by $1");
  });

  it("the Request changes modal carries the card it came from, and nothing else is taken for one", () => {
    const modal = reviseModal({ runId: "r1", channel: "C1", cardTs: "1.2", threadTs: "1.2" }, "Add a cache");
    expect(reviseOrigin(modal.private_metadata)).toEqual({
      runId: "r1",
      channel: "C1",
      cardTs: "1.2",
      threadTs: "1.2",
    });
    expect(reviseOrigin("not json")).toBeUndefined();
    expect(reviseOrigin(JSON.stringify({ runId: "r1" }))).toBeUndefined();
  });
});
