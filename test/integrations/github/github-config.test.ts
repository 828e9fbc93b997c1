import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../src/config.ts";
import { parseSettings } from "../../../src/config-file.ts";
import { loadGitHubConfig } from "../../../src/config-github.ts";

describe("GitHub configuration", () => {
  let dir: string;
  let keyPath: string;
  let pem: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "dispatch-ghcfg-"));
    pem = generateKeyPairSync("rsa", { modulusLength: 2048 })
      .privateKey.export({ type: "pkcs1", format: "pem" })
      .toString();
    keyPath = join(dir, "app.pem");
    await writeFile(keyPath, pem);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const base = { GITHUB_WEBHOOK_SECRET: "s3cret-s3cret", GITHUB_BOT_HANDLE: "@dispatch" };

  it("is off without GITHUB_APP_ID or GITHUB_TOKEN", () => {
    expect(loadGitHubConfig({})).toBeUndefined();
    expect(loadGitHubConfig({ GITHUB_API_URL: "https://ghe.example/api/v3" })).toBeUndefined();
  });

  it("token mode, with defaults", () => {
    expect(loadGitHubConfig({ ...base, GITHUB_TOKEN: "ghp_0123456789" })).toEqual({
      auth: { kind: "token", token: "ghp_0123456789" },
      appId: undefined,
      webhookSecret: "s3cret-s3cret",
      apiUrl: "https://api.github.com",
      botHandle: "dispatch",
    });
  });

  it("App mode, with the key as a path or as PEM text (\\n escaped)", () => {
    const byPath = loadGitHubConfig({ ...base, GITHUB_APP_ID: "42", GITHUB_PRIVATE_KEY: keyPath });
    expect(byPath?.auth).toEqual({ kind: "app", appId: "42", privateKey: pem });
    const inline = loadGitHubConfig({
      ...base,
      GITHUB_APP_ID: "42",
      GITHUB_PRIVATE_KEY: pem.replaceAll("\n", "\\n"),
    });
    expect(inline?.auth).toEqual({ kind: "app", appId: "42", privateKey: pem });
  });

  it.each([
    [{ GITHUB_APP_ID: "42" }, "GITHUB_PRIVATE_KEY: required with GITHUB_APP_ID"],
    [{ GITHUB_APP_ID: "forty-two", GITHUB_PRIVATE_KEY: "x" }, "GITHUB_APP_ID: must be the App's numeric id"],
    [
      { GITHUB_APP_ID: "42", GITHUB_PRIVATE_KEY: "/no/such/key.pem" },
      "GITHUB_PRIVATE_KEY: neither a PEM key nor an existing file",
    ],
    [
      {
        GITHUB_APP_ID: "42",
        GITHUB_PRIVATE_KEY: "-----BEGIN RSA PRIVATE KEY-----\nnope\n-----END RSA PRIVATE KEY-----",
      },
      "GITHUB_PRIVATE_KEY: not a readable private key",
    ],
    [{ GITHUB_APP_ID: "42", GITHUB_TOKEN: "ghp_0123456789" }, "GITHUB_TOKEN: set either GITHUB_APP_ID"],
    [{ GITHUB_TOKEN: "ghp_0123456789", GITHUB_WEBHOOK_SECRET: "" }, "GITHUB_WEBHOOK_SECRET: required"],
    [{ GITHUB_TOKEN: "ghp_0123456789", GITHUB_BOT_HANDLE: "" }, "GITHUB_BOT_HANDLE: required"],
    [
      { GITHUB_TOKEN: "ghp_0123456789", GITHUB_BOT_HANDLE: "not a login" },
      "GITHUB_BOT_HANDLE: must be a GitHub login",
    ],
    [{ GITHUB_TOKEN: "ghp_0123456789", GITHUB_API_URL: "not a url" }, "GITHUB_API_URL:"],
    [{ GITHUB_TOKEN: undefined, GITHUB_APP_ID: undefined }, "GITHUB_APP_ID: required (or GITHUB_TOKEN)"],
  ])("%j is refused naming the variable", (env, message) => {
    const vars = { ...base, ...env } as Record<string, string | undefined>;
    expect(() => loadGitHubConfig(vars)).toThrow(ConfigError);
    expect(() => loadGitHubConfig(vars)).toThrow(message);
  });

  it("a process without the api role needs no GITHUB_WEBHOOK_SECRET: it receives no webhooks", () => {
    const worker = loadConfig({
      GITHUB_TOKEN: "ghp_0123456789",
      GITHUB_BOT_HANDLE: "dispatch",
      DISPATCH_ROLES: "worker",
      DISPATCH_DATA_DIR: dir,
    });
    expect(worker.github).toMatchObject({ auth: { kind: "token" }, webhookSecret: undefined });
    // With the api role it is required, as before.
    expect(() =>
      loadConfig({
        GITHUB_TOKEN: "ghp_0123456789",
        GITHUB_BOT_HANDLE: "dispatch",
        DISPATCH_ROLES: "api,worker",
        DISPATCH_DATA_DIR: dir,
      }),
    ).toThrow("GITHUB_WEBHOOK_SECRET: required");
  });

  it("loadConfig carries it", () => {
    const config = loadConfig({ ...base, GITHUB_TOKEN: "ghp_0123456789", DISPATCH_DATA_DIR: dir });
    expect(config.github?.botHandle).toBe("dispatch");
    expect(config.settings.github).toEqual({
      min_permission: "write",
      permission_cache_seconds: 60,
      repositories: {},
      label: "dispatch",
      autofix: { max_attempts: 3 },
    });
  });

  it("github: settings are validated", () => {
    expect(parseSettings({ github: { min_permission: "maintain" } }).github.min_permission).toBe("maintain");
    expect(() => parseSettings({ github: { min_permission: "owner" } }, "f.yaml")).toThrow(
      /github\.min_permission/,
    );
    expect(() => parseSettings({ github: { min_perm: "read" } }, "f.yaml")).toThrow(/github/);
  });
});
