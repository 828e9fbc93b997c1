import type { RunEventType, RunRecord } from "../model/run.ts";
import type { Store } from "../store/store.ts";
import { joinBasePrompt, type SkillResolver } from "../workspace/skills.ts";

/** What loading a run's skill at execution needs from the execution. */
export interface SkillDeps {
  store: Pick<Store, "recordSkill">;
  workerId: string;
  skills?: SkillResolver;
  signal: AbortSignal;
  emit(type: RunEventType, data: Record<string, unknown>): Promise<void>;
  /** Ends the run FAILED before its agent started. */
  fail(message: string, errorCode: string): Promise<void>;
}

/**
 * The run as the harness sees it: a skill that could only be fetched now (a remote repo) becomes its
 * base prompt and name. Undefined when the skill cannot be found (the run has FAILED) or on abort.
 */
export async function withSkill(run: RunRecord, deps: SkillDeps): Promise<RunRecord | undefined> {
  const { signal } = deps;
  const spec = run.agentConfig.skill_spec;
  if (!spec || run.agentSkill || !deps.skills) return run;
  const found = await deps.skills.resolve(spec, signal);
  if (signal.aborted) return undefined;
  if (found.kind !== "found") {
    await deps.fail(
      found.kind === "not_found" ? found.message : `skill "${spec}" could not be resolved`,
      "skill_not_found",
    );
    return undefined;
  }
  const { skill } = found;
  await deps.emit("log", {
    level: "info",
    phase: "skill",
    message: `Skill "${skill.name}" loaded from ${skill.fullPath}`,
  });
  const agentConfig = {
    ...run.agentConfig,
    base_prompt: joinBasePrompt(skill.body, run.agentConfig.base_prompt),
    name: run.agentConfig.name ?? skill.name,
  };
  const agentSkill = {
    name: skill.name,
    ...(skill.description ? { description: skill.description } : {}),
    full_path: skill.fullPath,
  };
  // On the run for everyone to see, and for later executions, which then need not fetch it again.
  if (!(await deps.store.recordSkill(run.id, deps.workerId, agentConfig, agentSkill))) return undefined;
  return { ...run, agentConfig, agentSkill };
}
