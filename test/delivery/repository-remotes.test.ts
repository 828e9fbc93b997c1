import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPublicAddress, remoteAccess } from "../../src/delivery/remote-access.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";

/**
 * `config.repository` names a remote that Dispatch's own process fetches and pushes, from its own network:
 * only owner/repo on GITHUB_SERVER_URL and https:// URLs on the hosts of git.allowed_hosts are accepted,
 * a host whose name resolves to a loopback, private or link-local (metadata) address when it is reached is
 * refused, and what the run's creator reads then says nothing of the network (no refused vs timed out
 * that would map hosts and ports); Dispatch's log has the details. Names resolve through a lookup the test
 * controls, as DNS would answer for them.
 */
const RESOLVES: Record<string, string[]> = {
  "git.example.test": ["127.0.0.1"],
  "internal.example.test": ["10.20.30.40"],
  "metadata.example.test": ["169.254.169.254"],
  "mixed.example.test": ["93.184.216.34", "fd00:ec2::254"],
};

describe("repositories named by URL", () => {
  let remotes: GitRemotes;
  let github: FakeGitHub;
  let t: TestDispatch;
  let dir: string;
  const logs: string[] = [];

  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create("acme/app", { "README.md": "# app\n" });
    github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    dir = await mkdtemp(join(tmpdir(), "dispatch-remotes-config-"));
    const configFile = join(dir, "dispatch.config.yaml");
    await writeFile(configFile, `git:\n  allowed_hosts: [${Object.keys(RESOLVES).join(", ")}]\n`);
    t = await startTestDispatch(
      { ...deliveryEnv(remotes, github), DISPATCH_CONFIG_FILE: configFile },
      {
        surfaceOptions: { github: { throttle: false } },
        lookup: async (host) => {
          const addresses = RESOLVES[host];
          if (!addresses) throw new Error(`getaddrinfo ENOTFOUND ${host}`);
          return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
        },
        logs,
      },
    );
  });
  afterAll(async () => {
    await t?.stop();
    await github?.stop();
    remotes?.remove();
    await rm(dir, { recursive: true, force: true });
  });

  const create = (repository: string) =>
    t.api("POST", "/api/v1/agent/runs", { prompt: "$ true", config: { repository, delivery: "branch" } });

  it("refuses http://, a host the operator does not allow, and an allowed host on another port, at create", async () => {
    const http = await create("http://git.example.test/acme/app.git");
    expect(http.status).toBe(400);
    expect(http.body.detail).toContain("http:// repositories are not supported");
    expect(http.body.detail).toContain("https://");

    for (const url of [
      "https://gitlab.attacker.test/acme/app.git",
      "https://git.example.test.attacker.test/acme/app.git",
      "https://169.254.169.254/latest/meta-data",
      "https://git.example.test:22/acme/app.git",
    ]) {
      const res = await create(url);
      expect(res.status, url).toBe(400);
      expect(res.body.error_code).toBe("invalid_request");
      expect(res.body.detail, url).toContain("is not a git host runs may name on this server");
      expect(res.body.detail).toContain("git.allowed_hosts in dispatch.config.yaml");
    }
    // owner/repo on GITHUB_SERVER_URL needs no allowance.
    expect((await create("acme/app")).status).toBe(200);
  });

  it("refuses an allowed host whose name resolves to a loopback, private or metadata address, saying only that it could not be read", async () => {
    const messages: string[] = [];
    for (const host of Object.keys(RESOLVES)) {
      const created = await create(`https://${host}/acme/app.git`);
      expect(created.status, created.text).toBe(200);
      const run = await waitForState(t, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
      expect(run.state).toBe("FAILED");
      expect(run.status_message).toMatchObject({ reason: "repository_unavailable" });
      messages.push(String(run.status_message.message).replaceAll(host, "<host>"));
      const events = await t.api("GET", `/api/v1/agent/runs/${run.run_id}/events?limit=1000`);
      for (const text of [run.status_message.message, events.text]) {
        expect(text).not.toMatch(
          /refused|timed out|resolve|connect|\bport\b|127\.0\.0\.1|10\.20\.30\.40|169\.254|fd00/i,
        );
      }
    }
    // One message for every cause: nothing to tell a closed port from a filtered one or a private address.
    expect(new Set(messages).size).toBe(1);
    expect(messages[0]).toBe(
      "Repository https://<host>/acme/app.git (https://<host>/acme/app.git) could not be read. Check that it exists and that Dispatch's GitHub App or GITHUB_TOKEN can read it; Dispatch's log has the details.",
    );
    // The operator sees why.
    const log = logs.join("");
    expect(log).toContain("resolves to 169.254.169.254; not public: 169.254.169.254");
    expect(log).toContain("not public: fd00:ec2::254");
  });
});

describe("remote access at execution", () => {
  const policy = (answers: Record<string, string[]>) => ({
    allowedHosts: ["git.example.com", "git.example.com:8443"],
    lookup: async (host: string) => (answers[host] ?? []).map((address) => ({ address, family: 4 })),
  });

  it("pins git to the public addresses it checked, with redirects off", async () => {
    const access = await remoteAccess(
      { repository: "https://git.example.com:8443/a/b.git", remote: "https://git.example.com:8443/a/b.git" },
      policy({ "git.example.com": ["93.184.216.34"] }),
    );
    expect(access).toEqual({
      ok: true,
      gitConfig: [
        "-c",
        "http.curloptResolve=git.example.com:8443:93.184.216.34",
        "-c",
        "http.followRedirects=false",
      ],
    });
  });

  it("checks again when the run executes: a host no longer allowed, or no answer, is refused", async () => {
    const gone = await remoteAccess(
      { repository: "https://old.example.com/a/b.git", remote: "https://old.example.com/a/b.git" },
      policy({ "old.example.com": ["93.184.216.34"] }),
    );
    expect(gone).toMatchObject({ ok: false, detail: expect.stringContaining("git.allowed_hosts") });
    const empty = await remoteAccess(
      { repository: "https://git.example.com/a/b.git", remote: "https://git.example.com/a/b.git" },
      policy({}),
    );
    expect(empty.ok).toBe(false);
  });

  it("counts as public only addresses outside loopback, private, shared, link-local and IPv4-embedding ranges", () => {
    for (const address of [
      "127.0.0.1",
      "0.0.0.0",
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "100.100.100.200",
      "169.254.169.254",
      "::1",
      "::",
      "::ffff:127.0.0.1",
      "::ffff:a9fe:a9fe",
      "fd00:ec2::254",
      "fe80::1",
      "64:ff9b::a00:1",
      "2002:a00:1::",
      "not an address",
    ]) {
      expect(isPublicAddress(address), address).toBe(false);
    }
    for (const address of ["93.184.216.34", "140.82.112.3", "2606:4700:4700::1111"]) {
      expect(isPublicAddress(address), address).toBe(true);
    }
  });
});
