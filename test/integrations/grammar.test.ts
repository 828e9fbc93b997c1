import { describe, expect, it } from "vitest";
import {
  createBody,
  describeOptions,
  describeRepository,
  GrammarError,
  OPTION_KEYS,
  optionsFromAgentConfig,
  parseCommand,
} from "../../src/integrations/grammar.ts";

const run = (text: string, surface: "slash" | "mention" | "github" = "slash") => {
  const cmd = parseCommand(text, surface);
  if (cmd.verb !== "run") throw new Error(`expected a run, got ${cmd.verb}`);
  return cmd;
};

const errorOf = (text: string, surface: "slash" | "mention" | "github" = "slash") => {
  try {
    parseCommand(text, surface);
  } catch (err) {
    if (err instanceof GrammarError) return err.message;
    throw err;
  }
  throw new Error(`expected a grammar error for ${JSON.stringify(text)}`);
};

describe("parseCommand: new runs", () => {
  it("takes the whole text as the prompt when there are no options", () => {
    expect(run("fix the flaky test in ci")).toEqual({
      verb: "run",
      prompt: "fix the flaky test in ci",
      options: {},
      forceNew: false,
    });
  });

  it("reads key=value options anywhere and removes them from the prompt", () => {
    const cmd = run("model=anthropic/claude-sonnet-4-5 fix the bug env=backend in the parser name=triage");
    expect(cmd.prompt).toBe("fix the bug in the parser");
    expect(cmd.options).toEqual({ model: "anthropic/claude-sonnet-4-5", env: "backend", name: "triage" });
  });

  it("reads bracket groups with quoted values containing spaces, commas and brackets", () => {
    const cmd = run('update the docs [model=openai/gpt-5, title="Docs, part [1]", env=web]');
    expect(cmd.prompt).toBe("update the docs");
    expect(cmd.options).toEqual({ model: "openai/gpt-5", title: "Docs, part [1]", env: "web" });
  });

  it("accepts quoted key=value outside brackets, escaped quotes and Slack's smart quotes", () => {
    expect(run('do it title="a \\"quoted\\" word"').options.title).toBe('a "quoted" word');
    expect(run("do it name=“nightly sweep”").options.name).toBe("nightly sweep");
  });

  it("lets a later duplicate win, across forms", () => {
    expect(run("go model=a [model=b] model=c").options.model).toBe("c");
    expect(run("go model=a [model=b]").options.model).toBe("b");
  });

  it("treats key case-insensitively", () => {
    expect(run("go Model=x").options).toEqual({ model: "x" });
  });

  it("rejects an unknown key and lists every valid key", () => {
    const message = errorOf("fix it retries=3");
    expect(message).toContain('unknown option "retries"');
    for (const key of OPTION_KEYS) expect(message).toContain(key);
    expect(errorOf("fix it [model=x, colour=red]")).toContain('unknown option "colour"');
  });

  it("leaves code fences and inline code alone", () => {
    const cmd = run("run `retries=3 npm test` then\n```\nFOO=bar make\n```\nmodel=m");
    expect(cmd.prompt).toBe("run `retries=3 npm test` then\n```\nFOO=bar make\n```");
    expect(cmd.options).toEqual({ model: "m" });
    // An unterminated fence runs to the end of the text.
    expect(run("see ```\nx=1").prompt).toBe("see ```\nx=1");
  });

  it("leaves prose in brackets, URLs with queries and comparisons alone", () => {
    expect(run("[WIP] fix https://example.com/?a=b now").prompt).toBe(
      "[WIP] fix https://example.com/?a=b now",
    );
    expect(run("check that a==b holds").prompt).toBe("check that a==b holds");
  });

  it("needs a prompt unless a skill is given", () => {
    expect(errorOf("model=x")).toContain("a prompt is needed");
    expect(run("skill=acme/skills:triage").options.skill).toBe("acme/skills:triage");
  });

  it("reports an option without a value and an unclosed quote", () => {
    expect(errorOf("go model=")).toContain('"model" needs a value');
    expect(errorOf('go title="never closed')).toContain("no closing quote");
  });

  it("keeps the prompt's lines", () => {
    expect(run("first line model=x\nsecond line").prompt).toBe("first line\nsecond line");
  });
});

describe("parseCommand: verbs", () => {
  it("recognises help, list, status and cancel, with an optional run", () => {
    expect(parseCommand("help", "slash")).toEqual({ verb: "help" });
    expect(parseCommand("", "mention")).toEqual({ verb: "help" });
    expect(parseCommand("list", "slash")).toEqual({ verb: "list" });
    expect(parseCommand("STATUS", "mention")).toEqual({ verb: "status" });
    expect(parseCommand("status 0193abcd-1", "slash")).toEqual({ verb: "status", runId: "0193abcd-1" });
    expect(parseCommand("cancel", "mention")).toEqual({ verb: "cancel" });
    expect(parseCommand("cancel r1", "slash")).toEqual({ verb: "cancel", runId: "r1" });
  });

  it("reads a verb followed by prose as a prompt", () => {
    expect(run("list the files under src").prompt).toBe("list the files under src");
    expect(run("cancel the nightly deploy job").prompt).toBe("cancel the nightly deploy job");
  });

  it("new forces a run and needs a prompt", () => {
    expect(parseCommand("new fix it model=x", "mention")).toEqual({
      verb: "run",
      prompt: "fix it",
      options: { model: "x" },
      forceNew: true,
    });
    expect(errorOf("new", "mention")).toContain("`new` needs a prompt");
  });

  it("followup is a verb of the slash command only", () => {
    expect(parseCommand("followup r1 also update the changelog model=x", "slash")).toEqual({
      verb: "followup",
      runId: "r1",
      message: "also update the changelog model=x",
    });
    expect(errorOf("followup r1", "slash")).toContain("usage: followup <run_id> <message>");
    expect(run("followup with the vendor", "mention").prompt).toBe("followup with the vendor");
  });
});

describe("parseCommand: repositories (Slack)", () => {
  it("`in owner/repo[@branch]` at the start sets the run's repository and base, with options as usual", () => {
    expect(parseCommand("in acme/app@develop fix the login test model=x", "slash")).toEqual({
      verb: "run",
      prompt: "fix the login test",
      options: { model: "x" },
      forceNew: false,
      repository: { repository: "acme/app", base: "develop" },
    });
    expect(run("In acme/app [env=web] go", "mention")).toMatchObject({
      prompt: "go",
      options: { env: "web" },
      repository: { repository: "acme/app" },
    });
    expect(run("new in acme/app add a changelog", "mention")).toMatchObject({
      forceNew: true,
      prompt: "add a changelog",
      repository: { repository: "acme/app" },
    });
    expect(run("in https://github.com/acme/app.git go").repository).toEqual({ repository: "acme/app" });
  });

  it("reads `in` as prose unless a word with a slash follows it, and only at the start", () => {
    expect(run("in the parser, fix the off-by-one")).not.toHaveProperty("repository");
    expect(run("fix the bug in acme/app").prompt).toBe("fix the bug in acme/app");
    expect(run("fix the bug in acme/app")).not.toHaveProperty("repository");
    expect(run("in `src/app.ts` rename x")).not.toHaveProperty("repository");
  });

  it("names what is wrong with a repository, in parseRepositorySpec's words", () => {
    expect(errorOf("in acme/app@bad..branch go")).toBe(
      'repository: the base branch "bad..branch" is not a valid git branch name',
    );
    expect(errorOf("in a/b/c go")).toContain('"a/b/c" is not a repository: write owner/repo');
    expect(errorOf("in git@github.com:acme/app.git go")).toContain("SSH remotes are not supported");
    expect(errorOf("in acme/app")).toContain("say what to do in acme/app");
  });

  it("accepts file:// repositories only when the parsing options allow them", () => {
    expect(errorOf("in file:///srv/git/app.git go")).toContain("DISPATCH_ALLOW_FILE_REMOTES=true");
    const cmd = parseCommand("in file:///srv/git/app.git go", "slash", {
      repositories: { serverUrl: "https://github.com", allowFileRemotes: true, allowedHosts: [] },
    });
    expect(cmd).toMatchObject({ verb: "run", repository: { repository: "file:///srv/git/app.git" } });
  });

  it("`repo` shows, `repo owner/repo[@branch]` sets and `repo none` clears the channel default", () => {
    expect(parseCommand("repo", "slash")).toEqual({ verb: "repo" });
    expect(parseCommand("repo acme/app@develop", "slash")).toEqual({
      verb: "repo",
      repository: { repository: "acme/app", base: "develop" },
    });
    expect(parseCommand("REPO none", "mention")).toEqual({ verb: "repo", repository: null });
    expect(errorOf("repo acme")).toContain('"acme" is not a repository');
    expect(run("repo is slow to clone, find out why").prompt).toBe("repo is slow to clone, find out why");
  });

  it("leaves both to Slack: on GitHub they are prose", () => {
    expect(run("in acme/app@develop fix it", "github")).toEqual({
      verb: "run",
      prompt: "in acme/app@develop fix it",
      options: {},
      forceNew: false,
    });
    expect(run("repo acme/app", "github").prompt).toBe("repo acme/app");
  });

  it("puts the repository and base on the create body", () => {
    expect(createBody("p", {}, { repository: "acme/app", base: "develop" })).toEqual({
      prompt: "p",
      config: { repository: "acme/app", base_branch: "develop" },
    });
    expect(describeRepository({ repository: "acme/app", base: "develop" })).toBe("acme/app@develop");
  });
});

describe("options out", () => {
  it("echoes options as model=… · env=… · name=…", () => {
    expect(describeOptions({ name: "n", env: "e", model: "m" })).toBe("model=m · env=e · name=n");
    expect(describeOptions({ title: "two words" })).toBe('title="two words"');
    expect(describeOptions({})).toBe("");
  });

  it("maps options to the create body (env → environment_id) and back", () => {
    const body = createBody("p", {
      model: "m",
      env: "e",
      name: "n",
      skill: "o/r:s",
      harness: "scripted",
      title: "t",
    });
    expect(body).toEqual({
      prompt: "p",
      title: "t",
      skill: "o/r:s",
      config: { model_id: "m", name: "n", environment_id: "e", harness: { type: "scripted" } },
    });
    expect(optionsFromAgentConfig({ ...body.config, skill_spec: "o/r:s" } as never)).toEqual({
      model: "m",
      env: "e",
      name: "n",
      skill: "o/r:s",
      harness: "scripted",
    });
  });
});

describe("parseCommand: plans that wait for approval", () => {
  const RUN = "0190f5a2-1c2b-7d3e-8f40-123456789abc";

  it("`plan <prompt> [options]` is a new run in plan mode, with the options of any run", () => {
    expect(run("plan add a cache model=m")).toEqual({
      verb: "run",
      prompt: "add a cache",
      options: { model: "m" },
      forceNew: true,
      mode: "plan",
    });
    expect(run("plan in acme/app add a cache").repository).toEqual({ repository: "acme/app" });
    expect(run("plan fix it", "github").mode).toBe("plan");
    expect(createBody("p", {}, undefined, "plan")).toEqual({ prompt: "p", mode: "plan" });
    expect(errorOf("plan")).toContain("`plan` needs a prompt");
  });

  it("`approve [run] [note]` and `revise [run] <changes>`: only a run id names a run", () => {
    expect(parseCommand("approve", "mention")).toEqual({ verb: "approve" });
    expect(parseCommand("approve looks good, go", "github")).toEqual({
      verb: "approve",
      note: "looks good, go",
    });
    expect(parseCommand(`approve ${RUN} ship it`, "slash")).toEqual({
      verb: "approve",
      runId: RUN,
      note: "ship it",
    });
    expect(parseCommand("revise use Redis instead", "mention")).toEqual({
      verb: "revise",
      changes: "use Redis instead",
    });
    expect(parseCommand(`REVISE ${RUN} smaller steps`, "slash")).toEqual({
      verb: "revise",
      runId: RUN,
      changes: "smaller steps",
    });
    expect(errorOf("revise", "github")).toContain("say what to change in the plan");
    expect(errorOf(`revise ${RUN}`)).toContain("revise <changes>");
  });

  it("`extend [run] $<usd>` and `stop [run]` on the trackers; other words after them are a prompt, and Slack has buttons", () => {
    expect(parseCommand("extend $5", "github")).toEqual({ verb: "extend", amountUsd: 5 });
    expect(parseCommand(`extend ${RUN} 2.50 usd`, "github")).toEqual({
      verb: "extend",
      runId: RUN,
      amountUsd: 2.5,
    });
    expect(parseCommand("Stop", "github")).toEqual({ verb: "stop" });
    expect(parseCommand(`stop ${RUN}`, "github")).toEqual({ verb: "stop", runId: RUN });
    expect(parseCommand("stop the flaky test from retrying", "github")).toMatchObject({ verb: "run" });
    expect(parseCommand("extend the parser to read YAML", "github")).toMatchObject({ verb: "run" });
    expect(parseCommand("stop", "mention")).toMatchObject({ verb: "run", prompt: "stop" });
    expect(parseCommand("extend $5", "slash")).toMatchObject({ verb: "run" });
    expect(errorOf("extend", "github")).toContain("say by how much: extend $5");
    expect(errorOf("extend $0", "github")).toContain("more than $0");
  });
});
