import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startTestDispatch } from "../support/dispatch.ts";

const run = promisify(execFile);
const MAIN = new URL("../../src/main.ts", import.meta.url).pathname;
let dataDir: string;

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "dispatch-keys-"));
});
afterEach(() => rm(dataDir, { recursive: true, force: true }));

async function dispatch(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, [MAIN, ...args], {
      env: { ...process.env, DISPATCH_DATA_DIR: dataDir, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("dispatch keys", () => {
  it("creates a key printed once, lists it by prefix only, and revokes it", async () => {
    const created = await dispatch([
      "keys",
      "create",
      "--team",
      "platform",
      "--principal",
      "ci-bot",
      "--display-name",
      "CI bot",
    ]);
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^dsp_[A-Za-z0-9]{40}$/);
    expect(created.stderr).toContain("shown only this once");

    const listed = await dispatch(["keys", "list"]);
    expect(listed.stdout).toContain("platform");
    expect(listed.stdout).toContain("ci-bot");
    expect(listed.stdout).toContain(`${key.slice(0, 10)}…`);
    expect(listed.stdout).not.toContain(key);

    const server = await startTestDispatch({ DISPATCH_DATA_DIR: dataDir, DISPATCH_MAX_CONCURRENT_RUNS: "0" });
    try {
      const get = () =>
        fetch(`${server.url}/api/v1/agent/runs`, { headers: { authorization: `Bearer ${key}` } });
      const res = await get();
      expect(res.status).toBe(200);
      const created = await fetch(`${server.url}/api/v1/agent/runs`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ prompt: "x" }),
      });
      const run = await (
        await fetch(`${server.url}/api/v1/agent/runs/${(await created.json()).run_id}`, {
          headers: { authorization: `Bearer ${key}` },
        })
      ).json();
      expect(run.creator).toEqual({ type: "service_account", uid: "ci-bot", display_name: "CI bot" });
      expect(run.scope).toEqual({ type: "Team", uid: "platform" });

      const revoked = await dispatch(["keys", "revoke", key.slice(0, 10)]);
      expect(revoked.code).toBe(0);
      // Another process revoked it: the server's next request refuses it.
      expect((await get()).status).toBe(401);
    } finally {
      await server.stop();
    }
  });

  it("explains bad usage instead of failing with a stack", async () => {
    const bad = await dispatch(["keys", "create", "--role", "owner"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--role must be member, read or admin");
    expect(bad.stderr).not.toContain("    at ");
    const unknown = await dispatch(["keys", "revoke", "nothing-like-this"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("No single key matches");
  });

  it("a bad configuration value stops the CLI with a message naming the variable", async () => {
    const res = await dispatch(["keys", "list"], { DISPATCH_PORT: "eighty" });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("DISPATCH_PORT");
    expect(res.stderr).not.toContain("    at ");
  });
});

describe("bootstrap admin key", () => {
  it("is generated on the first start only, and DISPATCH_ADMIN_API_KEY ensures a chosen key", async () => {
    const env = { DISPATCH_DATA_DIR: dataDir, DISPATCH_MAX_CONCURRENT_RUNS: "0" };
    const first = await startTestDispatch(env);
    const generated = first.dispatch.generatedAdminKey;
    await first.stop();
    expect(generated).toMatch(/^dsp_[A-Za-z0-9]{40}$/);
    const second = await startTestDispatch(env);
    expect(second.dispatch.generatedAdminKey).toBeUndefined();
    await second.stop();

    const chosen = `dsp_${"Z".repeat(40)}`;
    const third = await startTestDispatch({ ...env, DISPATCH_ADMIN_API_KEY: chosen });
    try {
      const res = await fetch(`${third.url}/api/v1/agent/runs`, {
        headers: { authorization: `Bearer ${chosen}` },
      });
      expect(res.status).toBe(200);
      expect(
        (await fetch(`${third.url}/api/v1/agent/runs`, { headers: { authorization: `Bearer ${generated}` } }))
          .status,
      ).toBe(200);
    } finally {
      await third.stop();
    }
  });
});
