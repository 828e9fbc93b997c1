import { agentWords } from "./agent-wording.ts";
import { budgetText, type RunBudget } from "./budget.ts";

/**
 * The words people read about a run, on every surface (Slack card, GitHub comment, session page, CLI):
 * docs/surfaces.md. Plain functions of the run's wire fields, so any surface can use them.
 */

/** What a run says about itself, as RunItem carries it. */
export interface RunShown {
  state: string;
  status_message?: { message?: string } | null | undefined;
}

/** The word for each state; the session page's script reads this table too. */
export const STATE_WORDS: Readonly<Record<string, string>> = {
  QUEUED: "Queued",
  INPROGRESS: "In progress",
  BLOCKED: "Waiting for you",
  SUCCEEDED: "Succeeded",
  FAILED: "Failed",
  ERROR: "Failed",
  CANCELLED: "Cancelled",
};

/** The word for a state; a state this version does not know is shown as it is. */
export function stateWord(state: string): string {
  return STATE_WORDS[state] ?? state;
}

/** The state in words, naming who cancelled a cancelled run ("Cancelled by Ada"). */
export function stateWords(run: RunShown): string {
  if (run.state === "CANCELLED") {
    const message = run.status_message?.message ?? "";
    if (/^cancelled by /i.test(message)) return `Cancelled by ${message.slice("cancelled by ".length)}`;
  }
  return stateWord(run.state);
}

/** A state's sign where a surface shows plain Unicode (GitHub, Jira); Slack has its own emoji codes. */
export function stateEmoji(state: string): string {
  switch (state) {
    case "QUEUED":
      return "⏳";
    case "INPROGRESS":
      return "🔄";
    case "BLOCKED":
      return "✋";
    case "SUCCEEDED":
      return "✅";
    case "FAILED":
    case "ERROR":
      return "❌";
    case "CANCELLED":
      return "🚫";
    default:
      return "❔";
  }
}

/** Text from a person or a platform on one line: runs of white space and control characters become one space. */
export function oneLine(text: string): string {
  return text.replace(/[\s\p{Cc}]+/gu, " ").trim();
}

/** Cuts text to `max` characters (code points), ending with "…" when cut. */
export function truncate(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join("")}…`;
}

/** 150500 → "2m 30s"; 0 → "0s". */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s}s`;
  return `${s}s`;
}

/** A cost in US dollars as people read it: 0.4213 → "$0.42", 12.5 → "$12.50", 0.003 → "<$0.01". */
export function formatCost(usd: number): string {
  if (usd > 0 && usd < 0.005) return "<$0.01";
  return `$${usd.toFixed(2)}`;
}

/**
 * The run's cost ("$0.42") when it is known (request_usage.inference_cost), else "". With a limit, the
 * cost so far beside it ("$0.42 of $5.00"; model/budget.ts), current while the run works.
 */
export function costText(run: {
  request_usage?: { inference_cost?: number | undefined } | undefined;
  budget?: Pick<RunBudget, "limit" | "spent_usd"> | undefined;
}): string {
  const usd = run.request_usage?.inference_cost;
  const known = typeof usd === "number" && Number.isFinite(usd);
  return budgetText(run.budget, known ? usd : undefined) || (known ? formatCost(usd) : "");
}

/** ISO-8601 duration (`PT2M30.5S`) → milliseconds. */
export function parseIsoDuration(value: string | undefined): number {
  const m = /^PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?$/.exec(value ?? "");
  if (!m) return 0;
  return (Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0)) * 1000;
}

/** Time shown for a run: run time once running or finished, time waiting while queued. */
export function elapsedText(
  run: { state: string; updated_at: string; run_time: string },
  now: number | Date,
): string {
  const nowMs = typeof now === "number" ? now : now.getTime();
  if (run.state === "QUEUED") return `waiting ${formatDuration(nowMs - Date.parse(run.updated_at))}`;
  return formatDuration(parseIsoDuration(run.run_time));
}

/**
 * `model=… · env=… · name=…`: the resolved options the run actually uses. A run that names its harness
 * shows the agent (and its model) in agentFacts instead, so neither is repeated here.
 */
export function resolvedOptions(run: {
  agent_config?: {
    model_id?: string;
    harness?: { type: string; name?: string };
    environment_id?: string;
    name?: string;
    skill_spec?: string;
  };
}): string {
  const c = run.agent_config ?? {};
  const parts: string[] = [];
  if (c.model_id && !c.harness) parts.push(`model=${c.model_id}`);
  if (c.environment_id) parts.push(`env=${c.environment_id}`);
  if (c.name) parts.push(`name=${c.name}`);
  if (c.skill_spec) parts.push(`skill=${c.skill_spec}`);
  return parts.join(" · ");
}

/** "Agent: Claude Code" (agent-wording.ts), or "" when the run names no harness. */
export function agentFact(run: {
  agent_config?: { harness?: { type: string; name?: string }; model_id?: string };
}): string {
  const words = agentWords(run.agent_config);
  return words ? `Agent: ${words}` : "";
}
