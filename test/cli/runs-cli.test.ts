import { spawn, spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, cliFor } from "../support/cli.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";

// `dispatch run|list|get|followup|cancel|logs` as a user runs them: a child process of src/main.ts,
// configured only by DISPATCH_BASE_URL and DISPATCH_API_KEY, against a live server.

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));

let t: TestDispatch;

beforeAll(async () => {
  t = await startTestDispatch();
});
afterAll(async () => {
  await t?.stop();
});

const dispatch = cliFor(() => t);

const NO_STACK = /^\s+at /m;

describe("dispatch run --follow", () => {
  it("prints the transcript of a scripted run as it happens and exits 0 when it SUCCEEDED", async () => {
    const r = await dispatch([
      "run",
      "Greet the CLI\n$ echo hello from the cli",
      "--follow",
      "--name",
      "cli",
    ]);
    expect(r.stderr).not.toMatch(NO_STACK);
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines).toContain("── QUEUED");
    expect(lines).toContain("── INPROGRESS");
    expect(lines).toContain("> Greet the CLI");
    expect(lines).toContain("$ echo hello from the cli");
    expect(lines).toContain("hello from the cli");
    expect(lines).toContain("── SUCCEEDED");
    expect(lines.indexOf("$ echo hello from the cli")).toBeLessThan(lines.indexOf("hello from the cli"));
    expect(r.stderr).toMatch(/Run \S+ SUCCEEDED\./);
  });

  it("exits non-zero when the run fails, showing why", async () => {
    const r = await dispatch(["run", "$ echo before\n$ exit 3\n$ echo never", "--follow"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("before\n");
    expect(r.stdout).toContain("(exit 3)");
    expect(r.stdout).toContain("── FAILED: Command `exit 3` exited with code 3");
    expect(r.stdout).not.toContain("\nnever\n");
    expect(r.stderr).toMatch(/Run \S+ FAILED\./);
  });

  it("with --json prints the events as JSON lines", async () => {
    const r = await dispatch(["run", "$ echo json", "--follow", "--json"]);
    expect(r.code).toBe(0);
    const events = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)).toMatchObject({ type: "state", data: { state: "SUCCEEDED" } });
  });
});

// util-linux `script` gives the child a pseudo-terminal, as a user's shell would.
const hasScript = spawnSync("script", ["--version"]).status === 0;

describe("dispatch run --follow on a terminal", () => {
  it.skipIf(!hasScript)(
    "shows a spinner with the live state and still exits with the run's outcome",
    async () => {
      const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
      const command = [process.execPath, MAIN, "run", "$ echo on a tty", "--follow"].map(quote).join(" ");
      const r = await new Promise<CliResult>((resolve, reject) => {
        const child = spawn("script", ["-qefc", command, "/dev/null"], {
          env: {
            PATH: process.env.PATH ?? "",
            TERM: "xterm",
            DISPATCH_BASE_URL: t.url,
            DISPATCH_API_KEY: t.key,
          },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let stdout = "";
        child.stdout.on("data", (d) => {
          stdout += d;
        });
        child.on("error", reject);
        child.on("close", (code) => resolve({ code, stdout, stderr: "" }));
      });
      expect(r.code).toBe(0);
      const shown = r.stdout.replaceAll("\r\x1b[2K", "<clear>"); // the status line redrawn in place
      expect(shown).toMatch(/<clear>[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] (connecting|QUEUED|INPROGRESS) · \d+s/);
      expect(r.stdout).toContain("on a tty");
      expect(r.stdout).toContain("\x1b[32m── SUCCEEDED\x1b[39m");
    },
  );
});

describe("dispatch run, get, list, logs, followup, cancel", () => {
  it("work on a run from creation to cancellation", async () => {
    const created = await dispatch(["run", "$ echo first", "--title", "CLI walk", "--name", "cli-walk"]);
    expect(created.code).toBe(0);
    const runId = created.stdout.trim();
    expect(runId).toMatch(/^[0-9a-f-]{36}$/);
    await waitForState(t, runId, ["SUCCEEDED"]);

    const got = await dispatch(["get", runId]);
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/^title\s+CLI walk$/m);
    expect(got.stdout).toMatch(/^state\s+SUCCEEDED$/m);
    expect(got.stdout).toContain(`/sessions/`);
    // Times as people read them; the API's ISO forms only with --json.
    const recently = String.raw`(just now|\d+ s ago|\d+ min ago)`;
    expect(got.stdout).toMatch(
      new RegExp(String.raw`^created\s+${recently} \(\d{4}-\d\d-\d\d \d\d:\d\d UTC\)$`, "m"),
    );
    expect(got.stdout).toMatch(/^run time\s+\d+s$/m);
    expect(got.stdout).not.toMatch(/PT[\d.]+S|\d{4}-\d\d-\d\dT\d\d:/);
    const json = JSON.parse((await dispatch(["get", runId, "--json"])).stdout);
    expect(json).toMatchObject({ run_id: runId, title: "CLI walk", state: "SUCCEEDED" });

    const listed = await dispatch(["list", "--name", "cli-walk", "--state", "SUCCEEDED,FAILED"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout.split("\n")[0]).toMatch(/^RUN ID\s+STATE\s+UPDATED\s+TITLE$/);
    expect(listed.stdout).toMatch(new RegExp(`^${runId}\\s+SUCCEEDED\\s+${recently}\\s+CLI walk$`, "m"));
    const none = JSON.parse(
      (await dispatch(["list", "--name", "cli-walk", "--state", "CANCELLED", "--json"])).stdout,
    );
    expect(none).toEqual([]);

    const sent = await dispatch(["followup", runId, "$ echo second"]);
    expect(sent.code).toBe(0);
    expect(sent.stderr).toContain("handoff_execution");
    const followed = await dispatch(["logs", runId, "--follow"]);
    expect(followed.code).toBe(0);
    expect(followed.stdout).toContain("> [follow-up] $ echo second");
    expect(followed.stdout.match(/── SUCCEEDED/g)).toHaveLength(2);

    const logs = await dispatch(["logs", runId]);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toContain("$ echo first\nfirst\n");
    expect(logs.stdout).toContain("$ echo second\nsecond\n");

    const sleeper = (await dispatch(["run", "$ sleep 30"])).stdout.trim();
    await waitForState(t, sleeper, ["INPROGRESS"]);
    const cancelled = await dispatch(["cancel", sleeper]);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toBe(`Cancelled ${sleeper}\n`);
    const followCancelled = await dispatch(["logs", sleeper, "--follow"]);
    expect(followCancelled.code).toBe(1);
    expect(followCancelled.stdout).toMatch(/── CANCELLED/);
  });
});

describe("dispatch errors", () => {
  it("print the problem's message, not a stack", async () => {
    const r = await dispatch(["get", "no-such-run"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("dispatch: Not found (no run no-such-run) (HTTP 404 resource_not_found)\n");

    const badKey = await dispatch(["list"], { DISPATCH_API_KEY: `dsp_${"x".repeat(40)}` });
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toMatch(/^dispatch: Authentication required \(unknown or revoked API key\)/);
    expect(badKey.stderr).not.toMatch(NO_STACK);

    const cancelDone = await dispatch([
      "cancel",
      (await dispatch(["run", "$ true", "--follow"])).stderr.match(/Run (\S+)/)![1]!,
    ]);
    expect(cancelDone.code).toBe(1);
    expect(cancelDone.stderr).toMatch(/already SUCCEEDED/);
  });

  it("explain a missing key, an unreachable server and bad usage", async () => {
    const noKey = await dispatch(["list"], { DISPATCH_API_KEY: "" });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/DISPATCH_API_KEY/);
    expect(noKey.stderr).not.toMatch(NO_STACK);

    const port = await closedPort();
    const down = await dispatch(["list"], { DISPATCH_BASE_URL: `http://127.0.0.1:${port}` });
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(
      `dispatch: Connection error. Is the server at http://127.0.0.1:${port} up? (DISPATCH_BASE_URL)\n`,
    );

    const usage = await dispatch(["run"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/give a prompt/);
    const unknownFlag = await dispatch(["list", "--bogus"]);
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr).toMatch(/--bogus/);
  });
});

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
