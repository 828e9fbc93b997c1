import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { type Dispatch, startDispatch } from "../../src/app.ts";
import { createApiKey } from "../../src/auth/bootstrap.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";

export interface TestDispatch {
  dispatch: Dispatch;
  url: string;
  /** An admin key of the default team. */
  key: string;
  dataDir: string;
  /** Calls the API with the default key unless `headers.authorization` is given. */
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse>;
  /** A new key in `team` (a new principal each time). */
  newKey(
    team: string,
    opts?: { role?: "member" | "read" | "admin"; displayName?: string; email?: string },
  ): Promise<string>;
  stop(): Promise<void>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are asserted field by field
  body: any;
  text: string;
}

/** startDispatch's own options, and how the test keeps Dispatch's log. */
export type TestDispatchOptions = NonNullable<Parameters<typeof startDispatch>[2]> & {
  /** Dispatch's log lines (JSON, one entry a line) are kept here for the test to read. */
  logs?: string[];
  /** The log level: debug when `logs` are kept, else TEST_LOG_LEVEL or silent. */
  logLevel?: string;
};

/**
 * A real Dispatch on 127.0.0.1 with a fresh SQLite store in a temporary directory: the one way a test
 * starts Dispatch in its own process (the Slack, GitHub and external-agent helpers add their fakes and
 * settings around it; test/support/server-process.ts starts it as a child process to kill).
 */
export async function startTestDispatch(
  env: Record<string, string> = {},
  { logs, logLevel, ...opts }: TestDispatchOptions = {},
): Promise<TestDispatch> {
  // A test may name the data directory (to restart on it); it then removes it itself.
  const ownDataDir = env.DISPATCH_DATA_DIR === undefined;
  const dataDir = env.DISPATCH_DATA_DIR ?? (await mkdtemp(join(tmpdir(), "dispatch-test-")));
  const config = loadConfig({
    DISPATCH_DATA_DIR: dataDir,
    DISPATCH_PORT: "0",
    DISPATCH_POLL_INTERVAL_MS: "200",
    DISPATCH_SHUTDOWN_GRACE_MS: "0",
    // The tests' own polling (waitFor on the API) is not a client to limit: on a loaded machine it asks
    // more often than the production default allows. Tests of the key rate limit set their own.
    DISPATCH_RATE_LIMIT_PER_MINUTE: "1000000",
    DISPATCH_RATE_LIMIT_BURST: "100000",
    ...env,
  });
  const level = logLevel ?? (logs ? "debug" : (process.env.TEST_LOG_LEVEL ?? "silent"));
  const sink = logs
    ? new Writable({
        write(chunk, _encoding, done) {
          logs.push(...String(chunk).split("\n").filter(Boolean));
          done();
        },
      })
    : undefined;
  const dispatch = await startDispatch(config, createLogger(level, sink), opts);
  // With DISPATCH_ADMIN_API_KEY no key is generated: that one is the admin key.
  const key = env.DISPATCH_ADMIN_API_KEY || dispatch.generatedAdminKey!;
  const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(dispatch.url + path, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined && typeof body !== "string" ? { "content-type": "application/json" } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  };
  return {
    dispatch,
    url: dispatch.url,
    key,
    dataDir,
    api,
    async newKey(team, opts = {}) {
      const created = await createApiKey(dispatch.store, {
        team,
        principalType: "user",
        ...(opts.displayName ? { displayName: opts.displayName } : {}),
        ...(opts.email ? { email: opts.email } : {}),
        role: opts.role ?? "member",
      });
      return created.key;
    },
    async stop() {
      await dispatch.stop();
      if (ownDataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Polls `check` until it returns a truthy value or the deadline passes; never a fixed sleep. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${opts.what ?? "condition"} (last: ${String(last)})`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 20));
  }
}

/** Waits until the run reaches one of `states` and returns it. */
export async function waitForState(t: TestDispatch, runId: string, states: string[], timeoutMs = 10_000) {
  try {
    return await waitFor(
      async () => {
        const res = await t.api("GET", `/api/v1/agent/runs/${runId}`);
        return states.includes(res.body.state) ? res.body : undefined;
      },
      { timeoutMs, what: `run ${runId} to reach ${states.join("/")}` },
    );
  } catch (err) {
    // Where the run stood and what it did last: a timeout explains itself.
    const run = await t.api("GET", `/api/v1/agent/runs/${runId}`).catch(() => undefined);
    const events = await t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`).catch(() => undefined);
    const story = ((events?.body?.events ?? []) as Array<{ type: string; data: unknown }>)
      .slice(-20)
      .map((e) => `${e.type} ${JSON.stringify(e.data).slice(0, 400)}`)
      .join("\n");
    throw new Error(
      `${(err as Error).message}\nstate: ${run?.body?.state} ${JSON.stringify(run?.body?.status_message ?? null)}\nlast events:\n${story}`,
    );
  }
}
