import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";

/**
 * A schedule that names its branch (`config.branch`) works on it every time it fires: the first run
 * creates the branch, each later run of the same schedule pushes onto it (docs/delivery.md, whose branch
 * a run may push to). A scheduler on a test clock, delivery to a local bare repository.
 */
// biome-ignore lint/suspicious/noExplicitAny: API responses are asserted field by field
type Json = Record<string, any>;

let clock = Date.parse("2030-01-01T00:00:10.000Z");
let t: TestDispatch;
let remotes: GitRemotes;
let github: FakeGitHub;

beforeAll(async () => {
  remotes = new GitRemotes();
  remotes.create("acme/app", { "README.md": "# app\n" });
  github = await new FakeGitHub().start();
  github.gitRoot = remotes.root;
  t = await startTestDispatch(deliveryEnv(remotes, github), {
    surfaceOptions: { github: { throttle: false } },
    scheduler: { now: () => clock, maxSleepMs: 50 },
  });
});
afterAll(async () => {
  await t?.stop();
  await github?.stop();
  remotes?.remove();
});

it("each firing of a schedule pushes onto the branch its first run created", async () => {
  const created = await t.api("POST", "/api/v1/agent/schedules", {
    name: "nightly-notes",
    cron_schedule: "* * * * *",
    enabled: true,
    prompt: "$ echo another night >> notes.txt",
    agent_config: { repository: "acme/app", branch: "nightly/notes", delivery: "branch" },
  });
  expect(created.status, created.text).toBe(201);
  const finished = (n: number) =>
    waitFor(
      async () => {
        const res = await t.api("GET", `/api/v1/agent/runs?schedule_id=${created.body.id}`);
        const runs = (res.body.runs as Json[]).filter((r) =>
          ["SUCCEEDED", "FAILED", "ERROR"].includes(r.state),
        );
        return runs.length >= n ? runs : undefined;
      },
      { what: `${n} finished runs of the schedule`, timeoutMs: 30_000 },
    );
  clock = Date.parse("2030-01-01T00:01:00.000Z");
  await finished(1);
  clock = Date.parse("2030-01-01T00:02:00.000Z");
  const runs = await finished(2);
  expect(runs.map((r) => [r.state, r.status_message?.reason ?? null])).toEqual([
    ["SUCCEEDED", null],
    ["SUCCEEDED", null],
  ]);
  expect(remotes.show("acme/app", "nightly/notes", "notes.txt")).toBe("another night\nanother night\n");
});
