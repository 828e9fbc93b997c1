import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../support/dispatch.ts";
import { type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";
import { gate } from "./external-agent-suite.ts";
import { type HarnessDispatch, processesOf, requestText, startHarnessDispatch, testKey } from "./support.ts";

// biome-ignore lint/suspicious/noExplicitAny: events and requests are asserted field by field
type Json = any;

/**
 * A Claude Code run that moves to another worker (docs/architecture.md, "Runs survive their worker"): two
 * Dispatches in this test process, one after the other, on one SQLite database file but each with its
 * own data directory, as two machines share a store. The installed Claude Code, in the run's sandbox,
 * against the fake model server's Anthropic wire, writes a file and then runs a long command; the first
 * Dispatch stops (a deploy) and hands the run back; the second restores the checkpoint (the workspace
 * and the agent's private area with its session files) and starts Claude Code on the same session.
 */
describe("a Claude Code run that moves to another worker", () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("resumes its session on the second worker, with the file written before the move", async () => {
    const key = testKey("anthropic");
    const turns: ScriptedTurn[] = [];
    const fake = await startFakeModel(turns);
    cleanups.push(() => fake.close());
    const shared = await mkdtemp(join(tmpdir(), "dispatch-claude-resume-"));
    cleanups.push(() => rm(shared, { recursive: true, force: true }));
    const start = async (name: string): Promise<HarnessDispatch> => {
      const d = await startHarnessDispatch({
        DISPATCH_DATA_DIR: join(shared, name),
        DATABASE_URL: `sqlite:${join(shared, "dispatch.db")}`,
        DISPATCH_ADMIN_API_KEY: ADMIN_KEY,
        DISPATCH_SHUTDOWN_GRACE_MS: "200",
        ANTHROPIC_API_KEY: key,
        ANTHROPIC_BASE_URL: fake.baseUrl("anthropic"),
      });
      cleanups.push(() => d.stop());
      return d;
    };

    const first = await start("first");
    let runId = "";
    // Held until the test has seen Claude Code started on the second worker.
    const afterMove = gate();
    turns.push(
      {
        text: "Writing the notes first.",
        calls: [
          {
            name: "Write",
            input: () => ({ file_path: join(first.workspace(runId), "notes.md"), content: NOTES }),
          },
        ],
      },
      { calls: [{ name: "Bash", input: { command: LONG_COMMAND, description: "Wait a minute" } }] },
      // On the second worker:
      {
        gate: afterMove.promise,
        calls: [{ name: "Bash", input: { command: "cat notes.md", description: "Show the notes" } }],
      },
      { text: "The notes are there." },
    );
    const created = await first.api("POST", "/api/v1/agent/runs", {
      prompt: "Write notes.md, then wait a minute",
      config: { harness: { type: "claude" } },
    });
    expect(created.status, created.text).toBe(200);
    runId = created.body.run_id as string;
    await waitFor(
      async () =>
        (await first.events(runId)).some((e) => e.type === "tool_call" && e.data.command === LONG_COMMAND),
      { timeoutMs: 60_000, what: "Claude Code's long command" },
    );
    const sessionId = savedSession(first.dataDir, runId);
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    // A deploy: the command under way does not end within the grace; the run is checkpointed and handed back.
    await first.stop();
    const requestsBefore = fake.agentRequests().length;

    const second = await start("second");
    // Claude Code started on the second worker, in the new workspace, on the session of the first.
    const started = await waitFor(
      () => {
        if (!existsSync(join(second.dataDir, "workspaces", runId))) return undefined;
        const agent = processesOf(second.workspace(runId)).find((p) => p.includes("claude"));
        return agent && commandLine(agent);
      },
      { timeoutMs: 60_000, what: "Claude Code to start on the second worker" },
    );
    expect(started).toContain(`--resume ${sessionId}`);
    expect(started).not.toContain("--session-id");
    afterMove.open();

    const run = await second.state(runId, ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    const transcript = await second.events(runId);
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
        /^Moved to another worker \(its worker shut down\) and resumed from its checkpoint/,
      ),
    ]);
    // The command under way is named as the step that runs again.
    expect(moved[1]).toContain(`\`${LONG_COMMAND}\``);

    // The file written on the first worker is in the second's workspace: restored, not written again.
    expect(readFileSync(join(second.workspace(runId), "notes.md"), "utf8")).toBe(NOTES);
    const cat = transcript.findLast((e) => e.type === "tool_result" && e.data.tool === "Bash");
    expect(cat?.data.output).toContain(NOTES.trim());
    expect(transcript.filter((e) => e.type === "tool_call" && e.data.tool === "Write")).toHaveLength(1);

    // Claude Code's first request after the move carried its earlier turns: the prompt and the write.
    const resumed = fake.agentRequests()[requestsBefore] as Json;
    expect(resumed, "a model request from the second worker").toBeDefined();
    const said = requestText(resumed.body);
    expect(said).toContain("Write notes.md, then wait a minute");
    expect(said).toContain("Writing the notes first.");
    const toolUses = (resumed.body.messages as Json[])
      .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((b: Json) => b.type === "tool_use");
    // The write, and the command that was under way when the first worker stopped.
    expect(toolUses.map((b: Json) => [b.name, b.input.content ?? b.input.command])).toEqual([
      ["Write", NOTES],
      ["Bash", LONG_COMMAND],
    ]);
    expect(said).toContain("Dispatch moved this run to another machine");
    // The session stayed the one the first worker started.
    expect(savedSession(second.dataDir, runId)).toBe(sessionId);
    expect(second.logs.join("")).not.toContain(key);
  }, 180_000);
});

const ADMIN_KEY = `dsp_${"c".repeat(40)}`;
const NOTES = "Written before the move.\n";
/** Long enough to be under way when the first Dispatch stops (Claude Code refuses a bare `sleep 60`). */
const LONG_COMMAND = "timeout 60 tail -f /dev/null; echo waited";

/** The whole command line of a process as processesOf lists it ("<pid>: <command line, cut>"). */
function commandLine(listed: string): string | undefined {
  try {
    return readFileSync(`/proc/${listed.split(":")[0]}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return undefined; // gone meanwhile
  }
}

/** The Claude Code session id the run's private area holds on the worker with this data directory. */
function savedSession(dataDir: string, runId: string): string | undefined {
  const file = join(dataDir, "workspaces", `${runId}.agent`, "sessions.json");
  return existsSync(file) ? JSON.parse(readFileSync(file, "utf8")).claude : undefined;
}
