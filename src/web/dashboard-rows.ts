import { agentWords } from "../model/agent-wording.ts";
import { deliverySummary, repositoryLabel } from "../model/delivery-summary.ts";
import type { RunRecord } from "../model/run.ts";
import { waitingFor } from "../model/run-gates.ts";
import { RUN_STATES, type RunState } from "../model/run-state.ts";
import { costText, formatCost, formatDuration, stateWord } from "../model/run-wording.ts";
import { stallNote } from "../model/stall.ts";
import type { ThreadBinding } from "../model/thread-binding.ts";
import { runTimeMs } from "../runs/run-item.ts";
import type { Store } from "../store/store.ts";
import { escapeHtml, safeHref, timeTag } from "./html.ts";

/**
 * One run as a row of the dashboard's table. The page, the row fragments (GET /dashboard/rows) and the
 * live feed all render rows here, so a row updated in place looks exactly like one the page rendered.
 */

/** Words for the counts, filters and rows; ERROR is told apart from FAILED here, unlike on cards. */
export const STATE_LABELS: Record<RunState, string> = {
  ...Object.fromEntries(RUN_STATES.map((s) => [s, stateWord(s)])),
  ERROR: "Error",
} as Record<RunState, string>;

const SOURCE_WORDS: Record<string, string> = {
  API: "API",
  SLACK: "Slack",
  GITHUB_WEBHOOK: "GitHub",
  SCHEDULED_AGENT: "Schedule",
};

/** The table's header; renderRow writes the cells in this order. */
export const ROW_HEADER =
  '<tr><th scope="col">State</th><th scope="col">Title</th><th scope="col">Requester</th><th scope="col">Source</th><th scope="col">Repository and PR</th><th scope="col">Agent or model</th><th scope="col">Age</th><th scope="col" class="num">Run time</th><th scope="col" class="num">Cost</th></tr>';
export const ROW_CELLS = 9;

/**
 * The table on a laptop keeps state, title, source and PR in view (titles wrap, the agent's words are
 * small); on a phone each row is a card: state and title on top, then the other cells under their labels.
 */
export const ROWS_STYLE = `#runs .c-title{min-width:14rem} #runs .c-title a{font-weight:600} #runs .c-agent{font-size:13px;color:#59636e;max-width:12rem}
#runs .c-repo code{word-break:break-all} #runs .c-age{white-space:nowrap} #runs .waiting-for{font-size:13px;color:#7d4e00}
@media (max-width:720px){#runs thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
#runs,#runs caption,#runs tbody,#runs tr,#runs td{display:block;width:auto} #runs tr{border:1px solid #d1d9e0;border-radius:6px;margin:.5rem 0;padding:.4rem .6rem}
#runs td{border:0;padding:.1rem 0;text-align:left} #runs td.c-state{display:inline-block;margin-right:.4rem} #runs td.c-title{display:inline;min-width:0}
#runs td[data-label]{display:flex;gap:.5rem;font-size:13px} #runs td[data-label]:empty{display:none}
#runs td[data-label]::before{content:attr(data-label);color:#59636e;min-width:6rem}}`;

/** What a row needs besides the run: the clock, and where runs without a trigger URL were asked for. */
export interface RowContext {
  now: number;
  /** DISPATCH_STALL_AFTER_S in ms: a run in progress without an event for longer says so. */
  stallAfterMs: number;
  bindings: ReadonlyMap<string, ThreadBinding>;
}

/**
 * The origin threads of the runs that need one for their source link (those without a trigger URL: a
 * slash command's status card thread, a schedule reporting to a channel), in one read.
 */
export async function bindingsOf(
  store: Pick<Store, "loadNotifierState">,
  runs: readonly RunRecord[],
): Promise<Map<string, ThreadBinding>> {
  const ids = runs.filter((run) => !safeHref(run.triggerUrl)).map((run) => run.id);
  const bindings = new Map<string, ThreadBinding>();
  if (ids.length === 0) return bindings;
  for (const [runId, state] of await store.loadNotifierState(ids)) {
    const origin = state.bindings[0];
    if (origin) bindings.set(runId, origin);
  }
  return bindings;
}

/**
 * Where a person finds the conversation a run came from: the trigger URL the integration recorded (a Slack
 * message permalink, a GitHub comment), else one built from the thread binding — Slack's web client opens
 * a thread by team, channel and ts without the workspace's domain; a GitHub issue number opens the issue
 * (or redirects to the pull request of that number).
 */
export function sourceLink(run: RunRecord, binding: ThreadBinding | undefined): string | undefined {
  const trigger = safeHref(run.triggerUrl);
  if (trigger) return trigger;
  if (!binding) return undefined;
  if (binding.platform === "slack") {
    const base = `https://app.slack.com/client/${encodeURIComponent(binding.workspace)}/${encodeURIComponent(binding.channel)}`;
    return escapeHtml(
      binding.thread
        ? `${base}/thread/${encodeURIComponent(binding.channel)}-${encodeURIComponent(binding.thread)}`
        : base,
    );
  }
  if (/^[\w.-]+\/[\w.-]+$/.test(binding.workspace) && /^\d+$/.test(binding.channel)) {
    return escapeHtml(`https://github.com/${binding.workspace}/issues/${binding.channel}`);
  }
  return undefined;
}

/** A sum of costs in the words of run-wording.ts ("$0.42"), or "" when none was recorded. */
export function costWords(cost: number | null | undefined): string {
  return typeof cost === "number" && Number.isFinite(cost) ? formatCost(cost) : "";
}

export function renderRow(run: RunRecord, ctx: RowContext): string {
  const summary = deliverySummary({
    agent_config: run.agentConfig,
    artifacts: run.artifacts,
    status_message: run.statusMessage,
    state: run.state,
  });
  const pr = summary?.pullRequest;
  const prHref = pr ? safeHref(pr.url) : undefined;
  const repository = summary
    ? `<code>${escapeHtml(repositoryLabel(summary))}</code>${pr ? ` · ${prHref ? `<a href="${prHref}">PR #${pr.number}</a>` : `PR #${pr.number}`}` : ""}`
    : "";
  const sourceWords = escapeHtml(SOURCE_WORDS[run.source] ?? run.source);
  const href = sourceLink(run, ctx.bindings.get(run.id));
  const source = href ? `<a href="${href}">${sourceWords}</a>` : sourceWords;
  const schedule = run.schedule ? ` · ${escapeHtml(run.schedule.scheduleName)}` : "";
  const agent = agentWords(run.agentConfig) ?? run.agentConfig.model_id ?? "";
  // A run that has not started has no run time yet (it waits; the age says for how long).
  const runTime = run.startedAt ? formatDuration(runTimeMs(run, ctx.now)) : "";
  const cost = escapeHtml(costText({ request_usage: run.requestUsage }));
  const stall = stallNote(run, ctx.now, ctx.stallAfterMs);
  // The run page has its Cancel and Retry.
  const stallHtml = stall
    ? ` <span class="stall">${escapeHtml(stall)}</span> <a href="/runs/${encodeURIComponent(run.id)}" aria-label="Cancel or retry ${escapeHtml(run.title)}">cancel or retry</a>`
    : "";
  // A waiting run says what it waits for: the person scanning the list sees what is theirs to answer.
  const waitingHtml =
    run.state === "BLOCKED"
      ? ` <span class="waiting-for">for ${escapeHtml(waitingFor(run.statusMessage?.error_code))}</span>`
      : "";
  // Each cell names its column (data-label): on a phone a row is a card and the labels stand in for the header.
  return `<tr data-run-id="${escapeHtml(run.id)}"><td class="c-state"><span class="state state-${run.state}">${escapeHtml(STATE_LABELS[run.state] ?? run.state)}</span>${waitingHtml}${stallHtml}</td><td class="c-title"><a href="/runs/${encodeURIComponent(run.id)}">${escapeHtml(run.title)}</a></td><td class="c-who" data-label="Requester"><a href="/?creator=${encodeURIComponent(run.creator.uid)}">${escapeHtml(run.creator.display_name)}</a></td><td class="c-source" data-label="Source">${source}${schedule}</td><td class="c-repo" data-label="Repository">${repository}</td><td class="c-agent" data-label="Agent">${escapeHtml(agent)}</td><td class="c-age" data-label="Age">${timeTag(run.createdAt, ctx.now)}</td><td class="num" data-label="Run time">${runTime}</td><td class="num" data-label="Cost">${cost}</td></tr>\n`;
}
