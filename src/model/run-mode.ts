/**
 * Oz's query mode of a run or follow-up (`mode` on create and on follow-ups). `normal` does the work;
 * `plan` answers with a plan and changes no file (the builtin harness gets a plan instruction and no
 * file-writing tools; the scripted harness lists its commands without running them; nothing is
 * delivered). `orchestrate` (an agent that spawns child runs) is Oz's and not Dispatch's: refused with
 * `operation_not_supported`.
 */
export const WIRE_RUN_MODES = ["normal", "plan", "orchestrate"] as const;
export type WireRunMode = (typeof WIRE_RUN_MODES)[number];

export const RUN_MODES = ["normal", "plan"] as const;
export type RunMode = (typeof RUN_MODES)[number];

export function isRunMode(value: unknown): value is RunMode {
  return typeof value === "string" && (RUN_MODES as readonly string[]).includes(value);
}

/**
 * The mode of an execution: a run's first execution has the create's mode; a later one (a follow-up
 * handoff) has the mode of the latest follow-up that started it.
 */
export function executionMode(
  execution: number,
  runMode: RunMode | undefined,
  followupModes: readonly string[],
): RunMode {
  if (execution === 1) return runMode ?? "normal";
  const latest = followupModes.at(-1);
  return isRunMode(latest) ? latest : "normal";
}
