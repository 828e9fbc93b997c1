import { type ChildProcess, spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type ApiResponse, waitFor } from "./dispatch.ts";

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const OUTPUT_LIMIT = 256 * 1024;
const BASE62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** A fresh value for DISPATCH_ADMIN_API_KEY, so the same key works across restarts on one data dir. */
export function newAdminKey(): string {
  let key = "dsp_";
  for (let i = 0; i < 40; i++) key += BASE62[randomInt(BASE62.length)];
  return key;
}

/** `dispatch serve` as a real child process (`node src/main.ts serve`), talked to over HTTP. */
export interface ServerProcess {
  child: ChildProcess;
  pid: number;
  url: string;
  key: string;
  dataDir: string;
  /** Settles when the process has exited, with its exit code or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** stdout and stderr so far (the last 256 KiB), for failure messages. */
  output(): string;
  api(method: string, path: string, body?: unknown): Promise<ApiResponse>;
}

/**
 * Starts `node src/main.ts serve` on 127.0.0.1 with DISPATCH_PORT=0 (the kernel picks a free port, so
 * there is no window in which another process can take it) and learns the URL from the start-up log
 * line. The log level must let that info line through.
 */
export async function startServerProcess(opts: {
  dataDir: string;
  key: string;
  env?: Record<string, string>;
  /** Arguments after `serve`, e.g. ["--role", "worker"]. */
  args?: string[];
  /**
   * What to run instead of `node src/main.ts serve`, from the repository's root (`["scripts/start"]`); it
   * must end as the same process (exec), so that stopping it stops the server.
   */
  command?: string[];
  startTimeoutMs?: number;
}): Promise<ServerProcess> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DISPATCH_HOST: "127.0.0.1",
    DISPATCH_PORT: "0",
    DISPATCH_DATA_DIR: opts.dataDir,
    DISPATCH_ADMIN_API_KEY: opts.key,
    DISPATCH_LOG_LEVEL: "info",
    ...opts.env,
  };
  const [program, ...argv] = opts.command ?? [process.execPath, "src/main.ts", "serve"];
  const child = spawn(program!, [...argv, ...(opts.args ?? [])], {
    cwd: REPO_ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const append = (chunk: Buffer) => {
    output += chunk.toString("utf8");
    if (output.length > OUTPUT_LIMIT) output = output.slice(-OUTPUT_LIMIT);
  };
  child.stdout!.on("data", append);
  child.stderr!.on("data", append);
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
    });
  });
  const handle = { child, output: () => output, exited };
  let url: string;
  try {
    url = await waitFor(
      () => {
        if (exitInfo)
          throw new Error(`dispatch serve exited early (${JSON.stringify(exitInfo)}):\n${output}`);
        return listeningUrl(output);
      },
      { timeoutMs: opts.startTimeoutMs ?? 15_000, intervalMs: 25, what: "dispatch serve to listen" },
    );
  } catch (err) {
    await stopServerProcess(handle);
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n--- server output ---\n${output}`);
  }
  const api = async (method: string, path: string, body?: unknown): Promise<ApiResponse> => {
    const res = await fetch(url + path, {
      method,
      headers: {
        authorization: `Bearer ${opts.key}`,
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
    return { status: res.status, headers: res.headers, body: parsed, text };
  };
  return { ...handle, pid: child.pid!, url, key: opts.key, dataDir: opts.dataDir, api };
}

/** SIGKILLs the server if it still runs and waits for it to be gone. Safe to call more than once. */
export async function stopServerProcess(server: Pick<ServerProcess, "child" | "exited">): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL");
  await server.exited;
}

function listeningUrl(output: string): string | undefined {
  for (const line of output.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; url?: string };
      if (entry.url && entry.msg?.startsWith("Dispatch listening on")) return entry.url;
    } catch {
      // a partial line: read again at the next poll
    }
  }
  return undefined;
}

// --- the processes agents start ------------------------------------------------------------------

/** Live (not zombie) processes whose environment has `name=value`; agent commands carry DISPATCH_RUN_ID. */
function processesWithEnv(match: (entry: string) => boolean): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    try {
      if (!isAlive(pid)) continue;
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      if (environ.some(match)) pids.push(pid);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return pids;
}

/**
 * The agent processes of a run. The scripted harness runs each command with an environment built from
 * nothing but PATH, HOME, LANG, TERM and DISPATCH_RUN_ID, so the run id finds exactly its processes
 * (a comment marker would not: `bash -c "sleep 60 # marker"` execs sleep, whose argv has no marker).
 */
export function runProcesses(runId: string): number[] {
  return processesWithEnv((entry) => entry === `DISPATCH_RUN_ID=${runId}`);
}

/** Every agent process whose HOME (its run workspace) lies under `dataDir`. */
export function processesUnder(dataDir: string): number[] {
  const prefix = `HOME=${dataDir.replace(/\/+$/, "")}/`;
  return processesWithEnv((entry) => entry.startsWith(prefix));
}

/** Running, or at least not yet a zombie waiting for its parent. */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) S …": the state follows the last ")" since comm may contain spaces or parentheses.
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/**
 * SIGKILLs every agent process under `dataDir`, by process group (each command leads its own group),
 * and waits until none is left. For cleanup after a server was killed: its children outlive it.
 */
export async function killAgentProcesses(dataDir: string): Promise<void> {
  await waitFor(
    () => {
      const left = processesUnder(dataDir);
      for (const pid of left) {
        for (const target of [-pid, pid]) {
          try {
            process.kill(target, "SIGKILL");
          } catch {
            // not a group leader, or already gone
          }
        }
      }
      return left.length === 0;
    },
    { timeoutMs: 5_000, intervalMs: 50, what: `agent processes under ${dataDir} to be gone` },
  );
}
