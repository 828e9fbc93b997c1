import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../support/dispatch.ts";
import {
  newAdminKey,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";

/**
 * What an idle `dispatch serve` holds is its RSS (bench/README.md, "Fourth round: idle memory"): the
 * libraries only some requests need are loaded by the first of them, not at start-up.
 */
const LOADED_ON_FIRST_USE = [
  "@opentelemetry/sdk-node", // only when traces are exported
  "highlight.js", // the web pages' Markdown and diffs
  "markdown-it",
  "diff2html",
];

const servers: ServerProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => stopServerProcess(s)));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe("dispatch serve at idle", () => {
  it("has run a run without loading what only traces or the web pages need", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "dispatch-idle-"));
    dirs.push(dataDir);
    const moduleLog = join(dataDir, "modules.log");
    const server = await startServerProcess({
      dataDir,
      key: newAdminKey(),
      command: [process.execPath, "--import", "./test/support/module-log-hook.ts", "src/main.ts", "serve"],
      env: { DISPATCH_SANDBOX: "none", DISPATCH_TEST_MODULE_LOG: moduleLog },
    });
    servers.push(server);

    const created = await server.api("POST", "/api/v1/agent/runs", { prompt: "$ echo idle" });
    expect(created.status).toBe(200);
    const runId = created.body.run_id as string;
    const run = await waitFor(
      async () => {
        const res = await server.api("GET", `/api/v1/agent/runs/${runId}`);
        return res.body.state === "SUCCEEDED" ? res.body : undefined;
      },
      { what: "the run to succeed" },
    );
    expect(run.state).toBe("SUCCEEDED");

    const loaded = readFileSync(moduleLog, "utf8").split("\n");
    // The log is real: Dispatch's own modules and the server's libraries are in it.
    expect(loaded.some((url) => url.endsWith("/src/app.ts"))).toBe(true);
    expect(loaded.some((url) => url.includes("/node_modules/fastify/"))).toBe(true);
    for (const name of LOADED_ON_FIRST_USE) {
      expect(loaded.filter((url) => url.includes(`/node_modules/${name}/`))).toEqual([]);
    }
  });
});
