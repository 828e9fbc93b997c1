import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch } from "../../../test/support/dispatch.ts";
import { BadRequestError, Dispatch, NotFoundError, PermissionDeniedError } from "../src/index.ts";

// client.models, client.environments, client.agents and client.identities against a live Dispatch.

let root: string;
let t: TestDispatch;
let client: Dispatch;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "dispatch-client-catalog-"));
  await mkdir(join(root, "skills", "greeter"), { recursive: true });
  await writeFile(join(root, "skills", "greeter", "SKILL.md"), "---\nname: greeter\n---\nSay hello.\n");
  const configFile = join(root, "dispatch.config.yaml");
  await writeFile(
    configFile,
    JSON.stringify({
      models: { aliases: { fast: "anthropic/claude-haiku-4-5" } },
      environments: { web: { repos: [{ url: "git@github.com:acme/web.git" }], setup: ["make"] } },
      skills: { dirs: [join(root, "skills")], github: false },
    }),
  );
  t = await startTestDispatch({
    DISPATCH_CONFIG_FILE: configFile,
    DISPATCH_MAX_CONCURRENT_RUNS: "0",
    ANTHROPIC_API_KEY: "sk-test",
  });
  client = new Dispatch({ apiKey: t.key, baseURL: `${t.url}/api/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.stop();
  await rm(root, { recursive: true, force: true });
});

describe("client catalogue resources", () => {
  it("models.list", async () => {
    const models = await client.models.list();
    expect(models.default_model_id).toBe("scripted");
    // The configured ones first, then what the external agents can use with the configured keys.
    expect(models.models.map((m) => [m.id, m.provider]).slice(0, 2)).toEqual([
      ["scripted", "UNKNOWN"],
      ["fast", "ANTHROPIC"],
    ]);
    expect(models.models.find((m) => m.id === "fast")?.harnesses).toContain("oz");
  });

  it("environments.list", async () => {
    const { environments } = await client.environments.list({ sort_by: "name" });
    expect(environments).toHaveLength(1);
    expect(environments[0]!.config).toEqual({
      name: "web",
      description: null,
      github_repos: [{ owner: "acme", repo: "web" }],
      setup_commands: ["make"],
    });
  });

  it("agents.list, with boolean query parameters", async () => {
    const { agents } = await client.agents.list({ include_malformed_skills: true, sort_by: "last_run" });
    expect(agents.map((a) => a.name)).toEqual(["greeter"]);
    expect(agents[0]!.variants[0]).toMatchObject({ id: "greeter", base_prompt: "Say hello." });
    await expect(client.agents.list({ repo: "not a repo" })).rejects.toBeInstanceOf(BadRequestError);
  });
});

describe("client.identities", () => {
  it("creates, lists, retrieves, updates and deletes", async () => {
    const created = await client.identities.create({ name: "Deployer", prompt: "Deploy carefully." });
    expect(created).toMatchObject({
      name: "Deployer",
      available: true,
      prompt: "Deploy carefully.",
      skills: [],
    });
    const { agents } = await client.identities.list();
    expect(agents.map((a) => a.uid)).toContain(created.uid);
    expect(await client.identities.retrieve(created.uid)).toEqual(created);
    const updated = await client.identities.update(created.uid, { base_model: "fast", skills: ["greeter"] });
    expect(updated).toMatchObject({ base_model: "fast", skills: ["greeter"], prompt: "Deploy carefully." });
    expect(await client.identities.delete(created.uid)).toBeUndefined();
    await expect(client.identities.retrieve(created.uid)).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.identities.delete("admin")).rejects.toBeInstanceOf(BadRequestError);
  });

  it("a member key is refused with PermissionDeniedError", async () => {
    const member = client.withOptions({ apiKey: await t.newKey("team_default") });
    const err = await member.identities.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermissionDeniedError);
    expect((err as PermissionDeniedError).message).toContain("admin key");
  });
});
