import type { FastifyInstance } from "fastify";
import { AUDIT_ACTIONS, type AuditAction, type AuditEvent, type AuditQuery } from "../model/audit.ts";
import type { WebSession } from "../model/web-session.ts";
import type { Store } from "../store/store.ts";
import { sessionOf } from "./auth/sign-in-routes.ts";
import type { WebSignIn } from "./auth/web-sign-in.ts";
import { escapeHtml, sendPage, timeTag } from "./html.ts";

export interface AuditPageOptions {
  signIn: WebSignIn;
  store: Pick<Store, "listAuditEvents">;
}

const PAGE_SIZE = 50;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** What each action is called on the page. */
const ACTION_WORDS: Record<AuditAction, string> = {
  "run.created": "started a run",
  "run.followed_up": "followed up a run",
  "run.cancelled": "cancelled a run",
  "run.retried": "retried a run",
  "api_key.created": "created an API key",
  "api_key.revoked": "revoked an API key",
  "identity.created": "created an identity",
  "identity.updated": "changed an identity",
  "identity.deleted": "deleted an identity",
  "session.signed_in": "signed in",
  "webhook.created": "created a webhook",
  "webhook.deleted": "deleted a webhook",
  "webhook.redelivered": "redelivered a webhook",
  "channel.repository_set": "set a channel's repository",
  "channel.agent_set": "set a channel's agent",
};

/**
 * /audit: the team's audit log (docs/api.md, "Audit log") for its admins, newest first, filtered by who,
 * what and which days (UTC), a page at a time. Anyone else signed in is told the page is for admins.
 */
export async function auditPage(app: FastifyInstance, opts: AuditPageOptions): Promise<void> {
  app.get("/audit", async (req, reply) => {
    const session = await sessionOf(req, opts.signIn);
    if (!session) return reply.redirect("/", 303);
    if (session.role !== "admin") {
      return sendPage(
        reply,
        403,
        "Audit log",
        `<h1>Audit log</h1><p class="error" role="alert">The audit log is for the team's admins. Sign in with an admin key to see it.</p><p><a href="/">Back to the runs</a></p>`,
        session,
      );
    }
    const raw = req.query as Record<string, unknown>;
    const query = parseQuery(raw);
    if (typeof query === "string") {
      return sendPage(reply, 400, "Audit log", renderPage(session, raw, [], undefined, query), session, {
        style: STYLE,
      });
    }
    const page = await opts.store.listAuditEvents(session.team.id, query);
    const last = page.events.at(-1);
    const older = page.hasMore && last ? String(last.id) : undefined;
    return sendPage(reply, 200, "Audit log", renderPage(session, raw, page.events, older), session, {
      style: STYLE,
    });
  });
}

/** The page's filters as the store's query, or what is wrong with them. */
function parseQuery(raw: Record<string, unknown>): AuditQuery | string {
  const text = (name: string) => (typeof raw[name] === "string" ? (raw[name] as string).trim() : "");
  const query: AuditQuery = { limit: PAGE_SIZE };
  const actor = text("actor");
  if (actor) query.actor = actor.slice(0, 200);
  const action = text("action");
  if (action) {
    if (!(AUDIT_ACTIONS as readonly string[]).includes(action)) return `There is no action "${action}".`;
    query.action = action as AuditAction;
  }
  const from = text("from");
  const to = text("to");
  for (const [name, day] of [
    ["From", from],
    ["To", to],
  ] as const) {
    if (day && (!DAY.test(day) || Number.isNaN(Date.parse(`${day}T00:00:00Z`)))) {
      return `${name} must be a day such as 2026-03-01.`;
    }
  }
  if (from) query.since = `${from}T00:00:00.000Z`;
  // The "to" day is included: entries before the next day's start.
  if (to) query.until = new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000).toISOString();
  const cursor = text("cursor");
  if (cursor) {
    if (!/^[1-9]\d{0,15}$/.test(cursor))
      return "That page link is not valid any more: start from the first page.";
    query.before = Number(cursor);
  }
  return query;
}

function renderPage(
  session: WebSession,
  raw: Record<string, unknown>,
  events: AuditEvent[],
  older: string | undefined,
  problem?: string,
): string {
  const now = Date.now();
  const value = (name: string) => (typeof raw[name] === "string" ? escapeHtml(raw[name] as string) : "");
  const chosen = typeof raw.action === "string" ? raw.action : "";
  const options = AUDIT_ACTIONS.map(
    (a) =>
      `<option value="${a}"${a === chosen ? " selected" : ""}>${escapeHtml(ACTION_WORDS[a])} (${a})</option>`,
  ).join("");
  const form = `<form method="get" action="/audit" class="filters" role="search" aria-label="Filter the audit log">
<label for="a-actor">Who (id)<input id="a-actor" name="actor" type="text" value="${value("actor")}" maxlength="200"></label>
<label for="a-action">What<select id="a-action" name="action"><option value="">Anything</option>${options}</select></label>
<label for="a-from">From (UTC day)<input id="a-from" name="from" type="date" value="${value("from")}"></label>
<label for="a-to">To (UTC day)<input id="a-to" name="to" type="date" value="${value("to")}"></label>
<button type="submit">Filter</button> <a href="/audit">Clear</a>
</form>`;
  const rows = events.map((e) => renderRow(e, now)).join("");
  const table = `<table id="audit"><caption class="muted">${events.length} entr${events.length === 1 ? "y" : "ies"} on this page, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">On</th><th scope="col">Details</th></tr></thead>
<tbody>${rows || `<tr><td colspan="5">No entries match.</td></tr>`}</tbody></table>`;
  const next = older
    ? `<nav aria-label="Pages"><p><a rel="next" href="${linkWith(raw, older)}">Older entries</a></p></nav>`
    : "";
  return `<h1>${escapeHtml(session.team.name)}: audit log</h1>
<p class="muted">Who did what: runs started, followed up, cancelled and retried; keys, identities and webhooks; sign-ins; channel settings changed from Slack. <a href="/">Back to the runs</a></p>
${problem ? `<p class="error" role="alert">${escapeHtml(problem)}</p>` : ""}
${form}
${table}
${next}`;
}

function renderRow(e: AuditEvent, now: number): string {
  const who = e.actorName
    ? `${escapeHtml(e.actorName)} <code class="muted">${escapeHtml(e.actor)}</code>`
    : `<code>${escapeHtml(e.actor)}</code>`;
  const isRun = e.action.startsWith("run.") && e.target;
  const target = e.target
    ? isRun
      ? `<a href="/runs/${encodeURIComponent(e.target)}"><code>${escapeHtml(e.target)}</code></a>`
      : `<code>${escapeHtml(e.target)}</code>`
    : "";
  const details = Object.entries(e.details)
    .map(
      ([k, v]) =>
        `<li><span class="muted">${escapeHtml(k)}</span> ${escapeHtml(typeof v === "string" ? v : JSON.stringify(v))}</li>`,
    )
    .join("");
  return `<tr><td>${timeTag(e.at, now)}</td><td>${who}</td><td>${escapeHtml(ACTION_WORDS[e.action] ?? e.action)}</td><td>${target}</td><td>${details ? `<ul class="details">${details}</ul>` : ""}</td></tr>`;
}

function linkWith(raw: Record<string, unknown>, cursor: string): string {
  const params = new URLSearchParams();
  for (const name of ["actor", "action", "from", "to"]) {
    if (typeof raw[name] === "string" && raw[name]) params.set(name, raw[name] as string);
  }
  params.set("cursor", cursor);
  return `/audit?${escapeHtml(params.toString())}`;
}

const STYLE = `caption{text-align:left;padding:.25rem 0} .details{list-style:none;margin:0;padding:0;font-size:13px}
code{font-size:13px;word-break:break-all}`;
