import { generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitHubClients } from "../../../src/integrations/github/github-clients.ts";
import { createLogger } from "../../../src/log.ts";
import { FakeGitHub } from "../../support/fake-github.ts";

describe("GitHubClients as a GitHub App", () => {
  let fake: FakeGitHub;
  let privateKey: string;
  beforeAll(async () => {
    const pair = generateKeyPairSync("rsa", { modulusLength: 2048 });
    privateKey = pair.privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    fake = await new FakeGitHub().start();
    fake.app("777", pair.publicKey.export({ type: "spki", format: "pem" }).toString());
    fake.installations.set("acme/widgets", 31);
    fake.installations.set("acme/gadgets", 31);
    fake.installations.set("other/thing", 32);
  });
  afterAll(() => fake.stop());

  it("finds a repository's installation when no webhook named it, one token per installation", async () => {
    const clients = new GitHubClients({
      auth: { kind: "app", appId: "777", privateKey },
      apiUrl: fake.url,
      log: createLogger("silent"),
      throttle: false,
    });
    for (const repo of ["acme/widgets", "acme/gadgets", "other/thing", "acme/widgets"]) {
      const octokit = await clients.forRepo(repo);
      const [owner, name] = repo.split("/") as [string, string];
      const { status } = await octokit.rest.issues.createComment({
        owner,
        repo: name,
        issue_number: 1,
        body: "hi",
      });
      expect(status).toBe(201);
    }
    const lookups = fake.calls.filter((c) => c.path.endsWith("/installation")).map((c) => c.path);
    expect(lookups).toEqual([
      "/repos/acme/widgets/installation",
      "/repos/acme/gadgets/installation",
      "/repos/other/thing/installation",
    ]);
    const tokens = fake.calls.filter((c) => c.path.endsWith("/access_tokens")).map((c) => c.path);
    expect(tokens).toEqual(["/app/installations/31/access_tokens", "/app/installations/32/access_tokens"]);
  });

  it("a repository the App is not installed on is an error, not a guess", async () => {
    const clients = new GitHubClients({
      auth: { kind: "app", appId: "777", privateKey },
      apiUrl: fake.url,
      log: createLogger("silent"),
      throttle: false,
    });
    await expect(clients.forRepo("nobody/here")).rejects.toMatchObject({ status: 404 });
  });
});
