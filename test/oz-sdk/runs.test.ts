import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import OzAPI, { BadRequestError, NotFoundError } from "oz-agent-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OZ_ERROR_CODES } from "../../src/model/status-reason.ts";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";

/**
 * The official Oz TypeScript SDK (`oz-agent-sdk`, pinned in package.json) against a live Dispatch: every
 * call it has for runs (agent.run, runs.retrieve, runs.list with its filters, runs.cancel) and for the
 * skills catalog (agent.list). Runs use the scripted harness (no model is configured), one skill and one
 * environment come from a dispatch.config.yaml.
 */
let root: string;
let t: TestDispatch;
let oz: OzAPI;

async function put(path: string, text: string) {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "dispatch-oz-sdk-"));
  await put(
    join(root, "skills", "greeter", "SKILL.md"),
    "---\nname: greeter\ndescription: Greets.\n---\nSay hi.\n",
  );
  const configFile = join(root, "dispatch.config.yaml");
  await writeFile(
    configFile,
    JSON.stringify({
      environments: { bare: { description: "Nothing to set up", setup: [] } },
      skills: { dirs: [join(root, "skills")], github: false },
    }),
  );
  t = await startTestDispatch({ DISPATCH_CONFIG_FILE: configFile });
  oz = new OzAPI({ baseURL: `${t.url}/api/v1`, apiKey: t.key, maxRetries: 0 });
});
afterAll(async () => {
  await t?.stop();
  await rm(root, { recursive: true, force: true });
});

async function settled(runId: string) {
  return waitFor(
    async () => {
      const run = await oz.agent.runs.retrieve(runId);
      return ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"].includes(run.state) ? run : undefined;
    },
    { what: `run ${runId} to finish`, timeoutMs: 20_000 },
  );
}

describe("runs through the official Oz TypeScript SDK", () => {
  it("agent.run creates a run that runs.retrieve shows in Oz's shapes", async () => {
    const created = await oz.agent.run({
      prompt: "$ echo hello from the sdk",
      title: "SDK run",
      team: true,
      config: { name: "sdk-suite", environment_id: "bare" },
    });
    expect(created).toMatchObject({ run_id: expect.any(String), task_id: created.run_id, state: "QUEUED" });
    const run = await settled(created.run_id);
    expect(run.state).toBe("SUCCEEDED");
    expect(run.title).toBe("SDK run");
    expect(run.agent_config).toMatchObject({
      name: "sdk-suite",
      environment_id: "bare",
      harness: { type: "oz", name: "scripted" },
    });
    expect(run.conversation_id).toBe(run.run_id);
    expect(run.scope).toEqual({ type: "Team", uid: "team_default" });
    expect(run.source).toBe("API");
    expect(run.creator?.uid).toBe("admin");
  });

  it("a failed run carries one of Oz's error codes or none, and Dispatch's reason", async () => {
    const created = await oz.agent.run({ prompt: "$ exit 4" });
    const run = await settled(created.run_id);
    expect(run.state).toBe("FAILED");
    const status = run.status_message as { message: string; error_code?: string; reason?: string };
    expect(status.message).toContain("exit 4");
    expect(status.reason).toBe("command_failed");
    if (status.error_code !== undefined) expect(OZ_ERROR_CODES).toContain(status.error_code);
  });

  it("agent.run with conversation_id continues that run", async () => {
    const first = await oz.agent.run({ prompt: "$ echo one > one.txt" });
    await settled(first.run_id);
    const again = await oz.agent.run({ prompt: "$ cat one.txt", conversation_id: first.run_id });
    expect(again.run_id).toBe(first.run_id);
    await waitFor(async () => (await oz.agent.runs.retrieve(first.run_id)).state === "SUCCEEDED", {
      what: "the continued run",
    });
  });

  it("runs.list filters by state (repeated), name, source, environment, skill, dates and q, and pages", async () => {
    const named = await oz.agent.run({
      prompt: "$ true",
      config: { name: "list-me", environment_id: "bare" },
    });
    await settled(named.run_id);
    const skilled = await oz.agent.run({ skill: "greeter", prompt: "$ echo hi" });
    await settled(skilled.run_id);
    const since = new Date(Date.now() - 60_000).toISOString();

    const byName = await oz.agent.runs.list({ name: "list-me" });
    expect(byName.runs.map((r) => r.run_id)).toEqual([named.run_id]);
    const bySkill = await oz.agent.runs.list({ skill: "greeter" });
    expect(bySkill.runs.map((r) => r.run_id)).toEqual([skilled.run_id]);
    expect((await oz.agent.runs.list({ skill_spec: "greeter" })).runs.map((r) => r.run_id)).toEqual([
      skilled.run_id,
    ]);
    const filtered = await oz.agent.runs.list({
      state: ["SUCCEEDED", "FAILED"],
      source: "API",
      environment_id: "bare",
      creator: "admin",
      created_after: since,
      updated_after: since,
      created_before: new Date(Date.now() + 60_000).toISOString(),
      q: "true",
      limit: 10,
    });
    expect(filtered.runs.map((r) => r.run_id)).toEqual([named.run_id]);
    expect((await oz.agent.runs.list({ artifact_type: "PULL_REQUEST" })).runs).toEqual([]);
    expect((await oz.agent.runs.list({ schedule_id: "no-such-schedule" })).runs).toEqual([]);

    const first = await oz.agent.runs.list({ limit: 1 });
    expect(first.runs).toHaveLength(1);
    expect(first.page_info.has_next_page).toBe(true);
    const second = await oz.agent.runs.list({ limit: 1, cursor: first.page_info.next_cursor! });
    expect(second.runs[0]?.run_id).not.toBe(first.runs[0]?.run_id);
  });

  it("runs.cancel answers the run id and the run is CANCELLED; a finished run is 400", async () => {
    const created = await oz.agent.run({ prompt: "$ sleep 30" });
    await waitFor(async () => (await oz.agent.runs.retrieve(created.run_id)).state === "INPROGRESS", {
      what: "the run to start",
    });
    expect(await oz.agent.runs.cancel(created.run_id)).toBe(created.run_id);
    const run = await oz.agent.runs.retrieve(created.run_id);
    expect(run.state).toBe("CANCELLED");
    expect(run.status_message).toMatchObject({ reason: "cancelled" });
    await expect(oz.agent.runs.cancel(created.run_id)).rejects.toBeInstanceOf(BadRequestError);
  });

  it("an unknown run is the SDK's NotFoundError; a bad request its BadRequestError", async () => {
    await expect(oz.agent.runs.retrieve("no-such-run")).rejects.toBeInstanceOf(NotFoundError);
    await expect(oz.agent.run({ prompt: "x", team: false })).rejects.toBeInstanceOf(BadRequestError);
  });
});

describe("the skills catalog through the official Oz TypeScript SDK", () => {
  it("agent.list names the configured skills with their variants", async () => {
    const { agents } = await oz.agent.list({ sort_by: "name", refresh: true });
    const greeter = agents.find((a) => a.name === "greeter");
    expect(greeter?.variants[0]).toMatchObject({ description: "Greets.", base_prompt: "Say hi." });
  });
});
