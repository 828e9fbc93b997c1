import type { FastifyReply } from "fastify";
import { exactTime, relativeTime } from "../model/time-wording.ts";
import type { WebSession } from "../model/web-session.ts";

/** The web app's pages share this: escaping, one layout, and the headers every page is sent with. */

export function escapeHtml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

/** An http(s) URL escaped for an attribute; undefined for any other scheme (javascript:, data:…). */
export function safeHref(url: string | null | undefined): string | undefined {
  return url && /^https?:\/\//i.test(url) ? escapeHtml(url) : undefined;
}

/** The hidden field every form of a signed-in page carries; POSTs without it are refused (403). */
export function csrfField(session: WebSession): string {
  return `<input type="hidden" name="csrf" value="${escapeHtml(session.csrfToken)}">`;
}

/** What a page may add to the layout: one script (by nonce, reading only this site), images, style. */
export interface PageExtras {
  /** The nonce of the page's inline script; without it no script runs. */
  scriptNonce?: string;
  /** The page shows images served by this site (signed attachment links). */
  selfImages?: boolean;
  style?: string;
}

/**
 * Sends a page. No script runs unless the page brings its nonce'd one (which may only connect to this
 * site), forms post only to this site, other sites cannot frame it, and nothing is cached: pages show a
 * signed-in team's runs.
 */
export function sendPage(
  reply: FastifyReply,
  status: number,
  title: string,
  body: string,
  session?: WebSession,
  extras: PageExtras = {},
): FastifyReply {
  const script = extras.scriptNonce ? ` script-src 'nonce-${extras.scriptNonce}'; connect-src 'self';` : "";
  const images = extras.selfImages ? "img-src 'self' data:" : "img-src data:";
  return reply
    .code(status)
    .header("cache-control", "no-store")
    .header("referrer-policy", "no-referrer")
    .header("x-content-type-options", "nosniff")
    .header(
      "content-security-policy",
      `default-src 'none'; style-src 'unsafe-inline';${script} ${images}; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`,
    )
    .type("text/html; charset=utf-8")
    .send(layout(title, body, session, extras.style));
}

function layout(title: string, body: string, session: WebSession | undefined, style = ""): string {
  const who = session
    ? `<form method="post" action="/logout" class="who">${session.role === "admin" ? '<a href="/audit">Audit log</a> ' : ""}<span>${escapeHtml(session.principal.displayName)} · ${escapeHtml(session.team.name)}</span> ${csrfField(session)}<button type="submit">Sign out</button></form>`
    : "";
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Dispatch</title><link rel="icon" href="data:,">
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:1200px;margin:1.5rem auto;padding:0 1rem;color:#1f2328}
header{display:flex;justify-content:space-between;align-items:center;gap:1rem;flex-wrap:wrap;border-bottom:1px solid #d1d9e0;margin-bottom:1rem}
header a{color:inherit;text-decoration:none;font-weight:700} h1{font-size:1.3rem} h2{font-size:1.05rem}
a{color:#0969da} a:focus,button:focus,input:focus,select:focus{outline:2px solid #0969da;outline-offset:2px}
table{border-collapse:collapse;width:100%;font-size:14px} th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #eaeef2;vertical-align:top}
th{font-weight:600;background:#f6f8fa} .muted{color:#59636e} .num{text-align:right}
.state{font-weight:600;padding:.05rem .45rem;border-radius:1rem;background:#eaeef2;color:#1f2328;white-space:nowrap}
.state-SUCCEEDED{background:#dafbe1}.state-FAILED,.state-ERROR{background:#ffebe9}.state-INPROGRESS{background:#ddf4ff}.state-BLOCKED{background:#fff8c5}
.filters{display:flex;gap:.75rem;flex-wrap:wrap;align-items:end;margin:1rem 0} .filters label{display:flex;flex-direction:column;font-size:13px}
.counts{display:flex;gap:1rem;flex-wrap:wrap;list-style:none;padding:0} .error{background:#ffebe9;padding:.5rem .75rem;border-radius:6px}
input,select,button{font:inherit;padding:.25rem .5rem} .who{display:flex;gap:.5rem;align-items:center}
${style}</style></head><body>
<header><p><a href="/">Dispatch</a></p>${who}</header>
<main>${body}</main>
</body></html>`;
}

/** `<time>` with the exact instant in its attributes and the relative words as text; the dashboard's script refreshes it. */
export function timeTag(iso: string, now: number): string {
  return `<time datetime="${escapeHtml(iso)}" title="${exactTime(iso)}">${relativeTime(iso, now)}</time>`;
}
