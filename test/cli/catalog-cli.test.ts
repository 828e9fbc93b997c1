import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliFor } from "../support/cli.ts";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";

// `dispatch models|environments|agents|identities …` as a user runs them: a child process of
// src/main.ts configured only by DISPATCH_BASE_URL and DISPATCH_API_KEY, against a live server.

const NO_STACK = /^\s+at /m;

let root: string;
let t: TestDispatch;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "dispatch-cli-catalog-"));
  await mkdir(join(root, "skills", "greeter"), { recursive: true });
  await writeFile(
    join(root, "skills", "greeter", "SKILL.md"),
    "---\ndescription: Greets.\n---\nSay hello.\n",
  );
  const configFile = join(root, "dispatch.config.yaml");
  await writeFile(
    configFile,
    JSON.stringify({
      models: { aliases: { fast: "anthropic/claude-haiku-4-5" } },
      environments: { web: { repos: [{ url: "https://github.com/acme/web" }] } },
      skills: { dirs: [join(root, "skills")], github: false },
    }),
  );
  t = await startTestDispatch({
    DISPATCH_CONFIG_FILE: configFile,
    DISPATCH_MAX_CONCURRENT_RUNS: "0",
    ANTHROPIC_API_KEY: "sk-test",
  });
});
afterAll(async () => {
  await t?.stop();
  await rm(root, { recursive: true, force: true });
});

const dispatch = cliFor(() => t);

describe("dispatch models, environments, agents", () => {
  it("print a table, or JSON with --json", async () => {
    const models = await dispatch(["models"]);
    expect(models.code, models.stderr).toBe(0);
    expect(models.stdout).toMatch(/^MODEL\s+PROVIDER\s+VISION\s+DESCRIPTION/);
    expect(models.stdout).toMatch(/^scripted \(default\)\s+UNKNOWN\s+no/m);
    expect(models.stdout).toMatch(/^fast\s+ANTHROPIC\s+yes\s+alias of anthropic\/claude-haiku-4-5$/m);
    const json = JSON.parse((await dispatch(["models", "--json"])).stdout);
    expect(json.default_model_id).toBe("scripted");

    const envs = await dispatch(["environments"]);
    expect(envs.code, envs.stderr).toBe(0);
    expect(envs.stdout).toMatch(/^web\s+acme\/web\s+-/m);

    const agents = await dispatch(["agents"]);
    expect(agents.code, agents.stderr).toBe(0);
    expect(agents.stdout).toMatch(/^greeter\s+greeter\s+-\s+Greets\.$/m);
    const filtered = JSON.parse((await dispatch(["agents", "--repo", "acme/other", "--json"])).stdout);
    expect(filtered).toEqual([]);
  });

  it("print the server's problem, not a stack, and exit 1", async () => {
    const res = await dispatch(["agents", "--repo", "nonsense"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("repo must be owner/repo");
    expect(res.stderr).toContain("HTTP 400 invalid_request");
    expect(res.stderr).not.toMatch(NO_STACK);
  });
});

describe("dispatch identities", () => {
  it("creates, lists, gets, updates and deletes a service account", async () => {
    const created = await dispatch([
      "identities",
      "create",
      "Release bot",
      "--description",
      "Ships",
      "--skill",
      "greeter",
    ]);
    expect(created.code, created.stderr).toBe(0);
    const uid = created.stdout.trim();
    expect(uid).toMatch(/^sa_/);
    expect(created.stderr).toContain(`dispatch keys create --principal ${uid}`);

    const listed = await dispatch(["identities", "list"]);
    expect(listed.stdout).toMatch(/^UID\s+CREATED\s+MODEL\s+NAME/);
    expect(listed.stdout).toMatch(
      new RegExp(`^${uid}\\s+(just now|\\d+ s ago|\\d+ min ago)\\s+-\\s+Release bot$`, "m"),
    );

    const updated = await dispatch(["identities", "update", uid, "--model", "fast", "--description", ""]);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toMatch(/^model\s+fast$/m);
    expect(updated.stdout).not.toContain("Ships");

    const got = JSON.parse((await dispatch(["identities", "get", uid, "--json"])).stdout);
    expect(got).toMatchObject({ uid, name: "Release bot", base_model: "fast", skills: ["greeter"] });

    const deleted = await dispatch(["identities", "delete", uid]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain("its API keys are revoked");
    const gone = await dispatch(["identities", "get", uid]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain("HTTP 404 resource_not_found");
  });

  it("explains refusals and bad usage", async () => {
    const member = await t.newKey("team_default");
    const refused = await dispatch(["identities", "list"], { DISPATCH_API_KEY: member });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("admin key");
    expect(refused.stderr).toContain("HTTP 403 not_authorized");

    const admin = await dispatch(["identities", "delete", "admin"]);
    expect(admin.code).toBe(1);
    expect(admin.stderr).toContain("default identity");

    const usage = await dispatch(["identities", "update", "sa_x"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("say what to change");
    expect(usage.stderr).not.toMatch(NO_STACK);
    const unknown = await dispatch(["identities", "rename"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown identities command "rename"');
  });
});
