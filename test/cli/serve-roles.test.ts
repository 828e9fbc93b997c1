import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { waitFor } from "../support/dispatch.ts";
import {
  newAdminKey,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";

const servers: ServerProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => stopServerProcess(s)));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function readyz(server: ServerProcess) {
  const res = await fetch(`${server.url}/readyz`);
  return { status: res.status, body: await res.json() };
}

describe("dispatch serve --role", () => {
  it("splits the service: an api process takes the run, a worker process on the same store executes it", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "dispatch-roles-"));
    dirs.push(dataDir);
    const key = newAdminKey();
    const api = await startServerProcess({ dataDir, key, args: ["--role", "api"] });
    servers.push(api);
    const worker = await startServerProcess({ dataDir, key, args: ["--role=worker,notifier,scheduler"] });
    servers.push(worker);

    const created = await api.api("POST", "/api/v1/agent/runs", { prompt: "$ echo split roles" });
    expect(created.status).toBe(200);
    const runId = created.body.run_id as string;
    const done = await waitFor(
      async () => {
        const run = (await api.api("GET", `/api/v1/agent/runs/${runId}`)).body;
        return ["SUCCEEDED", "FAILED", "ERROR"].includes(run.state) ? run : undefined;
      },
      { timeoutMs: 30_000, what: "the worker process to finish the run" },
    );
    expect(done.state).toBe("SUCCEEDED");
    const events = (await api.api("GET", `/api/v1/agent/runs/${runId}/events`)).body.events;
    expect(JSON.stringify(events)).toContain("split roles");

    // The worker serves health and readiness, not the API; each reports its own roles.
    expect((await worker.api("GET", "/api/v1/agent/runs")).status).toBe(404);
    const apiReady = await waitFor(async () =>
      (await readyz(api)).status === 200 ? readyz(api) : undefined,
    );
    expect(apiReady.body.roles).toEqual({ api: "serving" });
    const workerReady = await waitFor(async () =>
      (await readyz(worker)).status === 200 ? readyz(worker) : undefined,
    );
    expect(Object.keys(workerReady.body.roles).sort()).toEqual(["notifier", "scheduler", "worker"]);
    expect(workerReady.body.roles.worker).toMatch(/^running up to \d+ runs$/);
  });

  it("a worker on a fresh database mints no admin key: only the api role needs keys", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "dispatch-roles-"));
    dirs.push(dataDir);
    const worker = await startServerProcess({
      dataDir,
      key: "",
      env: { DISPATCH_ADMIN_API_KEY: "" },
      args: ["--role", "worker"],
    });
    servers.push(worker);
    expect(worker.output()).toContain("Dispatch listening on");
    expect(worker.output()).not.toContain("Generated the admin API key");
    // No API to try: where its health answers, whatever the log level.
    expect(worker.output()).toContain(`curl -s ${worker.url}/readyz`);
    expect(worker.output()).not.toContain("/api/v1/agent/runs");
    const store = new SqliteStore(join(dataDir, "dispatch.db"));
    try {
      expect(await store.countActiveApiKeys()).toBe(0);
    } finally {
      await store.close();
    }
  });

  it("refuses an unknown role, naming it and the valid ones", () => {
    const out = spawnSync(process.execPath, ["src/main.ts", "serve", "--role", "api,chef"], {
      cwd: join(import.meta.dirname, "../.."),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DISPATCH_DATA_DIR: join(tmpdir(), "never-created"),
      },
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(out.status).not.toBe(0);
    expect(out.stderr).toContain("DISPATCH_ROLES");
    expect(out.stderr).toContain("unknown role chef");
    expect(out.stderr).toContain("api, worker, notifier, scheduler");
  });
});
