import { type DeliverySummary, repositoryLabel } from "../model/delivery-summary.ts";
import type { RunRecord } from "../model/run.ts";
import { isTerminal } from "../model/run-state.ts";
import { agentFact, formatCost, formatDuration, stateWord } from "../model/run-wording.ts";
import { runTimeMs } from "../runs/run-item.ts";
import { escapeHtml, safeHref } from "./html.ts";
import type { StepUsage } from "./transcript-items.ts";

/**
 * The header of a run's reading view, which stays in view while the transcript scrolls: the state, the
 * run time (ticking while it runs), tokens and cost so far, the agent and model, the repository and pull
 * request, the status message, and the page's actions. The live script updates it from HeaderData.
 */

/** What the live script needs to keep the header current (JSON of the pages' `/items` routes). */
export interface HeaderData {
  state: string;
  state_word: string;
  status_message: string;
  terminal: boolean;
  /** The run time so far; it grows while `running`. */
  run_time_ms: number;
  running: boolean;
  /** request_usage: every finished execution's tokens and cost (the whole run's once it ended). */
  tokens: number;
  cost_usd: number | null;
}

export function headerData(run: RunRecord, now: number): HeaderData {
  const cost = run.requestUsage.inference_cost;
  return {
    state: run.state,
    state_word: stateWord(run.state),
    status_message: run.statusMessage?.message ?? "",
    terminal: isTerminal(run.state),
    run_time_ms: runTimeMs(run, now),
    running: run.executionStartedAt !== null && run.executionStartedAt !== undefined,
    tokens: run.requestUsage.total_tokens,
    cost_usd: typeof cost === "number" && Number.isFinite(cost) ? cost : null,
  };
}

/** The usage of the execution under way: usage events after its start, which request_usage does not hold yet. */
export function executionUsage(
  run: RunRecord,
  usage: StepUsage[],
  executionFrom: number,
): { tokens: number; costUsd: number } {
  if (run.state !== "INPROGRESS") return { tokens: 0, costUsd: 0 };
  let tokens = 0;
  let costUsd = 0;
  for (const u of usage) {
    if (u.seq <= executionFrom) continue;
    tokens += u.tokens;
    costUsd += u.costUsd ?? 0;
  }
  return { tokens, costUsd };
}

export interface RunHeaderView {
  run: RunRecord;
  now: number;
  /** The execution under way's usage so far (added to request_usage). */
  current: { tokens: number; costUsd: number };
  /** Where the current execution starts, so the live script counts only later usage events. */
  executionFrom: number;
  delivery: DeliverySummary | undefined;
  /** "No progress for 5 min", when the run has stalled. */
  stall?: string | undefined;
  /** The page's buttons (Cancel, Retry, Follow up), already rendered. */
  actions?: string;
}

export function renderRunHeader(v: RunHeaderView): string {
  const { run } = v;
  const data = headerData(run, v.now);
  const tokens = data.tokens + v.current.tokens;
  const priced = data.cost_usd !== null || v.current.costUsd > 0;
  const cost = (data.cost_usd ?? 0) + v.current.costUsd;
  const facts: string[] = [
    `<span class="fact"><span class="visually-hidden">Run time: </span><span id="elapsed" data-ms="${data.run_time_ms}" data-running="${data.running}">${formatDuration(data.run_time_ms)}</span></span>`,
    `<span class="fact" id="usage" data-base-tokens="${data.tokens}" data-base-cost="${data.cost_usd ?? ""}" data-execution-from="${v.executionFrom}" data-current-tokens="${v.current.tokens}" data-current-cost="${v.current.costUsd}"><span id="tokens">${tokenWords(tokens)}</span><span id="cost-part"${priced ? "" : " hidden"}> · <span id="cost">${priced ? escapeHtml(formatCost(cost)) : ""}</span></span></span>`,
  ];
  const agent = agentFact({ agent_config: run.agentConfig });
  if (agent) facts.push(`<span class="fact" id="agent">${escapeHtml(agent)}</span>`);
  if (run.agentConfig.model_id && !agent.includes(run.agentConfig.model_id)) {
    facts.push(`<span class="fact">Model <code>${escapeHtml(run.agentConfig.model_id)}</code></span>`);
  }
  if (v.delivery) {
    facts.push(`<span class="fact"><code>${escapeHtml(repositoryLabel(v.delivery))}</code></span>`);
    const pr = v.delivery.pullRequest;
    const href = pr ? safeHref(pr.url) : undefined;
    if (pr && href)
      facts.push(`<span class="fact"><a href="${href}" id="head-pr">PR #${pr.number}</a></span>`);
  }
  return `<section class="run-head" aria-label="The run at a glance">
<div class="head-top"><h1>${escapeHtml(run.title)}</h1>${v.actions ? `<div class="head-actions">${v.actions}</div>` : ""}</div>
<p class="head-line"><span id="state" class="state state-${run.state}" data-state="${run.state}">${stateWord(run.state)}</span>${v.stall ? ` <span id="stall-note" class="stall">${escapeHtml(v.stall)}</span>` : ""} ${facts.join(" ")}</p>
<p id="status-message">${escapeHtml(data.status_message)}</p>
</section>`;
}

/** "12,345 tokens"; the live script words it the same way. */
export function tokenWords(tokens: number): string {
  return `${tokens.toLocaleString("en-US")} tokens`;
}

export const RUN_HEADER_STYLE = `.run-head{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid #d1d9e0;padding:.25rem 0 .1rem;margin-bottom:.75rem}
.head-top{display:flex;justify-content:space-between;align-items:flex-start;gap:.75rem;flex-wrap:wrap} .run-head h1{margin:.2rem 0}
.head-actions{display:flex;gap:.5rem;align-items:flex-start;flex-wrap:wrap} .head-actions form{margin:0}
.head-line{display:flex;flex-wrap:wrap;gap:.3rem .9rem;align-items:center;margin:.2rem 0;font-size:14px} .fact{white-space:nowrap}
#status-message{margin:.1rem 0 .3rem;color:#59636e;font-size:14px} #status-message:empty{display:none}
.stall{color:#9a6700;font-weight:600}
@media (max-width:640px){.run-head{position:static}}`;
