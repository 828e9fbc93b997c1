import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseSkillMd, SkillResolver } from "../../src/workspace/skills.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";

let root: string;
let t: TestDispatch;

const REVIEWER = `---
name: code-reviewer
description: Reviews a change for bugs and style.
---
You review code. Point out bugs first, then style.
`;

async function put(path: string, text: string) {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "dispatch-skills-"));
  // acme/local: a local checkout read in place.
  await put(join(root, "local", ".agents", "skills", "reviewer", "SKILL.md"), REVIEWER);
  await put(join(root, "local", "docs", "custom", "SKILL.md"), "---\nname: custom\n---\nA custom path.\n");
  // acme/tools: a git repository behind a file:// URL, cloned into the cache.
  const tools = join(root, "tools");
  await put(join(tools, "skills", "linter", "SKILL.md"), "---\ndescription: Lints.\n---\nRun the linter.\n");
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=T", "-c", "user.email=t@example.com", ...args], {
      cwd: tools,
      stdio: "pipe",
    });
  git("init", "--quiet");
  git("add", ".");
  git("commit", "--quiet", "-m", "skills");
  // A skills directory: bare names and owner/repo folders.
  await put(join(root, "dir", "greeter", "SKILL.md"), "---\nname: greeter\n---\nSay hello.\n");
  await put(join(root, "dir", "other", "repo", ".claude", "skills", "helper", "SKILL.md"), "Help out.\n");
  // Beside the skills directory, not in it: no spec may reach it.
  await put(join(root, "secret", "SKILL.md"), "---\nname: secret\n---\nTOP SECRET\n");

  const configFile = join(root, "dispatch.config.yaml");
  await writeFile(
    configFile,
    JSON.stringify({
      skills: {
        dirs: [join(root, "dir")],
        repos: {
          "acme/local": join(root, "local"),
          "acme/tools": `file://${tools}`,
          "acme/remote": "http://127.0.0.1:1/acme/remote.git",
        },
        github: false,
      },
    }),
  );
  t = await startTestDispatch({ DISPATCH_CONFIG_FILE: configFile });
});
afterAll(async () => {
  await t?.stop();
  await rm(root, { recursive: true, force: true });
});

const create = (body: Record<string, unknown>) => t.api("POST", "/api/v1/agent/runs", body);
const get = async (id: string) => (await t.api("GET", `/api/v1/agent/runs/${id}`)).body;

describe("skills", () => {
  it("a local repo's SKILL.md becomes the base prompt and sets the name and agent_skill", async () => {
    const res = await create({ prompt: "$ echo reviewing", config: { skill_spec: "acme/local:reviewer" } });
    expect(res.status, res.text).toBe(200);
    const run = await get(res.body.run_id);
    expect(run.agent_config.base_prompt).toBe("You review code. Point out bugs first, then style.");
    expect(run.agent_config.name).toBe("code-reviewer");
    expect(run.agent_config.skill_spec).toBe("acme/local:reviewer");
    expect(run.agent_skill).toEqual({
      name: "code-reviewer",
      description: "Reviews a change for bugs and style.",
      full_path: "acme/local:.agents/skills/reviewer/SKILL.md",
    });
    await waitForState(t, res.body.run_id, ["SUCCEEDED"]);
  });

  it("joins a given base prompt after the skill's, keeps a given name, and titles a skill-only run", async () => {
    const res = await create({
      skill: "acme/local:reviewer",
      config: { base_prompt: "Be brief.", name: "my-review" },
    });
    expect(res.status, res.text).toBe(200);
    const run = await get(res.body.run_id);
    expect(run.agent_config.base_prompt).toBe(
      "You review code. Point out bugs first, then style.\n\nBe brief.",
    );
    expect(run.agent_config.name).toBe("my-review");
    expect(run.title).toBe("code-reviewer");
  });

  it("resolves a path to a SKILL.md, a file:// git repo, a skills directory and its owner/repo folders", async () => {
    const cases: Array<[string, string, string]> = [
      ["acme/local:docs/custom/SKILL.md", "custom", "A custom path."],
      ["acme/tools:linter", "linter", "Run the linter."],
      ["greeter", "greeter", "Say hello."],
      ["other/repo:helper", "helper", "Help out."],
    ];
    for (const [spec, name, body] of cases) {
      const res = await create({ prompt: "x", skill: spec });
      expect(res.status, `${spec}: ${res.text}`).toBe(200);
      const run = await get(res.body.run_id);
      expect(run.agent_skill?.name, spec).toBe(name);
      expect(run.agent_config.base_prompt, spec).toBe(body);
    }
    const tools = await get((await create({ prompt: "x", skill: "acme/tools:linter" })).body.run_id);
    expect(tools.agent_skill).toEqual({
      name: "linter",
      description: "Lints.",
      full_path: "acme/tools:skills/linter/SKILL.md",
    });
  });

  it("an unknown skill is a 400 at create time, naming the skill and where it looked", async () => {
    for (const [spec, text] of [
      ["acme/local:nope", ".agents/skills/nope/SKILL.md"],
      ["acme/tools:nope", "acme/tools"],
      ["unknown/repo:x", "unknown/repo is not configured"],
      ["nope", "skills directories"],
      ["acme/local:../../etc/passwd/SKILL.md", "acme/local"],
    ]) {
      const res = await create({ prompt: "x", config: { skill_spec: spec } });
      expect(res.status, spec).toBe(400);
      expect(res.body.type, spec).toMatch(/invalid-request/);
      expect(res.text, spec).toContain(text);
    }
  });

  const ESCAPING_SPECS = [
    "../secret:SKILL.md",
    "../local:reviewer",
    "a/..:greeter",
    "./b:greeter",
    "a/b:../../x",
    "acme/local:docs/../docs/custom/SKILL.md",
    "acme/local:./docs/custom/SKILL.md",
  ];

  it("a skill spec with a . or .. segment is a 400 at create time that shows a valid spec", async () => {
    for (const spec of ESCAPING_SPECS) {
      for (const body of [
        { prompt: "x", config: { skill_spec: spec } },
        { prompt: "x", skill: spec },
      ]) {
        const res = await create(body);
        expect(res.status, spec).toBe(400);
        expect(res.body.type, spec).toMatch(/invalid-request/);
        expect(res.body.detail, spec).toMatch(/"\." (and|or) "\.\."/);
        expect(res.body.detail, spec).toContain(
          "owner/repo:name, owner/repo:path/to/SKILL.md or a skill name",
        );
      }
    }
    const runs = (await t.api("GET", "/api/v1/agent/runs?limit=500")).body.runs;
    expect(JSON.stringify(runs)).not.toContain("TOP SECRET");
  });

  it("the resolver refuses . and .. segments too (a spec that reached the executor some other way)", async () => {
    const resolver = new SkillResolver(
      { dirs: [join(root, "dir")], repos: {}, github: false },
      { cacheDir: join(root, "cache") },
    );
    for (const spec of ESCAPING_SPECS) {
      for (const lookup of [
        await resolver.resolveNow(spec),
        await resolver.resolve(spec, new AbortController().signal),
      ]) {
        expect(lookup.kind, spec).toBe("not_found");
        expect(lookup.kind === "not_found" && lookup.message, spec).toMatch(/"\." (and|or) "\.\."/);
      }
    }
    // The same directory is still reachable through a valid spec.
    expect((await resolver.resolveNow("greeter")).kind).toBe("found");
  });

  it("a skill only resolvable at execution (a remote repo) fails the run with a clear message when unreachable", async () => {
    const res = await create({ prompt: "$ echo never", skill: "acme/remote:x" });
    expect(res.status, res.text).toBe(200);
    const run = await waitForState(t, res.body.run_id, ["FAILED"]);
    expect(run.status_message).toMatchObject({ error_code: "resource_not_found", reason: "skill_not_found" });
    expect(run.status_message.message).toContain('skill "acme/remote:x": could not fetch acme/remote');
  });

  it("parses frontmatter, and takes a SKILL.md without one as all body", () => {
    expect(parseSkillMd(REVIEWER)).toEqual({
      meta: { name: "code-reviewer", description: "Reviews a change for bugs and style." },
      body: "You review code. Point out bugs first, then style.\n",
    });
    expect(parseSkillMd("Just text.\n")).toEqual({ meta: {}, body: "Just text.\n" });
  });
});
