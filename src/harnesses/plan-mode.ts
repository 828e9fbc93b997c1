import type { ToolSet } from "ai";
import type { Sandbox } from "../sandbox/sandbox.ts";
import type { HarnessContext } from "./harness.ts";

/**
 * `mode: "plan"` (run-mode.ts) for the harnesses: the agent answers with a plan and changes no file. Every
 * agent is told so (PLAN_INSTRUCTION), and the sandbox holds it to that: each process of a plan-mode turn
 * sees the workspace read-only (planTurnSandbox). The builtin harness also loses its file-writing tools;
 * the executor delivers nothing. docs/runtime.md, "Plan mode", says what holds without a sandbox.
 */
export const PLAN_INSTRUCTION = `PLAN MODE: do not change any file. Inspect the workspace as much as you need \
(read, list and search files; run read-only commands), then answer with a plan: the steps you would take, \
the files you would change and how, and how you would check the result; any question you have for the \
person goes in the plan. Do not carry the plan out.`;

/** Said on the transcript of a plan-mode turn that nothing can hold to it: DISPATCH_SANDBOX=none. */
export const PLAN_NOT_ENFORCED =
  "Plan mode is not enforced: this server runs agents without a sandbox (DISPATCH_SANDBOX=none), so the workspace stays writable and the agent is only told not to change files";

/**
 * The tools left out in plan mode: those that change files, and ask_user, since a plan's open questions
 * belong in the plan, which waits for a person anyway (Request changes answers them); an answer to a
 * question would continue the run in normal mode instead.
 */
const LEFT_OUT_IN_PLAN_MODE = ["write_file", "edit_file", "ask_user"];

export function planModeTools(tools: ToolSet): ToolSet {
  return Object.fromEntries(Object.entries(tools).filter(([name]) => !LEFT_OUT_IN_PLAN_MODE.includes(name)));
}

/** A plan-mode turn's input: PLAN_INSTRUCTION leads its first message. */
export function withPlanInstruction(input: string[]): string[] {
  const [first, ...rest] = input;
  return [first === undefined ? PLAN_INSTRUCTION : `${PLAN_INSTRUCTION}\n\n${first}`, ...rest];
}

/**
 * The sandbox a turn's processes run in: for a plan-mode turn, the run's sandbox with its workspace
 * read-only for every command and process it starts (the agent's HOME beside the workspace and /tmp stay
 * writable). The next turn, after Approve, gets the run's sandbox as it is: writable. Without isolation
 * (kind "none") nothing can hold the workspace read-only: the transcript says so once, and the run goes on.
 */
export async function planTurnSandbox(ctx: HarnessContext): Promise<Sandbox> {
  const sandbox = ctx.sandbox;
  if (ctx.mode !== "plan") return sandbox;
  if (sandbox.kind === "none") {
    await ctx.emit("log", { level: "warn", phase: "sandbox", message: PLAN_NOT_ENFORCED });
    return sandbox;
  }
  return {
    kind: sandbox.kind,
    workspace: sandbox.workspace,
    exec: (command, opts) => sandbox.exec(command, { ...opts, readOnlyWorkspace: true }),
    start: (argv, opts) => sandbox.start(argv, { ...opts, readOnlyWorkspace: true }),
    resolvePath: (path) => sandbox.resolvePath(path),
  };
}
