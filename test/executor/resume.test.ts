import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { type FakeModel, startFakeModel } from "../support/fake-model/server.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";

// biome-ignore lint/suspicious/noExplicitAny: events are asserted field by field
type Json = any;

/**
 * A builtin-harness run that moves to another worker (docs/architecture.md, "Runs survive their worker"):
 * two Dispatch processes' worth of parts in this test process, one after the other, sharing one SQLite
 * database but not a data directory, as two machines would share the store. The first stops (a deploy)
 * while the agent runs a long command; the second finds the run INPROGRESS, restores its checkpoint and
 * continues the same conversation, and the run's one pull request has the work of both.
 */
describe("a run that moves to another worker", () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function workers() {
    const remotes = new GitRemotes();
    remotes.create("acme/app", { "README.md": "# app\n" });
    cleanups.push(() => remotes.remove());
    const github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    cleanups.push(() => github.stop());
    const shared = await mkdtemp(join(tmpdir(), "dispatch-resume-"));
    cleanups.push(() => rm(shared, { recursive: true, force: true }));
    const start = async (model: FakeModel, name: string): Promise<TestDispatch> => {
      const t = await startTestDispatch({
        DISPATCH_DATA_DIR: join(shared, name),
        DATABASE_URL: `sqlite:${join(shared, "dispatch.db")}`,
        DISPATCH_ADMIN_API_KEY: ADMIN_KEY,
        DISPATCH_SHUTDOWN_GRACE_MS: "200",
        DISPATCH_POLL_INTERVAL_MS: "100",
        OPENAI_COMPATIBLE_BASE_URL: model.baseUrl("openai"),
        ...deliveryEnv(remotes, github),
      });
      cleanups.push(() => t.stop());
      return t;
    };
    return { remotes, github, start };
  }

  it("continues the builtin harness's conversation from its checkpoint, and delivers one pull request", async () => {
    const { remotes, github, start } = await workers();
    const model = await startFakeModel([
      {
        text: "Writing the notes first.",
        calls: [
          { name: "write_file", input: { path: "docs/notes.md", content: "Written before the move.\n" } },
        ],
      },
      { calls: [{ name: "shell", input: { command: "sleep 60" } }] },
      // On the second worker:
      { calls: [{ name: "shell", input: { command: "cat docs/notes.md" } }] },
      { text: "Wrote the notes." },
    ]);
    cleanups.push(() => model.close());

    const first = await start(model, "first");
    const created = await first.api("POST", "/api/v1/agent/runs", {
      title: "Write the notes",
      prompt: "Write docs/notes.md",
      config: { repository: "acme/app", model_id: "openai-compatible/fake-coder" },
    });
    expect(created.status, created.text).toBe(200);
    const runId = created.body.run_id as string;
    await waitFor(
      async () =>
        (await events(first, runId)).some(
          (e) => e.type === "tool_call" && e.data.input?.command === "sleep 60",
        ),
      { timeoutMs: 30_000, what: "the agent's long command" },
    );
    await first.stop(); // a deploy: the step under way does not end within the grace, the run is handed back
    const handedBack = readRun(first, runId);
    expect(handedBack.state).toBe("INPROGRESS");

    const second = await start(model, "second");
    const run = await waitForState(second, runId, ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"], 60_000);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");

    const transcript = await events(second, runId);
    expect(transcript.filter((e) => e.type === "state").map((e) => e.data.state)).toEqual([
      "QUEUED",
      "INPROGRESS",
      "SUCCEEDED",
    ]);
    const moved = transcript
      .filter((e) => e.type === "log" && e.data.phase === "worker")
      .map((e) => e.data.message);
    expect(moved).toEqual([
      expect.stringContaining("shutting down"),
      expect.stringMatching(
        /^Moved to another worker \(its worker shut down\) and resumed from its checkpoint.*`sleep 60`/,
      ),
    ]);
    // The file written on the first worker is in the second's workspace: restored, not written again.
    const cat = transcript.findLast((e) => e.type === "tool_result" && e.data.tool === "shell");
    expect(cat?.data.output).toBe("Written before the move.\n");
    expect(transcript.filter((e) => e.type === "tool_call" && e.data.tool === "write_file")).toHaveLength(1);

    // The model saw its earlier turns after the move: the prompt, its write, the stopped command, the note.
    const afterMove = model.agentRequests()[2]!.body as Json;
    const said = JSON.stringify(afterMove.messages);
    expect(said).toContain("Write docs/notes.md");
    expect(said).toContain("Writing the notes first.");
    expect(said).toContain("sleep 60");
    expect(said).toContain("the run was interrupted while this tool ran");
    expect(said).toContain("Dispatch moved this run to another machine");

    // One run, one pull request, with the work of both workers.
    const branch = run.agent_config.branch as string;
    expect(github.pulls.filter((p) => p.head === branch)).toHaveLength(1);
    expect(remotes.show("acme/app", branch, "docs/notes.md")).toBe("Written before the move.\n");
    // The checkpoint was a hidden ref, never a branch, and it is gone once the run ended.
    expect(remotes.branches("acme/app").filter((b) => b.includes(runId))).toEqual([]);
    // (Removed as the execution winds down, just after the run's state changed.)
    const hidden = () =>
      execFileSync("git", ["for-each-ref", "refs/dispatch/"], { cwd: remotes.path("acme/app") }).toString();
    await waitFor(() => hidden() === "", {
      timeoutMs: 15_000,
      what: `the hidden ref to be removed (${hidden().trim()})`,
    });
  }, 120_000);
});

const ADMIN_KEY = `dsp_${"r".repeat(40)}`;

async function events(t: TestDispatch, runId: string): Promise<Json[]> {
  const res = await t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`);
  expect(res.status, res.text).toBe(200);
  return res.body.events;
}

function readRun(t: TestDispatch, runId: string): Json {
  // The stopped Dispatch's store is closed: read through the shared database file instead.
  const db = new DatabaseSync(join(t.dataDir, "..", "dispatch.db"));
  try {
    return db.prepare("SELECT state FROM runs WHERE id = ?").get(runId);
  } finally {
    db.close();
  }
}
