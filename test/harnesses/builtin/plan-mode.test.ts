import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelConfigError } from "../../../src/harnesses/builtin/models.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../../support/dispatch.ts";
import { FakeGitHub } from "../../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../../support/git-remotes.ts";
import { scriptedModel } from "./support.ts";

/**
 * `mode: "plan"` with the builtin harness (docs/api.md): the model is told to plan and gets no
 * file-writing tools, and a run on a repository delivers nothing. The model is a scripted mock; the
 * repository a local bare git remote behind the fake GitHub.
 */
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
});
