import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { type Dispatch, startDispatch } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { waitFor } from "../support/dispatch.ts";

/**
 * A Dispatch for the external harness tests: real app, SQLite, bubblewrap where it works, its log kept
 * (at debug level) so that tests can check no key reached it. `env` holds the provider variables.
 */
export async function startHarnessDispatch(
  env: Record<string, string>,
  external: NonNullable<Parameters<typeof startDispatch>[2]>["external"] = {},
) {
  const dataDir = await mkdtemp(join(tmpdir(), "dispatch-harness-"));
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const config = loadConfig({
    DISPATCH_DATA_DIR: dataDir,
    DISPATCH_PORT: "0",
    DISPATCH_POLL_INTERVAL_MS: "100",
    DISPATCH_SHUTDOWN_GRACE_MS: "0",
    // The tests poll the API while agents work; its per-key rate limit is not under test here.
    DISPATCH_RATE_LIMIT_PER_MINUTE: "1000000",
    DISPATCH_RATE_LIMIT_BURST: "100000",
    ...env,
  });
  const dispatch: Dispatch = await startDispatch(config, createLogger("debug", sink), {
    external: { followupPollMs: 100, ...external },
  });
  const key = dispatch.generatedAdminKey!;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(dispatch.url + path, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    // biome-ignore lint/suspicious/noExplicitAny: responses are asserted field by field
    let parsed: any = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed, text };
  };
  const events = async (runId: string) => {
    // biome-ignore lint/suspicious/noExplicitAny: events are asserted field by field
    const all: any[] = [];
    for (;;) {
      const res = await api("GET", `/api/v1/agent/runs/${runId}/events?after=${all.at(-1)?.seq ?? 0}`);
      if (res.status !== 200) throw new Error(`events: HTTP ${res.status} ${res.text}`);
      if (res.body.events.length === 0) return all;
      all.push(...res.body.events);
    }
  };
  const state = async (runId: string, states: string[], timeoutMs = 60_000) =>
    waitFor(
      async () => {
        const res = await api("GET", `/api/v1/agent/runs/${runId}`);
        return states.includes(res.body.state) ? res.body : undefined;
      },
      { timeoutMs, what: `run ${runId} to reach ${states.join("/")}` },
    );
  return {
    dispatch,
    dataDir,
    logs,
    api,
    events,
    state,
    /** The run's workspace (a real path, as the agent sees it). */
    workspace: (runId: string) => realpathSync(join(dataDir, "workspaces", runId)),
    /** Every file under the run's private agent area, read as text. */
    agentAreaText: (runId: string) => readTree(join(dataDir, "workspaces", `${runId}.agent`)),
    stop: async () => {
      await dispatch.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A provider key shaped so that no log scrubber pattern would hide it: the test sees any leak. */
export function testKey(provider: string): string {
  return `test-${provider}-key-${randomBytes(12).toString("hex")}`;
}

/**
 * A run's processes: those whose command line names its workspace (bwrap) or that work in it (the relay,
 * the agent, its commands). None should outlive a cancel.
 */
export function processesOf(workspace: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (cmdline.includes(workspace) || cwd === workspace || cwd.startsWith(`${workspace}/`)) {
        found.push(`${pid}: ${cmdline.slice(0, 200)}`);
      }
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function readTree(dir: string): Promise<string> {
  let out = "";
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch {
    return "";
  }
  for (const name of entries) {
    const path = join(dir, name);
    const st = await stat(path).catch(() => undefined);
    if (!st) continue;
    if (st.isDirectory()) out += await readTree(path);
    else if (st.isFile() && st.size < 5_000_000) out += await readFile(path, "utf8").catch(() => "");
  }
  return out;
}

/** The text of every message an agent request sent (Anthropic and OpenAI shapes alike), joined. */
export function requestText(body: Record<string, unknown>): string {
  return JSON.stringify(body.messages ?? body.input ?? body.contents ?? body);
}
