import type { FastifyReply } from "fastify";
import { escapeHtml, sendPage } from "../html.ts";
import { loginFormField } from "./login-form-token.ts";

/**
 * The page for a visitor who is not signed in: how Slack users sign in (`/agent login`) and the admin
 * API-key form, whose CSRF token is double-submitted (login-form-token.ts).
 */
export function sendSignInPage(
  reply: FastifyReply,
  opts: {
    status?: number;
    cookieHeader: string | undefined;
    secure: boolean;
    slashCommand: string;
    /** The GitHub bot's handle, when people can sign in with a comment on GitHub (GET /login/github). */
    githubHandle?: string;
    problem?: string;
  },
): FastifyReply {
  const csrf = loginFormField(reply, opts.cookieHeader, opts.secure);
  const problem = opts.problem ? `<p class="error" role="alert">${escapeHtml(opts.problem)}</p>` : "";
  const github = opts.githubHandle
    ? `<section aria-labelledby="github-h"><h2 id="github-h">With GitHub</h2>
<p><a href="/login/github">Sign in with GitHub</a>: the page shows a code that you comment as <code>@${escapeHtml(opts.githubHandle)} login &lt;code&gt;</code> on an issue or pull request of a repository Dispatch is installed on.</p></section>
`
    : "";
  const body = `<h1>Sign in to Dispatch</h1>
${problem}
<section aria-labelledby="slack-h"><h2 id="slack-h">With Slack</h2>
<p>Type <code>${escapeHtml(opts.slashCommand)} login</code> in any channel where Dispatch is. It answers (only you see it) with a link that signs you in; the link works once, within 10 minutes.</p></section>
${github}<section aria-labelledby="key-h"><h2 id="key-h">With an admin API key</h2>
<form method="post" action="/login">
${csrf}
<p><label for="api_key">Admin API key</label><br>
<input id="api_key" name="api_key" type="password" autocomplete="off" required size="48" pattern="dsp_[A-Za-z0-9]{40}" aria-describedby="key-help"></p>
<p id="key-help" class="muted">An admin key of your team (<code>dsp_…</code>). It is not stored in the browser: the session lasts 12 hours, or until you sign out or the key is revoked.</p>
<p><button type="submit">Sign in</button></p>
</form></section>`;
  return sendPage(reply, opts.status ?? 200, "Sign in", body);
}
