import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, rmdir, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { probeBwrap, which } from "../../src/sandbox/bwrap-sandbox.ts";
import { detectCgroups } from "../../src/sandbox/cgroups.ts";
import type { Sandbox, SandboxExecOptions } from "../../src/sandbox/sandbox.ts";
import { createSandboxProvider, SandboxUnavailableError } from "../../src/sandbox/sandbox-provider.ts";
import { startTestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { isAlive, runProcesses } from "../support/server-process.ts";

const bwrapProblem = await probeBwrap("/usr/bin/bwrap");
/** What agent_network needs besides bubblewrap (the provider looks them up on PATH). */
const ownNetworkTools = (await which("slirp4netns")) && (await which("nft"));
const log = createLogger("silent");
const PROVIDER_KEY = "sk-sandbox-test-provider-key-0123456789";

let root: string;
let dataDir: string;
/** Secrets outside /tmp (which every sandbox has private anyway): Dispatch's config and an App key. */
let secretsDir: string;
let listener: Server;
let port: number;

beforeAll(async () => {
  process.env.OPENAI_API_KEY = PROVIDER_KEY;
  root = await mkdtemp(join(tmpdir(), "dispatch-sandbox-"));
  dataDir = join(root, "data");
  await mkdir(join(dataDir, "workspaces"), { recursive: true });
  await writeFile(join(dataDir, "dispatch.db"), "secret database");
  secretsDir = await mkdtemp("/var/tmp/dispatch-sandbox-secrets-");
  await writeFile(join(secretsDir, "dispatch.config.yaml"), "secret config");
  await writeFile(join(secretsDir, "app.pem"), "secret key");
  // Every address of this host: the sandbox must reach it by an outside address, never by loopback.
  listener = createServer((socket) => socket.end("hello\n"));
  await new Promise<void>((resolve) => listener.listen(0, "0.0.0.0", resolve));
  port = (listener.address() as { port: number }).port;
});
afterAll(async () => {
  delete process.env.OPENAI_API_KEY;
  await new Promise((resolve) => listener.close(resolve));
  await rm(root, { recursive: true, force: true });
  await rm(secretsDir, { recursive: true, force: true });
});

let counter = 0;
async function newSandbox(mode: "bwrap" | "none", agentNetwork = false) {
  const runId = `run-${process.pid}-${++counter}`;
  const workspace = join(dataDir, "workspaces", runId);
  await mkdir(workspace, { recursive: true });
  const provider = await createSandboxProvider({
    mode,
    bwrapPath: "/usr/bin/bwrap",
    hide: [dataDir, join(secretsDir, "dispatch.config.yaml"), join(secretsDir, "app.pem")],
    limits: { memoryBytes: 512 * 2 ** 20, pidsMax: 512 },
    log,
  });
  const sandbox = await provider.create({ workspace, runId, agentNetwork });
  return { sandbox, runId, workspace, provider };
}

const exec = (
  sandbox: Sandbox,
  command: string,
  opts: { network?: SandboxExecOptions["network"]; signal?: AbortSignal } = {},
) =>
  sandbox.exec(command, {
    timeoutMs: 10_000,
    signal: opts.signal ?? new AbortController().signal,
    ...(opts.network !== undefined ? { network: opts.network } : {}),
  });

/** Stands for an address on the internet, held by a test namespace: not in any non-public range. */
const PUBLIC_ADDRESS = "192.88.99.1";
const connect = (host = "127.0.0.1") => `exec 3<>/dev/tcp/${host}/${port} && head -n1 <&3`;
/** An address of this host other than loopback, as a server elsewhere would be reached; none offline. */
const outsideAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === "IPv4" && !a.internal)?.address;

describe.skipIf(bwrapProblem !== undefined)("bubblewrap sandbox", () => {
  it("keeps the system read-only and writes only in the workspace", async () => {
    const { sandbox, workspace } = await newSandbox("bwrap");
    expect(sandbox.kind).toBe("bwrap");
    const etc = await exec(sandbox, "touch /etc/dispatch-sandbox-test");
    expect(etc.exitCode).not.toBe(0);
    expect(etc.output).toMatch(/Read-only file system/);
    expect(existsSync("/etc/dispatch-sandbox-test")).toBe(false);

    const up = await exec(
      sandbox,
      'touch "$HOME/../escaped" ; touch /tmp/dispatch-private-x; touch inside; pwd',
    );
    expect(up.output).toContain(workspace);
    expect(existsSync(join(workspace, "..", "escaped"))).toBe(false);
    expect(existsSync("/tmp/dispatch-private-x")).toBe(false);
    expect(existsSync(join(workspace, "inside"))).toBe(true);
    await sandbox.close?.();
  });

  it("shows the agent a minimal root as an unprivileged user without capabilities", async () => {
    const { sandbox } = await newSandbox("bwrap");
    const res = await exec(
      sandbox,
      [
        "id -u",
        "grep CapEff /proc/self/status",
        "cat /etc/shadow",
        "ls -A /root",
        `cat ${join(secretsDir, "dispatch.config.yaml")} ${join(secretsDir, "app.pem")}`,
        // A host-wide setting, written back unchanged: the kernel sees the agent as Dispatch's uid.
        "cat /proc/sys/vm/swappiness > /proc/sys/vm/swappiness && echo sysctl-written",
        'whoami; git --version; echo ok > "$HOME/home-ok"; cat "$HOME/home-ok"',
      ].join("; "),
    );
    const [uid, capEff] = res.output.split("\n");
    expect(Number(uid)).not.toBe(0);
    expect(capEff).toMatch(/^CapEff:\s+0+$/);
    expect(res.output).toMatch(/\/etc\/shadow: No such file/);
    expect(res.output).toMatch(/\/root.*No such file/);
    expect(res.output).not.toContain("secret config");
    expect(res.output).not.toContain("secret key");
    expect(res.output).not.toContain("sysctl-written");
    // Still a usable system: programs, the agent's name, a writable home.
    expect(res.output).toMatch(/agent\ngit version .*\nok\n$/);
    await sandbox.close?.();
  });

  it("hides Dispatch's data directory (database, other runs' workspaces)", async () => {
    const { sandbox } = await newSandbox("bwrap");
    const other = await newSandbox("bwrap");
    await writeFile(join(other.workspace, "theirs.txt"), "other run");
    const res = await exec(
      sandbox,
      `cat ${join(dataDir, "dispatch.db")}; cat ${join(other.workspace, "theirs.txt")}; ls ${join(dataDir, "workspaces")}`,
    );
    expect(res.output).not.toContain("secret database");
    expect(res.output).not.toContain("other run");
    const listing = await exec(sandbox, `ls -A ${join(dataDir, "workspaces")}`);
    expect(listing.output.trim().split("\n")).toEqual([sandbox.workspace.split("/").at(-1)]);
    await sandbox.close?.();
    await other.sandbox.close?.();
  });

  it("has no network in the agent phase, and the host's for setup steps", async () => {
    const { sandbox } = await newSandbox("bwrap");
    const agent = await exec(sandbox, connect());
    expect(agent.exitCode).not.toBe(0);
    expect(agent.output).toMatch(/Connection refused|Network is unreachable/);
    const interfaces = await exec(sandbox, "cat /proc/net/dev");
    expect(interfaces.output).toContain("lo:");
    expect(interfaces.output.split("\n").filter((l) => l.includes(":")).length).toBe(1);

    // Name lookups fail at once rather than waiting for the host's DNS servers, which cannot answer.
    const resolver = await exec(sandbox, "cat /etc/resolv.conf");
    expect(resolver.output).toContain("nameserver 127.0.0.1");
    expect(resolver.output).toContain("options timeout:1 attempts:1");

    const setup = await exec(sandbox, connect(), { network: "host" });
    expect(setup.exitCode, setup.output).toBe(0);
    expect(setup.output).toContain("hello");
    // Setup steps resolve names as the host does.
    const hostResolver = await exec(sandbox, "cat /etc/resolv.conf", { network: "host" });
    expect(hostResolver.output).toBe(
      existsSync("/etc/resolv.conf") ? readFileSync("/etc/resolv.conf", "utf8") : "",
    );

    await sandbox.close?.();
  });

  it.skipIf(!ownNetworkTools)(
    "gives agent_network a network of its own that reaches neither the host nor a private address",
    async () => {
      const { sandbox } = await newSandbox("bwrap", true);
      const interfaces = await exec(sandbox, "cat /proc/net/dev; cat /proc/net/route");
      expect(interfaces.output).toContain("tap0:");
      // A default route: the network is up, for public addresses.
      expect(interfaces.output).toMatch(/^tap0\s+00000000\s+0202000A/m);
      const loopback = await exec(sandbox, connect());
      expect(loopback.exitCode).not.toBe(0);
      expect(loopback.output).not.toContain("hello");
      const hostAlias = await exec(sandbox, connect("10.0.2.2"));
      expect(hostAlias.output).not.toContain("hello");
      // The host's own address, as a server on the host or its network would be reached: refused at once.
      if (outsideAddress) {
        const outside = await exec(sandbox, connect(outsideAddress));
        expect(outside.exitCode).not.toBe(0);
        expect(outside.output).not.toContain("hello");
        expect(outside.output).toMatch(/No route to host/);
      }
      // The sandbox's own loopback still works, and the agent cannot lift the filter.
      const own = await exec(
        sandbox,
        `python3 -c 'import socket,sys;s=socket.socket();s.bind(("127.0.0.1",0));s.listen();print(s.getsockname()[1]);sys.stdout.flush();s.accept()[0].send(b"own\\n")' > port & until [ -s port ]; do sleep 0.01; done; exec 3<>/dev/tcp/127.0.0.1/$(cat port) && head -n1 <&3; nft flush ruleset; echo "flush: $?"`,
      );
      expect(own.output).toMatch(/^own\n/);
      expect(own.output).toMatch(/flush: [1-9]/);
      await sandbox.close?.();
    },
  );

  it.skipIf(!ownNetworkTools || process.getuid?.() !== 0 || !existsSync("/usr/sbin/ip"))(
    "agent_network still reaches a public address (in network namespaces of the test's own)",
    async () => {
      // A host (H) whose only way out is a link to an "internet" (I) holding a public address; nothing
      // here leaves this machine. The sandbox is made in H as Dispatch makes it, by a child process.
      const [h, i] = [`dsp-h-${process.pid}`, `dsp-i-${process.pid}`];
      const ip = (...args: string[]) => execFileSync("ip", args, { stdio: "pipe" });
      const servers: ChildProcess[] = [];
      try {
        ip("netns", "add", h);
        ip("netns", "add", i);
        ip("-n", h, "link", "add", "h0", "type", "veth", "peer", "name", "i0", "netns", i);
        ip("-n", h, "addr", "add", "10.77.0.1/30", "dev", "h0");
        ip("-n", i, "addr", "add", "10.77.0.2/30", "dev", "i0");
        ip("-n", i, "addr", "add", `${PUBLIC_ADDRESS}/32`, "dev", "lo");
        for (const [ns, dev] of [
          [h, "h0"],
          [h, "lo"],
          [i, "i0"],
          [i, "lo"],
        ] as const)
          ip("-n", ns, "link", "set", dev, "up");
        ip("-n", h, "route", "add", "default", "via", "10.77.0.2");
        const serve = (ns: string, host: string, answer: string) => {
          const server = spawn(
            "ip",
            [
              "netns",
              "exec",
              ns,
              process.execPath,
              "-e",
              `require("net").createServer((s) => s.end("${answer}\\n")).listen(${port}, "${host}", () => console.log("up"))`,
            ],
            { stdio: ["ignore", "pipe", "inherit"] },
          );
          servers.push(server);
          return new Promise((resolve) => server.stdout!.once("data", resolve));
        };
        await serve(i, "0.0.0.0", "public");
        await serve(h, "10.77.0.1", "the-host-answered");
        const probe = execFileSync(
          "ip",
          [
            "netns",
            "exec",
            h,
            process.execPath,
            "test/sandbox/fixtures/network-probe.ts",
            connect(PUBLIC_ADDRESS),
            connect("10.77.0.1"),
          ],
          { encoding: "utf8", timeout: 60_000 },
        );
        const [publicOutput, hostOutput] = JSON.parse(probe) as string[];
        expect(publicOutput).toBe("public\n");
        expect(hostOutput).not.toContain("the-host-answered");
        expect(hostOutput).toMatch(/No route to host/);
      } finally {
        for (const server of servers) server.kill();
        for (const ns of [h, i]) execFileSync("ip", ["netns", "del", ns], { stdio: "ignore" });
      }
    },
  );

  it("builds the environment from nothing: no provider key, no Dispatch secret", async () => {
    const { sandbox, runId } = await newSandbox("bwrap");
    const res = await exec(sandbox, "env");
    expect(res.output).toContain(`DISPATCH_RUN_ID=${runId}`);
    expect(res.output).not.toContain(PROVIDER_KEY);
    expect(res.output).not.toContain("OPENAI_API_KEY");
    await sandbox.close?.();
  });

  it("kills the whole process tree (own pid namespace) on cancel, and on timeout", async () => {
    const { sandbox, runId } = await newSandbox("bwrap");
    const controller = new AbortController();
    const pending = exec(sandbox, "sleep 60 & (sleep 61 &) ; setsid sleep 62 & wait", {
      signal: controller.signal,
    });
    await waitFor(() => runProcesses(runId).length >= 4 || undefined, { what: "the sleeps to start" });
    const pids = runProcesses(runId);
    controller.abort();
    const result = await pending;
    expect(result.aborted).toBe(true);
    // Well inside the sleeps' 60 s: only the kill ends them this soon.
    await waitFor(() => !pids.some(isAlive) || undefined, {
      timeoutMs: 15_000,
      what: "every process to die",
    });

    const timed = await sandbox.exec("sleep 60", { timeoutMs: 200, signal: new AbortController().signal });
    expect(timed.timedOut).toBe(true);
    await sandbox.close?.();
  });

  it("ends what a command left behind, in its group or not, when it exits; a command sees only its own processes", async () => {
    const { sandbox, runId } = await newSandbox("bwrap");
    const other = await newSandbox("bwrap");
    const left = await exec(
      sandbox,
      "sleep 300 > /dev/null 2>&1 & setsid sleep 301 > /dev/null 2>&1 & (setsid sleep 302 > /dev/null 2>&1 &); echo started",
    );
    expect(left.output).toBe("started\n");
    // No close of the sandbox: the command's own end is what kills them.
    await waitFor(() => runProcesses(runId).filter(isAlive).length === 0 || undefined, {
      what: "the processes the command left behind to die",
    });

    // While a command of this run and one of another run sleep, a third sees none of them.
    const controller = new AbortController();
    const sleeping = [
      exec(sandbox, "sleep 60", { signal: controller.signal }),
      exec(other.sandbox, "sleep 61", { signal: controller.signal }),
    ];
    await waitFor(
      () =>
        [runId, other.runId].every((id) =>
          runProcesses(id).some((pid) => readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "sleep"),
        ) || undefined,
      { what: "both sleeps to start" },
    );
    const seen = await exec(sandbox, "cat /proc/[0-9]*/comm");
    expect(seen.output).not.toContain("sleep");
    expect(seen.output.trim().split("\n").length).toBeLessThanOrEqual(4);
    controller.abort();
    await Promise.all(sleeping);
    await sandbox.close?.();
    await other.sandbox.close?.();
  });

  it("puts a run's processes in its own cgroup with memory and pids limits where cgroups are writable", async () => {
    const detected = await detectCgroups();
    if (!detected.cgroups) return; // read-only cgroups here: limits are skipped (logged at start-up)
    const { sandbox, runId, provider } = await newSandbox("bwrap");
    expect(provider.limits).toMatch(/cgroup v[12] limits/);
    const controller = new AbortController();
    const pending = exec(sandbox, "sleep 30", { signal: controller.signal });
    // The command (`sleep`, the last process of the run) is in the run's cgroup, and so is every process.
    await waitFor(() =>
      runProcesses(runId).some((pid) => readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "sleep"),
    );
    for (const pid of runProcesses(runId)) {
      expect(readFileSync(`/proc/${pid}/cgroup`, "utf8")).toContain(`dispatch-run-${runId}@`);
    }
    const dirs = detected.cgroups.parents.map((p) => runCgroupDir(p, runId)).filter((d) => d !== undefined);
    const limits = dirs.map((d) =>
      ["memory.limit_in_bytes", "memory.max", "pids.max"]
        .filter((f) => existsSync(join(d, f)))
        .map((f) => readFileSync(join(d, f), "utf8").trim()),
    );
    expect(limits.flat()).toEqual(expect.arrayContaining([String(512 * 2 ** 20), "512"]));
    controller.abort();
    await pending;
    await sandbox.close?.();
    for (const parent of detected.cgroups.parents) expect(runCgroupDir(parent, runId)).toBeUndefined();
  });
});

/** The run's cgroup under `parent`, named after the run and the Dispatch process that owns it. */
function runCgroupDir(parent: string, runId: string): string | undefined {
  const name = readdirSync(parent).find((n) => n.startsWith(`dispatch-run-${runId}@`));
  return name ? join(parent, name) : undefined;
}

/** The agent's passwd files this process has written for `runId` (agent-identities.ts). */
function passwdFilesOf(runId: string): string[] {
  return readdirSync(tmpdir())
    .filter((name) => name.startsWith("dispatch-agent-identity-"))
    .flatMap((dir) =>
      readdirSync(join(tmpdir(), dir))
        .filter((name) => name.startsWith(`passwd-${runId}-`))
        .map((name) => join(tmpdir(), dir, name)),
    );
}

describe.skipIf(bwrapProblem !== undefined)("a bubblewrap sandbox's files", () => {
  it("are gone once the sandbox is closed and its files released, also when removed after close returned", async () => {
    const { sandbox, runId, workspace, provider } = await newSandbox("bwrap");
    const res = await exec(sandbox, "touch /tmp/left-behind && grep '^agent:' /etc/passwd && cat /etc/group");
    expect(res.exitCode).toBe(0);
    expect(res.output).toContain(`:${workspace}:/bin/bash`);
    expect(res.output).toContain("agent:x:1000:");
    expect(existsSync(join(`${workspace}.tmp`, "left-behind"))).toBe(true);
    expect(passwdFilesOf(runId)).toHaveLength(1);
    await sandbox.close?.();
    await provider.released();
    expect(existsSync(`${workspace}.tmp`)).toBe(false);
    expect(passwdFilesOf(runId)).toEqual([]);
  });

  it("a run's next sandbox starts with an empty /tmp of its own while the last one's is being removed", async () => {
    const { sandbox, runId, workspace, provider } = await newSandbox("bwrap");
    await exec(sandbox, "touch /tmp/first");
    await sandbox.close?.();
    // At once, as a follow-up's execution would: the first sandbox's removal may still be under way.
    const next = await provider.create({ workspace, runId, agentNetwork: false });
    const res = await exec(next, "test -e /tmp/first && echo stale; touch /tmp/second && echo written");
    expect(res.output.trim()).toBe("written");
    await provider.released();
    expect(existsSync(join(`${workspace}.tmp`, "second"))).toBe(true);
    await next.close?.();
    await provider.released();
    expect(existsSync(`${workspace}.tmp`)).toBe(false);
  });

  it("empties a /tmp a crashed execution left before the run's next sandbox shows it", async () => {
    const runId = `run-${process.pid}-${++counter}`;
    const workspace = join(dataDir, "workspaces", runId);
    await mkdir(join(`${workspace}.tmp`, "nested"), { recursive: true });
    await writeFile(join(`${workspace}.tmp`, "nested", "stale"), "from the crashed execution\n");
    await mkdir(workspace, { recursive: true });
    const provider = await createSandboxProvider({
      mode: "bwrap",
      bwrapPath: "/usr/bin/bwrap",
      hide: [],
      limits: { memoryBytes: 0, pidsMax: 0 },
      log,
    });
    const sandbox = await provider.create({ workspace, runId, agentNetwork: false });
    const res = await exec(sandbox, "test -e /tmp/nested && echo stale; echo end");
    expect(res.output.trim()).toBe("end");
    await sandbox.close?.();
    await provider.released();
    expect(existsSync(`${workspace}.tmp`)).toBe(false);
  });

  it("makes its identity files again when their directory was removed under it (a /tmp cleaner)", async () => {
    const first = await newSandbox("bwrap");
    const dir = dirname(passwdFilesOf(first.runId)[0]!);
    await first.sandbox.close?.();
    await first.provider.released();
    await rm(dir, { recursive: true, force: true });
    const { sandbox, workspace } = await newSandbox("bwrap");
    const res = await exec(sandbox, "grep '^agent:' /etc/passwd && grep -c . /etc/group");
    expect(res.exitCode).toBe(0);
    expect(res.output).toContain(`:${workspace}:/bin/bash`);
    await sandbox.close?.();
  });

  it("at start-up, identity files a Dispatch that is gone left behind are removed, a running one's kept", async () => {
    // Named as a Dispatch that has gone would name it: this pid, but a start time it never had.
    const leftover = join(tmpdir(), `dispatch-agent-identity-${process.pid}.1-test`);
    await mkdir(leftover);
    await writeFile(join(leftover, "passwd-run-1"), "agent:x:1000:1000::/w:/bin/bash\n");
    // An earlier version's, which does not say whose it is: that Dispatch may still run beside this one.
    const unnamed = await mkdtemp(join(tmpdir(), "dispatch-agent-identity-"));
    const { sandbox, runId } = await newSandbox("bwrap");
    expect(existsSync(leftover)).toBe(false);
    expect(existsSync(unnamed)).toBe(true);
    await rm(unnamed, { recursive: true, force: true });
    // This process's own stay in use.
    expect(passwdFilesOf(runId)).toHaveLength(1);
    await sandbox.close?.();
  });
});

const cgroups = (await detectCgroups()).cgroups;

describe.skipIf(!cgroups)("a run's cgroup", () => {
  it("kills the processes that left the process group (setsid) when the run ends, and removes the cgroup", async () => {
    const { sandbox, runId } = await newSandbox("none");
    // The marker is written once setsid has left the process group, so the command's end cannot kill it.
    const res = await exec(
      sandbox,
      "setsid bash -c 'touch escaped; exec sleep 600' > /dev/null 2>&1 < /dev/null & until [ -e escaped ]; do sleep 0.01; done; echo started",
    );
    expect(res.output).toContain("started");
    // The command is over and its process group gone, but the escaped sleep still runs.
    const escaped = await waitFor(() => runProcesses(runId).filter(isAlive).at(0), {
      what: "the escaped sleep",
    });
    await sandbox.close?.();
    await waitFor(() => !isAlive(escaped) || undefined, { what: "the escaped sleep to die" });
    for (const parent of cgroups!.parents) expect(runCgroupDir(parent, runId)).toBeUndefined();
  });

  it("leaves no cgroup behind when the sandbox cannot be made (its workspace is gone)", async () => {
    const runId = `run-${process.pid}-${++counter}`;
    const provider = await createSandboxProvider({
      mode: "none",
      hide: [],
      limits: { memoryBytes: 512 * 2 ** 20, pidsMax: 512 },
      log,
    });
    const workspace = join(dataDir, "workspaces", runId);
    await expect(provider.create({ workspace, runId, agentNetwork: false })).rejects.toThrow(/ENOENT/);
    for (const parent of cgroups!.parents) expect(runCgroupDir(parent, runId)).toBeUndefined();
  });

  it("a plain sandbox's command enters the run's cgroup first and otherwise runs as written", async () => {
    const { sandbox, runId } = await newSandbox("none");
    const res = await exec(
      sandbox,
      'echo "$0 $LINENO $$"; grep -c "dispatch-run-" /proc/self/cgroup\necho "$LINENO"; exit 3',
    );
    expect(res.exitCode).toBe(3);
    const [first, inCgroup, second] = res.output.trim().split("\n");
    expect(first).toMatch(/^bash 1 \d+$/);
    // Every hierarchy the run has a cgroup in (pids; memory too on v1 with a limit): its name is the run's.
    expect(Number(inCgroup)).toBe(cgroups!.version === 1 ? 2 : 1);
    expect(second).toBe("2");
    const broken = await exec(sandbox, "echo fine\nif then");
    expect(broken.exitCode).toBe(2);
    expect(broken.output).toMatch(/^fine\n.*line 2: syntax error/s);
    expect(runProcesses(runId)).toEqual([]);
    await sandbox.close?.();
  });

  it("at start-up kills and removes the run cgroups an earlier Dispatch left behind, and leaves an older version's in use alone", async () => {
    // Named as a run cgroup of a Dispatch that has gone: this pid, but a start time it never had.
    const leftover = cgroups!.parents.map((p) =>
      join(p, `dispatch-run-leftover-${process.pid}@${process.pid}.1`),
    );
    for (const dir of leftover) await mkdir(dir);
    const sleeper = spawn("sleep", ["600"], { stdio: "ignore" });
    for (const dir of leftover) await writeFile(join(dir, "cgroup.procs"), String(sleeper.pid));
    // An earlier version's, which does not name its process: that Dispatch may still run beside this one.
    const unnamed = cgroups!.parents.map((p) => join(p, `dispatch-run-unnamed-${process.pid}`));
    const unnamedEmpty = cgroups!.parents.map((p) => join(p, `dispatch-run-unnamed-empty-${process.pid}`));
    for (const dir of [...unnamed, ...unnamedEmpty]) await mkdir(dir);
    const other = spawn("sleep", ["600"], { stdio: "ignore" });
    for (const dir of unnamed) await writeFile(join(dir, "cgroup.procs"), String(other.pid));
    await createSandboxProvider({ mode: "none", hide: [], limits: {}, log });
    await waitFor(() => !isAlive(sleeper.pid!) || undefined, { what: "the leftover process to die" });
    for (const dir of leftover) expect(existsSync(dir)).toBe(false);
    // Its processes are left alone and its cgroup stays while in use; an empty one is removed.
    expect(isAlive(other.pid!)).toBe(true);
    for (const dir of unnamed) expect(existsSync(dir)).toBe(true);
    for (const dir of unnamedEmpty) expect(existsSync(dir)).toBe(false);
    other.kill("SIGKILL");
    await waitFor(() => !isAlive(other.pid!) || undefined, { what: "the other process to end" });
    for (const dir of unnamed) await rmdir(dir);
  });
});

describe("without bubblewrap", () => {
  it("DISPATCH_SANDBOX=bwrap stops start-up when bwrap cannot run", async () => {
    await expect(
      createSandboxProvider({ mode: "bwrap", bwrapPath: "/nonexistent/bwrap", hide: [], limits: {}, log }),
    ).rejects.toBeInstanceOf(SandboxUnavailableError);
    await expect(
      startTestDispatch({ DISPATCH_SANDBOX: "bwrap", DISPATCH_BWRAP_PATH: "/nonexistent/bwrap" }),
    ).rejects.toThrow(/DISPATCH_SANDBOX=bwrap but bubblewrap cannot run here: .*apt-get install bubblewrap/);
  });

  it("auto without bubblewrap serves the API but refuses runs, and nothing executes", async () => {
    // No secret configured: the case where auto used to fall back to plain subprocesses.
    const t = await startTestDispatch({ DISPATCH_BWRAP_PATH: "/nonexistent/bwrap" });
    try {
      const marker = join(root, `unsandboxed-${process.pid}`);
      const created = await t.api("POST", "/api/v1/agent/runs", { prompt: `$ touch ${marker}` });
      expect(created.status).toBe(503);
      expect(created.body.error_code).toBe("resource_unavailable");
      expect(created.body.detail).toMatch(/cannot start runs: bubblewrap \(bwrap\) cannot run here/);
      expect(created.body.detail).toMatch(/apt-get install bubblewrap/);
      expect(created.body.detail).toMatch(/or set DISPATCH_SANDBOX=none/);
      // Nothing was queued to run later either, and the rest of the API serves.
      const listed = await t.api("GET", "/api/v1/agent/runs");
      expect(listed.status).toBe(200);
      expect(listed.body.runs).toEqual([]);
      expect(existsSync(marker)).toBe(false);
      expect(t.dispatch.executor).toBeUndefined();
      const ready = await t.api("GET", "/readyz");
      expect(ready.body.roles.worker).toMatch(/^claiming no runs: No sandbox/);
    } finally {
      await t.stop();
    }

    // A worker-only process says the same where an operator looks, and claims nothing.
    const worker = await startTestDispatch({
      DISPATCH_BWRAP_PATH: "/nonexistent/bwrap",
      DISPATCH_ROLES: "worker",
    });
    try {
      expect(worker.dispatch.executor).toBeUndefined();
      const ready = await worker.api("GET", "/readyz");
      expect(ready.body.roles).toEqual({ worker: expect.stringMatching(/^claiming no runs: No sandbox/) });
    } finally {
      await worker.stop();
    }
  });

  it("DISPATCH_SANDBOX=none runs plain subprocesses, with a warning on the run's transcript", async () => {
    const t = await startTestDispatch({
      DISPATCH_BWRAP_PATH: "/nonexistent/bwrap",
      DISPATCH_SANDBOX: "none",
    });
    try {
      const id = (await t.api("POST", "/api/v1/agent/runs", { prompt: "$ env" })).body.run_id;
      await waitForState(t, id, ["SUCCEEDED"]);
      const events = (await t.api("GET", `/api/v1/agent/runs/${id}/events`)).body.events as Array<{
        type: string;
        data: Record<string, unknown>;
      }>;
      const warning = events.find((e) => e.type === "log" && e.data.level === "warn");
      expect(String(warning?.data.message)).toMatch(/Sandbox disabled \(DISPATCH_SANDBOX=none\)/);
      // Still no provider key in the plain subprocess's environment.
      const output = String(events.find((e) => e.type === "tool_result")?.data.output);
      expect(output).not.toContain(PROVIDER_KEY);
    } finally {
      await t.stop();
    }
  });

  it("a plain sandbox still kills its process group on cancel", async () => {
    const { sandbox, runId } = await newSandbox("none");
    expect(sandbox.kind).toBe("none");
    const controller = new AbortController();
    const pending = exec(sandbox, "sleep 60 & sleep 61 & wait", { signal: controller.signal });
    await waitFor(() => runProcesses(runId).length >= 3 || undefined, { what: "the sleeps to start" });
    const pids = runProcesses(runId);
    controller.abort();
    expect((await pending).aborted).toBe(true);
    await waitFor(() => !pids.some(isAlive) || undefined, {
      timeoutMs: 15_000,
      what: "every process to die",
    });
    await sandbox.close?.();
  });
});
