import { describe, expect, it } from "vitest";
import { GrammarError, parseCommand } from "../../src/integrations/grammar.ts";
import { candidateNames } from "../../src/integrations/slack/schedule-verbs.ts";

describe("schedule verbs in the command grammar", () => {
  it('reads schedule "<cron>" [name:<name>] <prompt> [options], with straight or curly quotes', () => {
    expect(parseCommand('schedule "0 9 * * 1-5" Summarise PRs model=m1', "slash")).toEqual({
      verb: "schedule",
      cron: "0 9 * * 1-5",
      run: { verb: "run", prompt: "Summarise PRs", options: { model: "m1" }, forceNew: true },
    });
    expect(
      parseCommand('schedule “*/5 * * * *” name:"five min" in acme/web@dev check it', "mention"),
    ).toEqual({
      verb: "schedule",
      cron: "*/5 * * * *",
      name: "five min",
      run: {
        verb: "run",
        prompt: "check it",
        options: {},
        forceNew: true,
        repository: { repository: "acme/web", base: "dev" },
      },
    });
  });

  it("an unquoted cron or a missing prompt is an error; other text after `schedule` is a prompt", () => {
    expect(() => parseCommand("schedule 0 9 * * * do it", "slash")).toThrow(
      /put the cron expression in quotes/,
    );
    expect(() => parseCommand('schedule "0 9 * * *"', "slash")).toThrow(GrammarError);
    expect(() => parseCommand('schedule "0 9 * * *" name: do it', "slash")).toThrow(
      /give the schedule a name/,
    );
    expect(parseCommand("schedule a call with the team", "slash")).toMatchObject({
      verb: "run",
      prompt: "schedule a call with the team",
    });
  });

  it("schedules and unschedule <name>; GitHub has none of them", () => {
    expect(parseCommand("schedules", "slash")).toEqual({ verb: "schedules" });
    expect(parseCommand('unschedule "nightly report"', "slash")).toEqual({
      verb: "unschedule",
      name: "nightly report",
    });
    expect(() => parseCommand("unschedule", "slash")).toThrow(/which schedule/);
    expect(parseCommand('schedule "0 9 * * *" do it', "github")).toMatchObject({ verb: "run" });
    expect(parseCommand("schedules", "github")).toMatchObject({ verb: "run", prompt: "schedules" });
  });

  it("names a schedule after its prompt's first words", () => {
    expect(candidateNames("Summarise yesterday's merged PRs, please")[0]).toBe(
      "summarise-yesterdays-merged-prs",
    );
    expect(candidateNames("Summarise PRs").slice(0, 3)).toEqual([
      "summarise-prs",
      "summarise-prs-2",
      "summarise-prs-3",
    ]);
    expect(candidateNames("$ echo hi")[0]).toBe("echo-hi");
    expect(candidateNames("!!!")[0]).toBe("schedule");
  });
});
