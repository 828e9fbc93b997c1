import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { startTestDispatch, type TestDispatchOptions, waitForState } from "../support/dispatch.ts";

/**
 * A Dispatch for the external agents' tests (startTestDispatch with their settings): bubblewrap where it
 * works, follow-ups polled often, its log kept (at debug level) so that tests can check no key reached
 * it. `env` holds the provider variables.
 */
export async function startHarnessDispatch(
  env: Record<string, string>,
  external: TestDispatchOptions["external"] = {},
) {
  const logs: string[] = [];
  const t = await startTestDispatch(
    {
      DISPATCH_POLL_INTERVAL_MS: "100",
      // The tests poll the API while agents work; its per-key rate limit is not under test here.
      DISPATCH_RATE_LIMIT_PER_MINUTE: "1000000",
      DISPATCH_RATE_LIMIT_BURST: "100000",
      ...env,
    },
    { external: { followupPollMs: 100, ...external }, logs },
  );
  return {
    ...t,
    logs,
    /** The run's whole transcript, read page by page. */
    events: async (runId: string) => {
      // biome-ignore lint/suspicious/noExplicitAny: events are asserted field by field
      const all: any[] = [];
      for (;;) {
        const res = await t.api("GET", `/api/v1/agent/runs/${runId}/events?after=${all.at(-1)?.seq ?? 0}`);
        if (res.status !== 200) throw new Error(`events: HTTP ${res.status} ${res.text}`);
        if (res.body.events.length === 0) return all;
        all.push(...res.body.events);
      }
    },
    /** Waits (up to a minute: a real agent works) until the run reaches one of `states`. */
    state: (runId: string, states: string[], timeoutMs = 60_000) => waitForState(t, runId, states, timeoutMs),
    /** The run's workspace (a real path, as the agent sees it). */
    workspace: (runId: string) => realpathSync(join(t.dataDir, "workspaces", runId)),
    /** Every file under the run's private agent area, read as text. */
    agentAreaText: (runId: string) => readTree(join(t.dataDir, "workspaces", `${runId}.agent`)),
  };
}

export type HarnessDispatch = Awaited<ReturnType<typeof startHarnessDispatch>>;

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
