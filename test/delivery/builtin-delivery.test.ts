import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { type FakeModel, startFakeModel } from "../support/fake-model/server.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";

type Ev = { type: string; data: Record<string, unknown> };

/**
 * A run of the builtin harness (a loopback OpenAI-compatible model whose tool calls edit files) in a
 * repository: what the model's tools wrote is committed, pushed to the dispatch/ branch and opened as a
 * pull request whose body is the model's last message.
 */
describe("delivery of a builtin harness run", () => {
  let remotes: GitRemotes;
  let github: FakeGitHub;
  let model: FakeModel;
  let t: TestDispatch;

  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create("acme/app", { "README.md": "# app\n", "src/login.ts": "export const retries = 1;\n" });
    github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    model = await startFakeModel([
      { calls: [{ name: "shell", input: { command: "git log --format=%s -1 && git status --short" } }] },
      {
        text: "Raising the retries.",
        calls: [
          {
            name: "edit_file",
            input: { path: "src/login.ts", old_string: "retries = 1", new_string: "retries = 3" },
          },
          { name: "write_file", input: { path: "docs/retries.md", content: "Login retries 3 times.\n" } },
        ],
      },
      { text: "Raised the login retries to 3 and documented it." },
    ]);
    t = await startTestDispatch({
      OPENAI_COMPATIBLE_BASE_URL: model.baseUrl("openai"),
      ...deliveryEnv(remotes, github),
    });
  });
  afterAll(async () => {
    await t?.stop();
    await model?.close();
    await github?.stop();
    remotes?.remove();
  });

  it("pushes what the model's tool calls wrote and opens a pull request", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", {
      title: "Raise the login retries",
      prompt: "Raise the login retries to 3",
      config: { repository: "acme/app", model_id: "openai-compatible/fake-coder" },
    });
    expect(created.status, created.text).toBe(200);
    const run = await waitForState(t, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.status_message?.message).toMatch(
      /^PR #\d+ opened: https:\/\/github.com\/acme\/app\/pull\/\d+ \(\+2 −1 in 2 files\)$/,
    );
    expect(run.state).toBe("SUCCEEDED");
    expect(run.agent_config.harness).toEqual({ type: "oz", name: "builtin" });

    // The model worked in a clone of the repository: its first tool saw the base's commit, nothing changed.
    const events = (await t.api("GET", `/api/v1/agent/runs/${run.run_id}/events?limit=1000`)).body
      .events as Ev[];
    const first = events.find((e) => e.type === "tool_result" && e.data.tool === "shell");
    expect(String(first?.data.output).trim()).toBe("seed");

    const branch = run.agent_config.branch as string;
    expect(branch).toMatch(/^dispatch\/[0-9a-f]{8}-raise-the-login-retries$/);
    expect(remotes.show("acme/app", branch, "src/login.ts")).toBe("export const retries = 3;\n");
    expect(remotes.show("acme/app", branch, "docs/retries.md")).toBe("Login retries 3 times.\n");
    expect(remotes.log("acme/app", branch)).toEqual(["Raise the login retries", "seed"]);
    expect(remotes.show("acme/app", "main", "src/login.ts")).toBe("export const retries = 1;\n");

    const pr = github.pulls.find((p) => p.head === branch);
    expect(pr).toMatchObject({ repo: "acme/app", base: "main", title: "Raise the login retries" });
    expect(pr!.body).toContain("Raised the login retries to 3 and documented it.");
    expect(pr!.body).toContain(run.session_link);
    const prArtifact = run.artifacts.find(
      (a: { artifact_type: string }) => a.artifact_type === "PULL_REQUEST",
    );
    expect(prArtifact.data).toMatchObject({ url: pr!.html_url, number: pr!.number, branch });
  });
});
