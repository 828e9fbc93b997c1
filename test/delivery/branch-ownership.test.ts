import { rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";

/**
 * `config.branch` names the branch Dispatch pushes to with its own token, which may write to any branch
 * of the repository: a run may name only a branch that is its own. A new branch (not on the remote), its
 * own branch again on a follow-up, or the branch of the run it continues (`parent_run_id`) are; another
 * pull request's head branch, another run's branch or any other existing branch are not, and nothing is
 * pushed to them.
 */
describe("config.branch", () => {
  let remotes: GitRemotes;
  let github: FakeGitHub;
  let t: TestDispatch;

  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create("acme/app", { "README.md": "# app\n" });
    github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    t = await startTestDispatch(deliveryEnv(remotes, github), {
      surfaceOptions: { github: { throttle: false } },
    });
  });
  afterAll(async () => {
    await t?.stop();
    await github?.stop();
    remotes?.remove();
  });

  const create = (prompt: string, config: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    t.api("POST", "/api/v1/agent/runs", { prompt, config: { repository: "acme/app", ...config }, ...extra });
  const finished = (id: string) => waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);

  it("refuses the head branch of someone else's pull request before the agent starts, and pushes nothing", async () => {
    remotes.branch("acme/app", "feature/login", { "login.ts": "export const ok = true;\n" });
    github.openPull("acme/app", { head: "feature/login", base: "main", title: "Fix login" });
    const before = remotes.log("acme/app", "feature/login");
    const created = await create("$ echo hijack > login.ts", { branch: "feature/login" });
    expect(created.status, created.text).toBe(200);
    const run = await finished(created.body.run_id);
    expect(run.state).toBe("FAILED");
    expect(run.status_message).toMatchObject({ error_code: "not_authorized", reason: "branch_not_owned" });
    expect(run.status_message.message).toContain(
      "config.branch: feature/login already exists in acme/app and is not this run's",
    );
    expect(remotes.log("acme/app", "feature/login")).toEqual(before);
    // The agent never ran: nothing of the branch reached a workspace.
    const events = await t.api("GET", `/api/v1/agent/runs/${run.run_id}/events?limit=1000`);
    expect(events.text).not.toContain("hijack");
  });

  it("refuses any other existing branch the run did not create", async () => {
    remotes.branch("acme/app", "release/1.0", { VERSION: "1.0\n" });
    const created = await create("$ echo 2.0 > VERSION", { branch: "release/1.0", delivery: "branch" });
    const run = await finished(created.body.run_id);
    expect(run.state).toBe("FAILED");
    expect(run.status_message.reason).toBe("branch_not_owned");
    expect(remotes.show("acme/app", "release/1.0", "VERSION")).toBe("1.0\n");
  });

  it("refuses another run's dispatch/ branch at create, unless the run continues that run", async () => {
    const first = await create("$ echo one > one.txt", {});
    const done = await finished(first.body.run_id);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    const branch = done.agent_config.branch as string;

    const other = await create("$ echo two > two.txt", { branch });
    expect(other.status).toBe(400);
    expect(other.body.error_code).toBe("invalid_request");
    expect(other.body.detail).toContain(
      `config.branch: ${branch} is a branch Dispatch named for another run`,
    );
    expect(other.body.detail).toContain("parent_run_id");
    expect(remotes.log("acme/app", branch)).toHaveLength(2);

    const continued = await create("$ echo two > two.txt", { branch }, { parent_run_id: done.run_id });
    expect(continued.status, continued.text).toBe(200);
    const run = await finished(continued.body.run_id);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    expect(remotes.show("acme/app", branch, "two.txt")).toBe("two\n");
    expect(github.pulls.filter((p) => p.head === branch)).toHaveLength(1);
  });

  it("takes a new branch of the run's naming, and pushes to it again on a follow-up, also after its workspace is gone", async () => {
    const created = await create("$ echo first > notes.txt", { branch: "feature/notes", delivery: "branch" });
    expect(created.status, created.text).toBe(200);
    const id = created.body.run_id as string;
    const first = await finished(id);
    expect(first.state, JSON.stringify(first.status_message)).toBe("SUCCEEDED");
    expect(remotes.show("acme/app", "feature/notes", "notes.txt")).toBe("first\n");

    // Workspace retention removes a finished run's workspace and its delivery mirror.
    for (const dir of [id, `${id}.delivery`]) {
      await rm(join(t.dataDir, "workspaces", dir), { recursive: true, force: true });
    }
    const followup = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, {
      message: "$ echo second >> notes.txt",
    });
    expect(followup.status, followup.text).toBe(200);
    const second = await waitFor(
      async () => {
        // The follow-up queued the run again at once: a finished state after that is the second execution's.
        const r = (await t.api("GET", `/api/v1/agent/runs/${id}`)).body;
        const over = ["SUCCEEDED", "FAILED", "ERROR"].includes(r.state);
        return over && r.updated_at !== first.updated_at ? r : undefined;
      },
      { timeoutMs: 30_000, what: "the follow-up to finish" },
    );
    expect(second.state, JSON.stringify(second.status_message)).toBe("SUCCEEDED");
    expect(remotes.show("acme/app", "feature/notes", "notes.txt")).toBe("first\nsecond\n");
  });
});
