import { randomBytes } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { admitEventStream } from "../api/event-stream-slots.ts";
import { admits, audienceKey } from "../model/audience.ts";
import { RunError } from "../model/errors.ts";
import type { RunRecord } from "../model/run.ts";
import { RUN_STATES, type RunState } from "../model/run-state.ts";
import type { ScheduleRecord } from "../model/schedule.ts";
import type { WebSession } from "../model/web-session.ts";
import type { RunService } from "../runs/run-service.ts";
import type { Store, UsageSummary } from "../store/store.ts";
import { readCookie, SESSION_COOKIE } from "./auth/cookies.ts";
import { sendSignInPage } from "./auth/sign-in-page.ts";
import { sessionOf } from "./auth/sign-in-routes.ts";
import type { WebSignIn } from "./auth/web-sign-in.ts";
import { DashboardFeed } from "./dashboard-feed.ts";
import { type DashboardFilters, linkWith, parseFilters } from "./dashboard-filters.ts";
import {
  bindingsOf,
  ROW_CELLS,
  ROW_HEADER,
  ROWS_STYLE,
  type RowContext,
  renderRow,
  STATE_LABELS,
} from "./dashboard-rows.ts";
import { renderSchedules } from "./dashboard-schedules.ts";
import { DASHBOARD_SCRIPT } from "./dashboard-script.ts";
import { renderUsage, USAGE_CHART_STYLE, UsageCache } from "./dashboard-usage.ts";
import { escapeHtml, sendPage } from "./html.ts";

export type DashboardStore = Pick<
  Store,
  "countRunsByState" | "listRuns" | "loadNotifierState" | "signals" | "summarizeUsage" | "listSchedules"
>;

export interface DashboardOptions {
  signIn: WebSignIn;
  runService: Pick<RunService, "list" | "get" | "audienceOf">;
  store: DashboardStore;
  slashCommand: string;
  /** The GitHub bot's handle, when the sign-in page offers GitHub sign-in. */
  githubHandle?: string;
  /** DISPATCH_STALL_AFTER_S in ms. */
  stallAfterMs: number;
  /** How often the live feed checks that its viewers' sessions and audiences are unchanged. */
  streamAccessCheckMs: number;
}

/** Ids one GET /dashboard/rows may ask for (a page shows at most PAGE_RUNS_MAX runs). */
const ROWS_IDS_MAX = 100;

/**
 * GET / — the team's runs for a signed-in person (the visitor's sign-in page otherwise): the filters of
 * GET /api/v1/agent/runs under the same names (any of that route's parameters works in the URL), keyset
 * pages, the team's counts by state, its schedules and its usage over the last days. Each run links to
 * its run page (run-page.ts). Server-rendered: it reads fully without JavaScript; a small script
 * (dashboard-script.ts) keeps it live over GET /dashboard/events, fetching rows from GET /dashboard/rows.
 */
export async function dashboard(app: FastifyInstance, opts: DashboardOptions): Promise<void> {
  const { signIn, runService, store } = opts;
  const feed = new DashboardFeed(store, {
    sessionScope: async (cookie) => {
      const session = await signIn.lookup(cookie);
      return session && audienceKey(session.team.id, await runService.audienceOf(session));
    },
    now: () => signIn.now().getTime(),
    stallAfterMs: opts.stallAfterMs,
    sessionCheckMs: opts.streamAccessCheckMs,
    log: app.log,
  });
  const usage = new UsageCache(store);
  // Before the server stops accepting: open streams end so that closing does not wait for them.
  app.addHook("preClose", async () => feed.stop());

  const signInPage = (req: FastifyRequest, reply: FastifyReply, status = 200) =>
    sendSignInPage(reply, {
      status,
      cookieHeader: req.headers.cookie,
      secure: signIn.secure,
      slashCommand: opts.slashCommand,
      ...(opts.githubHandle ? { githubHandle: opts.githubHandle } : {}),
    });

  app.get("/", async (req, reply) => {
    const session = await sessionOf(req, signIn);
    if (!session) return signInPage(req, reply);
    const filters = parseFilters(req.query);
    if ("problem" in filters) return badFilter(reply, session, filters.problem);
    const now = signIn.now().getTime();
    let page: Awaited<ReturnType<typeof runService.list>>;
    try {
      page = await runService.list(session, filters.input);
    } catch (err) {
      // A cursor from another sort, or an ancestor of another team: the list API's 400, as a page.
      if (err instanceof RunError && err.code === "invalid_request") {
        return badFilter(reply, session, err.message);
      }
      throw err;
    }
    // Counts, schedules and usage cover only the runs the viewer may see, as the list does.
    const audience = await runService.audienceOf(session);
    const [counts, bindings, schedules, usageSummary] = await Promise.all([
      store.countRunsByState(session.team.id, audience),
      bindingsOf(store, page.runs),
      store.listSchedules(session.team.id),
      usage.get(session.team.id, now, audience),
    ]);
    const nonce = randomBytes(16).toString("base64");
    return sendPage(
      reply,
      200,
      "Runs",
      renderDashboard({
        session,
        filters,
        page,
        counts,
        schedules: schedules.filter((s) => admits(audience, s.reportTo)),
        usage: usageSummary,
        ctx: { now, bindings, stallAfterMs: opts.stallAfterMs },
        nonce,
      }),
      session,
      { scriptNonce: nonce, style: DASHBOARD_STYLE },
    );
  });

  /**
   * The team's live changes as Server-Sent Events (DashboardFeed): `runs` (changed runs with their rendered
   * rows), `counts`, `resync`, and keepalive comments. A reconnect (Last-Event-ID) starts with a resync.
   */
  app.get("/dashboard/events", async (req, reply) => {
    const session = await sessionOf(req, signIn);
    if (!session) {
      return reply.code(401).header("cache-control", "no-store").type("text/plain").send("sign in first");
    }
    // The live feed is an event stream like any other: it takes a slot of the caps (event-stream-slots.ts).
    admitEventStream(req, reply);
    const audience = await runService.audienceOf(session);
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store, no-transform",
      connection: "keep-alive",
      "x-accel-buffering": "no",
      "x-content-type-options": "nosniff",
    });
    res.write(": stream open\n\n");
    feed.watch(
      {
        teamId: session.team.id,
        audience,
        scope: audienceKey(session.team.id, audience),
        res,
        sessionCookie: readCookie(req.headers.cookie, SESSION_COOKIE) ?? "",
        expiresAt: Date.parse(session.expiresAt),
      },
      { resync: req.headers["last-event-id"] !== undefined },
    );
  });

  /**
   * Rows of the team's runs among `ids` (comma-separated) that match the list filters given with them, as
   * `<tr>` elements: what the live script inserts or refreshes. Another team's ids match nothing.
   */
  app.get("/dashboard/rows", async (req, reply) => {
    const session = await sessionOf(req, signIn);
    if (!session) {
      return reply.code(401).header("cache-control", "no-store").type("text/plain").send("sign in first");
    }
    const { ids: idsParam, ...query } = (req.query ?? {}) as Record<string, unknown>;
    const ids = typeof idsParam === "string" ? idsParam.split(",").filter(Boolean) : [];
    if (ids.length === 0 || ids.length > ROWS_IDS_MAX || ids.some((id) => id.length > 200)) {
      return reply
        .code(400)
        .header("cache-control", "no-store")
        .type("text/plain")
        .send(`ids: give 1 to ${ROWS_IDS_MAX} run ids, comma-separated`);
    }
    const filters = parseFilters(query);
    if ("problem" in filters) {
      return reply.code(400).header("cache-control", "no-store").type("text/plain").send(filters.problem);
    }
    const { cursor: _pageOnly, ...input } = filters.input;
    const audience = await runService.audienceOf(session);
    const { runs } = await store.listRuns(session.team.id, {
      ...input,
      ...(audience ? { audience } : {}),
      ids,
      limit: ids.length,
      sortBy: "updated_at",
      sortOrder: "desc",
    });
    const ctx = {
      now: signIn.now().getTime(),
      bindings: await bindingsOf(store, runs),
      stallAfterMs: opts.stallAfterMs,
    };
    return reply
      .header("cache-control", "no-store")
      .header("x-content-type-options", "nosniff")
      .type("text/html; charset=utf-8")
      .send(runs.map((run) => renderRow(run, ctx)).join(""));
  });
}

/** 400: a filter the list API would refuse too, said in words, with the way back. */
function badFilter(reply: FastifyReply, session: WebSession, detail: string): FastifyReply {
  return sendPage(
    reply,
    400,
    "Bad filter",
    `<h1>Bad filter</h1><p class="error" role="alert">${escapeHtml(detail)}</p><p><a href="/">Show all runs</a></p>`,
    session,
  );
}

const DASHBOARD_STYLE = `.usage{display:flex;gap:1.5rem;flex-wrap:wrap}.usage table{width:auto;min-width:18rem}
caption{text-align:left;font-weight:600;padding:.25rem 0}section{margin:1.5rem 0}
${USAGE_CHART_STYLE}
${ROWS_STYLE}`;

interface DashboardView {
  session: WebSession;
  filters: DashboardFilters;
  page: { runs: RunRecord[]; nextCursor?: string };
  counts: Record<RunState, number>;
  schedules: ScheduleRecord[];
  usage: UsageSummary;
  ctx: RowContext;
  nonce: string;
}

function renderDashboard(v: DashboardView): string {
  const { session, filters, page } = v;
  const { raw, states, input } = filters;
  const total = RUN_STATES.reduce((n, s) => n + v.counts[s], 0);
  const countItems = RUN_STATES.map(
    (s) =>
      `<li><a href="/?state=${s}"><span class="state state-${s}">${escapeHtml(STATE_LABELS[s])}</span> <span id="count-${s}">${v.counts[s]}</span></a></li>`,
  ).join("");
  const stateBoxes = RUN_STATES.map(
    (s) =>
      `<label style="flex-direction:row;gap:.25rem"><input type="checkbox" name="state" value="${s}"${states.includes(s) ? " checked" : ""}>${escapeHtml(STATE_LABELS[s])}</label>`,
  ).join("");
  const text = (name: string) => (typeof raw[name] === "string" ? escapeHtml(raw[name] as string) : "");
  const filterForm = `<form method="get" action="/" class="filters" role="search" aria-label="Filter runs">
<fieldset><legend>State</legend>${stateBoxes}</fieldset>
<label for="f-q">Search title and prompt<input id="f-q" name="q" type="search" value="${text("q")}" maxlength="1000"></label>
<label for="f-creator">Requester id<input id="f-creator" name="creator" type="text" value="${text("creator")}" maxlength="300" aria-describedby="creator-help"></label>
<button type="submit">Filter</button> <a href="/">Clear</a>
<p id="creator-help" class="muted" style="flex-basis:100%;margin:0">Requester ids look like <code>slack:T…:U…</code>; <a href="/?creator=${encodeURIComponent(session.principal.id)}">show only my runs</a>.</p>
</form>`;
  // Where a run that changes and is not shown may appear (dashboard-script.ts): only on the first page of
  // the default order, where it belongs at the top; elsewhere it would be out of place.
  const defaultOrder = input.sortBy === "updated_at" && input.sortOrder === "desc";
  const insert = raw.cursor || !defaultOrder ? "none" : filters.filtered ? "filtered" : "all";
  const order = `${{ updated_at: "most recently updated", created_at: "newest", title: "by title", agent: "by agent" }[input.sortBy]}${input.sortOrder === "asc" ? " (ascending)" : ""}`;
  const rows = page.runs.map((run) => renderRow(run, v.ctx)).join("");
  const table = `<table id="runs" data-insert="${insert}"><caption class="muted" style="text-align:left;font-weight:400">${page.runs.length} run${page.runs.length === 1 ? "" : "s"} on this page, ${order} first</caption>
<thead>${ROW_HEADER}</thead>
<tbody id="runs-body">${rows || `<tr id="no-runs"><td colspan="${ROW_CELLS}">No runs match.</td></tr>`}</tbody></table>`;
  const pages = [
    raw.cursor ? `<a href="${linkWith(raw, { cursor: undefined })}">First page</a>` : "",
    page.nextCursor
      ? `<a id="next-page" rel="next" href="${linkWith(raw, { cursor: page.nextCursor })}">Next page</a>`
      : "",
  ]
    .filter(Boolean)
    .join(" · ");
  return `<h1>${escapeHtml(session.team.name)}: runs</h1>
<section aria-labelledby="counts-h"><h2 id="counts-h">All <span id="count-total">${total}</span> runs by state</h2><ul class="counts">${countItems}</ul></section>
${filterForm}
<p id="live" class="muted" role="status"></p>
${table}
${pages ? `<nav aria-label="Pages"><p>${pages}</p></nav>` : ""}
${renderSchedules(v.schedules, v.ctx.now)}
${renderUsage(v.usage, v.ctx.now)}
<script nonce="${v.nonce}">${DASHBOARD_SCRIPT}</script>`;
}
