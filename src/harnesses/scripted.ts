import { currentExecutionEvents } from "../model/run-resume.ts";
import type { Harness, HarnessContext, HarnessOutcome } from "./harness.ts";
import { noteUnseenImages } from "./image-notes.ts";

const COMMAND_TIMEOUT_MS = 10 * 60 * 1000;

/**
 * A deterministic, offline stand-in for a model — NOT an LLM. Every input line that starts with `$ `
 * runs with `bash -c` in the workspace, in order, stopping at the first command that fails; other
 * lines are echoed back as the assistant's reply. It lets Dispatch be demonstrated and tested end to
 * end without a model provider.
 */
export class ScriptedHarness implements Harness {
  readonly type = "scripted";
  private readonly commandTimeoutMs: number;

  constructor(opts: { commandTimeoutMs?: number } = {}) {
    this.commandTimeoutMs = opts.commandTimeoutMs ?? COMMAND_TIMEOUT_MS;
  }

  async run(ctx: HarnessContext): Promise<HarnessOutcome> {
    await noteUnseenImages(ctx, "scripted");
    if (ctx.mode === "plan") return this.plan(ctx);
    const queue = ctx.input.flatMap(lines);
    const ran: Array<{ command: string; exitCode: number | null }> = [];
    // On a new worker, the commands the transcript shows done are not run again; the one in flight is.
    let done = ctx.resume ? await commandsDone(ctx) : 0;
    const echoed: string[] = [];

    const next = async (): Promise<string | undefined> => {
      // Step boundary: follow-ups sent while running join the end of the script.
      const taken = await ctx.takeFollowups();
      if (taken.length > 0) await noteUnseenImages(ctx, "scripted");
      for (const message of taken) queue.push(...lines(message));
      return queue.shift();
    };

    for (let line = await next(); line !== undefined; line = await next()) {
      if (ctx.signal.aborted) break;
      if (!line.startsWith("$ ")) {
        if (line.trim() !== "") echoed.push(line);
        continue;
      }
      const command = line.slice(2).trim();
      if (command === "") continue;
      if (done > 0) {
        done -= 1;
        ran.push({ command, exitCode: 0 });
        continue;
      }
      // The call is written while its command starts, not before: on a new worker this harness runs
      // again the command its transcript shows no result for (commandsDone), whether or not its call was
      // written. The result is written after the call (the transcript keeps the order).
      const called = ctx.emit("tool_call", { tool: "shell", command });
      called.catch(() => {}); // its failure (the run moved) is thrown below, once the command has ended
      const result = await ctx.sandbox.exec(command, {
        timeoutMs: this.commandTimeoutMs,
        signal: ctx.signal,
      });
      await called;
      if (result.aborted) break;
      await ctx.emit("tool_result", {
        tool: "shell",
        command,
        exit_code: result.exitCode,
        ...(result.signal ? { signal: result.signal } : {}),
        output: result.output,
        ...(result.truncated ? { truncated: true } : {}),
        ...(result.timedOut ? { timed_out: true } : {}),
      });
      ran.push({ command, exitCode: result.exitCode });
      if (result.exitCode !== 0) {
        const why = result.timedOut
          ? `timed out after ${Math.round(this.commandTimeoutMs / 1000)} s`
          : result.exitCode === null
            ? `was killed by ${result.signal ?? "a signal"}`
            : `exited with code ${result.exitCode}`;
        // Its last words say why (bwrap's own refusals among them): kept short, as a status line.
        const last = result.output.trimEnd().split("\n").at(-1)?.slice(0, 300);
        const message = `Command \`${command}\` ${why}${last ? `: ${last}` : ""}`;
        await ctx.emit("message", { role: "assistant", text: summary(echoed, ran, message) });
        return { status: "failed", message, errorCode: "command_failed" };
      }
    }
    if (ctx.signal.aborted) return { status: "failed", message: "aborted", errorCode: "aborted" };
    await ctx.emit("message", { role: "assistant", text: summary(echoed, ran) });
    return { status: "succeeded" };
  }

  /** Plan mode: the commands it would run, in order, and none of them run. */
  private async plan(ctx: HarnessContext): Promise<HarnessOutcome> {
    const all = ctx.input.flatMap(lines);
    const commands = all.filter((l) => l.startsWith("$ ") && l.slice(2).trim() !== "");
    const text = all.filter((l) => !l.startsWith("$ ") && l.trim() !== "");
    // The plan is the script itself: approved, it is the brief that runs (src/runs/plan-approval.ts).
    const steps = commands.map((c) => `$ ${c.slice(2).trim()}`).join("\n");
    const plan = [
      ...(text.length ? [text.join("\n")] : []),
      commands.length ? `Plan (nothing was run):\n${steps}` : "Plan: nothing to run.",
    ].join("\n\n");
    await ctx.emit("message", {
      role: "assistant",
      text: `${plan}\n\n(scripted harness: a deterministic stand-in for a model, not an LLM)`,
    });
    return { status: "succeeded", message: "Plan ready; no files were changed" };
  }
}

/** How many commands of this execution ended before it moved to this worker. */
async function commandsDone(ctx: HarnessContext): Promise<number> {
  const events = currentExecutionEvents((await ctx.transcript?.()) ?? []);
  return events.filter((e) => e.type === "tool_result").length;
}

function lines(text: string): string[] {
  return text.split(/\r?\n/);
}

function summary(
  echoed: string[],
  ran: Array<{ command: string; exitCode: number | null }>,
  failure?: string,
): string {
  const parts: string[] = [];
  if (echoed.length) parts.push(echoed.join("\n"));
  if (ran.length) {
    const list = ran.map((r) => `- \`${r.command}\` → exit ${r.exitCode ?? "killed"}`).join("\n");
    parts.push(`Ran ${ran.length} command${ran.length === 1 ? "" : "s"}:\n${list}`);
  } else if (!echoed.length) {
    parts.push("Nothing to do: no `$ ` command lines and no text.");
  }
  if (failure) parts.push(`Stopped: ${failure}.`);
  return `${parts.join("\n\n")}\n\n(scripted harness: a deterministic stand-in for a model, not an LLM)`;
}
