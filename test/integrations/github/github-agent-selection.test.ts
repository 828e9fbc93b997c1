import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseSettings } from "../../../src/config-file.ts";
import { waitFor } from "../../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../../support/fake-model/server.ts";
import { commentPayload, type GitHubDispatch, HANDLE, startGitHubDispatch, uniqueIssue } from "./support.ts";

/**
 * Choosing the agent from GitHub (docs/surfaces.md): `@dispatch /codex …` (and /claude, /gemini, /builtin,
 * /scripted) in a comment, and a repository's default agent from `github.repositories.<owner/repo>.agent`
 * in dispatch.config.yaml. Claude Code runs for real against a loopback Anthropic API; Codex has no key.
 */

const MARKER = /<!-- dispatch:run=([A-Za-z0-9_-]+) -->/;
const turns: ScriptedTurn[] = [];
let fake: FakeModel;
let g: GitHubDispatch;

beforeAll(async () => {
  fake = await startFakeModel(turns);
  // The setting names the repository in another case than GitHub does: names match without regard to case.
  const repo = String(commentPayload({ body: "" }).repository.full_name).toUpperCase();
  g = await startGitHubDispatch({
    settings: `github:\n  repositories:\n    ${repo}:\n      agent: claude\n`,
    env: { ANTHROPIC_API_KEY: "test-anthropic-key", ANTHROPIC_BASE_URL: fake.baseUrl("anthropic") },
  });
  g.fake.permissions.set("octocat", "write");
});
afterAll(async () => {
  await g?.stop();
  await fake?.close();
});

async function runsOn(issue: number) {
  const bindings = await g.t.dispatch.store.listChannelBindings(
    { platform: "github", workspace: g.repo, channel: String(issue) },
    50,
  );
  const runs = await g.runs();
  return bindings.map((b) => runs.find((r) => r.run_id === b.runId)!);
}

async function finished(runId: string) {
  return waitFor(
    async () => {
      const res = await g.t.api("GET", `/api/v1/agent/runs/${runId}`);
      return ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"].includes(res.body.state) ? res.body : undefined;
    },
    { timeoutMs: 60_000, what: `run ${runId} to finish` },
  );
}

/** The run's tracking comment once it contains `text`. */
async function tracking(issue: number, runId: string, text: string) {
  return waitFor(
    () =>
      g.fake
        .botComments(g.repo, issue)
        .find((c) => MARKER.exec(c.body)?.[1] === runId && c.body.includes(text))?.body,
    { timeoutMs: 30_000, what: `the tracking comment of ${runId} to say ${text}` },
  );
}

describe("choosing the agent in GitHub", () => {
  it("a plain mention uses the repository's default agent; the tracking comment says Claude Code ran", async () => {
    const issue = uniqueIssue();
    turns.push({ text: "Looked at it; nothing to change." });
    await g.comment({ body: `@${HANDLE} have a look at the README`, issue });
    const [run] = await waitFor(
      async () => ((await runsOn(issue)).length === 1 ? runsOn(issue) : undefined),
      {
        what: "the run",
      },
    );
    expect(run!.agent_config.harness).toEqual({ type: "claude" });
    const done = await finished(run!.run_id);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    const body = await tracking(issue, run!.run_id, "Succeeded");
    expect(body).toContain("Agent: Claude Code");
  });

  it("`/scripted …` beats the default, and on an issue that has a run starts a new run rather than a follow-up", async () => {
    const issue = uniqueIssue();
    await g.comment({ body: `@${HANDLE} /scripted $ echo first`, issue });
    const first = await waitFor(async () => (await runsOn(issue))[0], { what: "the first run" });
    expect(first.agent_config.harness).toEqual({ type: "oz", name: "scripted" });
    expect((await finished(first.run_id)).state).toBe("SUCCEEDED");
    expect(await tracking(issue, first.run_id, "Succeeded")).toContain("Agent: Scripted (no model)");

    await g.comment({ body: `@${HANDLE} /builtin $ echo second`, issue });
    const both = await waitFor(async () => ((await runsOn(issue)).length === 2 ? runsOn(issue) : undefined), {
      what: "a second run on the issue",
    });
    expect(both[0]!.agent_config.harness).toEqual({ type: "oz", name: "builtin" });
    expect(both[0]!.prompt).toContain("$ echo second");
    // No follow-up reached the first run.
    const events = await g.t.api("GET", `/api/v1/agent/runs/${first.run_id}/events`);
    expect(events.body.events.filter((e: { type: string }) => e.type === "followup")).toEqual([]);
  });

  it("an agent whose key is not configured is refused with the server's reason; an unknown one with the list", async () => {
    const issue = uniqueIssue();
    await g.comment({ body: `@${HANDLE} /codex fix the build`, issue });
    const refused = await waitFor(
      () => g.fake.botComments(g.repo, issue).find((c) => c.body.includes("Could not start the run"))?.body,
      { what: "the refusal" },
    );
    expect(refused).toContain("OPENAI_API_KEY");

    await g.comment({ body: `@${HANDLE} /cursor fix the build`, issue });
    const unknown = await waitFor(
      () => g.fake.botComments(g.repo, issue).find((c) => c.body.includes("unknown agent"))?.body,
      { what: "the unknown agent notice" },
    );
    expect(unknown).toContain("claude, codex, gemini, builtin, scripted");
    await g.settle();
    expect(await runsOn(issue)).toEqual([]);
  });

  it("a repository default that names no known agent stops start-up with the field and the choices", () => {
    expect(() =>
      parseSettings(
        { github: { repositories: { "acme/app": { agent: "cursor" } } } },
        "dispatch.config.yaml",
      ),
    ).toThrow(/github\.repositories\.acme\/app\.agent.*claude, codex, gemini, builtin, scripted/s);
    expect(() => parseSettings({ github: { repositories: { acme: { agent: "claude" } } } })).toThrow(
      /owner\/repo/,
    );
  });
});
