import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { type RunTranscript, resumeAfter, streamRunEvents } from "../api/event-stream.ts";
import type { RunEvent, RunRecord } from "../model/run.ts";
import { STATE_WORDS, stateWord } from "../model/run-wording.ts";
import { isoDuration, runTimeMs } from "../runs/run-item.ts";
import type { RunService } from "../runs/run-service.ts";

/**
 * What one page renders of the transcript: a run that printed 75 MB is read a page at a time, so a page
 * costs the server (and the browser) about this much however large the run. The live script keeps to the
 * same budget and then links to the next page.
 */
export const PAGE_EVENTS = 500;
export const PAGE_BYTES = 1024 * 1024;
/** Events read from the store at once while a page is rendered. */
const READ_BATCH = 32;

export interface SessionPageOptions {
  runService: Pick<RunService, "findBySession"> & RunTranscript;
}

/**
 * The live session page. The unguessable session id is the capability to view (never to act). What
 * exists is rendered on the server, so the page reads without JavaScript; a small script then follows
 * the transcript over SSE. Everything from prompts and tool output is escaped.
 */
export async function sessionPage(app: FastifyInstance, opts: SessionPageOptions): Promise<void> {
  const { runService } = opts;

  app.get<{ Params: { sessionId: string } }>("/sessions/:sessionId", async (req, reply) => {
    const run = await runService.findBySession(req.params.sessionId);
    reply.header("cache-control", "no-store").header("referrer-policy", "no-referrer");
    if (!run) {
      return reply
        .code(404)
        .type("text/html; charset=utf-8")
        .send(page("Session not found", "", "<p>No session here.</p>"));
    }
    const q = req.query as { after?: string };
    if (q.after !== undefined && !/^\d{1,15}$/.test(q.after)) {
      return reply
        .code(400)
        .type("text/html; charset=utf-8")
        .send(page("Bad page", "", "<p>after must be the sequence number of a transcript event.</p>"));
    }
    const transcriptPage = await readPage(runService, run.id, Number(q.after ?? 0));
    const nonce = randomBytes(16).toString("base64");
    reply.header(
      "content-security-policy",
      `default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'`,
    );
    return reply.type("text/html; charset=utf-8").send(renderSession(run, transcriptPage, nonce));
  });

  app.get<{ Params: { sessionId: string } }>("/sessions/:sessionId/events", async (req, reply) => {
    const run = await runService.findBySession(req.params.sessionId);
    if (!run) return reply.code(404).type("text/plain").send("no such session");
    const q = req.query as { after?: string };
    const after = resumeAfter(req) ?? (q.after && /^\d{1,15}$/.test(q.after) ? Number(q.after) : 0);
    return streamRunEvents(req, reply, runService, run.id, after);
  });
}

/** A page of the transcript, rendered: the events after `after` that fit PAGE_EVENTS and PAGE_BYTES. */
interface TranscriptPage {
  after: number;
  html: string[];
  count: number;
  lastSeq: number;
  /** Whether events exist after `lastSeq` (then the page links to them instead of following live). */
  more: boolean;
}

async function readPage(runs: RunTranscript, runId: string, after: number): Promise<TranscriptPage> {
  const html: string[] = [];
  let bytes = 0;
  let lastSeq = after;
  for (;;) {
    const events = await runs.transcript(runId, lastSeq, READ_BATCH);
    for (const event of events) {
      if (html.length > 0 && (html.length >= PAGE_EVENTS || bytes >= PAGE_BYTES)) {
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

function escapeHtml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

function safeHref(url: string): string | undefined {
  return /^https?:\/\//i.test(url) ? escapeHtml(url) : undefined;
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
      return { label: "follow-up", text: String(d.message ?? "") };
    default:
      return { label: event.type, text: String(d.text ?? d.message ?? JSON.stringify(d)) };
  }
}

function renderEvent(event: RunEvent): string {
  const { label, text } = describeEvent(event);
  return `<li class="ev ev-${escapeHtml(event.type)}" data-seq="${event.seq}"><span class="label">${escapeHtml(label)}</span><pre>${escapeHtml(text)}</pre></li>`;
}

function renderSession(run: RunRecord, transcript: TranscriptPage, nonce: string): string {
  const links: string[] = [];
  if (run.triggerUrl && safeHref(run.triggerUrl))
    links.push(`<a href="${safeHref(run.triggerUrl)}">Where it started</a>`);
  for (const artifact of run.artifacts) {
    const url = typeof artifact.data.url === "string" ? safeHref(artifact.data.url) : undefined;
    if (url)
      links.push(
        `<a href="${url}">${escapeHtml(artifact.artifact_type === "PULL_REQUEST" ? "Pull request" : artifact.artifact_type)}</a>`,
      );
  }
  const { after, lastSeq, more } = transcript;
  // Sequence numbers are consecutive: stepping back by this page's length reaches the events before it.
  const earlier =
    after > 0
      ? `<a href="?after=${Math.max(0, after - Math.max(transcript.count, 1))}">Earlier events</a>`
      : "";
  const later = `<a id="later" href="?after=${lastSeq}"${more ? "" : " hidden"}>Later events</a>`;
  const body = `
<header>
  <h1>${escapeHtml(run.title)}</h1>
  <p><span id="state" class="state state-${run.state}" data-state="${run.state}">${stateWord(run.state)}</span>
  <span class="muted">· ${escapeHtml(run.creator.display_name)} · created ${escapeHtml(run.createdAt)} · run time ${isoDuration(runTimeMs(run))}</span></p>
  <p id="status-message">${run.statusMessage ? escapeHtml(run.statusMessage.message) : ""}</p>
  ${links.length ? `<p class="links">${links.join(" · ")}</p>` : ""}
</header>
<section><h2>Prompt</h2><pre class="prompt">${escapeHtml(run.prompt)}</pre></section>
<section><h2>Transcript</h2>
${earlier ? `<p class="pages">${earlier}</p>` : ""}
<ol id="transcript" data-last-seq="${lastSeq}" data-live="${more ? "false" : "true"}">${transcript.html.join("")}</ol>
<p class="pages">${later}</p></section>
<script nonce="${nonce}">${CLIENT_SCRIPT}</script>`;
  return page(run.title, "", body);
}

const CLIENT_SCRIPT = `
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
      case "followup": return ["follow-up", String(d.message ?? "")];
      default: return [e.type, String(d.text ?? d.message ?? JSON.stringify(d))];
    }
  };
  const source = new EventSource(location.pathname.replace(/\\/$/, "") + "/events?after=" + last);
  source.onmessage = (msg) => {
    const e = JSON.parse(msg.data);
    if (e.seq <= last) return;
    if (count >= ${PAGE_EVENTS} || chars >= ${PAGE_BYTES}) {
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
    }
  };
})();
`;

function page(title: string, head: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Dispatch</title>${head}
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1f2328}
h1{font-size:1.4rem;margin:0 0 .3rem} h2{font-size:1rem;margin:1.5rem 0 .5rem}
pre{white-space:pre-wrap;word-break:break-word;margin:.2rem 0;font:13px/1.4 ui-monospace,monospace}
.prompt{background:#f6f8fa;padding:.75rem;border-radius:6px}
.state{font-weight:600;padding:.1rem .5rem;border-radius:1rem;background:#eaeef2}
.state-SUCCEEDED{background:#dafbe1}.state-FAILED,.state-ERROR{background:#ffebe9}.state-INPROGRESS{background:#ddf4ff}
.muted{color:#59636e} ol{padding-left:0;list-style:none} .ev{border-left:3px solid #d1d9e0;padding:.2rem .75rem;margin:.4rem 0}
.label{font-size:12px;color:#59636e;text-transform:uppercase;letter-spacing:.03em}
.ev-tool_call,.ev-tool_result{border-color:#8c959f}.ev-state{border-color:#0969da}
</style></head><body>${body}</body></html>`;
}
