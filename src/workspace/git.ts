import { tmpdir } from "node:os";
import { type CommandResult, runArgvInProcessGroup } from "../sandbox/process-group.ts";

export interface CloneOptions {
  url: string;
  dest: string;
  ref?: string;
  /** A token for a private https repository: sent as an HTTP header, never put in a URL or a file. */
  token?: string;
  /** A shallow clone of this many commits (the skills cache). */
  depth?: number;
  timeoutMs: number;
  signal: AbortSignal;
}

export interface GitResult extends CommandResult {
  /** The step that failed, for messages. */
  step: string;
}

/**
 * Clones `url` into `dest` (and checks out `ref`), run by Dispatch itself — not in the sandbox — with an
 * environment built from nothing. A token reaches git only through GIT_CONFIG_* variables of the git
 * process (an `http.<origin>/.extraHeader`), so it is never in the command line, the clone's
 * .git/config, the remote URL, or any output (which is redacted anyway).
 */
export async function gitClone(opts: CloneOptions): Promise<GitResult> {
  const env = gitEnv(opts.url, opts.token);
  const run = async (step: string, argv: string[], cwd: string): Promise<GitResult> => {
    const result = await runArgvInProcessGroup(argv, {
      cwd,
      env,
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      outputLimit: 16 * 1024,
    });
    return { ...result, output: redact(result.output, opts.token), step };
  };
  const clone = await run(
    "git clone",
    [
      "git",
      "clone",
      "--quiet",
      ...(opts.ref ? ["--no-checkout"] : []),
      ...(opts.depth ? ["--depth", String(opts.depth)] : []),
      "--",
      opts.url,
      opts.dest,
    ],
    tmpdir(),
  );
  if (clone.exitCode !== 0 || !opts.ref) return clone;
  return run(`git checkout ${opts.ref}`, ["git", "checkout", "--quiet", opts.ref, "--"], opts.dest);
}

export function gitEnv(url: string, token: string | undefined): Record<string, string> {
  const env: Record<string, string> = {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: tmpdir(),
    LANG: "C.UTF-8",
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_SSH_COMMAND: "ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new",
  };
  if (token) {
    const origin = httpsOrigin(url);
    if (origin) {
      const basic = Buffer.from(`x-access-token:${token}`).toString("base64");
      env.GIT_CONFIG_COUNT = "1";
      env.GIT_CONFIG_KEY_0 = `http.${origin}/.extraHeader`;
      env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${basic}`;
    }
  }
  return env;
}

function httpsOrigin(url: string): string | undefined {
  try {
    const u = new URL(url);
    return u.protocol === "https:" || u.protocol === "http:" ? u.origin : undefined;
  } catch {
    return undefined;
  }
}

/** Removes a secret (and its base64 forms) from text shown to people. */
export function redact(text: string, secret: string | undefined): string {
  if (!secret) return text;
  let out = text.split(secret).join("***");
  const basic = Buffer.from(`x-access-token:${secret}`).toString("base64");
  out = out.split(basic).join("***");
  return out;
}

/** A URL for messages: credentials (user:password@) removed. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username || u.password) {
      u.username = "";
      u.password = "";
    }
    return u.toString();
  } catch {
    return url;
  }
}

/** The directory name git would pick: the last path segment without `.git`. */
export function repoDirName(url: string): string {
  const trimmed = url.replace(/[/\\]+$/, "").replace(/\.git$/, "");
  const last = trimmed
    .split(/[/:\\]/)
    .filter(Boolean)
    .at(-1);
  return last && last !== "." && last !== ".." ? last : "repo";
}
