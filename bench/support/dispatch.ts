import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Dispatch, startDispatch } from "../../src/app.ts";
import { generateApiKey } from "../../src/auth/api-keys.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { BenchChild } from "./child.ts";

/**
 * How every benchmark starts the Dispatch it measures: a fresh data directory under the system temp
 * directory, 127.0.0.1 on a port the kernel picks (no window in which another process takes it), an admin
 * key, and settings that keep Dispatch's own safeguards out of the figures. stop() removes the data
 * directory, so runs never leave one behind.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const START_TIMEOUT_MS = 30_000;

export interface BenchApiResponse {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: bench responses are read field by field
  body: any;
}

interface BenchDispatch {
  url: string;
  /** The admin key (DISPATCH_ADMIN_API_KEY). */
  key: string;
  dataDir: string;
  api(method: string, path: string, body?: unknown): Promise<BenchApiResponse>;
  /** Stops Dispatch and removes its data directory. Safe to call more than once. */
  stop(): Promise<void>;
}

export interface BenchDispatchProcess extends BenchDispatch {
  child: BenchChild;
}

export interface BenchDispatchInProcess extends BenchDispatch {
  dispatch: Dispatch;
}

/** A fresh data directory, for a benchmark that prepares it (seeds a store) before starting Dispatch. */
export function benchDataDir(bench: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `dispatch-bench-${bench}-`));
}

function benchEnv(dataDir: string, key: string): Record<string, string> {
  return {
    DISPATCH_HOST: "127.0.0.1",
    DISPATCH_PORT: "0",
    DISPATCH_DATA_DIR: dataDir,
    DISPATCH_ADMIN_API_KEY: key,
    DISPATCH_SHUTDOWN_GRACE_MS: "0",
    // The load is the point: the rate limiter would otherwise answer most of it with 429.
    DISPATCH_RATE_LIMIT_PER_MINUTE: "10000000",
    DISPATCH_RATE_LIMIT_BURST: "10000000",
    // Hundreds of watchers of one run, from one key or one session, are what the fan-out benches measure.
    DISPATCH_MAX_EVENT_STREAMS_PER_CLIENT: "100000",
    DISPATCH_MAX_EVENT_STREAMS_PER_RUN: "100000",
  };
}

/**
 * `dispatch serve` (`node src/main.ts serve`) in a child process, so it has a core of its own and the
 * benchmark in this process does not compete with it. Its environment is PATH, HOME and the bench's
 * settings only: a DISPATCH_*, SLACK_* or GITHUB_* variable of the caller's shell must not leak in.
 * `dataDir` is one from benchDataDir() that the bench prepared; stop() removes it as well.
 */
export async function startDispatchProcess(opts: {
  bench: string;
  env?: Record<string, string>;
  dataDir?: string;
  /** Node.js flags before the script (e.g. --cpu-prof). */
  nodeFlags?: string[];
}): Promise<BenchDispatchProcess> {
  const dataDir = opts.dataDir ?? (await benchDataDir(opts.bench));
  const key = generateApiKey();
  const child = new BenchChild(
    "Dispatch",
    spawn(process.execPath, [...(opts.nodeFlags ?? []), "src/main.ts", "serve"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        ...(process.env.HOME ? { HOME: process.env.HOME } : {}),
        ...benchEnv(dataDir, key),
        ...opts.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  const stop = async () => {
    await child.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const url = await listeningUrl(child);
    await ready(child, url);
    return { url, key, dataDir, child, api: apiCaller(url, key), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Dispatch in this process, for a benchmark that measures what Dispatch itself holds (its heap, its
 * executor) rather than what a client sees. Logs nothing.
 */
export async function startDispatchInProcess(opts: {
  bench: string;
  env?: Record<string, string>;
}): Promise<BenchDispatchInProcess> {
  const dataDir = await benchDataDir(opts.bench);
  const key = generateApiKey();
  let dispatch: Dispatch;
  try {
    dispatch = await startDispatch(
      loadConfig({ ...benchEnv(dataDir, key), ...opts.env }),
      createLogger("silent"),
    );
  } catch (err) {
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  let stopping: Promise<void> | undefined;
  return {
    url: dispatch.url,
    key,
    dataDir,
    dispatch,
    api: apiCaller(dispatch.url, key),
    stop() {
      stopping ??= (async () => {
        await dispatch.stop();
        await rm(dataDir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}

/**
 * The URL `dispatch serve` listens on, from its output: the "Dispatch listening on" log line, or, when
 * the log level hides info lines, the curl example it always prints to stdout (the API's, or a worker's
 * health check).
 */
function listeningUrl(child: BenchChild): Promise<string> {
  const stdout = child.proc.stdout!;
  return new Promise((resolve, reject) => {
    let partial = "";
    const onData = (chunk: Buffer) => {
      const lines = (partial + chunk.toString("utf8")).split("\n");
      partial = lines.pop() ?? "";
      const url = lines.map(urlInLine).find(Boolean);
      if (url) done(() => resolve(url));
    };
    const onExit = () => done(() => reject(new Error(`Dispatch exited while starting\n${child.tail()}`)));
    const timer = setTimeout(
      () => done(() => reject(new Error(`Dispatch did not listen within 30 s\n${child.tail()}`))),
      START_TIMEOUT_MS,
    );
    const done = (settle: () => void) => {
      clearTimeout(timer);
      stdout.off("data", onData);
      child.proc.off("exit", onExit);
      settle();
    };
    stdout.on("data", onData);
    child.proc.once("exit", onExit);
  });
}

function urlInLine(line: string): string | undefined {
  if (line.startsWith("{")) {
    try {
      const entry = JSON.parse(line) as { msg?: string; url?: string };
      if (entry.url && entry.msg?.startsWith("Dispatch listening on")) return entry.url;
    } catch {
      // not a log line
    }
    return undefined;
  }
  return /^\s*curl -s (http:\/\/\S+?)\/(?:api\/v1\/agent\/runs|readyz)\b/.exec(line)?.[1];
}

/** Until /readyz answers 200: listening is not yet ready to serve. */
async function ready(child: BenchChild, url: string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exited) throw new Error(`Dispatch exited while starting\n${child.tail()}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok) return;
    } catch {
      // not accepting yet
    }
    if (Date.now() > deadline) throw new Error(`Dispatch was not ready within 30 s\n${child.tail()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function apiCaller(url: string, key: string): BenchDispatch["api"] {
  return async (method, path, body) => {
    const res = await fetch(url + path, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: parsed };
  };
}
