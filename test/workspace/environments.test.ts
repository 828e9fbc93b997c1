import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { createServer as createTcpServer, type Server as TcpServer } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeBwrap, which } from "../../src/sandbox/bwrap-sandbox.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";

const TOKEN = "ghp_environmentTestToken0123456789abcdef";
const bwrap = (await probeBwrap("/usr/bin/bwrap")) === undefined;
/** What a network of the sandbox's own needs besides bubblewrap (looked up on PATH like the provider). */
const ownNetwork = Boolean((await which("slirp4netns")) && (await which("nft")));
/** An address of this host other than loopback, as the host's services are reached from its network. */
const outsideAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === "IPv4" && !a.internal)?.address;

let root: string;
let repoUrl: string;
let t: TestDispatch;
let gitServer: Server;
let authSeen: string | undefined;
let tcp: TcpServer;
let tcpPort: number;

function git(cwd: string, ...args: string[]) {
  execFileSync("git", ["-c", "user.name=Test", "-c", "user.email=test@example.com", ...args], {
    cwd,
    stdio: "pipe",
  });
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "dispatch-envs-"));
  // A local repository with two branches, cloned through a file:// URL.
  const repo = join(root, "upstream");
  await mkdir(repo);
  git(repo, "init", "--quiet", "--initial-branch=main");
  await writeFile(join(repo, "README.md"), "hello from upstream\n");
  git(repo, "add", ".");
  git(repo, "commit", "--quiet", "-m", "first");
  git(repo, "checkout", "--quiet", "-b", "feature");
  await writeFile(join(repo, "FEATURE.md"), "feature branch\n");
  git(repo, "add", ".");
  git(repo, "commit", "--quiet", "-m", "feature");
  git(repo, "checkout", "--quiet", "main");
  repoUrl = `file://${repo}`;

  // An https-like private remote: records the Authorization header git sends, then refuses.
  gitServer = createServer((req, res) => {
    authSeen ??= req.headers.authorization;
    res.writeHead(req.headers.authorization ? 404 : 401, { "www-authenticate": 'Basic realm="x"' }).end();
  });
  await new Promise<void>((resolve) => gitServer.listen(0, "127.0.0.1", resolve));
  const gitPort = (gitServer.address() as { port: number }).port;
  tcp = createTcpServer((s) => s.end("ok\n"));
  // On every address of the host: its loopback and the addresses its network reaches it by.
  await new Promise<void>((resolve) => tcp.listen(0, "0.0.0.0", resolve));
  tcpPort = (tcp.address() as { port: number }).port;

  const configFile = join(root, "dispatch.config.yaml");
  await writeFile(
    configFile,
    JSON.stringify({
      environments: {
        app: {
          repos: [{ url: repoUrl }, { url: repoUrl, ref: "feature", path: "src/feature" }],
          setup: ["cat upstream/README.md > setup-ran.txt", "echo second >> setup-ran.txt"],
        },
        broken: {
          repos: [{ url: repoUrl, path: "code" }],
          setup: ["echo preparing", "echo 'npm ERR! boom' >&2; exit 7", "touch never-ran"],
        },
        private: {
          repos: [{ url: `http://127.0.0.1:${gitPort}/acme/private.git`, token_env: "ENV_TEST_GIT_TOKEN" }],
        },
        missing_token: { repos: [{ url: repoUrl, token_env: "ENV_TEST_UNSET_TOKEN" }] },
        net: { setup: [`exec 3<>/dev/tcp/127.0.0.1/${tcpPort} && head -n1 <&3 > net-ok`] },
        net_agent: { agent_network: true },
        // Setup that tries the host from the workspace: what a command run from a repository could do.
        net_repo: {
          setup: [
            `grep -o tap0 /proc/net/dev > setup-net; for h in 127.0.0.1 ${outsideAddress ?? "127.0.0.1"}; do (exec 3<>/dev/tcp/$h/${tcpPort} && head -n1 <&3) >> setup-net 2>&1; done; true`,
          ],
        },
      },
    }),
  );
  process.env.ENV_TEST_GIT_TOKEN = TOKEN;
  t = await startTestDispatch({ DISPATCH_CONFIG_FILE: configFile, DISPATCH_ALLOW_FILE_REMOTES: "true" });
});
afterAll(async () => {
  delete process.env.ENV_TEST_GIT_TOKEN;
  await t?.stop();
  await new Promise((resolve) => gitServer.close(resolve));
  await new Promise((resolve) => tcp.close(resolve));
  await rm(root, { recursive: true, force: true });
});

type Event = { type: string; data: Record<string, unknown> };
const create = async (prompt: string, environment_id: string) => {
  const res = await t.api("POST", "/api/v1/agent/runs", { prompt, config: { environment_id } });
  expect(res.status, res.text).toBe(200);
  return res.body.run_id as string;
};
const events = async (id: string) =>
  (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events as Event[];
const workspace = (id: string) => join(t.dataDir, "workspaces", id);

describe("environments", () => {
  it("clones the repos (file:// URL, a ref, a path) and runs the setup commands before the agent", async () => {
    const id = await create("$ cat setup-ran.txt && cat src/feature/FEATURE.md", "app");
    const run = await waitForState(t, id, ["SUCCEEDED", "FAILED"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    expect(readFileSync(join(workspace(id), "upstream", "README.md"), "utf8")).toBe("hello from upstream\n");
    expect(existsSync(join(workspace(id), "upstream", "FEATURE.md"))).toBe(false);
    const evs = await events(id);
    const output = String(evs.find((e) => e.type === "tool_result")?.data.output);
    expect(output).toContain("hello from upstream\nsecond\n");
    expect(output).toContain("feature branch");
    const logs = evs.filter((e) => e.type === "log").map((e) => String(e.data.message));
    expect(
      logs.some((m) => m.startsWith("Cloning file://") && m.includes("at feature into src/feature")),
    ).toBe(true);
    expect(logs.filter((m) => /^Setup \d\/2 done/.test(m))).toHaveLength(2);
    // Environment steps come before the agent's first message.
    const firstMessage = evs.findIndex((e) => e.type === "message");
    const lastSetup = evs.findLastIndex((e) => e.type === "log" && e.data.phase === "setup");
    expect(lastSetup).toBeLessThan(firstMessage);
  });

  it("a failing setup command fails the run with the command and its output, and the agent never starts", async () => {
    const id = await create("$ touch agent-ran", "broken");
    const run = await waitForState(t, id, ["FAILED"]);
    expect(run.status_message).toMatchObject({
      error_code: "environment_setup_failed",
      reason: "environment_setup_failed",
    });
    expect(run.status_message.message).toContain('Environment "broken" setup command');
    expect(run.status_message.message).toContain("exit 7` exited with code 7");
    expect(run.status_message.message).toContain("npm ERR! boom");
    expect(existsSync(join(workspace(id), "code", "README.md"))).toBe(true);
    expect(existsSync(join(workspace(id), "never-ran"))).toBe(false);
    expect(existsSync(join(workspace(id), "agent-ran"))).toBe(false);
    expect((await events(id)).some((e) => e.type === "tool_call")).toBe(false);
  });

  it("an unknown environment_id is a 400 at create time, naming it", async () => {
    const res = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "x",
      config: { environment_id: "nope" },
    });
    expect(res.status).toBe(400);
    expect(res.body.detail ?? res.text).toContain('"nope"');
    expect(res.text).toContain("app");
  });

  it("sends a private repo's token as a header only: never in the transcript, status or clone config", async () => {
    const id = await create("$ echo hi", "private");
    const run = await waitForState(t, id, ["FAILED"]);
    expect(authSeen).toBe(`Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString("base64")}`);
    expect(run.status_message.message).toContain("git clone of http://127.0.0.1");
    const everything = JSON.stringify(run) + JSON.stringify(await events(id));
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain(Buffer.from(`x-access-token:${TOKEN}`).toString("base64"));
  });

  it("a token_env that is not set fails the run saying which variable", async () => {
    const id = await create("$ echo hi", "missing_token");
    const run = await waitForState(t, id, ["FAILED"]);
    expect(run.status_message).toMatchObject({
      error_code: "environment_setup_failed",
      reason: "environment_misconfigured",
    });
    expect(run.status_message.message).toContain("ENV_TEST_UNSET_TOKEN");
  });

  it.skipIf(!bwrap)(
    "setup steps get the network; the agent does not unless agent_network is set, and never the host's loopback",
    async () => {
      const connect = `$ exec 3<>/dev/tcp/127.0.0.1/${tcpPort} && head -n1 <&3`;
      const id = await create(`$ cat net-ok\n${connect}`, "net");
      const run = await waitForState(t, id, ["FAILED", "SUCCEEDED"]);
      const results = (await events(id)).filter((e) => e.type === "tool_result");
      expect(String(results[0]?.data.output)).toBe("ok\n");
      expect(run.state).toBe("FAILED");
      expect(String(results[1]?.data.output)).toMatch(/Connection refused|Network is unreachable/);

      // agent_network is a network of its own: the host's loopback (Dispatch's own port among them) stays out.
      const allowed = await create(connect, "net_agent");
      expect((await waitForState(t, allowed, ["SUCCEEDED", "FAILED"])).state).toBe("FAILED");
      const agent = (await events(allowed)).filter((e) => e.type === "tool_result");
      expect(String(agent[0]?.data.output)).not.toContain("ok");
    },
  );

  it.skipIf(!bwrap)(
    "in a run that names a repository, setup steps get a public-only network: never the host's",
    async () => {
      const res = await t.api("POST", "/api/v1/agent/runs", {
        prompt: "$ cat setup-net",
        config: { environment_id: "net_repo", repository: repoUrl, delivery: "none" },
      });
      expect(res.status, res.text).toBe(200);
      const id = res.body.run_id as string;
      const run = await waitForState(t, id, ["SUCCEEDED", "FAILED"]);
      expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
      const output = String((await events(id)).find((e) => e.type === "tool_result")?.data.output);
      // Neither the host's loopback nor its own address answered the setup step.
      expect(output).not.toContain("ok");
      expect(output).toMatch(/Connection refused|No route to host|Network is unreachable/);
      // Still a network (the sandbox's own), for package installs from public registries.
      if (ownNetwork) expect(output).toMatch(/^tap0\n/);
      // The repository was checked out before setup ran: setup saw the creator's content.
      expect(existsSync(join(workspace(id), "README.md"))).toBe(true);
    },
  );

  it("the clone leaves no credentials in the repository's .git/config", async () => {
    const id = await create("$ git -C upstream remote -v", "app");
    await waitForState(t, id, ["SUCCEEDED"]);
    const config = readFileSync(join(workspace(id), "upstream", ".git", "config"), "utf8");
    expect(config).toContain(`url = ${repoUrl}`);
    expect(config).not.toMatch(/extraheader|Authorization/i);
  });
});
