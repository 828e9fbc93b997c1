import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunItemSchema } from "../../src/api/schemas/runs.ts";
import { OZ_ERROR_CODES, ozErrorCodeOf } from "../../src/model/status-reason.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";

/**
 * Oz's wire rules (docs/api.md) on runs: the harness in Oz's form, status_message with Oz's error_code
 * and Dispatch's reason, the create fields (team, interactive, conversation_id, parent_run_id, mode),
 * integer event cursors and the session/conversation redirects. No model is configured, so runs use the
 * scripted harness unless they say otherwise.
 */
let t: TestDispatch;
let otherTeamKey: string;

beforeAll(async () => {
  t = await startTestDispatch();
  otherTeamKey = await t.newKey("other-team");
});
afterAll(async () => {
  await t?.stop();
});

async function create(body: Record<string, unknown>, key?: string) {
  return t.api("POST", "/api/v1/agent/runs", body, key ? { authorization: `Bearer ${key}` } : {});
}

async function createRun(body: Record<string, unknown>): Promise<string> {
  const res = await create(body);
  expect(res.status, res.text).toBe(200);
  return res.body.run_id;
}

async function events(runId: string) {
  return (await t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`)).body.events as Array<{
    type: string;
    data: Record<string, unknown>;
  }>;
}

describe("agent_config.harness on the wire", () => {
  it("shows Dispatch's own harnesses as {type: oz, name}, whichever spelling created them", async () => {
    const cases: Array<[unknown, unknown]> = [
      [undefined, { type: "oz", name: "scripted" }],
      [{ type: "oz" }, { type: "oz", name: "scripted" }],
      [
        { type: "oz", name: "scripted" },
        { type: "oz", name: "scripted" },
      ],
      [{ type: "scripted" }, { type: "oz", name: "scripted" }],
      // The legacy spelling a run stored before this form existed: still shown in the new form.
      [{ type: "builtin" }, { type: "oz", name: "builtin" }],
    ];
    for (const [harness, shown] of cases) {
      const id = await createRun({ prompt: "hello", ...(harness ? { config: { harness } } : {}) });
      const run = (await t.api("GET", `/api/v1/agent/runs/${id}`)).body;
      expect(run.agent_config.harness, JSON.stringify(harness)).toEqual(shown);
      expect(RunItemSchema.parse(run)).toBeTruthy();
    }
  });

  it("refuses a harness this server has not registered with operation_not_supported, listing what it has", async () => {
    const res = await create({ prompt: "x", config: { harness: { type: "quantum" } } });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect(res.body.error_code).toBe("operation_not_supported");
    expect(res.body.detail).toContain('harness "quantum" is not available on this server');
    expect(res.body.detail).toContain('{"type":"oz","name":"builtin"}');
    expect(res.body.detail).toContain('{"type":"oz","name":"scripted"}');
  });

  it("refuses a name with a type other than oz, and an unknown oz name", async () => {
    const named = await create({ prompt: "x", config: { harness: { type: "codex", name: "builtin" } } });
    expect(named.status).toBe(400);
    expect(named.body.error_code).toBe("invalid_request");
    expect(named.body.detail).toContain("config.harness.name");
    const unknown = await create({ prompt: "x", config: { harness: { type: "oz", name: "nope" } } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error_code).toBe("operation_not_supported");
    expect(unknown.body.detail).toContain('harness "nope"');
  });
});

describe("status_message on the wire", () => {
  it("a failed command: no Oz code, reason command_failed", async () => {
    const id = await createRun({ prompt: "$ exit 3" });
    const run = await waitForState(t, id, ["FAILED"]);
    expect(run.status_message).toEqual({
      message: "Command `exit 3` exited with code 3",
      reason: "command_failed",
      retryable: false,
    });
    expect(RunItemSchema.parse(run)).toBeTruthy();
  });

  it("a cancelled run: reason cancelled, in the run and in its transcript", async () => {
    const id = await createRun({ prompt: "$ sleep 30" });
    await waitForState(t, id, ["INPROGRESS"]);
    expect((await t.api("POST", `/api/v1/agent/runs/${id}/cancel`)).status).toBe(200);
    const run = (await t.api("GET", `/api/v1/agent/runs/${id}`)).body;
    expect(run.state).toBe("CANCELLED");
    expect(run.status_message).toEqual({
      message: "Cancelled by Admin",
      reason: "cancelled",
      retryable: false,
    });
    const state = (await events(id)).findLast((e) => e.type === "state");
    expect(state?.data.status_message).toEqual(run.status_message);
  });

  it("every reason Dispatch records is shown with one of Oz's codes or none", () => {
    const reasons = [
      "cancelled",
      "aborted",
      "worker_lost",
      "worker_shutdown",
      "time_limit",
      "step_limit",
      "model_output_limit",
      "disk_quota_exceeded",
      "model_error",
      "mcp_server_failed",
      "harness_unavailable",
      "delivery_failed",
      "repository_unavailable",
      "command_failed",
      "agent_failed",
      "environment_setup_failed",
      "environment_misconfigured",
      "environment_unavailable",
      "skill_not_found",
      "model_not_configured",
      "unknown_model",
      "unknown_provider",
      "internal_error",
      "something_new",
    ];
    for (const reason of reasons) {
      const code = ozErrorCodeOf(reason);
      if (code !== undefined) expect(OZ_ERROR_CODES).toContain(code);
    }
    expect(ozErrorCodeOf("time_limit")).toBe("budget_exceeded");
    expect(ozErrorCodeOf("worker_lost")).toBe("internal_error");
    expect(ozErrorCodeOf("delivery_failed")).toBe("resource_unavailable");
    expect(ozErrorCodeOf("harness_unavailable")).toBe("feature_not_available");
    expect(ozErrorCodeOf("cancelled")).toBeUndefined();
    expect(ozErrorCodeOf("something_new")).toBeUndefined();
  });
});

describe("Oz's create fields", () => {
  it("team: true and interactive are accepted; team: false is operation_not_supported", async () => {
    expect((await create({ prompt: "hi", team: true, interactive: true })).status).toBe(200);
    const personal = await create({ prompt: "hi", team: false });
    expect(personal.status).toBe(400);
    expect(personal.body.error_code).toBe("operation_not_supported");
    expect(personal.body.detail).toContain("team");
    const wrongType = await create({ prompt: "hi", interactive: "yes" });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.detail).toContain("interactive");
  });

  it("parent_run_id: recorded, must be a run of the team, and ancestor_run_id lists descendants at any depth", async () => {
    const root = await createRun({ prompt: "root" });
    const child = await createRun({ prompt: "child", parent_run_id: root });
    const grandchild = await createRun({ prompt: "grandchild", parent_run_id: child });
    await createRun({ prompt: "unrelated" });
    const shown = (await t.api("GET", `/api/v1/agent/runs/${grandchild}`)).body;
    expect(shown.parent_run_id).toBe(child);
    expect((await t.api("GET", `/api/v1/agent/runs/${root}`)).body).not.toHaveProperty("parent_run_id");

    const ids = async (ancestor: string) =>
      (
        await t.api("GET", `/api/v1/agent/runs?ancestor_run_id=${ancestor}&sort_order=asc&sort_by=created_at`)
      ).body.runs.map((r: { run_id: string }) => r.run_id);
    expect(await ids(root)).toEqual([child, grandchild]);
    expect(await ids(child)).toEqual([grandchild]);
    expect(await ids(grandchild)).toEqual([]);

    const unknown = await create({ prompt: "x", parent_run_id: "0193aaaa-0000-7000-8000-000000000000" });
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toContain("parent_run_id");
    // Another team's run is as unknown as a run that does not exist.
    const foreign = await create({ prompt: "x", parent_run_id: root }, otherTeamKey);
    expect(foreign.status).toBe(400);
    expect(foreign.body.detail).toContain("parent_run_id");
  });

  it("conversation_id continues that run: the prompt is its follow-up and the answer names it", async () => {
    const id = await createRun({ prompt: "$ echo one > one.txt" });
    await waitForState(t, id, ["SUCCEEDED"]);
    const before = (await t.api("GET", "/api/v1/agent/runs?limit=500")).body.runs.length;
    const res = await create({ prompt: "$ cat one.txt", conversation_id: id });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ run_id: id, task_id: id, state: "QUEUED", at_capacity: false });
    const run = await waitForState(t, id, ["SUCCEEDED", "FAILED"]);
    expect(run.state).toBe("SUCCEEDED");
    expect(run.conversation_id).toBe(id);
    const results = (await events(id)).filter((e) => e.type === "tool_result").map((e) => e.data.output);
    expect(results.at(-1)).toBe("one\n");
    expect((await t.api("GET", "/api/v1/agent/runs?limit=500")).body.runs.length).toBe(before);
  });

  it("conversation_id: refused for an unknown or another team's run, and with fields only a new run has", async () => {
    const id = await createRun({ prompt: "hi" });
    const unknown = await create({ prompt: "x", conversation_id: "no-such-run" });
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toContain("conversation_id");
    const foreign = await create({ prompt: "x", conversation_id: id }, otherTeamKey);
    expect(foreign.status).toBe(400);
    const withConfig = await create({ prompt: "x", conversation_id: id, config: { name: "n" } });
    expect(withConfig.status).toBe(400);
    expect(withConfig.body.detail).toContain("config");
  });

  it("mode plan: the scripted agent answers with a plan, runs nothing and waits; orchestrate is operation_not_supported", async () => {
    const id = await createRun({ prompt: "Tidy up\n$ echo x > new.txt\n$ rm -rf build", mode: "plan" });
    const run = await waitForState(t, id, ["BLOCKED", "SUCCEEDED", "FAILED"]);
    expect(run.state).toBe("BLOCKED");
    expect(run.status_message).toMatchObject({ reason: "awaiting_approval" });
    expect(run.status_message).not.toHaveProperty("error_code");
    expect(run.artifacts).toEqual([
      expect.objectContaining({
        artifact_type: "PLAN",
        data: expect.objectContaining({ title: expect.any(String) }),
      }),
    ]);
    const transcript = await events(id);
    expect(transcript.filter((e) => e.type === "tool_call")).toEqual([]);
    const answer = transcript.findLast((e) => e.type === "message" && e.data.role === "assistant");
    expect(answer?.data.text).toContain("Plan (nothing was run):\n$ echo x > new.txt\n$ rm -rf build");
    // The Warp Platform API's task_status=blocked finds it.
    const blocked = await t.api("GET", "/api/v1/agent/runs?task_status=blocked&limit=100");
    expect(blocked.body.runs.map((r: { run_id: string }) => r.run_id)).toContain(id);

    // A normal follow-up answers it with other work; a plan follow-up plans again and waits again.
    await t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "$ echo done", mode: "normal" });
    await waitForState(t, id, ["SUCCEEDED"]);
    const planned = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, {
      message: "$ echo again",
      mode: "plan",
    });
    expect(planned.status).toBe(200);
    await waitForState(t, id, ["BLOCKED"]);
    expect(
      (await events(id))
        .filter((e) => e.type === "message" && e.data.role === "assistant")
        .some((e) => String(e.data.text).includes("$ echo again")),
    ).toBe(true);
    expect((await events(id)).filter((e) => e.type === "tool_call").map((e) => e.data.command)).toEqual([
      "echo done",
    ]);

    for (const send of [
      () => create({ prompt: "x", mode: "orchestrate" }),
      () => t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "x", mode: "orchestrate" }),
    ]) {
      const res = await send();
      expect(res.status).toBe(400);
      expect(res.body.error_code).toBe("operation_not_supported");
      expect(res.body.detail).toContain("mode");
    }
    expect((await create({ prompt: "x", mode: "sideways" })).status).toBe(400);
  });
});

describe("event cursors", () => {
  it("are integers; a cursor that is not a safe integer is 400 naming it", async () => {
    const id = await createRun({ prompt: "hello" });
    await waitForState(t, id, ["SUCCEEDED"]);
    const page = (await t.api("GET", `/api/v1/agent/runs/${id}/events?after=0&limit=2`)).body;
    expect(Number.isSafeInteger(page.next_after)).toBe(true);
    expect(page.events.every((e: { seq: number }) => Number.isSafeInteger(e.seq))).toBe(true);
    for (const after of ["1.5", "1e3", "-1", "99999999999999999999"]) {
      const res = await t.api("GET", `/api/v1/agent/runs/${id}/events?after=${after}`);
      expect(res.status, after).toBe(400);
      expect(res.body.detail).toMatch(/^after: /);
    }
    const sse = await fetch(`${t.url}/api/v1/agent/runs/${id}/events`, {
      headers: { authorization: `Bearer ${t.key}`, accept: "text/event-stream", "last-event-id": "2.5" },
    });
    expect(sse.status).toBe(400);
    expect(await sse.text()).toContain("Last-Event-ID");
  });
});

describe("session and conversation redirects", () => {
  it("a session answers its conversation once the run has ended; a conversation answers its live session", async () => {
    const id = await createRun({ prompt: "$ sleep 30" });
    const { session_id: sessionId } = await waitForState(t, id, ["INPROGRESS"]);
    const session = (path: string) => fetch(`${t.url}/api/v1/agent/sessions/${path}/redirect`);

    // No key: the session id is the capability.
    const live = await session(sessionId);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({});
    expect((await t.api("GET", `/api/v1/agent/conversations/${id}/redirect`)).body).toEqual({
      session_id: sessionId,
    });

    await t.api("POST", `/api/v1/agent/runs/${id}/cancel`);
    expect(await (await session(sessionId)).json()).toEqual({ conversation_id: id });
    expect((await t.api("GET", `/api/v1/agent/conversations/${id}/redirect`)).body).toEqual({});

    expect((await session("no-such-session")).status).toBe(404);
    // A run id alone never yields the session: the conversation resolver needs a key of the run's team.
    expect((await fetch(`${t.url}/api/v1/agent/conversations/${id}/redirect`)).status).toBe(401);
    const foreign = await t.api("GET", `/api/v1/agent/conversations/${id}/redirect`, undefined, {
      authorization: `Bearer ${otherTeamKey}`,
    });
    expect(foreign.status).toBe(404);
  });
});
