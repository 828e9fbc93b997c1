import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunItemSchema } from "../../src/api/schemas/runs.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";

let t: TestDispatch;
let configDir: string;
beforeAll(async () => {
  // The environment the filter test names must be configured: an unknown environment_id is a 400.
  configDir = await mkdtemp(join(tmpdir(), "dispatch-runs-config-"));
  await writeFile(join(configDir, "dispatch.config.yaml"), "environments:\n  prod-env: {}\n");
  // No executor: runs stay where the test puts them.
  t = await startTestDispatch({
    DISPATCH_MAX_CONCURRENT_RUNS: "0",
    DISPATCH_CONFIG_FILE: join(configDir, "dispatch.config.yaml"),
  });
});
afterAll(async () => {
  await t.stop();
  await rm(configDir, { recursive: true, force: true });
});

const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe("POST /agent/runs and /agent/run", () => {
  for (const path of ["/api/v1/agent/runs", "/api/v1/agent/run"]) {
    it(`${path} creates a durable QUEUED run`, async () => {
      const res = await t.api("POST", path, { prompt: "Fix the flaky login test\nmore detail" });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        run_id: expect.any(String),
        task_id: res.body.run_id,
        state: "QUEUED",
        at_capacity: true,
      });
      expect(res.body.run_id).toMatch(
        /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
      const got = await t.api("GET", `/api/v1/agent/runs/${res.body.run_id}`);
      expect(got.status).toBe(200);
      expect(got.body.state).toBe("QUEUED");
    });
  }

  it("returns a complete RunItem with defaults filled in", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "\n\n   first line   \nsecond",
      config: { name: "nightly", base_prompt: "be brief" },
      metadata: { ticket: "ENG-1" },
      unknown_field: "ignored",
    });
    const run = (await t.api("GET", `/api/v1/agent/runs/${created.body.run_id}`)).body;
    expect(RunItemSchema.parse(run)).toBeTruthy();
    expect(run).toMatchObject({
      run_id: created.body.run_id,
      task_id: created.body.run_id,
      title: "first line",
      prompt: "\n\n   first line   \nsecond",
      state: "QUEUED",
      started_at: null,
      finished_at: null,
      run_time: "PT0S",
      source: "API",
      creator: { type: "service_account", uid: "admin", display_name: "Admin" },
      agent_config: { name: "nightly", base_prompt: "be brief", harness: { type: "oz", name: "scripted" } },
      artifacts: [],
      request_usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
      is_sandbox_running: false,
      scope: { type: "Team", uid: "team_default" },
      metadata: { ticket: "ENG-1" },
    });
    expect(run.created_at).toMatch(RFC3339_MS);
    expect(run.updated_at).toMatch(RFC3339_MS);
    expect(run.session_id.length).toBeGreaterThanOrEqual(22);
    expect(run.session_link).toBe(`${t.url}/sessions/${run.session_id}`);
    expect(run).not.toHaveProperty("status_message");
  });

  it("derives titles: first non-empty line cut to 80 characters, given title kept, skill name for skill-only runs", async () => {
    const long = "é".repeat(100);
    const a = await t.api("POST", "/api/v1/agent/runs", { prompt: long });
    expect((await t.api("GET", `/api/v1/agent/runs/${a.body.run_id}`)).body.title).toBe(`${"é".repeat(79)}…`);
    const b = await t.api("POST", "/api/v1/agent/runs", { prompt: "x", title: "My title" });
    expect((await t.api("GET", `/api/v1/agent/runs/${b.body.run_id}`)).body.title).toBe("My title");
    const c = await t.api("POST", "/api/v1/agent/runs", { skill: "acme/skills:triage" });
    const skillRun = (await t.api("GET", `/api/v1/agent/runs/${c.body.run_id}`)).body;
    expect(skillRun.title).toBe("triage");
    expect(skillRun.agent_config).toMatchObject({ skill_spec: "acme/skills:triage", name: "triage" });
  });

  it("accepts limits exactly at the boundary", async () => {
    const res = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "a".repeat(100_000),
      title: "t".repeat(300),
      metadata: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, "v".repeat(256)])),
    });
    expect(res.status).toBe(200);
  });
});

describe("GET /agent/runs/{id}", () => {
  it("answers 404 for unknown runs and for another team's run", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", { prompt: "secret work" });
    const otherTeam = await t.newKey("team_other");
    const other = { authorization: `Bearer ${otherTeam}` };
    for (const [method, path, body] of [
      ["GET", `/api/v1/agent/runs/${created.body.run_id}`, undefined],
      ["GET", `/api/v1/agent/runs/${created.body.run_id}/events`, undefined],
      ["POST", `/api/v1/agent/runs/${created.body.run_id}/followups`, { message: "hi" }],
      ["POST", `/api/v1/agent/runs/${created.body.run_id}/cancel`, undefined],
    ] as const) {
      const res = await t.api(method, path, body, other);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error_code).toBe("resource_not_found");
    }
    const list = await t.api("GET", "/api/v1/agent/runs", undefined, other);
    expect(list.body.runs).toEqual([]);
    expect((await t.api("GET", `/api/v1/agent/runs/${created.body.run_id}`)).body.state).toBe("QUEUED");
    expect((await t.api("GET", "/api/v1/agent/runs/00000000-0000-7000-8000-000000000000")).status).toBe(404);
  });
});

describe("GET /agent/runs filters", () => {
  it("filters by state, name/config_name, model, creator, source, q and time", async () => {
    const key = await t.newKey("team_filters", { displayName: "Filter Person" });
    const h = { authorization: `Bearer ${key}` };
    const mk = async (body: unknown) =>
      (await t.api("POST", "/api/v1/agent/runs", body, h)).body.run_id as string;
    const a = await mk({
      prompt: "Deploy the WIDGET service",
      config: {
        name: "deploys",
        model_id: "openai/gpt-5",
        environment_id: "prod-env",
        skill_spec: "acme/ops:deploy",
      },
    });
    const b = await mk({ prompt: "something else", config: { name: "other" } });
    await t.api("POST", `/api/v1/agent/runs/${b}/cancel`, undefined, h);
    const ids = async (qs: string) =>
      (
        (await t.api("GET", `/api/v1/agent/runs?${qs}`, undefined, h)).body.runs as Array<{ run_id: string }>
      ).map((r) => r.run_id);
    expect(await ids("state=CANCELLED")).toEqual([b]);
    expect((await ids("state=QUEUED&state=CANCELLED")).sort()).toEqual([a, b].sort());
    expect(await ids("state=PENDING&state=BLOCKED")).toEqual([]);
    expect(await ids("name=deploys")).toEqual([a]);
    expect(await ids("config_name=deploys")).toEqual([a]);
    expect(await ids("name=deploys&config_name=deploys")).toEqual([a]);
    expect(await ids("model_id=openai%2Fgpt-5")).toEqual([a]);
    expect(await ids("q=widget")).toEqual([a]);
    expect(await ids("environment_id=prod-env")).toEqual([a]);
    expect(await ids("skill_spec=acme%2Fops%3Adeploy")).toEqual([a]);
    expect(await ids("source=API")).toHaveLength(2);
    expect(await ids("source=SLACK")).toEqual([]);
    const creator = (await t.api("GET", `/api/v1/agent/runs/${a}`, undefined, h)).body.creator.uid;
    expect(await ids(`creator=${creator}`)).toHaveLength(2);
    expect(await ids("created_after=2999-01-01T00:00:00Z")).toEqual([]);
    expect(await ids("created_before=2999-01-01T00:00:00%2B02:00")).toHaveLength(2);
    expect(await ids("updated_after=2000-01-01T00:00:00.000Z&sort_by=title&sort_order=asc")).toEqual([a, b]);
  });
});

describe("follow-ups and cancel", () => {
  it("routes a follow-up to a QUEUED run as a queued prompt", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", { prompt: "start" });
    const res = await t.api("POST", `/api/v1/agent/runs/${created.body.run_id}/followups`, {
      message: "also this",
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ followup_id: expect.any(String), outcome: "queued_prompt" });
  });

  it("cancels a QUEUED run, answers the id as a bare JSON string, and refuses a second cancel", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", { prompt: "start" });
    const id = created.body.run_id;
    const res = await t.api("POST", `/api/v1/agent/runs/${id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.text).toBe(JSON.stringify(id));
    const run = (await t.api("GET", `/api/v1/agent/runs/${id}`)).body;
    expect(run).toMatchObject({ state: "CANCELLED", status_message: { message: "Cancelled by Admin" } });
    expect(run.finished_at).toMatch(RFC3339_MS);
    const again = await t.api("POST", `/api/v1/agent/runs/${id}/cancel`);
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ error_code: "invalid_request" });
    expect(again.body.detail).toContain("CANCELLED");
  });

  it("a follow-up to a finished run hands it back to the queue and clears the outcome", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", { prompt: "start" });
    const id = created.body.run_id;
    await t.api("POST", `/api/v1/agent/runs/${id}/cancel`);
    const res = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, {
      message: "try again",
      mode: "normal",
    });
    expect(res.body.outcome).toBe("handoff_execution");
    const run = await waitForState(t, id, ["QUEUED"]);
    expect(run.finished_at).toBeNull();
    expect(run).not.toHaveProperty("status_message");
  });
});
