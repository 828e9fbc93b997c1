import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunItemSchema } from "../../src/api/schemas/runs.ts";
import { createApiKey } from "../../src/auth/bootstrap.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";

/**
 * The Warp Platform API's run fields and filters (docs/api.md): root_run_id, submitted_prompt, executor,
 * is_run_type_cancellable, EXTERNAL_REFERENCE artifacts, the follow-up's queue_pending, task_status and q
 * by a run's id or URL. No executor slot: runs stay QUEUED unless a test says otherwise.
 */
let t: TestDispatch;
beforeAll(async () => {
  t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0" });
});
afterAll(() => t?.stop());

async function create(body: Record<string, unknown>): Promise<string> {
  const res = await t.api("POST", "/api/v1/agent/runs", body);
  expect(res.status, res.text).toBe(200);
  return res.body.run_id;
}
const get = async (id: string) => (await t.api("GET", `/api/v1/agent/runs/${id}`)).body;
const listed = async (query: string): Promise<string[]> => {
  const res = await t.api("GET", `/api/v1/agent/runs?sort_by=created_at&sort_order=asc&${query}`);
  expect(res.status, res.text).toBe(200);
  return res.body.runs.map((r: { run_id: string }) => r.run_id);
};

describe("Warp Platform API run fields", () => {
  it("root_run_id is the run itself, or the top of its tree of parents", async () => {
    const root = await create({ prompt: "root" });
    const child = await create({ prompt: "child", parent_run_id: root });
    const grandchild = await create({ prompt: "grandchild", parent_run_id: child });
    expect((await get(root)).root_run_id).toBe(root);
    expect((await get(child)).root_run_id).toBe(root);
    const g = await get(grandchild);
    expect(g).toMatchObject({ root_run_id: root, parent_run_id: child });
    expect(RunItemSchema.parse(g)).toBeTruthy();
  });

  it("submitted_prompt is the prompt with the follow-ups added before the run started", async () => {
    const id = await create({ prompt: "first" });
    expect((await get(id)).submitted_prompt).toBe("first");
    const res = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "second" });
    expect(res.body.outcome).toBe("queued_prompt");
    const run = await get(id);
    expect(run).toMatchObject({ prompt: "first", submitted_prompt: "first\n\nsecond" });
    const listedRun = (await t.api("GET", `/api/v1/agent/runs?q=${id}`)).body.runs[0];
    expect(listedRun.submitted_prompt).toBe("first\n\nsecond");
  });

  it("executor is the creator; every run is cancellable by type; request_usage starts empty", async () => {
    const run = await get(await create({ prompt: "who" }));
    expect(run.executor).toEqual(run.creator);
    expect(run.is_run_type_cancellable).toBe(true);
    expect(run.request_usage).toEqual({ input_tokens: 0, output_tokens: 0, total_tokens: 0 });
  });

  it("a run started from a GitHub comment carries its issue as an EXTERNAL_REFERENCE artifact", async () => {
    const comment = "https://github.com/acme/app/issues/42#issuecomment-777";
    const id = await create({
      prompt: "from github",
      on_behalf_of: { source: "GITHUB_WEBHOOK", trigger_url: comment },
    });
    const run = await get(id);
    expect(run.trigger_url).toBe(comment);
    expect(run.artifacts).toEqual([
      {
        artifact_type: "EXTERNAL_REFERENCE",
        created_at: run.created_at,
        data: {
          reference_type: "github_issue",
          url: "https://github.com/acme/app/issues/42",
          title: "acme/app#42",
        },
      },
    ]);
    expect(await listed("artifact_type=EXTERNAL_REFERENCE")).toContain(id);
    const linear = await get(
      await create({
        prompt: "from linear",
        on_behalf_of: { trigger_url: "https://linear.app/acme/issue/eng-12/fix-it" },
      }),
    );
    expect(linear.artifacts[0].data).toMatchObject({
      reference_type: "linear_issue",
      url: "https://linear.app/acme/issue/ENG-12",
    });
    expect((await get(await create({ prompt: "plain" }))).artifacts).toEqual([]);
  });
});

describe("on_behalf_of as a user id or email", () => {
  it("an agent identity's key creates the run for that user; a member's key may not; an unknown user is 400", async () => {
    const email = "bea@example.com";
    const bea = await t.newKey("team_default", { displayName: "Bea", email });
    const own = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt: "hers" },
      { authorization: `Bearer ${bea}` },
    );
    const uid = (await get(own.body.run_id)).creator.uid;
    const identity = await t.api("POST", "/api/v1/agent/identities", { name: "deployer" });
    expect(identity.status, identity.text).toBe(201);
    const agentKey = (
      await createApiKey(t.dispatch.store, { principalUid: identity.body.uid, role: "member" })
    ).key;
    for (const who of [uid, "BEA@example.com"]) {
      const res = await t.api(
        "POST",
        "/api/v1/agent/runs",
        { prompt: "for bea", on_behalf_of: who },
        { authorization: `Bearer ${agentKey}` },
      );
      expect(res.status, res.text).toBe(200);
      expect((await get(res.body.run_id)).creator).toEqual({ type: "user", uid, display_name: "Bea", email });
    }
    const member = await t.newKey("team_default");
    const refused = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt: "x", on_behalf_of: uid },
      { authorization: `Bearer ${member}` },
    );
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain("on_behalf_of");
    const unknown = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "x",
      on_behalf_of: "nobody@example.com",
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toContain("nobody@example.com");
  });
});

describe("Warp Platform API list filters", () => {
  it("q finds a run by its id, its run page, its session link or its API path, besides text", async () => {
    const id = await create({ prompt: "needle in a haystack" });
    await create({ prompt: "something else" });
    const run = await get(id);
    for (const q of [
      id,
      id.toUpperCase(),
      `${t.url}/runs/${id}`,
      run.session_link,
      `${t.url}/api/v1/agent/runs/${id}`,
    ]) {
      expect(await listed(`q=${encodeURIComponent(q)}`), q).toEqual([id]);
    }
    expect(await listed("q=HAYSTACK")).toEqual([id]);
  });

  it("task_status: complete, failed, cancelled by the run's state; running by it or any run below it", async () => {
    const parent = await create({ prompt: "parent" });
    const child = await create({ prompt: "child", parent_run_id: parent });
    const stopped = await create({ prompt: "stopped" });
    expect((await t.api("POST", `/api/v1/agent/runs/${stopped}/cancel`)).status).toBe(200);
    expect(await listed(`q=${stopped}&task_status=cancelled`)).toEqual([stopped]);
    expect(await listed(`q=${stopped}&task_status=running`)).toEqual([]);
    expect(await listed(`q=${stopped}&task_status=running&task_status=cancelled`)).toEqual([stopped]);
    expect(await listed(`ancestor_run_id=${parent}&task_status=running`)).toEqual([child]);
    // The parent is finished once cancelled, but the child below it still runs.
    expect((await t.api("POST", `/api/v1/agent/runs/${parent}/cancel`)).status).toBe(200);
    expect(await listed(`q=${parent}&task_status=running`)).toEqual([parent]);
    expect(await listed(`q=${parent}&task_status=complete`)).toEqual([]);
    expect(await listed("task_status=blocked")).toEqual([]);
    const bad = await t.api("GET", "/api/v1/agent/runs?task_status=done");
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain("task_status");
  });
});

describe("the follow-up answer", () => {
  it("is queue_pending while a run's agent has not started, then the agent receives it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dispatch-config-"));
    const configFile = join(dir, "dispatch.config.yaml");
    // JSON is YAML. The setup waits for the test: the run is INPROGRESS and its agent not started.
    await writeFile(
      configFile,
      JSON.stringify({
        environments: {
          slow: { description: "waits for a file", setup: ["while [ ! -e go ]; do sleep 0.05; done"] },
        },
      }),
    );
    const started = await startTestDispatch({ DISPATCH_CONFIG_FILE: configFile });
    try {
      const res = await started.api("POST", "/api/v1/agent/runs", {
        prompt: "$ echo first",
        config: { environment_id: "slow" },
      });
      const id = res.body.run_id as string;
      await waitForState(started, id, ["INPROGRESS"]);
      const followup = await started.api("POST", `/api/v1/agent/runs/${id}/followups`, {
        message: "$ echo held",
      });
      expect(followup.body).toEqual({ followup_id: expect.any(String), outcome: "queue_pending" });
      // INPROGRESS comes with the claim; the workspace the setup waits in is made just after it.
      await waitFor(() => writeFile(join(started.dataDir, "workspaces", id, "go"), "").then(() => true), {
        what: "the run's workspace, to let its setup go on",
      });
      expect((await waitForState(started, id, ["SUCCEEDED", "FAILED", "ERROR"])).state).toBe("SUCCEEDED");
      const events = (await started.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events;
      // The agent ran it: its output is in the transcript, not only the follow-up itself.
      const ran = events.filter((e: { type: string }) => e.type !== "followup");
      expect(JSON.stringify(ran)).toContain("held");
    } finally {
      await started.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("GET /networking/egress-ranges", () => {
  it("answers the ranges the operator configured, and 404 saying how when none is", async () => {
    const none = await t.api("GET", "/api/v1/networking/egress-ranges");
    expect(none.status).toBe(404);
    expect(none.body.detail).toContain("DISPATCH_EGRESS_CIDRS");
    const configured = await startTestDispatch({
      DISPATCH_EGRESS_CIDRS: "203.0.113.0/24, 2001:db8::/32,203.0.113.0/24",
    });
    try {
      const res = await configured.api("GET", "/api/v1/networking/egress-ranges");
      expect(res.body).toEqual({ cidrs: ["203.0.113.0/24", "2001:db8::/32"] });
    } finally {
      await configured.stop();
    }
    await expect(startTestDispatch({ DISPATCH_EGRESS_CIDRS: "10.0.0.0/33" })).rejects.toThrow("10.0.0.0/33");
  });
});
