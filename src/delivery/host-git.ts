import { type ChildProcessByStdio, spawn } from "node:child_process";
import { tmpdir } from "node:os";
import type { Readable, Writable } from "node:stream";
import { gitEnv, redact } from "../workspace/git.ts";

/**
 * Git run by Dispatch itself, on repositories Dispatch owns (the run's private mirror, or a workspace
 * before any agent touched it): an environment built from nothing, no system or global config, hooks and
 * fsmonitor off, and a token only as an `http.<origin>.extraHeader` in the git process's environment —
 * never on the command line, in a config file or in any output (which is redacted as well).
 */
export interface HostGitOptions {
  /** --git-dir (a bare mirror) or the working directory (-C). */
  gitDir?: string;
  cwd?: string;
  /** The remote the token is for; its origin alone receives it. */
  remote?: string;
  /** `-c` options for reaching the remote (remote-access.ts: its checked addresses, no redirects). */
  remoteConfig?: readonly string[];
  token?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Bytes of stdout kept; more fails the command (a patch over the limit is reported, not cut). */
  maxStdoutBytes?: number;
  /** Written to the command's stdin (`update-ref --stdin`); none when absent. */
  input?: string;
}

export interface HostGitResult {
  ok: boolean;
  exitCode: number | null;
  stdout: Buffer;
  /** stderr, redacted and cut to its last 4 KiB. */
  stderr: string;
  aborted: boolean;
  timedOut: boolean;
  stdoutOverflow: boolean;
}

/** Options that keep anything in a repository's own config or hooks from running code here. */
export const HARDENED_CONFIG = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=false",
  "-c",
  "commit.gpgSign=false",
  "-c",
  "tag.gpgSign=false",
  "-c",
  "protocol.ext.allow=never",
  "-c",
  "credential.helper=",
  "-c",
  "core.askPass=",
];

const STDERR_KEEP = 4096;

export function hostGit(args: string[], opts: HostGitOptions = {}): Promise<HostGitResult> {
  const argv = [
    ...HARDENED_CONFIG,
    ...(opts.remoteConfig ?? []),
    ...(opts.gitDir ? [`--git-dir=${opts.gitDir}`] : []),
    ...args,
  ];
  const env = gitEnv(opts.remote ?? "", opts.token);
  const maxStdout = opts.maxStdoutBytes ?? 16 * 1024 * 1024;
  return new Promise((resolve) => {
    const child = spawn("git", argv, {
      cwd: opts.cwd ?? tmpdir(),
      env,
      stdio: [opts.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    }) as ChildProcessByStdio<Writable | null, Readable, Readable>;
    // A command that fails before reading all of it closes its stdin: its exit status says why.
    child.stdin?.on("error", () => {});
    child.stdin?.end(opts.input);
    const out: Buffer[] = [];
    let outBytes = 0;
    let overflow = false;
    let err = "";
    let timedOut = false;
    let aborted = false;
    child.stdout.on("data", (chunk: Buffer) => {
      if (overflow) return;
      outBytes += chunk.length;
      if (outBytes > maxStdout) {
        overflow = true;
        child.kill("SIGKILL");
        return;
      }
      out.push(chunk);
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      err = (err + chunk).slice(-STDERR_KEEP * 2);
    });
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          timedOut = true;
          child.kill("SIGKILL");
        }, opts.timeoutMs)
      : undefined;
    const onAbort = () => {
      aborted = true;
      child.kill("SIGKILL");
    };
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    if (opts.signal?.aborted) onAbort();
    const done = (exitCode: number | null) => {
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      resolve({
        ok: exitCode === 0 && !overflow && !timedOut && !aborted,
        exitCode,
        stdout: Buffer.concat(out),
        stderr: redact(err, opts.token).slice(-STDERR_KEEP),
        aborted,
        timedOut,
        stdoutOverflow: overflow,
      });
    };
    child.once("error", (e) => {
      err += String(e);
      done(null);
    });
    child.once("close", (code) => done(code));
  });
}

/** stdout as trimmed text. */
export function text(result: HostGitResult): string {
  return result.stdout.toString("utf8").trim();
}

/** The last meaningful lines of git's complaint, for a status message. */
export function reason(result: HostGitResult): string {
  if (result.timedOut) return "timed out";
  const lines = result.stderr
    .split("\n")
    .map((l) => l.replace(/^(remote|error|fatal|hint):\s*/i, "").trim())
    .filter((l) => l !== "" && !/^To /.test(l));
  return lines.slice(-3).join("; ") || `git exited with code ${result.exitCode}`;
}
