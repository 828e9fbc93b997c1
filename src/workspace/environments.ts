import { existsSync } from "node:fs";
import { readdir, rm, writeFile } from "node:fs/promises";
import { relative } from "node:path";
import type { EnvironmentSettings } from "../config-file.ts";
import type { RunEventType } from "../model/run.ts";
import { resolveInside, type Sandbox } from "../sandbox/sandbox.ts";
import { displayUrl, gitClone, repoDirName } from "./git.ts";

const CLONE_TIMEOUT_MS = 10 * 60 * 1000;
const TAIL_LINES = 20;
const TAIL_CHARS = 2000;

export interface PrepareContext {
  id: string;
  environment: EnvironmentSettings;
  workspace: string;
  sandbox: Sandbox;
  /**
   * The setup commands' network: the host's while the workspace holds only what the operator configured;
   * `public` (a network of the sandbox's own, public addresses only) once it holds the run's repository,
   * whose content the run's creator chooses and which setup commands (npm ci, make…) may run.
   */
  setupNetwork: "host" | "public";
  signal: AbortSignal;
  emit(type: RunEventType, data: Record<string, unknown>): Promise<void>;
  /** Where tokens are read from (process.env). */
  env?: NodeJS.ProcessEnv;
}

export type PrepareResult =
  | { ok: true }
  | { ok: false; aborted: true }
  | { ok: false; aborted?: false; message: string; errorCode: string };

/**
 * Prepares a run's workspace from its environment, before the agent starts on its first execution:
 * clones each repo (by Dispatch, with the repo's token when it has one), then runs each setup command in
 * the sandbox with `setupNetwork`. Every step is a `log` event on the transcript. The first failure stops
 * it, with the failing step and the tail of its output. A marker next to the workspace (outside it,
 * hidden from the agent) makes a re-queued execution skip work that already succeeded.
 */
export async function prepareEnvironment(ctx: PrepareContext): Promise<PrepareResult> {
  const { id, environment, workspace, sandbox, signal } = ctx;
  const marker = `${workspace}.environment-ready`;
  if (existsSync(marker)) {
    await ctx.emit("log", {
      level: "info",
      phase: "environment",
      message: `Environment "${id}" already prepared`,
    });
    return { ok: true };
  }
  const env = ctx.env ?? process.env;

  for (const [index, repo] of environment.repos.entries()) {
    const shown = displayUrl(repo.url);
    let token: string | undefined;
    if (repo.token_env) {
      token = env[repo.token_env];
      if (!token) {
        return fail(
          `Environment "${id}": ${shown} needs the token in ${repo.token_env}, which is not set in Dispatch's environment`,
          "environment_misconfigured",
        );
      }
    }
    let dest: string;
    try {
      dest = await resolveInside(workspace, repo.path ?? repoDirName(repo.url));
    } catch {
      return fail(
        `Environment "${id}": repo path ${repo.path} is outside the workspace`,
        "environment_misconfigured",
      );
    }
    const where = relative(workspace, dest) || ".";
    if (dest === workspace) {
      // The workspace itself (path "."): as the first repo, clear what an interrupted attempt left.
      if (index === 0)
        for (const entry of await readdir(workspace))
          await rm(`${workspace}/${entry}`, { recursive: true, force: true });
    } else {
      await rm(dest, { recursive: true, force: true });
    }
    await ctx.emit("log", {
      level: "info",
      phase: "environment",
      step: "clone",
      message: `Cloning ${shown}${repo.ref ? ` at ${repo.ref}` : ""} into ${where}`,
      url: shown,
      path: where,
      ...(repo.ref ? { ref: repo.ref } : {}),
    });
    const result = await gitClone({
      url: repo.url,
      dest,
      ...(repo.ref ? { ref: repo.ref } : {}),
      ...(token ? { token } : {}),
      timeoutMs: CLONE_TIMEOUT_MS,
      signal,
    });
    if (result.aborted || signal.aborted) return { ok: false, aborted: true };
    if (result.exitCode !== 0) {
      const why = result.timedOut ? "timed out" : `exited with code ${result.exitCode ?? result.signal}`;
      await ctx.emit("log", {
        level: "error",
        phase: "environment",
        step: "clone",
        message: `${result.step} of ${shown} ${why}`,
        exit_code: result.exitCode,
        output: tail(result.output),
      });
      return fail(
        `Environment "${id}": ${result.step} of ${shown} ${why}.${outputBlock(result.output)}`,
        "environment_setup_failed",
      );
    }
  }

  const timeoutMs = environment.setup_timeout_minutes * 60_000;
  for (const [i, command] of environment.setup.entries()) {
    await ctx.emit("log", {
      level: "info",
      phase: "setup",
      step: i + 1,
      message: `Setup ${i + 1}/${environment.setup.length}: $ ${command}`,
      command,
    });
    const result = await sandbox.exec(command, { timeoutMs, signal, network: ctx.setupNetwork });
    if (result.aborted || signal.aborted) return { ok: false, aborted: true };
    const why = result.timedOut
      ? `timed out after ${environment.setup_timeout_minutes} min`
      : result.exitCode === null
        ? `was killed by ${result.signal ?? "a signal"}`
        : `exited with code ${result.exitCode}`;
    await ctx.emit("log", {
      level: result.exitCode === 0 ? "info" : "error",
      phase: "setup",
      step: i + 1,
      message: `Setup ${i + 1}/${environment.setup.length} ${result.exitCode === 0 ? "done" : why}: $ ${command}`,
      command,
      exit_code: result.exitCode,
      output: tail(result.output),
      ...(result.truncated ? { truncated: true } : {}),
    });
    if (result.exitCode !== 0) {
      return fail(
        `Environment "${id}" setup command \`${command}\` ${why}.${outputBlock(result.output)}`,
        "environment_setup_failed",
      );
    }
  }
  await writeFile(marker, new Date().toISOString());
  return { ok: true };
}

function fail(message: string, errorCode: string): PrepareResult {
  return { ok: false, message, errorCode };
}

/** The last lines of a command's output, for status messages and events. */
export function tail(output: string): string {
  const lines = output.replace(/\s+$/, "").split("\n").slice(-TAIL_LINES).join("\n");
  return lines.length > TAIL_CHARS ? `…${lines.slice(-TAIL_CHARS)}` : lines;
}

function outputBlock(output: string): string {
  const t = tail(output);
  return t ? ` Output (last lines):\n${t}` : " (no output)";
}
