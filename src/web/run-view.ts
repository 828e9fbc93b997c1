import type { ArtifactLinks } from "../api/artifact-links.ts";
import type { RunTranscript } from "../api/event-stream.ts";
import {
  type DeliverySummary,
  deliveryLine,
  deliverySummary,
  repositoryLabel,
} from "../model/delivery-summary.ts";
import type { RunRecord } from "../model/run.ts";
import type { ArtifactHead, Store } from "../store/store.ts";
import { CHANGES_STYLE, renderChanges } from "./diff-view.ts";
import { escapeHtml, safeHref } from "./html.ts";
import { type PlanStep, type StepUsage, TurnBuilder } from "./transcript-items.ts";
import { renderItem, renderPlan } from "./transcript-render.ts";

/**
 * What the session page and the run page both show of a run, read and rendered the same way: a page of
 * the transcript, the delivery (repository, branch, pull request, diff stat, the start of the patch) and
 * the image attachments, plus the script that follows the transcript live. Each page sets its own budget.
 */

/** How much of the transcript one page renders, and how much of the latest patch it shows. */
export interface ViewBudget {
  events: number;
  bytes: number;
  patchBytes: number;
  /** Lines of the rendered diff (diff2html's markup is some 300 bytes a line). */
  diffLines: number;
}

/** Events read from the store at once while a page is rendered. */
const READ_BATCH = 32;

/** A page of the transcript, rendered: the items of the events after `after` that fit the budget. */
export interface TranscriptPage {
  after: number;
  /** Each item's key and HTML, in order. */
  items: Array<{ key: string; seq: number; html: string }>;
  /** Events read (usage included): consecutive sequence numbers after `after`. */
  count: number;
  lastSeq: number;
  /** Whether events exist after `lastSeq` (then the page links to them instead of following live). */
  more: boolean;
  /** The latest plan on this page. */
  plan?: { seq: number; steps: PlanStep[] };
  /** The page's usage events, and where the latest execution on it started (for the header's totals). */
  usage: StepUsage[];
  executionFrom: number;
}

/** Events read past the budget so that a call on the page also shows its result. */
const FINISH_CALLS = 50;

export async function readTranscriptPage(
  runs: Pick<RunTranscript, "transcript">,
  runId: string,
  after: number,
  budget: Pick<ViewBudget, "events" | "bytes">,
  /** Read past the budget (a little) to pair a call with its result; the live script asks without. */
  finishCalls = true,
): Promise<TranscriptPage> {
  const turns = new TurnBuilder();
  let bytes = 0;
  let lastSeq = after;
  let more = false;
  read: for (;;) {
    const events = await runs.transcript(runId, lastSeq, READ_BATCH);
    for (const event of events) {
      const full = turns.events > 0 && (turns.events >= budget.events || bytes >= budget.bytes);
      if (full && (!finishCalls || !turns.waiting || turns.events >= budget.events + FINISH_CALLS)) {
        more = true;
        break read;
      }
      turns.add(event);
      bytes += JSON.stringify(event.data).length;
      lastSeq = event.seq;
    }
    if (events.length < READ_BATCH) break;
  }
  return {
    after,
    items: turns.items.map((item) => ({ key: item.key, seq: item.seq, html: renderItem(item) })),
    count: turns.events,
    lastSeq,
    more,
    ...(turns.plan ? { plan: turns.plan } : {}),
    usage: turns.usage,
    executionFrom: turns.executionFrom,
  };
}

/** The run's delivery as a page shows it, with the start of its latest patch. */
export interface DeliveryView {
  summary: DeliverySummary;
  patch?: { text: string; sizeBytes: number; shownBytes: number };
  /** Lines of the patch rendered as a diff at most. */
  diffLines: number;
}

type Log = { warn(obj: object, msg: string): void };

export async function readDelivery(
  run: RunRecord,
  artifacts: Pick<Store, "readArtifactHead"> | undefined,
  budget: Pick<ViewBudget, "patchBytes" | "diffLines">,
  log: Log,
): Promise<DeliveryView | undefined> {
  const { patchBytes, diffLines } = budget;
  const summary = deliverySummary({
    agent_config: run.agentConfig,
    artifacts: run.artifacts,
    status_message: run.statusMessage,
    state: run.state,
  });
  if (!summary) return undefined;
  if (!summary.patchUid || !artifacts) return { summary, diffLines };
  let stored: ArtifactHead | undefined;
  try {
    // Only the start that the page shows is read: a page load costs the same for a 30 MB patch.
    stored = await artifacts.readArtifactHead(run.teamId, summary.patchUid, patchBytes);
  } catch (err) {
    // The page still shows the rest; the patch is only missing from it.
    log.warn({ err, runId: run.id }, "reading the patch for a run's page failed");
  }
  if (!stored) return { summary, diffLines };
  return { summary, patch: patchStart(stored, patchBytes), diffLines };
}

/** Where a page reads the run's image attachments, and the signer of their links. */
export interface AttachmentSource {
  store: Pick<Store, "listAttachments">;
  links: ArtifactLinks;
}

/** An attachment as a page shows it: its name and a signed link (same origin, so the page's CSP admits it). */
export interface AttachmentView {
  fileName: string;
  url: string;
  fromFollowup: boolean;
}

export async function readAttachments(
  run: RunRecord,
  attachments: AttachmentSource | undefined,
  log: Log,
): Promise<AttachmentView[]> {
  if (!attachments) return [];
  try {
    const list = await attachments.store.listAttachments(run.teamId, run.id);
    return list.map((a) => ({
      fileName: a.fileName,
      // Relative: the page and the bytes share an origin whatever public URL is configured.
      url: attachments.links.sign("", run.teamId, a.id).url,
      fromFollowup: a.followupId !== null,
    }));
  } catch (err) {
    log.warn({ err, runId: run.id }, "reading the attachments for a run's page failed");
    return [];
  }
}

export function renderAttachments(images: AttachmentView[]): string {
  if (images.length === 0) return "";
  const items = images.map((a) => {
    const url = escapeHtml(a.url);
    const name = escapeHtml(a.fileName);
    const from = a.fromFollowup ? ' <span class="muted">(follow-up)</span>' : "";
    return `<figure class="attachment"><a href="${url}"><img src="${url}" alt="${name}" loading="lazy"></a><figcaption>${name}${from}</figcaption></figure>`;
  });
  return `<section id="attachments"><h2>Attachments</h2><div class="attachments">${items.join("")}</div></section>`;
}

/** The first `limit` bytes of a patch, cut at a line end (never inside a character). */
function patchStart(stored: ArtifactHead, limit: number): NonNullable<DeliveryView["patch"]> {
  const { head, sizeBytes } = stored;
  if (sizeBytes <= limit) {
    return { text: Buffer.from(head).toString("utf8"), sizeBytes, shownBytes: sizeBytes };
  }
  let shown = Buffer.from(head.subarray(0, limit));
  const lastLine = shown.lastIndexOf(0x0a);
  if (lastLine > 0) shown = shown.subarray(0, lastLine + 1);
  return { text: shown.toString("utf8"), sizeBytes, shownBytes: shown.byteLength };
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** Repository, base, branch, pull request, diff stat and the patch (collapsed): docs/delivery.md. */
export function renderDelivery(view: DeliveryView | undefined): string {
  if (!view) return "";
  const { summary, patch } = view;
  const rows = [`<dt>Repository</dt><dd><code>${escapeHtml(repositoryLabel(summary))}</code></dd>`];
  if (summary.branch) rows.push(`<dt>Branch</dt><dd><code>${escapeHtml(summary.branch)}</code></dd>`);
  const pr = summary.pullRequest;
  const href = pr ? safeHref(pr.url) : undefined;
  if (pr) {
    const words = `PR #${pr.number} ${pr.updated ? "updated" : "opened"}`;
    rows.push(
      `<dt>Pull request</dt><dd id="pull-request">${href ? `<a href="${href}">${escapeHtml(words)}</a>` : escapeHtml(words)}</dd>`,
    );
  } else if (summary.noChanges) {
    rows.push(`<dt>Changes</dt><dd>${escapeHtml(deliveryLine(summary) ?? "No changes")}</dd>`);
  }
  if (summary.diffStat) rows.push(`<dt>Diff</dt><dd id="diff-stat">${escapeHtml(summary.diffStat)}</dd>`);
  const cut =
    patch && patch.shownBytes < patch.sizeBytes
      ? `<p class="muted" id="patch-cut">Showing the first ${formatBytes(patch.shownBytes)} of ${formatBytes(patch.sizeBytes)}; the whole patch is an artifact of the run (<code>dispatch diff</code>).</p>`
      : "";
  const details = patch
    ? `<details id="patch"><summary>Raw patch (${formatBytes(patch.sizeBytes)})</summary><pre class="patch">${escapeHtml(patch.text)}</pre>${cut}</details>`
    : "";
  const changes = patch ? renderChanges(patch.text, patch.shownBytes < patch.sizeBytes, view.diffLines) : "";
  return `<div id="delivery-view"><section id="delivery"><h2>Delivery</h2><dl class="delivery">${rows.join("")}</dl>${details}</section>${changes}</div>`;
}

/**
 * The plan (when the agent keeps one) and the transcript section: the rendered page, links to the pages
 * before and after it, and the list the live script updates (`data-live` when this page is the last one).
 */
export function renderTranscript(transcript: TranscriptPage): string {
  const { after, lastSeq, more } = transcript;
  // Sequence numbers are consecutive: stepping back by this page's length reaches the events before it.
  const earlier =
    after > 0
      ? `<a href="?after=${Math.max(0, after - Math.max(transcript.count, 1))}">Earlier events</a>`
      : "";
  const later = `<a id="later" href="?after=${lastSeq}"${more ? "" : " hidden"}>Later events</a>`;
  return `<section id="plan" aria-labelledby="plan-h"${transcript.plan ? "" : " hidden"}>${renderPlan(transcript.plan)}</section>
<section aria-labelledby="transcript-h"><h2 id="transcript-h">Transcript</h2>
${earlier ? `<p class="pages">${earlier}</p>` : ""}
<ol id="transcript" data-after="${after}" data-last-seq="${lastSeq}" data-live="${more ? "false" : "true"}">${transcript.items.map((i) => i.html).join("")}</ol>
<p class="pages">${later}</p></section>`;
}

/** The style of the pieces above; each page adds it to its own. */
export const RUN_VIEW_STYLE = `pre{white-space:pre-wrap;word-break:break-word;margin:.2rem 0;font:13px/1.4 ui-monospace,monospace}
.prompt{background:#f6f8fa;padding:.75rem;border-radius:6px}
ol#transcript{padding-left:0;list-style:none} .ev{border-left:3px solid #d1d9e0;padding:.2rem .75rem;margin:.4rem 0}
.label{font-size:12px;color:#59636e;text-transform:uppercase;letter-spacing:.03em}
.ev-state{border-color:#0969da} .ev-error{border-color:#cf222e;background:#ffebe9} .ev-log{font-size:13px}
.ev-message .md{max-width:52rem} .md pre{background:#f6f8fa;padding:.5rem .75rem;border-radius:6px;overflow-x:auto;white-space:pre}
.md code{font:13px ui-monospace,monospace} .md p{margin:.3rem 0} .md :is(h3,h4,h5,h6){font-size:1rem;margin:.6rem 0 .2rem}
.ev-tool{border-color:#8c959f;padding:0 .75rem} .ev-tool.failed{border-color:#cf222e}
details.tool>summary{cursor:pointer;padding:.2rem 0;display:flex;gap:.5rem;align-items:baseline;flex-wrap:wrap}
.tool-name{font-weight:600;font-size:14px} .tool-input{font-size:13px;background:#f6f8fa;padding:0 .3rem;border-radius:4px;word-break:break-all}
.tool-status{font-size:13px;color:#59636e} .failed .tool-status{color:#a40e26;font-weight:600} .took{font-size:12px;color:#59636e}
[data-pending] .tool-status{color:#0550ae}
.output,.input{background:#f6f8fa;padding:.4rem .6rem;border-radius:6px;max-height:30rem;overflow:auto}
.full-output>summary,.thinking>summary{cursor:pointer;font-size:13px;color:#0969da}
.checklist{list-style:none;padding-left:.25rem;margin:.3rem 0} .step{margin:.1rem 0} .box{display:inline-block;width:1.2em}
.step-completed{color:#59636e;text-decoration:line-through} .step-in_progress{font-weight:600}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
#plan{border:1px solid #d1d9e0;border-radius:6px;padding:.25rem .9rem;margin:1rem 0} #plan h2{margin:.4rem 0}
.delivery,.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:0} .delivery dd,.facts dd{margin:0}
.attachments{display:flex;flex-wrap:wrap;gap:.75rem} .attachment{margin:0;max-width:180px;font-size:12px;word-break:break-word}
.attachment img{max-width:180px;max-height:140px;border:1px solid #d1d9e0;border-radius:4px;display:block}
.patch{background:#f6f8fa;padding:.75rem;border-radius:6px;white-space:pre;overflow-x:auto}`;

/** The page's style: the view's, and diff2html's only for a run in a repository (it may show a diff). */
export function runViewStyle(delivery: DeliveryView | undefined): string {
  return delivery ? `${RUN_VIEW_STYLE}\n${CHANGES_STYLE}` : RUN_VIEW_STYLE;
}
