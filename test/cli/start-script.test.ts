import { existsSync, readdirSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeBwrap } from "../../src/sandbox/bwrap-sandbox.ts";
import { waitFor } from "../support/dispatch.ts";
import {
  newAdminKey,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";

/** The sandbox's programs as Debian installs them, which the apt-get stand-in "installs" by linking them. */
const PACKAGES: Record<string, { program: string; path: string }> = {
  bubblewrap: { program: "bwrap", path: "/usr/bin/bwrap" },
  slirp4netns: { program: "slirp4netns", path: "/usr/bin/slirp4netns" },
  nftables: { program: "nft", path: "/usr/sbin/nft" },
};
const installable =
  process.getuid?.() === 0 &&
  Object.values(PACKAGES).every((p) => existsSync(p.path)) &&
  (await probeBwrap("/usr/bin/bwrap")) === undefined;

/**
 * A newcomer's `./scripts/start` on a machine without the sandbox's packages: PATH holds every program
 * of this machine but those, and an apt-get that records what it is asked and installs by linking the
 * real programs in. npm stands in too: `npm ci` must not reinstall this checkout's shared node_modules,
 * and `npm start` runs package.json's start script (`node src/main.ts serve`) in its own process.
 */
describe.skipIf(!installable)("./scripts/start on a machine without bubblewrap", () => {
  let root: string;
  let shims: string;
  let server: ServerProcess | undefined;
  /** scripts/start's PATH: the stand-ins first, then Node and the system's programs but the sandbox's. */
  let path: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "dispatch-start-"));
    shims = join(root, "shims");
    const system = join(root, "system");
    await mkdir(shims);
    await mkdir(system);
    const absent = new Set(Object.values(PACKAGES).map((p) => p.program));
    for (const dir of ["/usr/local/bin", "/usr/bin", "/usr/sbin"]) {
      for (const name of readdirSync(dir)) {
        if (absent.has(name) || existsSync(join(system, name))) continue;
        await symlink(join(dir, name), join(system, name));
      }
    }
    const links = Object.entries(PACKAGES)
      .map(([pkg, p]) => `${pkg}) ln -sf ${p.path} "$shims/${p.program}" ;;`)
      .join("\n      ");
    await writeExecutable(
      join(shims, "apt-get"),
      `#!/bin/bash
shims=${shims}
echo "$*" >> "$shims/apt-get.log"
[ "$1" = install ] || exit 0
for arg in "$@"; do
  case $arg in
      ${links}
  esac
done
`,
    );
    await writeExecutable(
      join(shims, "npm"),
      `#!/bin/bash
echo "$*" >> ${shims}/npm.log
case $1 in
  ci) exit 0 ;;
  start) shift; [ "$1" = -- ] && shift; exec node src/main.ts serve "$@" ;;
  *) exit 1 ;;
esac
`,
    );
    path = [shims, dirname(process.execPath), system].join(":");
  });

  afterAll(async () => {
    if (server) await stopServerProcess(server);
    await rm(root, { recursive: true, force: true });
  });

  it("installs bubblewrap, slirp4netns and nftables, and its first run is sandboxed", async () => {
    const dataDir = join(root, "data");
    server = await startServerProcess({
      dataDir,
      key: newAdminKey(),
      command: ["scripts/start"],
      env: { PATH: path },
      startTimeoutMs: 60_000,
    });
    const asked = (await readFile(join(shims, "apt-get.log"), "utf8")).trim().split("\n");
    expect(asked).toEqual(["update -qq", "install -y -qq bubblewrap slirp4netns nftables"]);
    expect(server.output()).toContain("Installing Debian packages: bubblewrap slirp4netns nftables");

    const created = await server.api("POST", "/api/v1/agent/runs", {
      prompt: `$ id -u; cat ${join(dataDir, "dispatch.db")} 2>/dev/null | wc -c`,
    });
    expect(created.status).toBe(200);
    const id = created.body.run_id as string;
    const run = await waitFor(
      async () => {
        const r = (await server!.api("GET", `/api/v1/agent/runs/${id}`)).body;
        return ["SUCCEEDED", "FAILED", "ERROR"].includes(r.state) ? r : undefined;
      },
      { timeoutMs: 30_000, what: "the first run to finish" },
    );
    expect(run.state).toBe("SUCCEEDED");
    const events = (await server.api("GET", `/api/v1/agent/runs/${id}/events`)).body.events as Array<{
      type: string;
      data: Record<string, unknown>;
    }>;
    // The agent's uid in bubblewrap, and Dispatch's database hidden from it (an empty file there).
    const output = String(events.find((e) => e.type === "tool_result")?.data.output);
    expect(output.trim().split("\n")).toEqual(["1000", "0"]);
    expect(events.some((e) => e.type === "log" && e.data.level === "warn")).toBe(false);
  });
});

async function writeExecutable(path: string, text: string): Promise<void> {
  await writeFile(path, text);
  await chmod(path, 0o755);
}
