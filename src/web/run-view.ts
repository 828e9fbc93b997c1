import type { ArtifactLinks } from "../api/artifact-links.ts";
import type { RunTranscript } from "../api/event-stream.ts";
import {
  type DeliverySummary,
  deliveryLine,
  deliverySummary,
  repositoryLabel,
} from "../model/delivery-summary.ts";
import type { RunEvent, RunRecord } from "../model/run.ts";
import { TERMINAL_STATES } from "../model/run-state.ts";
import { STATE_WORDS, stateWord } from "../model/run-wording.ts";
import type { ArtifactHead, Store } from "../store/store.ts";
import { escapeHtml, safeHref } from "./html.ts";

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
}

/** Events read from the store at once while a page is rendered. */
const READ_BATCH = 32;

/** A page of the transcript, rendered: the events after `after` that fit the budget. */
export interface TranscriptPage {
  after: number;
  html: string[];
  count: number;
  lastSeq: number;
  /** Whether events exist after `lastSeq` (then the page links to them instead of following live). */
  more: boolean;
}

export async function readTranscriptPage(
  runs: Pick<RunTranscript, "transcript">,
  runId: string,
  after: number,
  budget: Pick<ViewBudget, "events" | "bytes">,
): Promise<TranscriptPage> {
  const html: string[] = [];
  let bytes = 0;
  let lastSeq = after;
  for (;;) {
    const events = await runs.transcript(runId, lastSeq, READ_BATCH);
    for (const event of events) {
      if (html.length > 0 && (html.length >= budget.events || bytes >= budget.bytes)) {
        return { after, html, count: html.length, lastSeq, more: true };
      }
      const rendered = renderEvent(event);
      html.push(rendered);
      bytes += Buffer.byteLength(rendered);
      lastSeq = event.seq;
    }
    if (events.length < READ_BATCH) return { after, html, count: html.length, lastSeq, more: false };
  }
}

/** The run's delivery as a page shows it, with the start of its latest patch. */
export interface DeliveryView {
  summary: DeliverySummary;
  patch?: { text: string; sizeBytes: number; shownBytes: number };
}

type Log = { warn(obj: object, msg: string): void };

export async function readDelivery(
  run: RunRecord,
  artifacts: Pick<Store, "readArtifactHead"> | undefined,
  patchBytes: number,
  log: Log,
): Promise<DeliveryView | undefined> {
  const summary = deliverySummary({
    agent_config: run.agentConfig,
    artifacts: run.artifacts,
    status_message: run.statusMessage,
    state: run.state,
  });
  if (!summary) return undefined;
  if (!summary.patchUid || !artifacts) return { summary };
  let stored: ArtifactHead | undefined;
  try {
    // Only the start that the page shows is read: a page load costs the same for a 30 MB patch.
    stored = await artifacts.readArtifactHead(run.teamId, summary.patchUid, patchBytes);
  } catch (err) {
    // The page still shows the rest; the patch is only missing from it.
    log.warn({ err, runId: run.id }, "reading the patch for a run's page failed");
  }
  if (!stored) return { summary };
  return { summary, patch: patchStart(stored, patchBytes) };
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

/** One transcript entry as text; the client script renders streamed events with the same rules. */
function describeEvent(event: Pick<RunEvent, "type" | "data">): { label: string; text: string } {
  const described = describeData(event);
  // Cut by the store (or its tool cut the output): said next to the entry, not only inside its text.
  return event.data.truncated === true
    ? { ...described, label: `${described.label} · truncated` }
    : described;
}

function describeData(event: Pick<RunEvent, "type" | "data">): { label: string; text: string } {
  const d = event.data as Record<string, unknown>;
  switch (event.type) {
    case "state": {
      const msg = (d.status_message as { message?: string } | undefined)?.message;
      return {
        label: "state",
        text: `${stateWord(String(d.state))}${msg ? ` — ${msg}` : ""}`,
      };
    }
    case "message":
      return { label: String(d.role ?? "message"), text: String(d.text ?? "") };
    case "tool_call":
      return {
        label: `tool call · ${String(d.tool ?? "")}`,
        text: String(d.command ?? JSON.stringify(d.input ?? d)),
      };
    case "tool_result":
      return {
        label: `tool result${d.exit_code !== undefined ? ` · exit ${String(d.exit_code)}` : ""}`,
        text: String(d.output ?? JSON.stringify(d)),
      };
    case "followup":
      return { label: "follow-up", text: String(d.message ?? "") + attachedNames(d.attachments) };
    default:
      return { label: event.type, text: String(d.text ?? d.message ?? JSON.stringify(d)) };
  }
}

/** "\n[attached: a.png, b.png]" for a follow-up that came with images; the client script does the same. */
function attachedNames(list: unknown): string {
  if (!Array.isArray(list) || list.length === 0) return "";
  return `\n[attached: ${list.map((a) => String((a as { file_name?: unknown })?.file_name ?? "")).join(", ")}]`;
}

function renderEvent(event: RunEvent): string {
  const { label, text } = describeEvent(event);
  return `<li class="ev ev-${escapeHtml(event.type)}" data-seq="${event.seq}"><span class="label">${escapeHtml(label)}</span><pre>${escapeHtml(text)}</pre></li>`;
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
    ? `<details id="patch"><summary>Patch (${formatBytes(patch.sizeBytes)})</summary><pre class="patch">${escapeHtml(patch.text)}</pre>${cut}</details>`
    : "";
  return `<section id="delivery"><h2>Delivery</h2><dl class="delivery">${rows.join("")}</dl>${details}</section>`;
}

/**
 * The transcript section: the rendered page, links to the pages before and after it, and the list the
 * live script appends to (`data-live` when this page is the last one).
 */
export function renderTranscript(transcript: TranscriptPage): string {
  const { after, lastSeq, more } = transcript;
  // Sequence numbers are consecutive: stepping back by this page's length reaches the events before it.
  const earlier =
    after > 0
      ? `<a href="?after=${Math.max(0, after - Math.max(transcript.count, 1))}">Earlier events</a>`
      : "";
  const later = `<a id="later" href="?after=${lastSeq}"${more ? "" : " hidden"}>Later events</a>`;
  return `<section aria-labelledby="transcript-h"><h2 id="transcript-h">Transcript</h2>
${earlier ? `<p class="pages">${earlier}</p>` : ""}
<ol id="transcript" data-last-seq="${lastSeq}" data-live="${more ? "false" : "true"}">${transcript.html.join("")}</ol>
<p class="pages">${later}</p></section>`;
}

/** The style of the pieces above; each page adds it to its own. */
export const RUN_VIEW_STYLE = `pre{white-space:pre-wrap;word-break:break-word;margin:.2rem 0;font:13px/1.4 ui-monospace,monospace}
.prompt{background:#f6f8fa;padding:.75rem;border-radius:6px}
ol#transcript{padding-left:0;list-style:none} .ev{border-left:3px solid #d1d9e0;padding:.2rem .75rem;margin:.4rem 0}
.label{font-size:12px;color:#59636e;text-transform:uppercase;letter-spacing:.03em}
.ev-tool_call,.ev-tool_result{border-color:#8c959f}.ev-state{border-color:#0969da}
.delivery,.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:0} .delivery dd,.facts dd{margin:0}
.attachments{display:flex;flex-wrap:wrap;gap:.75rem} .attachment{margin:0;max-width:180px;font-size:12px;word-break:break-word}
.attachment img{max-width:180px;max-height:140px;border:1px solid #d1d9e0;border-radius:4px;display:block}
.patch{background:#f6f8fa;padding:.75rem;border-radius:6px;white-space:pre;overflow-x:auto}`;

/**
 * The live transcript: an EventSource on `<this page's path>/events` appends what the run prints, with
 * the rules of describeEvent, and keeps the state line current. Past the page's budget it stops and
 * links to the next page. It runs under the page's CSP nonce.
 */
export function liveTranscriptScript(budget: Pick<ViewBudget, "events" | "bytes">): string {
  return `
(() => {
  const words = ${JSON.stringify(STATE_WORDS)};
  const list = document.getElementById("transcript");
  const stateEl = document.getElementById("state");
  const statusEl = document.getElementById("status-message");
  const later = document.getElementById("later");
  if (list.dataset.live !== "true") return;
  let last = Number(list.dataset.lastSeq || 0);
  // The page's budget holds for what is streamed into it too; past it, the next page takes over.
  let count = list.children.length;
  let chars = list.textContent.length;
  // Mirrors describeEvent (same rules, same ?? fallbacks) so a streamed entry reads like a rendered one.
  const describe = (e) => {
    const d = e.data ?? {};
    switch (e.type) {
      case "state": {
        const msg = d.status_message?.message;
        return ["state", String(words[String(d.state)] ?? d.state) + (msg ? " — " + msg : "")];
      }
      case "message": return [String(d.role ?? "message"), String(d.text ?? "")];
      case "tool_call": return ["tool call · " + String(d.tool ?? ""), String(d.command ?? JSON.stringify(d.input ?? d))];
      case "tool_result": return ["tool result" + (d.exit_code !== undefined ? " · exit " + String(d.exit_code) : ""), String(d.output ?? JSON.stringify(d))];
      case "followup": return ["follow-up", String(d.message ?? "") + (Array.isArray(d.attachments) && d.attachments.length ? "\\n[attached: " + d.attachments.map((a) => String(a?.file_name ?? "")).join(", ") + "]" : "")];
      default: return [e.type, String(d.text ?? d.message ?? JSON.stringify(d))];
    }
  };
  const source = new EventSource(location.pathname.replace(/\\/$/, "") + "/events?after=" + last);
  source.onmessage = (msg) => {
    const e = JSON.parse(msg.data);
    if (e.seq <= last) return;
    if (count >= ${budget.events} || chars >= ${budget.bytes}) {
      source.close();
      later.href = "?after=" + last;
      later.hidden = false;
      return;
    }
    last = e.seq;
    count += 1;
    const described = describe(e);
    const label = described[0] + (e.data?.truncated === true ? " · truncated" : "");
    const text = described[1];
    chars += label.length + text.length;
    const li = document.createElement("li");
    li.className = "ev ev-" + e.type;
    li.dataset.seq = String(e.seq);
    const span = document.createElement("span");
    span.className = "label";
    span.textContent = label;
    const pre = document.createElement("pre");
    pre.textContent = text;
    li.append(span, pre);
    list.append(li);
    if (e.type === "state") {
      stateEl.textContent = words[e.data.state] || e.data.state;
      stateEl.dataset.state = e.data.state;
      stateEl.className = "state state-" + e.data.state;
      statusEl.textContent = e.data.status_message ? e.data.status_message.message : "";
      // A finished run cannot be cancelled: the run page's Cancel button goes once the run ends.
      if (${JSON.stringify(TERMINAL_STATES)}.includes(e.data.state)) document.getElementById("cancel-run")?.remove();
    }
  };
})();
`;
}
