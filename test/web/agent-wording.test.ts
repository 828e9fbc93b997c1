import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderTrackingComment } from "../../src/integrations/github/tracking-comment.ts";
import { renderStatusCard } from "../../src/integrations/slack/status-card.ts";
import { agentWords } from "../../src/model/agent-wording.ts";
import type { RunItem } from "../../src/runs/run-item.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";

// Which agent ran, in the same words on every surface: the Slack status card, the GitHub tracking comment,
// the session page and `dispatch get` (docs/surfaces.md). One table (src/model/agent-wording.ts) says them.

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));

function run(agentConfig: RunItem["agent_config"]): RunItem {
  return {
    run_id: "0193-run",
    task_id: "0193-run",
    title: "Fix the login test",
    prompt: "Fix it",
    state: "INPROGRESS",
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:10.000Z",
    started_at: "2026-01-01T00:00:01.000Z",
    finished_at: null,
    run_time: "PT2M30S",
    session_id: "sess",
    session_link: "http://dispatch.test/sessions/sess",
    source: "API",
    creator: { type: "user", uid: "u", display_name: "Ada" },
    agent_config: agentConfig,
    artifacts: [],
    request_usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
    is_sandbox_running: true,
    scope: { type: "Team", uid: "t" },
    metadata: {},
  } as unknown as RunItem;
}

describe("the agent's name", () => {
  it("is one table: each harness in the wire form and the stored form, with its model where one applies", () => {
    expect(agentWords({ harness: { type: "claude" } })).toBe("Claude Code");
    expect(agentWords({ harness: { type: "codex" }, model_id: "openai/gpt-5-codex" })).toBe(
      "Codex (openai/gpt-5-codex)",
    );
    expect(agentWords({ harness: { type: "gemini" } })).toBe("Gemini CLI");
    expect(agentWords({ harness: { type: "oz", name: "builtin" }, model_id: "openai/gpt-5" })).toBe(
      "Dispatch builtin (openai/gpt-5)",
    );
    expect(agentWords({ harness: { type: "builtin" }, model_id: "openai/gpt-5" })).toBe(
      "Dispatch builtin (openai/gpt-5)",
    );
    expect(agentWords({ harness: { type: "oz", name: "scripted" }, model_id: "m" })).toBe(
      "Scripted (no model)",
    );
    expect(agentWords({ harness: { type: "oz", name: "later" } })).toBe("later");
    expect(agentWords({})).toBeUndefined();
  });

  it("heads the facts of the Slack status card and of the GitHub tracking comment, the model not repeated", () => {
    const codex = run({ harness: { type: "codex" }, model_id: "openai/gpt-5-codex", environment_id: "web" });
    const card = JSON.stringify(renderStatusCard(codex, { requester: "U1" }, Date.now()).blocks);
    expect(card).toContain("Agent: Codex (openai/gpt-5-codex) · env=web");
    expect(card).not.toContain("model=");
    const comment = renderTrackingComment(run({ harness: { type: "oz", name: "builtin" }, model_id: "m1" }));
    expect(comment).toContain("Agent: Dispatch builtin (m1)");
    expect(comment).not.toContain("model=");
    // A run that names no harness (from an older server) shows its model as before.
    expect(renderTrackingComment(run({ model_id: "m1" }))).toContain("model=m1");
  });
});

describe("on the session page and in `dispatch get`", () => {
  let t: TestDispatch;
  beforeAll(async () => {
    t = await startTestDispatch();
  });
  afterAll(async () => {
    await t?.stop();
  });

  it("say which agent ran", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "$ echo hi",
      config: { harness: { type: "oz", name: "scripted" } },
    });
    expect(created.status, created.text).toBe(200);
    const done = await waitForState(t, created.body.run_id, ["SUCCEEDED"]);
    const page = await fetch(done.session_link);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<span class="fact" id="agent">Agent: Scripted (no model)</span>');

    const got = await new Promise<{ code: number | null; stdout: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [MAIN, "get", created.body.run_id], {
        env: {
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? "",
          DISPATCH_BASE_URL: t.url,
          DISPATCH_API_KEY: t.key,
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      child.stdout.on("data", (d) => {
        stdout += d;
      });
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stdout }));
    });
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/^agent\s+Scripted \(no model\)$/m);
  });
});
