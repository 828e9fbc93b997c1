import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";

// GET /agent/models, /agent/environments and /agent from a configured Dispatch and from a bare one.

let root: string;
let configured: TestDispatch;
let bare: TestDispatch;

async function put(path: string, text: string) {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "dispatch-catalog-"));
  const app = join(root, "checkouts", "app");
  await put(
    join(app, ".agents", "skills", "reviewer", "SKILL.md"),
    "---\nname: code-reviewer\ndescription: Reviews.\n---\nReview the code.\n",
  );
  await put(join(app, "skills", "broken", "SKILL.md"), "---\nname: [unclosed\n---\nBody.\n");
  await put(join(root, "dir", "greeter", "SKILL.md"), "---\nname: greeter\n---\nSay hello.\n");
  const configFile = join(root, "dispatch.config.yaml");
  await writeFile(
    configFile,
    JSON.stringify({
      models: { aliases: { fast: "anthropic/claude-haiku-4-5", local: "openai-compatible/qwen2.5-coder" } },
      environments: {
        app: {
          description: "The app",
          repos: [{ url: "https://github.com/acme/app.git" }],
          setup: ["npm ci", "npm run build"],
        },
        broken: { setup: ["echo preparing", "exit 7"] },
      },
      skills: {
        dirs: [join(root, "dir")],
        repos: { "acme/app": app, "acme/remote": "https://example.invalid/acme/remote.git" },
        github: false,
      },
    }),
  );
  configured = await startTestDispatch({
    DISPATCH_CONFIG_FILE: configFile,
    DISPATCH_DEFAULT_MODEL: "openai/gpt-5",
    ANTHROPIC_API_KEY: "sk-test",
  });
  bare = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0" });
});
afterAll(async () => {
  await configured?.stop();
  await bare?.stop();
  await rm(root, { recursive: true, force: true });
});

const scripted = { harness: { type: "scripted" } };

describe("GET /api/v1/agent/models", () => {
  it("lists the default model and every alias with its provider, saying which cannot be used and why", async () => {
    const res = await configured.api("GET", "/api/v1/agent/models");
    expect(res.status, res.text).toBe(200);
    expect(res.body.default_model_id).toBe("openai/gpt-5");
    const byId = Object.fromEntries(res.body.models.map((m: { id: string }) => [m.id, m]));
    // The configured ones first; then Claude Code's known models (ANTHROPIC_API_KEY is set: models-harnesses.test.ts).
    expect(Object.keys(byId).slice(0, 3)).toEqual(["openai/gpt-5", "fast", "local"]);
    expect(byId["openai/gpt-5"]).toMatchObject({ provider: "OPENAI", vision_supported: true });
    expect(byId["openai/gpt-5"].description).toContain("OPENAI_API_KEY");
    expect(byId.fast).toEqual({
      id: "fast",
      display_name: "fast (anthropic/claude-haiku-4-5)",
      provider: "ANTHROPIC",
      vision_supported: true,
      description: "alias of anthropic/claude-haiku-4-5",
      harnesses: ["oz"],
    });
    expect(byId.local).toMatchObject({ provider: "UNKNOWN", vision_supported: false });
    expect(byId.local.description).toContain("OPENAI_COMPATIBLE_BASE_URL");
  });

  it("with no model configured, the default is the offline scripted harness", async () => {
    const res = await bare.api("GET", "/api/v1/agent/models");
    expect(res.status, res.text).toBe(200);
    expect(res.body.default_model_id).toBe("scripted");
    expect(res.body.models).toHaveLength(1);
    expect(res.body.models[0]).toMatchObject({
      id: "scripted",
      provider: "UNKNOWN",
      vision_supported: false,
    });
    expect(res.body.models[0].description).toContain("DISPATCH_DEFAULT_MODEL");
  });

  it("refuses an unknown query parameter by name, and needs a key", async () => {
    const res = await bare.api("GET", "/api/v1/agent/models?provider=openai");
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain("provider");
    expect((await bare.api("GET", "/api/v1/agent/models", undefined, { authorization: "" })).status).toBe(
      401,
    );
  });
});

describe("GET /api/v1/agent/environments", () => {
  it("describes each configured environment and the team's latest run in it", async () => {
    const created = await configured.api("POST", "/api/v1/agent/runs", {
      prompt: "$ echo never",
      config: { ...scripted, environment_id: "broken" },
    });
    expect(created.status, created.text).toBe(200);
    await waitForState(configured, created.body.run_id, ["FAILED"]);

    const res = await configured.api("GET", "/api/v1/agent/environments");
    expect(res.status, res.text).toBe(200);
    const [app, broken] = res.body.environments;
    expect(app).toEqual({
      uid: "app",
      config: {
        name: "app",
        description: "The app",
        github_repos: [{ owner: "acme", repo: "app" }],
        setup_commands: ["npm ci", "npm run build"],
      },
      last_updated: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      setup_failed: false,
      last_task_run_timestamp: null,
      last_task_created: null,
    });
    expect(broken.uid).toBe("broken");
    expect(broken.config).toEqual({
      name: "broken",
      description: null,
      github_repos: [],
      setup_commands: ["echo preparing", "exit 7"],
    });
    expect(broken.setup_failed).toBe(true);
    expect(broken.last_task_created).toMatchObject({ id: created.body.run_id, state: "FAILED" });
    expect(broken.last_task_run_timestamp).toBe(broken.last_task_created.started_at);

    // Another team has not run anything there.
    const other = await configured.newKey("team-b");
    const seen = await configured.api("GET", "/api/v1/agent/environments", undefined, {
      authorization: `Bearer ${other}`,
    });
    expect(seen.body.environments[1]).toMatchObject({ setup_failed: false, last_task_created: null });
  });

  it("is an empty list when none is configured; sort_by is accepted, anything else refused", async () => {
    const res = await bare.api("GET", "/api/v1/agent/environments?sort_by=name");
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ environments: [] });
    const bad = await bare.api("GET", "/api/v1/agent/environments?sort=name");
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain("sort");
  });
});

describe("GET /api/v1/agent", () => {
  it("lists the local skills by name with their source, environments and last run", async () => {
    const run = await configured.api("POST", "/api/v1/agent/runs", {
      prompt: "$ echo review",
      config: { ...scripted, skill_spec: "acme/app:reviewer" },
    });
    expect(run.status, run.text).toBe(200);
    const res = await configured.api("GET", "/api/v1/agent");
    expect(res.status, res.text).toBe(200);
    expect(res.body.agents.map((a: { name: string }) => a.name)).toEqual(["code-reviewer", "greeter"]);
    const [reviewer, greeter] = res.body.agents;
    expect(reviewer.variants).toEqual([
      {
        id: "acme/app:.agents/skills/reviewer/SKILL.md",
        description: "Reviews.",
        base_prompt: "Review the code.",
        source: { owner: "acme", name: "app", skill_path: ".agents/skills/reviewer/SKILL.md" },
        environments: [{ uid: "app", name: "app" }],
        last_run_timestamp: expect.any(String),
      },
    ]);
    expect(greeter.variants).toEqual([
      {
        id: "greeter",
        description: "",
        base_prompt: "Say hello.",
        source: { owner: "", name: "", skill_path: "greeter/SKILL.md" },
        environments: [
          { uid: "app", name: "app" },
          { uid: "broken", name: "broken" },
        ],
        last_run_timestamp: null,
      },
    ]);
    // The listed id is a skill spec that runs accept.
    const byId = await configured.api("POST", "/api/v1/agent/runs", {
      config: { ...scripted, skill_spec: reviewer.variants[0].id },
    });
    expect(byId.status, byId.text).toBe(200);
  });

  it("shows malformed SKILL.md files with the reason only when asked, and filters by repo", async () => {
    const all = await configured.api("GET", "/api/v1/agent?include_malformed_skills=true&repo=acme/app");
    expect(all.status, all.text).toBe(200);
    const broken = all.body.agents.find((a: { name: string }) => a.name === "broken");
    expect(broken.variants[0].error).toContain("not valid YAML");
    expect(all.body.agents.map((a: { name: string }) => a.name)).toEqual(["broken", "code-reviewer"]);
    const bad = await configured.api("GET", "/api/v1/agent?include_malformed_skills=yes");
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain("include_malformed_skills");
  });

  it("is an empty list with no skills configured", async () => {
    const res = await bare.api("GET", "/api/v1/agent");
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ agents: [] });
  });
});
