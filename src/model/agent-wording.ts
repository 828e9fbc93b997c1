/**
 * Which agent ran a run, in the words people read on every surface (Slack card, GitHub tracking comment,
 * session page, CLI), and the names people select agents by (`/agent --agent claude`, `@dispatch /codex`,
 * a channel's or repository's default). Keyed by harness registry key (harness-wire.ts): one table, so
 * that every surface says the same thing.
 */

/** The label of each agent people can select, by registry key; `withModel`: the label names the model. */
export const AGENTS: Readonly<Record<string, { label: string; withModel: boolean }>> = {
  claude: { label: "Claude Code", withModel: true },
  codex: { label: "Codex", withModel: true },
  gemini: { label: "Gemini CLI", withModel: true },
  builtin: { label: "Dispatch builtin", withModel: true },
  // The offline stand-in runs no model, whatever model_id says.
  scripted: { label: "Scripted (no model)", withModel: false },
};

/** The names people select an agent by, in the order help and refusals list them. */
export const AGENT_NAMES: readonly string[] = Object.keys(AGENTS);

/** A selectable agent name as typed ("Claude", "CODEX") → its registry key, or undefined when unknown. */
export function agentKeyOf(typed: string): string | undefined {
  const key = typed.trim().toLowerCase();
  return key in AGENTS ? key : undefined;
}

/** What a person reads when they named an agent this server does not know. */
export function unknownAgentText(typed: string): string {
  return `unknown agent "${typed}"; available agents: ${AGENT_NAMES.join(", ")}`;
}

/** The harness as a run carries it: the wire form (`{type: "oz", name: "builtin"}`, `{type: "claude"}`). */
export interface HarnessShown {
  type: string;
  name?: string | null | undefined;
}

/** The registry key of a run's harness in either form (wire or stored). */
export function agentKeyOfHarness(harness: HarnessShown): string {
  return harness.type === "oz" ? (harness.name ?? "oz") : harness.type;
}

/**
 * "Claude Code", "Codex (openai/gpt-5-codex)", "Dispatch builtin (openai/gpt-5)", "Scripted (no model)":
 * which agent a run uses, with its model where one applies. Undefined when the run names no harness.
 */
export function agentWords(
  config: { harness?: HarnessShown | null | undefined; model_id?: string | null | undefined } | undefined,
): string | undefined {
  if (!config?.harness) return undefined;
  const key = agentKeyOfHarness(config.harness);
  const known = AGENTS[key];
  if (!known) return key;
  return known.withModel && config.model_id ? `${known.label} (${config.model_id})` : known.label;
}
