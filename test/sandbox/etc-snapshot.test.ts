import { existsSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { BwrapSandbox, probeBwrap } from "../../src/sandbox/bwrap-sandbox.ts";
import { EtcSnapshots } from "../../src/sandbox/etc-snapshot.ts";
import { createSandboxProvider } from "../../src/sandbox/sandbox-provider.ts";
import { waitFor } from "../support/dispatch.ts";

const bwrapProblem = await probeBwrap("/usr/bin/bwrap");
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "dispatch-etc-snapshot-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const run = (sandbox: BwrapSandbox | Awaited<ReturnType<typeof provided>>, command: string) =>
  sandbox.exec(command, { timeoutMs: 20_000, signal: new AbortController().signal });

async function provided() {
  const workspace = await mkdtemp(join(root, "ws-"));
  const provider = await createSandboxProvider({
    mode: "bwrap",
    bwrapPath: "/usr/bin/bwrap",
    hide: [],
    limits: {},
    log: createLogger("silent"),
  });
  return provider.create({ workspace, runId: `etc-${process.pid}`, agentNetwork: false });
}

/** Every path of /etc with its type and link target, and each file's checksum, but the run's own files. */
const LISTING =
  "cd /etc && find . -path ./passwd -o -path ./group -o -path ./resolv.conf -o -printf '%p %y %l\\n' | sort && find . -type f ! -name passwd ! -name group ! -name resolv.conf -exec md5sum {} + | sort";

describe.skipIf(bwrapProblem !== undefined)("the sandbox's /etc as one copy", () => {
  it("shows what binding each entry showed, read-only", async () => {
    const sandbox = await provided();
    const workspace = await realpath(await mkdtemp(join(root, "ws-")));
    const bound = new BwrapSandbox({
      bwrap: "/usr/bin/bwrap",
      workspace,
      runId: "bound",
      hide: [],
      network: false,
    });
    const [copied, entries] = await Promise.all([run(sandbox, LISTING), run(bound, LISTING)]);
    expect(copied.exitCode, copied.output).toBe(0);
    expect(copied.output).toContain("./ssl/certs d");
    expect(copied.output).toBe(entries.output);

    const writes = await run(
      sandbox,
      "touch /etc/hosts; echo x > /etc/new; chmod 777 /etc/hosts; rm /etc/hosts; mkdir /etc/d; ls /etc/new",
    );
    expect(writes.output.match(/Read-only file system/g)?.length).toBe(5);
    expect(writes.output).toMatch(/ls: cannot access '\/etc\/new'/);
    // The run's own identity is bound over it.
    expect((await run(sandbox, "whoami; cat /etc/resolv.conf")).output).toMatch(
      /^agent\n.*nameserver 127\.0\.0\.1/s,
    );
    await sandbox.close?.();
  });
});

describe("a copy of /etc", () => {
  async function fakeEtc() {
    const etc = await mkdtemp(join(root, "etc-"));
    await mkdir(join(etc, "ssl", "certs"), { recursive: true });
    await mkdir(join(etc, "ld.so.conf.d"));
    await mkdir(join(etc, "shadowed"));
    await writeFile(join(etc, "shadowed", "hosts"), "127.0.0.1 localhost\n");
    await symlink(join(etc, "shadowed", "hosts"), join(etc, "hosts"));
    await writeFile(join(etc, "ssl", "certs", "ca.pem"), "CA");
    await symlink("ca.pem", join(etc, "ssl", "certs", "abcd.0"));
    await writeFile(join(etc, "ssl", "certs", "operator.key"), "secret key");
    await mkdir(join(etc, "ld.so.conf.d", "private"));
    await writeFile(join(etc, "ld.so.conf.d", "private", "token"), "secret token");
    await writeFile(join(etc, "ld.so.conf.d", "libc.conf"), "/usr/local/lib\n", { mode: 0o640 });
    await writeFile(join(etc, "shadow"), "root:secret");
    return etc;
  }

  it("follows an entry's symlink, keeps those inside, leaves out the rest of /etc and empties what is hidden", async () => {
    const etc = await fakeEtc();
    const snapshots = new EtcSnapshots(
      [join(etc, "ssl/certs/operator.key"), join(etc, "ld.so.conf.d/private")],
      {
        source: etc,
        parent: root,
      },
    );
    const { dir, release } = await snapshots.acquire();
    expect(readFileSync(join(dir, "hosts"), "utf8")).toBe("127.0.0.1 localhost\n");
    expect(readlinkSync(join(dir, "ssl/certs/abcd.0"))).toBe("ca.pem");
    expect(readFileSync(join(dir, "ssl/certs/ca.pem"), "utf8")).toBe("CA");
    expect(readFileSync(join(dir, "ssl/certs/operator.key"), "utf8")).toBe("");
    expect(existsSync(join(dir, "ld.so.conf.d/private/token"))).toBe(false);
    expect(statSync(join(dir, "ld.so.conf.d/private")).isDirectory()).toBe(true);
    expect(statSync(join(dir, "ld.so.conf.d/libc.conf")).mode & 0o777).toBe(0o640);
    expect(existsSync(join(dir, "shadow"))).toBe(false);
    expect(existsSync(join(dir, "shadowed"))).toBe(false);
    // The run's identity files are bound over these.
    for (const name of ["passwd", "group", "resolv.conf"])
      expect(readFileSync(join(dir, name), "utf8")).toBe("");
    // Only Dispatch enters the directory that holds it.
    expect(statSync(join(dir, "..")).mode & 0o777).toBe(0o700);
    await release();
  });

  it("is made again when the host's entries change, and the old one goes once no sandbox uses it", async () => {
    const etc = await fakeEtc();
    const snapshots = new EtcSnapshots([], { source: etc, parent: root, refreshMs: 0 });
    const first = await snapshots.acquire();
    await writeFile(join(etc, "ld.so.conf.d", "libc.conf"), "/opt/lib\n");
    const second = await waitFor(
      async () => {
        const next = await snapshots.acquire();
        if (next.dir !== first.dir) return next;
        await next.release();
        return undefined;
      },
      { what: "a new copy" },
    );
    expect(readFileSync(join(second.dir, "ld.so.conf.d/libc.conf"), "utf8")).toBe("/opt/lib\n");
    // Still in use by the first sandbox: its /etc stays whole until it closes.
    expect(readFileSync(join(first.dir, "ld.so.conf.d/libc.conf"), "utf8")).toBe("/usr/local/lib\n");
    await first.release();
    expect(existsSync(first.dir)).toBe(false);
    await second.release();
    expect(existsSync(second.dir)).toBe(true);
  });

  it("removes the copies a Dispatch that is gone left behind, never a running one's", async () => {
    const etc = await fakeEtc();
    const parent = await mkdtemp(join(root, "parent-"));
    const gone = join(parent, `dispatch-sandbox-etc-${process.pid}.1-abcdef`);
    const running = (await new EtcSnapshots([], { source: etc, parent }).acquire()).dir;
    await mkdir(join(gone, "etc"), { recursive: true });
    await new EtcSnapshots([], { source: etc, parent }).acquire();
    expect(existsSync(gone)).toBe(false);
    expect(existsSync(running)).toBe(true);
  });
});
