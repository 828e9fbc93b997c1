import { createHash } from "node:crypto";
import type { RunRecord } from "../model/run.ts";
import { waitingFor } from "../model/run-gates.ts";
import type { WebSession } from "../model/web-session.ts";
import { extendOffer } from "../runs/waiting-run.ts";
import type { Store } from "../store/store.ts";
import { csrfField, escapeHtml } from "./html.ts";
import { renderMarkdown } from "./markdown.ts";
import { formatBytes } from "./run-view.ts";

/**
 * What the run page shows of a run that waits for a person (BLOCKED; docs/api.md "Plans that wait for
 * approval"): what it waits for and, for a plan, the plan itself with Approve (an optional note), Request
 * changes (the changes) and Cancel; for budget ("Budgets"), Extend (an amount, what it needs rounded up to
 * a whole dollar at first) and Stop here. Any other wait is answered by a follow-up, so the section points
 * there. The live script swaps the section when its key changes, never while the same wait is shown, so
 * that text being typed into it stays.
 */

/** The plan shown at most; the rest is in the transcript's last message and the PLAN artifact. */
const PLAN_BYTES = 32 * 1024;

export interface GateView {
  reason: string | undefined;
  message: string;
  /** The plan of a run awaiting approval, from its latest PLAN artifact. */
  plan?: { text: string; sizeBytes: number; shownBytes: number };
}

type Log = { warn(obj: object, msg: string): void };

/** The wait of a BLOCKED run, with its plan read from the store; undefined for a run that does not wait. */
export async function readGate(
  run: RunRecord,
  artifacts: Pick<Store, "readArtifactHead">,
  log: Log,
): Promise<GateView | undefined> {
  if (run.state !== "BLOCKED") return undefined;
  const reason = run.statusMessage?.error_code;
  const view: GateView = { reason, message: run.statusMessage?.message ?? "" };
  if (reason !== "awaiting_approval") return view;
  const uid = run.artifacts.findLast((a) => a.artifact_type === "PLAN")?.data.document_uid;
  if (typeof uid !== "string") return view;
  try {
    const stored = await artifacts.readArtifactHead(run.teamId, uid, PLAN_BYTES);
    if (stored) {
      // A long plan is cut at a line end, never inside a character.
      let shown = Buffer.from(stored.head);
      if (stored.sizeBytes > shown.byteLength && shown.lastIndexOf(0x0a) > 0) {
        shown = shown.subarray(0, shown.lastIndexOf(0x0a) + 1);
      }
      view.plan = { text: shown.toString("utf8"), sizeBytes: stored.sizeBytes, shownBytes: shown.byteLength };
    }
  } catch (err) {
    // The page still says what the run waits for; the plan is in the transcript too.
    log.warn({ err, runId: run.id }, "reading the plan for a run's page failed");
  }
  return view;
}

/**
 * The section: hidden (and keyed "") when the run does not wait. `act` is whether the session may answer
 * (a read-only one sees the plan, not the forms).
 */
export function renderGate(
  run: RunRecord,
  view: GateView | undefined,
  session: WebSession,
  act: boolean,
): string {
  if (!view) return `<section id="gate" data-key="" hidden></section>`;
  const key = createHash("sha256")
    .update(JSON.stringify([view.reason, view.message, view.plan?.text ?? ""]))
    .digest("hex")
    .slice(0, 16);
  const runPath = `/runs/${encodeURIComponent(run.id)}`;
  const approval = view.reason === "awaiting_approval";
  const plan = view.plan
    ? `<div class="md plan-doc" id="plan-doc">${renderMarkdown(view.plan.text)}</div>${
        view.plan.shownBytes < view.plan.sizeBytes
          ? `<p class="muted">Showing the first ${formatBytes(view.plan.shownBytes)} of ${formatBytes(view.plan.sizeBytes)}; the whole plan is the run's last message in the transcript.</p>`
          : ""
      }`
    : "";
  const cancel = `<form method="get" action="${runPath}/cancel"><p><button type="submit" id="gate-cancel">Cancel</button> <span class="muted">ends the run</span></p></form>`;
  let forms = "";
  if (act && approval) {
    forms = `<div class="gate-forms">
<form method="post" action="${runPath}/approve">${csrfField(session)}
<p><label for="approve-note">Note for the agent (optional)</label><br>
<textarea id="approve-note" name="note" rows="2" maxlength="100000"></textarea></p>
<p><button type="submit" id="approve-plan">Approve</button> <span class="muted">carries the plan out in this run</span></p>
</form>
${reviseForm(run, session)}
${cancel}</div>`;
  } else if (act && view.reason === "awaiting_budget") {
    forms = `<div class="gate-forms">
${extendForm(run, session)}
<form method="post" action="${runPath}/stop">${csrfField(session)}
<p><button type="submit" id="stop-budget">Stop here</button> <span class="muted">delivers what it has and ends</span></p>
</form>
${cancel}</div>`;
  } else if (act) {
    forms = `<p>Answer with <a href="#followup-box">a follow-up</a>: the run continues with it.</p>${cancel}`;
  }
  return `<section id="gate" data-key="${key}" aria-labelledby="gate-h">
<h2 id="gate-h">Waiting for you: ${escapeHtml(waitingFor(view.reason))}</h2>
${view.message ? `<p>${escapeHtml(view.message)}</p>` : ""}
${plan}
${forms}
</section>`;
}

/** Request changes; `message` refills it after a refusal so that nothing typed is lost. */
export function reviseForm(run: RunRecord, session: WebSession, message = ""): string {
  return `<form method="post" action="/runs/${encodeURIComponent(run.id)}/revise">${csrfField(session)}
<p><label for="revise-message">Changes to the plan</label><br>
<textarea id="revise-message" name="message" rows="3" required maxlength="100000">${escapeHtml(message)}</textarea></p>
<p><button type="submit" id="revise-plan">Request changes</button> <span class="muted">the agent revises the plan and waits again</span></p>
</form>`;
}

/** Extend (an amount in US dollars); `amount` refills it after a refusal, else what the run needs. */
export function extendForm(run: RunRecord, session: WebSession, amount?: string): string {
  const value = amount ?? String(extendOffer(run));
  return `<form method="post" action="/runs/${encodeURIComponent(run.id)}/extend">${csrfField(session)}
<p><label for="extend-amount">Extend by (US dollars)</label><br>
<input type="number" id="extend-amount" name="amount_usd" min="0.01" step="0.01" required value="${escapeHtml(value)}"></p>
<p><button type="submit" id="extend-budget">Extend</button> <span class="muted">lets it spend that much more, and it continues</span></p>
</form>`;
}

export const RUN_GATE_STYLE = `#gate{border:2px solid #9a6700;border-radius:6px;padding:.25rem .9rem;margin:1rem 0;background:#fffdf0}
#gate h2{margin:.4rem 0} .plan-doc{background:#fff;border:1px solid #d1d9e0;border-radius:6px;padding:.25rem .75rem;max-height:40rem;overflow:auto}
.gate-forms form p{margin:.3rem 0}`;
