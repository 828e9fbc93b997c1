import type { RunRecord } from "../model/run.ts";
import { isTerminal } from "../model/run-state.ts";
import { stateWord } from "../model/run-wording.ts";
import { capitalized, stallNote } from "../model/stall.ts";
import type { ThreadBinding } from "../model/thread-binding.ts";
import type { WebSession } from "../model/web-session.ts";
import { csrfField, escapeHtml, safeHref, timeTag } from "./html.ts";
import type { Equivalent } from "./run-equivalents.ts";
import { executionUsage, renderRunHeader } from "./run-header.ts";
import { type DeliveryView, renderDelivery, renderTranscript, type TranscriptPage } from "./run-view.ts";

/**
 * The HTML of the run page and its cancel confirmation. Controls have labels and headings name the
 * sections; everything reads without JavaScript, which only follows the transcript and adds Copy buttons.
 */

/** One line of the page's "About this run" list: a term and its (already escaped) HTML. */
export interface RunFact {
  term: string;
  html: string;
  /** The `id` of its `<dd>`, for tests and the browser's script. */
  id?: string;
}

/**
 * The facts the page lists about a run. Other lines (stall, cost…) are added here, worded by the shared
 * wording functions, so that every run page shows them the same way.
 */
export function runFacts(
  run: RunRecord,
  binding: ThreadBinding | undefined,
  now: number,
  stallAfterMs: number,
): RunFact[] {
  // The agent, model, run time and cost are in the header (run-header.ts).
  const facts: RunFact[] = [];
  facts.push({
    term: "Requester",
    html: `${escapeHtml(run.creator.display_name)} · <a href="/?creator=${encodeURIComponent(run.creator.uid)}">their runs</a>`,
    id: "requester",
  });
  facts.push({ term: "Source", html: sourceHtml(run, binding), id: "source" });
  facts.push({
    term: "Created",
    html: timeTag(run.createdAt, now),
  });
  const stall = stallNote(run, now, stallAfterMs);
  if (stall) facts.push({ term: "Progress", html: escapeHtml(capitalized(stall)), id: "stall" });
  if (run.execution > 1) {
    facts.push({ term: "Executions", html: `${run.execution} (follow-ups continued it)`, id: "executions" });
  }
  facts.push({
    term: "Session page",
    html: `<a href="/sessions/${encodeURIComponent(run.sessionId)}">read-only view</a> <span class="muted">(anyone with its link can read it)</span>`,
  });
  return facts;
}

/** Where the run was asked for: the Slack thread or GitHub issue it is bound to, or its trigger URL. */
function sourceHtml(run: RunRecord, binding: ThreadBinding | undefined): string {
  const trigger = safeHref(run.triggerUrl);
  if (binding?.platform === "slack") {
    const href =
      trigger ??
      escapeHtml(
        `https://slack.com/app_redirect?team=${encodeURIComponent(binding.workspace)}&channel=${encodeURIComponent(binding.channel)}`,
      );
    return `Slack · <a href="${href}">${binding.thread ? "Slack thread" : "Slack channel"}</a>`;
  }
  if (binding?.platform === "github") {
    const where = escapeHtml(`${binding.workspace}#${binding.channel}`);
    return `GitHub · ${trigger ? `<a href="${trigger}">GitHub issue ${where}</a>` : `GitHub issue ${where}`}`;
  }
  const source = escapeHtml(run.source);
  return trigger ? `${source} · <a href="${trigger}">where it started</a>` : source;
}

export interface RunPageView {
  run: RunRecord;
  session: WebSession;
  now: number;
  /** "No progress for 5 min", when the run has stalled. */
  stall?: string | undefined;
  facts: RunFact[];
  transcript: TranscriptPage;
  delivery: DeliveryView | undefined;
  attachments: string;
  equivalents: Equivalent[];
  /** What the person just did, said once at the top (`?done=` after a form's redirect). */
  notice?: string;
  nonce: string;
  script: string;
  /** The retry form's one-time key (its idempotency key). */
  retryKey: string;
  /** What a waiting run waits for, with its answers (run-gate.ts), already rendered. */
  gate: string;
}

/** Whether the signed-in person may follow up and cancel (a read-only session may not). */
export function canAct(session: WebSession): boolean {
  return session.role !== "read";
}

export function renderRunPage(v: RunPageView): string {
  const { run, session } = v;
  const runPath = `/runs/${encodeURIComponent(run.id)}`;
  const act = canAct(session);
  const cancel =
    act && !isTerminal(run.state)
      ? `<form method="get" action="${runPath}/cancel" id="cancel-run"><button type="submit">Cancel run</button></form>`
      : "";
  // Retry where a person would want it: the run has stalled (its Progress fact says so) or it failed.
  const retryable =
    act && (v.facts.some((f) => f.id === "stall") || run.state === "FAILED" || run.state === "ERROR");
  const retry = retryable
    ? `<form method="post" action="${runPath}/retry" id="retry-run">${csrfField(session)}<input type="hidden" name="retry_key" value="${v.retryKey}"><button type="submit" aria-describedby="retry-help">Retry</button> <span id="retry-help" class="muted">starts a new run with the same prompt and settings${isTerminal(run.state) ? "" : ", and cancels this one"}</span></form>`
    : "";
  const followup = act ? followupBox(run, session) : "";
  const facts = v.facts
    .map((f) => `<dt>${escapeHtml(f.term)}</dt><dd${f.id ? ` id="${f.id}"` : ""}>${f.html}</dd>`)
    .join("");
  const header = renderRunHeader({
    run,
    now: v.now,
    current: executionUsage(run, v.transcript.usage, v.transcript.executionFrom),
    executionFrom: v.transcript.executionFrom,
    delivery: v.delivery?.summary,
    stall: v.stall,
    actions: `${followup}${cancel}${retry}`,
  });
  return `<nav aria-label="Breadcrumb"><p><a href="/">All runs</a> › run</p></nav>
${header}
${v.notice ? `<p class="notice" role="status">${escapeHtml(v.notice)}</p>` : ""}
${act ? "" : `<p class="muted" id="read-only">Your role (${escapeHtml(session.role)}) can read runs but not follow up on or cancel them.</p>`}
${v.gate}
<section aria-labelledby="prompt-h"><h2 id="prompt-h">Prompt</h2><pre class="prompt">${escapeHtml(run.prompt)}</pre></section>
${v.attachments}
${renderTranscript(v.transcript)}
${renderDelivery(v.delivery)}
<section aria-labelledby="facts-h"><h2 id="facts-h">About this run</h2><dl class="facts" id="facts">${facts}</dl></section>
${renderEquivalents(v.equivalents)}
<script nonce="${v.nonce}">${v.script}</script>`;
}

/**
 * Follow up from the header, whatever has scrolled: a disclosure (no script needed) that opens the same
 * form the refusal page repeats.
 */
function followupBox(run: RunRecord, session: WebSession): string {
  return `<details class="followup-box" id="followup-box"><summary>Follow up</summary>${followupFields(run, session, "")}</details>`;
}

/** The follow-up box; `message` refills it after a refusal so that nothing typed is lost. */
export function followupForm(run: RunRecord, session: WebSession, message = ""): string {
  return `<section aria-labelledby="followup-h"><h2 id="followup-h">Follow up</h2>
${followupFields(run, session, message)}</section>`;
}

function followupFields(run: RunRecord, session: WebSession, message: string): string {
  const hint = isTerminal(run.state)
    ? "The run has finished: a follow-up continues it in a new execution, with the same workspace and branch."
    : run.state === "BLOCKED"
      ? "The run waits for you: a follow-up answers it, and the run continues with it."
      : "The agent reads it at its next step.";
  return `<form method="post" action="/runs/${encodeURIComponent(run.id)}/followup">${csrfField(session)}
<p><label for="followup">Message to the agent</label><br>
<textarea id="followup" name="message" rows="4" required maxlength="100000" aria-describedby="followup-help">${escapeHtml(message)}</textarea></p>
<p id="followup-help" class="muted">${escapeHtml(hint)}</p>
<p><button type="submit">Send follow-up</button></p>
</form>`;
}

function renderEquivalents(list: Equivalent[]): string {
  const blocks = list
    .map(
      (e) =>
        `<h3>${escapeHtml(e.action)}</h3><pre class="cmd" data-copy="${escapeHtml(`${e.action} with the CLI`)}">${escapeHtml(e.cli)}</pre><pre class="cmd" data-copy="${escapeHtml(`${e.action} with curl`)}">${escapeHtml(e.curl)}</pre>`,
    )
    .join("");
  return `<section aria-labelledby="cli-h"><h2 id="cli-h">From the command line</h2>
<p class="muted">The same with the <code>dispatch</code> CLI or curl; set <code>DISPATCH_API_KEY</code> to an API key of your team first.</p>
${blocks}</section>`;
}

/** GET /runs/<id>/cancel: the question, and the form that answers yes (with the CSRF token). */
export function renderCancelConfirm(run: RunRecord, session: WebSession): string {
  const runPath = `/runs/${encodeURIComponent(run.id)}`;
  return `<h1>Cancel this run?</h1>
<p><a href="${runPath}">${escapeHtml(run.title)}</a> is <span class="state state-${run.state}">${stateWord(run.state)}</span>. Cancelling stops the agent; what it did so far stays in the transcript, and a follow-up can continue it later.</p>
<form method="post" action="${runPath}/cancel">${csrfField(session)}
<p><button type="submit" id="confirm-cancel">Yes, cancel run</button> <a href="${runPath}">No, keep it running</a></p>
</form>`;
}

/** A refusal of the run service, in its words, with the way back and the form to try again (`again`). */
export function renderRefusal(run: RunRecord, heading: string, message: string, again = ""): string {
  const runPath = `/runs/${encodeURIComponent(run.id)}`;
  return `<h1>${escapeHtml(heading)}</h1>
<p class="error" role="alert">${escapeHtml(message)}</p>
<p><a href="${runPath}">Back to the run</a></p>
${again}`;
}

/** The run page's own style, next to the layout's and the shared run view's. */
export const RUN_PAGE_STYLE = `.notice{background:#dafbe1;padding:.5rem .75rem;border-radius:6px}
textarea{font:inherit;width:100%;max-width:50rem;box-sizing:border-box} textarea:focus{outline:2px solid #0969da;outline-offset:2px}
.cmd{background:#f6f8fa;padding:.5rem .75rem;border-radius:6px;white-space:pre-wrap} h3{font-size:.95rem;margin:1rem 0 .25rem}
.followup-box>summary{cursor:pointer;padding:.25rem .6rem;border:1px solid #8c959f;border-radius:6px;list-style:none;font-size:14px}
.followup-box[open]{flex-basis:100%;order:9} .followup-box[open]>summary{margin-bottom:.25rem} .followup-box form p{margin:.3rem 0}`;

/** Copy buttons for the commands: added by the script, so that a page without JavaScript shows none. */
export const COPY_SCRIPT = `
(() => {
  for (const pre of document.querySelectorAll("pre[data-copy]")) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy: " + pre.dataset.copy);
    button.addEventListener("click", () => {
      navigator.clipboard.writeText(pre.textContent).then(
        () => { button.textContent = "Copied"; },
        () => { button.textContent = "Select the text to copy"; },
      );
    });
    pre.before(button);
  }
})();
`;
