import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { costText } from "../../src/model/run-wording.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";

// biome-ignore lint/suspicious/noExplicitAny: API bodies are asserted field by field
type Json = any;

/**
 * Budgets that pause and ask (docs/runtime.md, "Budgets"): the builtin harness against a loopback
 * Anthropic API that reports usage, priced from the default table (Sonnet: $3 / $15 per million tokens,
 * so a step of 1000 input and 500 output tokens costs $0.0105). A run at its limit waits BLOCKED
 * awaiting_budget holding no executor slot; Extend continues the same conversation, Stop here delivers
 * what it has; a person's monthly budget pauses their runs and only an admin extends beyond it.
 */

const SONNET = "anthropic/claude-sonnet-4-5";
const STEP = { input_tokens: 1000, output_tokens: 500 };
const turns: ScriptedTurn[] = [];
let model: FakeModel;
let remotes: GitRemotes;
let github: FakeGitHub;
let t: TestDispatch;
let configDir: string;

beforeAll(async () => {
  model = await startFakeModel(turns);
  remotes = new GitRemotes();
  remotes.create("acme/app", { "README.md": "# app\n" });
  github = await new FakeGitHub().start();
  github.gitRoot = remotes.root;
  configDir = await mkdtemp(join(tmpdir(), "dispatch-budgets-"));
  const configFile = join(configDir, "dispatch.config.yaml");
  await writeFile(configFile, "budgets:\n  people:\n    mona@example.com: 0.013\n");
  t = await startTestDispatch({
    ANTHROPIC_API_KEY: "test-anthropic-key",
    ANTHROPIC_BASE_URL: model.baseUrl("anthropic"),
    DISPATCH_CONFIG_FILE: configFile,
    DISPATCH_MAX_CONCURRENT_RUNS: "1",
    DISPATCH_POLL_INTERVAL_MS: "100",
    ...deliveryEnv(remotes, github),
  });
});
afterAll(async () => {
  await t?.stop();
  await model?.close();
  await github?.stop();
  remotes?.remove();
  await rm(configDir, { recursive: true, force: true });
});

const as = (key: string) => ({ authorization: `Bearer ${key}` });
const getRun = async (id: string): Promise<Json> => (await t.api("GET", `/api/v1/agent/runs/${id}`)).body;
const events = async (id: string): Promise<Json[]> =>
  (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events;
const budget = (id: string, body: Json, key?: string) =>
  t.api("POST", `/api/v1/agent/runs/${id}/budget`, body, key ? as(key) : {});

async function start(config: Json, prompt: string, key?: string): Promise<string> {
  const res = await t.api(
    "POST",
    "/api/v1/agent/runs",
    { prompt, config: { model_id: SONNET, ...config } },
    key ? as(key) : {},
  );
  expect(res.status, res.text).toBe(200);
  return res.body.run_id;
}

async function waiting(id: string): Promise<Json> {
  const run = await waitForState(t, id, ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR", "CANCELLED"], 30_000);
  expect(run.state, JSON.stringify(run.status_message)).toBe("BLOCKED");
  expect(run.status_message.reason).toBe("awaiting_budget");
  return run;
}

describe("a run at its limit", () => {
  it("waits with nothing lost and no slot; Extend continues the same conversation, Stop here ends it", async () => {
    const before = model.agentRequests().length;
    turns.push(
      // The first run: one step over its one-cent limit, then (extended) its last answer.
      { calls: [{ name: "shell", input: { command: "echo one > one.txt" } }], usage: STEP },
      // The second run, waiting beside it: the one executor slot is free for it.
      { calls: [{ name: "shell", input: { command: "echo two > two.txt" } }], usage: STEP },
      { text: "Finished after the extension.", usage: { input_tokens: 10, output_tokens: 10 } },
    );
    const first = await start({ max_cost_usd: 0.01 }, "Write one.txt");
    const run = await waiting(first);
    const second = await start({ max_cost_usd: 0.01 }, "Write two.txt");
    await waiting(second);
    // Both wait, and neither holds the one slot (the second ran after the first began waiting).
    await waitFor(() => t.dispatch.executor!.activeRuns === 0, { what: "no run to hold a slot" });
    expect((await getRun(first)).state).toBe("BLOCKED");
    expect(model.agentRequests().length - before).toBe(2);

    // What it spent, which limit, what it needs; the same on the run's budget for cards and buttons.
    expect(run.status_message.message).toContain("has cost $0.0105");
    expect(run.status_message.message).toContain("its cost limit (config.max_cost_usd) is $0.01");
    expect(run.status_message.message).toContain("needs about $0.011 more");
    expect(run.budget).toMatchObject({
      limit: { scope: "run", used_usd: expect.closeTo(0.0105, 6), limit_usd: 0.01 },
      spent_usd: expect.closeTo(0.0105, 6),
      needs_usd: 0.011,
    });
    expect(run.request_usage.inference_cost).toBeCloseTo(0.0105, 6);
    expect(costText(run)).toBe("$0.0105 of $0.01 (105 % spent)");
    // Nothing lost: the step's command ran, its result is in the transcript.
    expect(await readFile(join(t.dataDir, "workspaces", first, "one.txt"), "utf8")).toBe("one\n");
    expect((await events(first)).some((e) => e.type === "tool_result" && e.data.call_id)).toBe(true);

    const bad = await budget(first, { action: "extend" });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain("amount_usd");
    const once = { "idempotency-key": `extend-${first}` };
    const extend = { action: "extend", amount_usd: 0.05 };
    const extended = await t.api("POST", `/api/v1/agent/runs/${first}/budget`, extend, once);
    expect(extended.status, extended.text).toBe(200);
    expect(extended.body).toMatchObject({
      state: "INPROGRESS",
      budget: { extended_usd: expect.any(Number) },
    });
    // Its retry (the answer lost on the way) gets the same answer, extends nothing more; the key with
    // another answer is refused.
    const retried = await t.api("POST", `/api/v1/agent/runs/${first}/budget`, extend, once);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body).toEqual(extended.body);
    const reused = await t.api("POST", `/api/v1/agent/runs/${first}/budget`, { action: "stop" }, once);
    expect(reused.status).toBe(422);
    expect(reused.body.error_code).toBe("idempotency_key_reused");
    const done = await waitForState(t, first, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    // One execution: it waited and went on in place.
    const transcript = await events(first);
    expect(transcript.filter((e) => e.type === "state").map((e) => e.data.state)).toEqual([
      "QUEUED",
      "INPROGRESS",
      "BLOCKED",
      "INPROGRESS",
      "SUCCEEDED",
    ]);
    expect(JSON.stringify(transcript)).toContain("extended the budget by $0.05");
    expect(JSON.stringify(transcript).match(/extended the budget by/g)).toHaveLength(1);
    // The model saw the earlier turns: its command and the result.
    const resumed = JSON.stringify(model.agentRequests().at(-1)!.body.messages);
    expect(resumed).toContain("echo one > one.txt");
    expect(resumed).toContain("Continue the task from where you stopped");
    expect(done.budget.limit.limit_usd).toBeCloseTo(0.0105 + 0.05, 6);

    // A second answer finds nothing waiting.
    expect((await budget(first, { action: "stop" })).status).toBe(409);

    // Stop here: no model call, the run ends with what it has.
    const calls = model.agentRequests().length;
    const stopped = await budget(second, { action: "stop" });
    expect(stopped.status, stopped.text).toBe(200);
    const ended = await waitForState(t, second, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(ended.state).toBe("SUCCEEDED");
    expect(ended.status_message.message).toContain("Stopped at its budget by");
    expect(model.agentRequests().length).toBe(calls);
    expect(await readFile(join(t.dataDir, "workspaces", second, "two.txt"), "utf8")).toBe("two\n");
  });

  it("Stop here commits, pushes and opens a pull request with the work so far", async () => {
    turns.push(
      {
        text: "Writing the notes first.",
        calls: [{ name: "write_file", input: { path: "notes.md", content: "Half done.\n" } }],
        usage: STEP,
      },
      { calls: [{ name: "write_file", input: { path: "never.md", content: "no\n" } }], usage: STEP },
    );
    const id = await start({ max_cost_usd: 0.01, repository: "acme/app" }, "Write the notes and more");
    await waiting(id);
    turns.length = 0;

    // Someone else on the team sees the run but may not answer its budget.
    const other = await t.newKey("team_default", { displayName: "Otto" });
    const refused = await budget(id, { action: "stop" }, other);
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain("only the person who asked for it");

    expect((await budget(id, { action: "stop" })).status).toBe(200);
    const run = await waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    expect(run.status_message.message).toMatch(/^PR #\d+ opened: /);
    const branch = run.agent_config.branch as string;
    expect(remotes.show("acme/app", branch, "notes.md")).toBe("Half done.\n");
    expect(remotes.branches("acme/app")).toContain(branch);
    expect(() => remotes.show("acme/app", branch, "never.md")).toThrow();
    expect(github.pulls.find((p) => p.head === branch)).toMatchObject({ repo: "acme/app", base: "main" });
  });
});

describe("a person's monthly budget", () => {
  it("warns at 80 %, pauses their next run, and only an admin extends beyond it", async () => {
    const mona = await t.newKey("team_default", { displayName: "Mona", email: "mona@example.com" });
    // $0.0105 of Mona's $0.013: past 80 %, and the run finishes under it.
    turns.push(
      { calls: [{ name: "shell", input: { command: "echo a" } }], usage: STEP },
      { text: "Done.", usage: { input_tokens: 100, output_tokens: 20 } },
    );
    const first = await start({}, "First task", mona);
    const done = await waitForState(t, first, ["SUCCEEDED", "FAILED", "ERROR", "BLOCKED"], 30_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    const warning = (await events(first)).find((e) => e.type === "log" && e.data.phase === "budget");
    expect(warning?.data.message).toBe("80 % of the $0.013 budget spent (the monthly budget of Mona)");
    expect(done.budget.limit).toMatchObject({ scope: "person", limit_usd: 0.013 });
    expect(costText(done)).toMatch(
      /^\$0\.0111 · \$0\.0111 of the monthly budget of Mona, \$0\.013 \(85 % spent\)$/,
    );

    // The month has $0.0019 left for Mona: her next run pauses after its first step.
    turns.push(
      { calls: [{ name: "shell", input: { command: "echo b" } }], usage: STEP },
      { text: "Done again.", usage: { input_tokens: 10, output_tokens: 10 } },
    );
    const second = await start({}, "Second task", mona);
    const run = await waiting(second);
    expect(run.status_message.message).toContain("the monthly budget of Mona of $0.013 is spent");
    expect(run.budget.limit.scope).toBe("person");

    const hers = await budget(second, { action: "extend", amount_usd: 1 }, mona);
    expect(hers.status).toBe(403);
    expect(hers.body.detail).toContain("only an admin may extend beyond it");
    const admin = await budget(second, { action: "extend", amount_usd: 1 });
    expect(admin.status, admin.text).toBe(200);
    const ended = await waitForState(t, second, ["SUCCEEDED", "FAILED", "ERROR", "BLOCKED"], 30_000);
    expect(ended.state, JSON.stringify(ended.status_message)).toBe("SUCCEEDED");
  });
});

describe("budgets in dispatch.config.yaml", () => {
  async function refused(yaml: string, env: Record<string, string> = {}): Promise<string> {
    const file = join(configDir, `bad-${Math.random().toString(36).slice(2)}.yaml`);
    await writeFile(file, yaml);
    try {
      loadConfig({ DISPATCH_DATA_DIR: configDir, DISPATCH_CONFIG_FILE: file, ...env });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error("the configuration was accepted");
  }

  it("are read, with every map empty when left out", async () => {
    const file = join(configDir, "good.yaml");
    await writeFile(
      file,
      "budgets:\n  run_usd: 2\n  person_usd: 50\n  repositories:\n    acme/app: 300\n  channels:\n    slack:T1:C1: 100\n  admins: [U0ADMIN]\n",
    );
    const config = loadConfig({ DISPATCH_DATA_DIR: configDir, DISPATCH_CONFIG_FILE: file });
    expect(config.cost.defaultMaxCostUsd).toBe(2);
    expect(config.cost.budgets).toMatchObject({
      person_usd: 50,
      repositories: { "acme/app": 300 },
      channels: { "slack:T1:C1": 100 },
      people: {},
      teams: {},
      admins: ["U0ADMIN"],
    });
    expect(existsSync(file)).toBe(true);
  });

  it("refuses bad amounts, keys and fields, naming them", async () => {
    const negative = await refused("budgets:\n  person_usd: -5\n");
    expect(negative).toContain("budgets.person_usd");
    expect(negative).toContain("more than 0 US dollars");
    const text = await refused('budgets:\n  teams:\n    team_default: "lots"\n');
    expect(text).toContain("budgets.teams.team_default");
    const channel = await refused("budgets:\n  channels:\n    C0123: 10\n");
    expect(channel).toContain("budgets.channels.C0123");
    expect(channel).toContain("platform:workspace:channel");
    const unknown = await refused("budgets:\n  monthly_usd: 10\n");
    expect(unknown).toContain("monthly_usd");
    const twice = await refused("budgets:\n  run_usd: 2\n", { DISPATCH_MAX_COST_USD: "3" });
    expect(twice).toContain("keep one of them");
  });
});
