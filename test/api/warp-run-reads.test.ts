import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { type FakeModel, startFakeModel } from "../support/fake-model/server.ts";

/**
 * The Warp Platform API's reads of a run (conversation, timeline, transcript, harness usage), the
 * conversation-keyed twins, run-by-external-reference and interrupt (docs/api.md), against a real Dispatch.
 * The interrupt runs the builtin harness against a loopback OpenAI-compatible model server.
 */
let t: TestDispatch;
let fake: FakeModel;
let configDir: string;

beforeAll(async () => {
  fake = await startFakeModel([
    // The interrupted turn: a command that would run a minute.
    { calls: [{ name: "shell", input: { command: "echo kept > kept.txt; echo $$ > pid; sleep 60" } }] },
    // The follow-up's turn, in the same workspace.
    { calls: [{ name: "shell", input: { command: "cat kept.txt > seen.txt" } }] },
    { text: "Done." },
  ]);
  configDir = await mkdtemp(join(tmpdir(), "dispatch-config-"));
  const configFile = join(configDir, "dispatch.config.yaml");
  // JSON is YAML: a price for the loopback model, so the run's cost is known.
  await writeFile(
    configFile,
    JSON.stringify({ prices: { "openai-compatible/fake-coder": { input_per_mtok: 1, output_per_mtok: 2 } } }),
  );
  t = await startTestDispatch({
    DISPATCH_CONFIG_FILE: configFile,
    OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl("openai"),
  });
});
afterAll(async () => {
  await t?.stop();
  await fake?.close();
  await rm(configDir, { recursive: true, force: true });
});

async function create(body: Record<string, unknown>): Promise<string> {
  const res = await t.api("POST", "/api/v1/agent/runs", body);
  expect(res.status, res.text).toBe(200);
  return res.body.run_id;
}
const finished = (id: string) => waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"]);

describe("a run's conversation, timeline and transcript", () => {
  let id: string;
  beforeAll(async () => {
    id = await create({ prompt: "$ echo hello" });
    await finished(id);
  });

  it("the conversation is one step per execution: the prompt, the command and its result, the answer", async () => {
    const res = await t.api("GET", `/api/v1/agent/runs/${id}/conversation`);
    expect(res.status).toBe(200);
    expect(res.body.conversation_id).toBe(id);
    const [step] = res.body.steps;
    expect(step).toMatchObject({ id: `${id}:1`, description: "$ echo hello", steps: [] });
    const roles = step.messages.map((m: { role: string }) => m.role);
    expect(roles).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(step.messages[1].content[0]).toMatchObject({ type: "action", category: "command", name: "shell" });
    expect(step.messages[2].content[0]).toMatchObject({
      type: "action_result",
      action_id: step.messages[1].content[0].id,
      state: "completed",
      output: { command: "echo hello", exit_code: 0 },
    });
    // The conversation-keyed twin answers the same.
    expect((await t.api("GET", `/api/v1/agent/conversations/${id}`)).body).toEqual(res.body);
  });

  it("a follow-up that starts a new execution is a new step", async () => {
    const other = await create({ prompt: "$ echo one" });
    await finished(other);
    const sent = await t.api("POST", `/api/v1/agent/conversations/${other}/followups`, {
      message: "$ echo two",
    });
    expect(sent.body).toEqual({
      followup_id: expect.any(String),
      outcome: "handoff_execution",
      run_id: other,
    });
    await waitFor(async () => (await finished(other)).finished_at);
    const steps = (await t.api("GET", `/api/v1/agent/runs/${other}/conversation`)).body.steps;
    expect(steps.map((s: { id: string; description: string }) => [s.id, s.description])).toEqual([
      [`${other}:1`, "$ echo one"],
      [`${other}:2`, "$ echo two"],
    ]);
  });

  it("the timeline: created, claimed, agent started, done; the same event ids on every read", async () => {
    const res = await t.api("GET", `/api/v1/agent/runs/${id}/timeline`);
    expect(res.body.events.map((e: { event_type: string }) => e.event_type)).toEqual([
      "oz_run_created",
      "oz_run_claimed",
      "agent_started",
      "oz_run_done",
    ]);
    expect(res.body.events[0]).toMatchObject({ run_id: id, execution_id: 1, payload: { state: "QUEUED" } });
    expect((await t.api("GET", `/api/v1/agent/runs/${id}/timeline`)).body).toEqual(res.body);
  });

  it("the transcript is a 302 to a signed link serving every event, one per line; an altered link is 403", async () => {
    for (const path of [
      `/api/v1/agent/runs/${id}/transcript`,
      `/api/v1/agent/conversations/${id}/transcript`,
    ]) {
      const res = await fetch(t.url + path, {
        headers: { authorization: `Bearer ${t.key}` },
        redirect: "manual",
      });
      expect(res.status).toBe(302);
      const link = res.headers.get("location")!;
      expect(link).toContain(`/api/v1/agent/runs/${id}/transcript/content?`);
      const content = await fetch(link);
      expect(content.status).toBe(200);
      expect(content.headers.get("content-type")).toContain("application/x-ndjson");
      const lines = (await content.text())
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      const events = (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events;
      expect(lines).toEqual(events);
      const altered = await fetch(link.replace(id, await create({ prompt: "someone else's" })));
      expect(altered.status).toBe(403);
    }
  });

  it("harness usage of a run that is not Claude Code's or Codex's is unavailable, never zeros", async () => {
    const res = await t.api("GET", `/api/v1/agent/runs/${id}/harness-usage`);
    expect(res.body).toEqual({ run_id: id, conversation_id: id, available: false });
  });

  it("another team's run is 404 on every read", async () => {
    const other = await t.newKey("other-team");
    for (const path of ["conversation", "timeline", "transcript", "harness-usage"]) {
      const res = await t.api("GET", `/api/v1/agent/runs/${id}/${path}`, undefined, {
        authorization: `Bearer ${other}`,
      });
      expect(res.status, path).toBe(404);
    }
  });
});

describe("interrupt", () => {
  it("stops the builtin harness's turn within 2 s; the run waits and goes on with a follow-up in the same workspace", async () => {
    const id = await create({ prompt: "Work a while", config: { model_id: "openai-compatible/fake-coder" } });
    const ws = (file: string) => join(t.dataDir, "workspaces", id, file);
    const pid = await waitFor(
      async () => Number(await readFile(ws("pid"), "utf8").catch(() => "")) || undefined,
      {
        what: "the command to start",
      },
    );
    const res = await t.api("POST", `/api/v1/agent/runs/${id}/interrupt`);
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({ run_id: id });
    // The command's processes are gone within 2 s: the turn stopped.
    await waitFor(
      () => {
        try {
          process.kill(-pid, 0);
          return false;
        } catch {
          return true;
        }
      },
      { timeoutMs: 2000, what: "the interrupted command to stop" },
    );
    await waitFor(async () => {
      const events = (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events;
      return events.some((e: { data: { message?: string } }) => e.data.message?.includes("turn was stopped"));
    });
    expect((await t.api("GET", `/api/v1/agent/runs/${id}`)).body.state).toBe("INPROGRESS");
    const followup = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "Go on" });
    expect(followup.body.outcome).toBe("live_session");
    const run = await finished(id);
    expect(run.state).toBe("SUCCEEDED");
    expect(await readFile(ws("seen.txt"), "utf8")).toBe("kept\n");
    // Each completed model call's tokens, priced at $1 (input) and $2 (output) a million.
    const usage = run.request_usage.usage_by_category.primary_agent;
    expect(usage.platform_usage_in_cents).toBe(0);
    const model = usage.custom_endpoint_inference_usage["openai-compatible/fake-coder"];
    const { input_tokens, output_tokens } = run.request_usage;
    expect(input_tokens).toBeGreaterThan(0);
    expect(model.token_count).toEqual({
      input: input_tokens,
      input_cache_read: 0,
      input_cache_write: 0,
      output: output_tokens,
    });
    expect(model.cost_in_cents.input_cost_in_cents).toBeCloseTo((input_tokens * 100) / 1e6, 6);
    expect(model.cost_in_cents.output_cost_in_cents).toBeCloseTo((output_tokens * 2 * 100) / 1e6, 6);
    expect(run.request_usage.inference_cost_usd).toBeCloseTo((input_tokens + 2 * output_tokens) / 1e6, 8);
  });

  it("a run that is not in progress is 400 naming its state; the conversation twin answers alike", async () => {
    const id = await create({ prompt: "$ true" });
    await finished(id);
    for (const path of [
      `/api/v1/agent/runs/${id}/interrupt`,
      `/api/v1/agent/conversations/${id}/interrupt`,
    ]) {
      const res = await t.api("POST", path);
      expect(res.status).toBe(400);
      expect(res.body.detail).toContain("SUCCEEDED");
    }
  });
});

describe("run-by-external-reference", () => {
  it("finds a run by the GitHub comment that started it, and by its issue", async () => {
    const comment = "https://github.com/acme/app/issues/7#issuecomment-99";
    const id = await create({ prompt: "from a comment", on_behalf_of: { trigger_url: comment } });
    const find = (url: string) =>
      t.api("GET", `/api/v1/agent/run-by-external-reference?url=${encodeURIComponent(url)}`);
    expect((await find(comment)).body).toEqual({ run_id: id });
    expect((await find("https://github.com/acme/app/issues/7")).body).toEqual({ run_id: id });
    expect((await find("https://github.com/acme/app/issues/70")).status).toBe(404);
    const bad = await find("https://example.com/nothing");
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain("url");
  });
});
