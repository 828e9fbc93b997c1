import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { type RunTranscript, resumeAfter, streamRunEvents } from "../api/event-stream.ts";
import type { RunRecord } from "../model/run.ts";
import { stallNote } from "../model/stall.ts";
import type { RunService } from "../runs/run-service.ts";
import type { Store } from "../store/store.ts";
import { escapeHtml, safeHref, timeTag } from "./html.ts";
import { sendLiveItems } from "./live-items.ts";
import { liveViewScript } from "./live-view-script.ts";
import { executionUsage, RUN_HEADER_STYLE, renderRunHeader } from "./run-header.ts";
import {
  type AttachmentSource,
  type DeliveryView,
  readAttachments,
  readDelivery,
  readTranscriptPage,
  renderAttachments,
  renderDelivery,
  renderTranscript,
  runViewStyle,
  type TranscriptPage,
} from "./run-view.ts";

/**
 * What one page renders of the transcript: a run that printed 75 MB is read a page at a time, so a page
 * costs the server (and the browser) about this much however large the run. The live script keeps to the
 * same budget and then links to the next page.
 */
export const PAGE_EVENTS = 500;
export const PAGE_BYTES = 1024 * 1024;
/** How much of the latest patch the page shows (the whole patch stays an artifact of the run). */
export const PATCH_SHOWN_BYTES = 200 * 1024;
const BUDGET = { events: PAGE_EVENTS, bytes: PAGE_BYTES, patchBytes: PATCH_SHOWN_BYTES, diffLines: 1500 };
const CLIENT_SCRIPT = liveViewScript(BUDGET);

export interface SessionPageOptions {
  runService: Pick<RunService, "findBySession"> & RunTranscript;
  /** Where the latest patch's bytes are read from; without it the page shows no patch. */
  artifacts?: Pick<Store, "readArtifactHead">;
  /** The run's image attachments and the signer of their links; without it the page shows none. */
  attachments?: AttachmentSource;
  /** DISPATCH_STALL_AFTER_S in ms. */
  stallAfterMs: number;
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
    const [transcriptPage, delivery, images] = await Promise.all([
      readTranscriptPage(runService, run.id, Number(q.after ?? 0), BUDGET),
      readDelivery(run, opts.artifacts, BUDGET, req.log),
      readAttachments(run, opts.attachments, req.log),
    ]);
    const nonce = randomBytes(16).toString("base64");
    // Images only for a page that shows attachments; its empty data: icon keeps the browser from asking
    // for a /favicon.ico that does not exist.
    const imgSrc = images.length ? " img-src 'self' data:;" : "";
    reply.header(
      "content-security-policy",
      `default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}'; connect-src 'self';${imgSrc} base-uri 'none'; form-action 'none'`,
    );
    return reply
      .type("text/html; charset=utf-8")
      .send(
        renderSession(run, transcriptPage, delivery, nonce, renderAttachments(images), opts.stallAfterMs),
      );
  });

  app.get<{ Params: { sessionId: string } }>("/sessions/:sessionId/items", async (req, reply) => {
    const run = await runService.findBySession(req.params.sessionId);
    if (!run)
      return reply.code(404).header("cache-control", "no-store").type("text/plain").send("no such session");
    const reread = async () => (await runService.findBySession(req.params.sessionId)) ?? run;
    const delivery = async (fresh: RunRecord) =>
      renderDelivery(await readDelivery(fresh, opts.artifacts, BUDGET, req.log));
    return sendLiveItems(req, reply, runService, run, reread, BUDGET, Date.now(), delivery);
  });

  app.get<{ Params: { sessionId: string } }>("/sessions/:sessionId/events", async (req, reply) => {
    const run = await runService.findBySession(req.params.sessionId);
    if (!run) return reply.code(404).type("text/plain").send("no such session");
    const q = req.query as { after?: string };
    const after = resumeAfter(req) ?? (q.after && /^\d{1,15}$/.test(q.after) ? Number(q.after) : 0);
    return streamRunEvents(req, reply, runService, run.id, after);
  });
}

function renderSession(
  run: RunRecord,
  transcript: TranscriptPage,
  delivery: DeliveryView | undefined,
  nonce: string,
  attachments: string,
  stallAfterMs: number,
): string {
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
  const now = Date.now();
  // The run page's reading view, read-only: the same header without its actions.
  const header = renderRunHeader({
    run,
    now,
    current: executionUsage(run, transcript.usage, transcript.executionFrom),
    executionFrom: transcript.executionFrom,
    delivery: delivery?.summary,
    stall: stallNote(run, now, stallAfterMs),
  });
  const body = `
${header}
<p class="muted">Requested by ${escapeHtml(run.creator.display_name)} · created ${timeTag(run.createdAt, now)}${links.length ? ` · ${links.join(" · ")}` : ""}</p>
<section><h2>Prompt</h2><pre class="prompt">${escapeHtml(run.prompt)}</pre></section>
${attachments}
${renderTranscript(transcript)}
${renderDelivery(delivery)}
<script nonce="${nonce}">${CLIENT_SCRIPT}</script>`;
  return page(run.title, attachments ? '<link rel="icon" href="data:,">' : "", body, runViewStyle(delivery));
}

function page(title: string, head: string, body: string, style = ""): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Dispatch</title>${head}
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:0 auto 2rem;padding:0 1rem;color:#1f2328}
h1{font-size:1.4rem;margin:0 0 .3rem} h2{font-size:1rem;margin:1.5rem 0 .5rem} a{color:#0969da}
.state{font-weight:600;padding:.1rem .5rem;border-radius:1rem;background:#eaeef2}
.state-SUCCEEDED{background:#dafbe1}.state-FAILED,.state-ERROR{background:#ffebe9}.state-INPROGRESS{background:#ddf4ff}.state-BLOCKED{background:#fff8c5}
.muted{color:#59636e}
${RUN_HEADER_STYLE}
${style}
</style></head><body><main>${body}</main></body></html>`;
}
