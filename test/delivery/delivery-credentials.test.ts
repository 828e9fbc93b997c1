import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { GitHttpServer } from "../support/git-http-server.ts";
import { GitRemotes } from "../support/git-remotes.ts";

/**
 * The token git uses reaches the git server and nothing else: not the transcript, the logs (at debug
 * level), any file under the data directory (workspace .git/config, the private mirror, the database),
 * the agent's environment or what is pushed.
 */
describe("delivery credentials", () => {
  let remotes: GitRemotes;
  let github: FakeGitHub;
  let gitServer: GitHttpServer;
  let t: TestDispatch;
  const lines: string[] = [];
  const api = async (method: string, path: string, body?: unknown) => (await t.api(method, path, body)).body;
  const finished = (id: string) =>
    waitFor(
      async () => {
        const run = await api("GET", `/api/v1/agent/runs/${id}`);
        return ["SUCCEEDED", "FAILED", "ERROR"].includes(run.state) ? run : undefined;
      },
      { timeoutMs: 30_000, what: `run ${id} to finish` },
    );

  beforeAll(async () => {
    remotes = new GitRemotes();
    remotes.create("acme/app", { "README.md": "# app\n" });
    github = await new FakeGitHub().start();
    github.gitRoot = remotes.root;
    gitServer = await new GitHttpServer(remotes.root, github.token).start();
    t = await startTestDispatch(
      {
        GITHUB_SERVER_URL: gitServer.url,
        GITHUB_API_URL: github.url,
        GITHUB_TOKEN: github.token,
        GITHUB_WEBHOOK_SECRET: "webhook-secret-1",
        GITHUB_BOT_HANDLE: "dispatch",
      },
      { surfaceOptions: { github: { throttle: false } }, logs: lines },
    );
  });
  afterAll(async () => {
    await t?.stop();
    await gitServer?.stop();
    await github?.stop();
    remotes?.remove();
  });

  it("uses the token for git over HTTPS and leaves it nowhere else", async () => {
    const created = await api("POST", "/api/v1/agent/runs", {
      title: "Look for secrets",
      prompt: "$ env > env.txt\n$ cat .git/config > git-config.txt\n$ git remote -v > remotes.txt",
      config: { repository: "acme/app" },
    });
    const run = await finished(created.run_id);
    expect(run.status_message?.message).toMatch(/^PR #\d+ opened/);
    expect(run.state).toBe("SUCCEEDED");

    const basic = Buffer.from(`x-access-token:${github.token}`).toString("base64");
    // git used it: the server saw the token on the fetch and on the push.
    expect(gitServer.authorizations.filter((a) => a === `Basic ${basic}`).length).toBeGreaterThanOrEqual(2);

    const secrets = [github.token, basic];
    const branch = run.agent_config.branch as string;
    for (const file of ["env.txt", "git-config.txt", "remotes.txt"]) {
      const pushed = remotes.show("acme/app", branch, file);
      for (const secret of secrets) expect(pushed).not.toContain(secret);
    }
    expect(remotes.show("acme/app", branch, "remotes.txt")).toContain(`${gitServer.url}/acme/app.git`);

    const events = await api("GET", `/api/v1/agent/runs/${run.run_id}/events?limit=1000`);
    const transcript = JSON.stringify(events);
    expect(transcript).toContain("Pushed");
    for (const secret of secrets) {
      expect(transcript).not.toContain(secret);
      expect(lines.filter((l) => l.includes(secret))).toEqual([]);
      expect(filesContaining(t.dataDir, secret)).toEqual([]);
    }
  });

  it("fails a run whose repository cannot be read with a message that names it and no token", async () => {
    const created = await api("POST", "/api/v1/agent/runs", {
      prompt: "$ true",
      config: { repository: "acme/missing" },
    });
    const run = await finished(created.run_id);
    expect(run.state).toBe("FAILED");
    expect(run.status_message).toMatchObject({
      error_code: "resource_unavailable",
      reason: "repository_unavailable",
    });
    expect(run.status_message.message).toMatch(/^Repository acme\/missing .* could not be read/);
    expect(run.status_message.message).not.toContain(github.token);
  });
});

/** Every file under `dir` whose bytes contain `secret`. */
function filesContaining(dir: string, secret: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const st = statSync(path, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) walk(path);
      else if (st.isFile() && readFileSync(path).includes(secret)) found.push(path);
    }
  };
  walk(dir);
  return found;
}
