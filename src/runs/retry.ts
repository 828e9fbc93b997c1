/**
 * What "Retry" starts (a Slack card's button, the run page's form): a new run with the same prompt,
 * title and configuration as the run being retried. A generated `dispatch/…` branch is dropped (the new
 * run gets its own; a pull request's branch is kept, so the retry works on that PR), and a skill run's
 * resolved `base_prompt`/`name` are dropped so the skill is resolved again.
 */
export function retryInput(run: {
  prompt: string;
  title: string;
  config: Readonly<Record<string, unknown>>;
  fromSkill: boolean;
}): { prompt: string; title: string; config: Record<string, unknown> } {
  const { branch, base_prompt, name, ...config } = run.config;
  const keepBranch = typeof branch === "string" && !branch.startsWith("dispatch/");
  return {
    prompt: run.prompt,
    title: run.title,
    config: {
      ...config,
      ...(keepBranch ? { branch } : {}),
      ...(base_prompt !== undefined && !run.fromSkill ? { base_prompt } : {}),
      ...(name !== undefined && !run.fromSkill ? { name } : {}),
    },
  };
}
