import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.ts";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";

// `dispatch schedules …` as a user runs it: a child process of src/main.ts configured only by
// DISPATCH_BASE_URL and DISPATCH_API_KEY, against a live server whose scheduler runs on a test clock.

const NO_STACK = /^\s+at /m;
let clock = Date.parse("2030-01-01T00:00:10.000Z");
let t: TestDispatch;

beforeAll(async () => {
  t = await startTestDispatch(
    // A person may own 5 schedules here: room for this file's, and a limit the last test reaches.
    { DISPATCH_MAX_CONCURRENT_RUNS: "0", DISPATCH_SCHEDULES_PER_CREATOR: "5" },
    { scheduler: { now: () => clock, maxSleepMs: 50 } },
  );
});
afterAll(async () => {
  await t?.stop();
});

/** `dispatch …` with the admin key, or `key`. */
function dispatch(args: string[], key = t.key) {
  return runCli(args, { DISPATCH_BASE_URL: t.url, DISPATCH_API_KEY: key });
}

describe("dispatch schedules", () => {
  it("create prints the id, with --json the ScheduledAgentItem; list shows cron and next run", async () => {
    const created = await dispatch([
      "schedules",
      "create",
      "--name",
      "cli-weekday",
      "--cron",
      "0 9 * * 1-5",
      "--timezone",
      "Europe/Paris",
      "--prompt",
      "Summarise open PRs",
      "--model",
      "scripted",
      "--repo",
      "acme/web@main",
    ]);
    expect(created.code, created.stderr).toBe(0);
    const id = created.stdout.trim();
    // Far from the CLI's clock, so the exact time only; never the API's ISO form.
    expect(created.stderr).toContain("Created cli-weekday; next run 2030-01-01 08:00 UTC.");
    const got = JSON.parse((await dispatch(["schedules", "get", id, "--json"])).stdout);
    expect(got).toMatchObject({
      id,
      name: "cli-weekday",
      cron_schedule: "0 9 * * 1-5",
      timezone: "Europe/Paris",
      prompt: "Summarise open PRs",
      agent_config: { model_id: "scripted", repository: "acme/web@main" },
    });
    const skill = await dispatch([
      "schedules",
      "create",
      "--name",
      "cli-skill",
      "--cron",
      "0 3 * * *",
      "--skill",
      "acme/web:triage",
      "--json",
    ]);
    expect(skill.code, skill.stderr).toBe(0);
    expect(JSON.parse(skill.stdout).agent_config).toEqual({ skill_spec: "acme/web:triage" });

    const list = await dispatch(["schedules", "list"]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+NAME\s+CRON\s+NEXT RUN\s+LAST RAN/);
    expect(list.stdout).toMatch(
      new RegExp(`^${id}\\s+cli-weekday\\s+0 9 \\* \\* 1-5 \\(Europe/Paris\\)\\s+on 2030-01-01\\s+-`, "m"),
    );
  });

  it("get and update take a name; update changes only what is given", async () => {
    const shown = await dispatch(["schedules", "get", "cli-weekday"]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^cron\s+0 9 \* \* 1-5 \(Europe\/Paris\)$/m);
    expect(shown.stdout).toMatch(/^repository\s+acme\/web@main$/m);
    const updated = await dispatch([
      "schedules",
      "update",
      "cli-weekday",
      "--cron",
      "30 7 * * *",
      "--model",
      "",
      "--json",
    ]);
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({
      name: "cli-weekday",
      cron_schedule: "30 7 * * *",
      timezone: "Europe/Paris",
      prompt: "Summarise open PRs",
      agent_config: { repository: "acme/web@main" },
    });
    expect(JSON.parse(updated.stdout).agent_config.model_id).toBeUndefined();
  });

  it("pause and resume; delete; a firing shows as last ran", async () => {
    const paused = await dispatch(["schedules", "pause", "cli-weekday"]);
    expect(paused.stdout).toBe("Paused cli-weekday.\n");
    expect((await dispatch(["schedules", "list"])).stdout).toMatch(
      /cli-weekday\s+30 7 \* \* \* \(Europe\/Paris\)\s+paused/,
    );
    const resumed = await dispatch(["schedules", "resume", "cli-weekday"]);
    expect(resumed.stdout).toMatch(/^Resumed cli-weekday; next run 2030-01-01 06:30 UTC\.$/m);

    const every = await dispatch([
      "schedules",
      "create",
      "--name",
      "cli-every",
      "--cron",
      "* * * * *",
      "--prompt",
      "$ echo tick",
    ]);
    expect(every.code, every.stderr).toBe(0);
    clock += 60_000;
    await waitFor(
      async () =>
        JSON.parse((await dispatch(["schedules", "get", "cli-every", "--json"])).stdout).history.last_ran,
      { what: "the firing" },
    );
    const deleted = await dispatch(["schedules", "delete", "cli-every"]);
    expect(deleted.stdout).toBe("Deleted cli-every; the runs it made are kept.\n");
    expect((await dispatch(["schedules", "list"])).stdout).not.toContain("cli-every");
  });

  it("mistakes: usage errors exit 2, API refusals exit 1 with the problem, never a stack", async () => {
    const noCron = await dispatch(["schedules", "create", "--name", "x", "--prompt", "p"]);
    expect(noCron.code).toBe(2);
    expect(noCron.stderr).toContain("give --cron");
    const badCron = await dispatch([
      "schedules",
      "create",
      "--name",
      "x",
      "--cron",
      "0 9 * *",
      "--prompt",
      "p",
    ]);
    expect(badCron.code).toBe(1);
    expect(badCron.stderr).toMatch(
      /^dispatch: .*cron_schedule: "0 9 \* \*" has 4 fields.* \(HTTP 400 invalid_request\)$/m,
    );
    const taken = await dispatch([
      "schedules",
      "create",
      "--name",
      "cli-weekday",
      "--cron",
      "0 1 * * *",
      "--prompt",
      "p",
    ]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain("HTTP 409");
    const unknown = await dispatch(["schedules", "get", "no-such"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('this team has no schedule "no-such"');
    const nothing = await dispatch(["schedules", "update", "cli-weekday"]);
    expect(nothing.code).toBe(2);
    const sub = await dispatch(["schedules", "explode"]);
    expect(sub.code).toBe(2);
    // Over the schedules one person may own: the problem says which limit and what to do.
    const carol = await t.newKey("team_default", { displayName: "Carol" });
    for (const n of [1, 2, 3, 4, 5]) {
      const res = await t.api(
        "POST",
        "/api/v1/agent/schedules",
        { name: `carol-${n}`, cron_schedule: "0 1 * * *", prompt: "p" },
        { authorization: `Bearer ${carol}` },
      );
      expect(res.status).toBe(201);
    }
    const overLimit = await dispatch(
      ["schedules", "create", "--name", "carol-6", "--cron", "0 1 * * *", "--prompt", "p"],
      carol,
    );
    expect(overLimit.code).toBe(1);
    expect(overLimit.stderr).toMatch(
      /^dispatch: .*you have 5 schedules in this team.*DISPATCH_SCHEDULES_PER_CREATOR.* \(HTTP 403 not_authorized\)$/m,
    );
    for (const r of [noCron, badCron, taken, unknown, nothing, sub, overLimit]) {
      expect(r.stderr).not.toMatch(NO_STACK);
    }
    const help = await dispatch(["--help"]);
    expect(help.stdout).toContain("dispatch schedules create --name N --cron");
  });
});
