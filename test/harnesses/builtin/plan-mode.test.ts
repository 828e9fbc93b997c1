import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelConfigError } from "../../../src/harnesses/builtin/models.ts";
import { probeBwrap } from "../../../src/sandbox/bwrap-sandbox.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../../support/dispatch.ts";
import { FakeGitHub } from "../../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../../support/git-remotes.ts";
import { scriptedModel } from "./support.ts";

/**
 * `mode: "plan"` with the builtin harness (docs/api.md): the model is told to plan and gets no
 * file-writing tools, its commands see the workspace read-only (bubblewrap), and a run on a repository
 * delivers nothing. The model is a scripted mock; the repository a local bare git remote behind the fake
 * GitHub.
 */
const bwrapProblem = await probeBwrap("/usr/bin/bwrap");
const mocks = new Map<string, ReturnType<typeof scriptedModel>>();
let remotes: GitRemotes;
let github: FakeGitHub;
let t: TestDispatch;

beforeAll(async () => {
  remotes = new GitRemotes();
  remotes.create("acme/app", { "README.md": "# app\n" });
  github = await new FakeGitHub().start();
  github.gitRoot = remotes.root;
  t = await startTestDispatch(deliveryEnv(remotes, github), {
    builtin: {
      resolveModel: (id) => {
        const m = id ? mocks.get(id) : undefined;
        if (!m) throw new ModelConfigError(`no mock model ${id}`);
        return { id: id!, model: m.model };
      },
    },
  });
});
afterAll(async () => {
  await t?.stop();
  await github?.stop();
  remotes?.remove();
});

function systemText(call: { prompt: Array<{ role: string; content: unknown }> }): string {
  return call.prompt
    .filter((m) => m.role === "system")
    .map((m) => String(m.content))
    .join("\n");
}

describe("plan mode with the builtin harness", () => {
  it("instructs the model to plan, offers no write, edit or ask tool, and pushes nothing", async () => {
    const planned = scriptedModel([{ text: "1. Add a CHANGELOG.md\n2. Mention it in README.md" }]);
    mocks.set("mock/plan", planned);
    const res = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "Add a changelog",
      mode: "plan",
      config: { model_id: "mock/plan", repository: "acme/app", delivery: "branch" },
    });
    expect(res.status).toBe(200);
    const run = await waitForState(t, res.body.run_id, ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR"], 30_000);
    // The plan waits for approval (test/executor/plan-approval.test.ts).
    expect(run.state).toBe("BLOCKED");

    const call = planned.calls[0]!;
    expect(systemText(call)).toContain("PLAN MODE: do not change any file");
    const tools = (call.tools ?? []).map((tool) => tool.name);
    expect(tools).toEqual(expect.arrayContaining(["read_file", "list_files", "search_files", "shell"]));
    expect(tools).not.toContain("write_file");
    expect(tools).not.toContain("edit_file");
    // Questions go in the plan, which waits for a person anyway.
    expect(tools).not.toContain("ask_user");

    // Nothing delivered: no work branch on the remote, no patch or pull request on the run, only the plan.
    expect(remotes.branches("acme/app")).toEqual(["main"]);
    expect(run.artifacts.map((a: { artifact_type: string }) => a.artifact_type)).toEqual(["PLAN"]);
    // Delivery did not even look: a delivered run would say "No changes".
    expect(run.status_message).toMatchObject({ reason: "awaiting_approval" });
  });

  it("a normal run of the same model gets the file tools and no plan instruction", async () => {
    const normal = scriptedModel([{ text: "Nothing to change." }]);
    mocks.set("mock/normal", normal);
    const res = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "Look around",
      config: { model_id: "mock/normal" },
    });
    const run = await waitForState(t, res.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state).toBe("SUCCEEDED");
    const call = normal.calls[0]!;
    expect(systemText(call)).not.toContain("PLAN MODE");
    expect((call.tools ?? []).map((tool) => tool.name)).toEqual(
      expect.arrayContaining(["write_file", "edit_file", "ask_user"]),
    );
  });

  it.skipIf(bwrapProblem !== undefined)(
    "its shell command cannot write the workspace while planning; after Approve the same run's command can",
    async () => {
      const command = "echo planned > plan.txt";
      const model = scriptedModel([
        { calls: [{ tool: "shell", input: { command } }] },
        { text: "1. Write plan.txt" },
        { calls: [{ tool: "shell", input: { command } }] },
        { text: "Wrote plan.txt." },
      ]);
      mocks.set("mock/shell", model);
      const res = await t.api("POST", "/api/v1/agent/runs", {
        prompt: "Write plan.txt",
        mode: "plan",
        config: { model_id: "mock/shell" },
      });
      expect(res.status, res.text).toBe(200);
      const id = res.body.run_id as string;
      const planned = await waitForState(t, id, ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR"], 30_000);
      expect(planned.state, JSON.stringify(planned.status_message)).toBe("BLOCKED");
      expect(planned.status_message).toMatchObject({ reason: "awaiting_approval" });
      const workspace = join(t.dataDir, "workspaces", id);
      expect(existsSync(join(workspace, "plan.txt"))).toBe(false);
      const results = async () =>
        (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events
          .filter((e: { type: string }) => e.type === "tool_result")
          .map((e: { data: Record<string, unknown> }) => JSON.stringify(e.data));
      const [refused] = await results();
      expect(refused).toContain("Read-only file system");

      const approved = await t.api("POST", `/api/v1/agent/runs/${id}/approve`, { action: "approve" });
      expect(approved.status, approved.text).toBe(200);
      const done = await waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
      expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
      expect(readFileSync(join(workspace, "plan.txt"), "utf8")).toBe("planned\n");
      const after = await results();
      expect(after).toHaveLength(2);
      expect(after[1]).not.toContain("Read-only file system");
    },
  );

  it("without a sandbox (DISPATCH_SANDBOX=none) plans all the same and says once that nothing enforces it", async () => {
    mocks.set("mock/unsandboxed", scriptedModel([{ text: "1. Nothing to change" }]));
    const plain = await startTestDispatch(
      { DISPATCH_SANDBOX: "none" },
      { builtin: { resolveModel: (id) => ({ id: id!, model: mocks.get(id!)!.model }) } },
    );
    try {
      const res = await plain.api("POST", "/api/v1/agent/runs", {
        prompt: "Look around",
        mode: "plan",
        config: { model_id: "mock/unsandboxed" },
      });
      expect(res.status, res.text).toBe(200);
      const run = await waitForState(
        plain,
        res.body.run_id,
        ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR"],
        30_000,
      );
      expect(run.state, JSON.stringify(run.status_message)).toBe("BLOCKED");
      const events = (await plain.api("GET", `/api/v1/agent/runs/${run.run_id}/events?limit=1000`)).body
        .events;
      const warnings = events.filter(
        (e: { type: string; data: { message?: string } }) =>
          e.type === "log" && e.data.message?.startsWith("Plan mode is not enforced"),
      );
      expect(warnings).toHaveLength(1);
      expect(warnings[0].data).toMatchObject({ level: "warn", phase: "sandbox" });
    } finally {
      await plain.stop();
    }
  });
});
