import { describe, expect, it } from "vitest";
import { GrammarError, parseCommand, selectsAgent } from "../../src/integrations/grammar.ts";

// How the agent is named in commands (docs/surfaces.md): `--agent` anywhere (Slack and GitHub), `agent …` (a
// Slack channel's default), `/codex …` (GitHub).

const AGENTS = "claude, codex, gemini, builtin, scripted";

describe("--agent", () => {
  it("selects the run's agent wherever it stands, as the harness option, and leaves the prompt clean", () => {
    expect(parseCommand("--agent claude fix the login test", "slash")).toMatchObject({
      verb: "run",
      prompt: "fix the login test",
      options: { harness: "claude" },
    });
    expect(parseCommand("fix it --agent=Codex env=web", "mention")).toMatchObject({
      prompt: "fix it",
      options: { harness: "codex", env: "web" },
    });
    // Slack may turn `--` into a dash as people type.
    expect(parseCommand("—agent gemini summarise", "slash")).toMatchObject({
      options: { harness: "gemini" },
    });
    expect(parseCommand("in acme/app --agent builtin tidy up", "slash")).toMatchObject({
      repository: { repository: "acme/app" },
      options: { harness: "builtin" },
    });
  });

  it("is only prompt inside code", () => {
    const cmd = parseCommand("explain `--agent claude` in the docs", "slash");
    expect(cmd).toMatchObject({ prompt: "explain `--agent claude` in the docs", options: {} });
  });

  it("refuses an unknown agent or a missing name with the list of agents", () => {
    expect(() => parseCommand("--agent cursor fix it", "slash")).toThrow(
      new GrammarError(`unknown agent "cursor"; available agents: ${AGENTS}`),
    );
    expect(() => parseCommand("fix it --agent", "slash")).toThrow(/needs a name/);
  });
});

describe("agent (Slack: the channel's default agent)", () => {
  it("shows, sets and clears; more words are a prompt", () => {
    expect(parseCommand("agent", "slash")).toEqual({ verb: "agent" });
    expect(parseCommand("agent Claude", "mention")).toEqual({ verb: "agent", agent: "claude" });
    expect(parseCommand("agent none", "slash")).toEqual({ verb: "agent", agent: null });
    expect(parseCommand("agent keeps timing out, look at it", "slash")).toMatchObject({ verb: "run" });
    expect(() => parseCommand("agent copilot", "slash")).toThrow(`available agents: ${AGENTS}`);
    // Not a verb on GitHub, where the repository's default lives in the settings.
    expect(parseCommand("agent", "github")).toMatchObject({ verb: "run", prompt: "agent" });
  });
});

describe("/codex (GitHub)", () => {
  it("starts a new run with that agent, options kept", () => {
    expect(parseCommand("/codex fix the flaky test model=openai/gpt-5-codex", "github")).toEqual({
      verb: "run",
      prompt: "fix the flaky test",
      options: { harness: "codex", model: "openai/gpt-5-codex" },
      forceNew: true,
    });
    expect(parseCommand("/Scripted $ echo hi", "github")).toMatchObject({ options: { harness: "scripted" } });
    expect(selectsAgent("/claude")).toBe(true);
    expect(selectsAgent("/tmp")).toBe(false);
    expect(selectsAgent("claude")).toBe(false);
  });

  it("an unknown /word is refused with the list (a path goes in code), and a prompt is needed", () => {
    expect(() => parseCommand("/tmp is full", "github")).toThrow(/unknown agent "tmp".*`code`/);
    expect(parseCommand("`/tmp` is full", "github")).toMatchObject({ verb: "run", prompt: "`/tmp` is full" });
    expect(() => parseCommand("/gemini", "github")).toThrow("say what gemini should do");
  });
});
