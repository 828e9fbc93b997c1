import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ListRunsQuerySchema } from "../api/schemas.ts";
import { agentWords } from "../model/agent-wording.ts";
import { deliverySummary, repositoryLabel } from "../model/delivery-summary.ts";
import { RunError } from "../model/errors.ts";
import type { RunRecord } from "../model/run.ts";
import { RUN_STATES, type RunState } from "../model/run-state.ts";
import { formatDuration, stateWord } from "../model/run-wording.ts";
import type { WebSession } from "../model/web-session.ts";
import { runTimeMs } from "../runs/run-item.ts";
import type { RunService } from "../runs/run-service.ts";
import type { Store } from "../store/store.ts";
import { sendSignInPage } from "./auth/sign-in-page.ts";
import { sessionOf } from "./auth/sign-in-routes.ts";
import type { WebSignIn } from "./auth/web-sign-in.ts";
import { escapeHtml, safeHref, sendPage } from "./html.ts";

/** Runs per page unless the query says `limit`; at most PAGE_RUNS_MAX, so that a page stays under 100 KB. */
const PAGE_RUNS = 25;
const PAGE_RUNS_MAX = 100;

export interface DashboardOptions {
  signIn: WebSignIn;
  runService: Pick<RunService, "list" | "get">;
  counts: Pick<Store, "countRunsByState">;
  slashCommand: string;
}

/** Words for the counts and filters; ERROR is told apart from FAILED here, unlike on cards. */
const STATE_LABELS: Record<RunState, string> = {
  ...Object.fromEntries(RUN_STATES.map((s) => [s, stateWord(s)])),
  ERROR: "Error",
} as Record<RunState, string>;

const SOURCE_LINKS: Record<string, string> = {
  SLACK: "open in Slack",
  GITHUB_WEBHOOK: "GitHub issue",
};

/**
 * GET / — the team's runs for a signed-in person (the visitor's sign-in page otherwise): the filters of
 * GET /api/v1/agent/runs under the same names (any of that route's parameters works in the URL), keyset
 * pages and the team's counts by state. GET /runs/<id> opens one of the team's runs (its session page);
 * another team's run is not found. Server-rendered and script-free: it reads without JavaScript.
 */
export async function dashboard(app: FastifyInstance, opts: DashboardOptions): Promise<void> {
  const { signIn, runService } = opts;

  const signInPage = (req: FastifyRequest, reply: FastifyReply, status = 200) =>
    sendSignInPage(reply, {
      status,
      cookieHeader: req.headers.cookie,
      secure: signIn.secure,
      slashCommand: opts.slashCommand,
    });

  app.get("/", async (req, reply) => {
    const session = await sessionOf(req, signIn);
    if (!session) return signInPage(req, reply);
    const raw = nonEmpty(req.query);
    const parsed = ListRunsQuerySchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const detail =
        issue?.code === "unrecognized_keys"
          ? `unknown filter ${issue.keys.join(", ")}`
          : `${issue?.path.join(".") || "query"}: ${issue?.message ?? "invalid"}`;
      return badFilter(reply, session, detail);
    }
    const q = parsed.data;
    if (q.limit !== undefined && q.limit > PAGE_RUNS_MAX) {
      return badFilter(
        reply,
        session,
        `limit: at most ${PAGE_RUNS_MAX} runs a page here (the API lists up to 500)`,
      );
    }
    const states = q.state === undefined ? undefined : ([] as string[]).concat(q.state);
    let page: Awaited<ReturnType<typeof runService.list>>;
    try {
      page = await runService.list(session, {
        limit: q.limit ?? PAGE_RUNS,
        sortBy: q.sort_by ?? "updated_at",
        sortOrder: q.sort_order ?? "desc",
        ...(q.cursor ? { cursor: q.cursor } : {}),
        ...(states
          ? { states: states.filter((s): s is RunState => (RUN_STATES as readonly string[]).includes(s)) }
          : {}),
        ...defined({
          name: q.name ?? q.config_name,
          modelId: q.model_id,
          creator: q.creator,
          source: q.source,
          environmentId: q.environment_id,
          skillSpec: q.skill_spec ?? q.skill,
          metadata: q.metadata,
          artifactType: q.artifact_type,
          scheduleId: q.schedule_id,
          ancestorRunId: q.ancestor_run_id,
          executor: q.executor,
          executionLocation: q.execution_location,
          createdAfter: q.created_after,
          createdBefore: q.created_before,
          updatedAfter: q.updated_after,
          q: q.q,
        }),
      });
    } catch (err) {
      // A cursor from another sort, or an ancestor of another team: the list API's 400, as a page.
      if (err instanceof RunError && err.code === "invalid_request") {
        return badFilter(reply, session, err.message);
      }
      throw err;
    }
    const counts = await opts.counts.countRunsByState(session.team.id);
    const now = signIn.now().getTime();
    return sendPage(
      reply,
      200,
      "Runs",
      renderDashboard(session, raw, states ?? [], page, counts, now),
      session,
    );
  });

  app.get<{ Params: { runId: string } }>("/runs/:runId", async (req, reply) => {
    const session = await sessionOf(req, signIn);
    if (!session) return signInPage(req, reply, 401);
    try {
      const run = await runService.get(session, req.params.runId);
      return reply
        .header("cache-control", "no-store")
        .redirect(`/sessions/${encodeURIComponent(run.sessionId)}`, 303);
    } catch (err) {
      if (!(err instanceof RunError) || err.code !== "resource_not_found") throw err;
      return sendPage(
        reply,
        404,
        "Run not found",
        `<h1>Run not found</h1><p>Your team has no run <code>${escapeHtml(req.params.runId)}</code>.</p><p><a href="/">Back to the runs</a></p>`,
        session,
      );
    }
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

/** The query without empty fields: an empty search box or "any state" means no filter. */
function nonEmpty(query: unknown): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    const values = ([] as unknown[])
      .concat(value)
      .filter((v): v is string => typeof v === "string" && v.trim() !== "");
    if (values.length === 1) out[key] = values[0]!;
    else if (values.length > 1) out[key] = values;
  }
  return out;
}

function defined<T extends Record<string, unknown>>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** `?…` for a link that keeps the filters, with `changes` applied (undefined removes a parameter). */
function linkWith(
  raw: Record<string, string | string[]>,
  changes: Record<string, string | undefined>,
): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(raw)) {
    if (key in changes) continue;
    for (const v of ([] as string[]).concat(value)) params.append(key, v);
  }
  for (const [key, value] of Object.entries(changes)) if (value !== undefined) params.append(key, value);
  const text = params.toString();
  return escapeHtml(text ? `/?${text}` : "/");
}

function renderDashboard(
  session: WebSession,
  raw: Record<string, string | string[]>,
  states: string[],
  page: { runs: RunRecord[]; nextCursor?: string },
  counts: Record<RunState, number>,
  now: number,
): string {
  const total = RUN_STATES.reduce((n, s) => n + counts[s], 0);
  const countItems = RUN_STATES.map(
    (s) =>
      `<li><a href="/?state=${s}"><span class="state state-${s}">${escapeHtml(STATE_LABELS[s])}</span> <span id="count-${s}">${counts[s]}</span></a></li>`,
  ).join("");
  const stateBoxes = RUN_STATES.map(
    (s) =>
      `<label style="flex-direction:row;gap:.25rem"><input type="checkbox" name="state" value="${s}"${states.includes(s) ? " checked" : ""}>${escapeHtml(STATE_LABELS[s])}</label>`,
  ).join("");
  const text = (name: string) => (typeof raw[name] === "string" ? escapeHtml(raw[name] as string) : "");
  const filters = `<form method="get" action="/" class="filters" role="search" aria-label="Filter runs">
<fieldset><legend>State</legend>${stateBoxes}</fieldset>
<label for="f-q">Search title and prompt<input id="f-q" name="q" type="search" value="${text("q")}" maxlength="1000"></label>
<label for="f-creator">Requester id<input id="f-creator" name="creator" type="text" value="${text("creator")}" maxlength="300" aria-describedby="creator-help"></label>
<button type="submit">Filter</button> <a href="/">Clear</a>
<p id="creator-help" class="muted" style="flex-basis:100%;margin:0">Requester ids look like <code>slack:T…:U…</code>; <a href="/?creator=${encodeURIComponent(session.principal.id)}">show only my runs</a>.</p>
</form>`;
  const rows = page.runs.map((run) => renderRow(run, now)).join("");
  const table = page.runs.length
    ? `<table><caption class="muted" style="text-align:left">${page.runs.length} run${page.runs.length === 1 ? "" : "s"} on this page, most recently updated first</caption>
<thead><tr><th scope="col">State</th><th scope="col">Title</th><th scope="col">Requester</th><th scope="col">Source</th><th scope="col">Repository and PR</th><th scope="col">Agent or model</th><th scope="col">Age</th><th scope="col" class="num">Run time</th></tr></thead>
<tbody>${rows}</tbody></table>`
    : `<p id="no-runs">No runs match.</p>`;
  const pages = [
    raw.cursor ? `<a href="${linkWith(raw, { cursor: undefined })}">First page</a>` : "",
    page.nextCursor
      ? `<a id="next-page" rel="next" href="${linkWith(raw, { cursor: page.nextCursor })}">Next page</a>`
      : "",
  ]
    .filter(Boolean)
    .join(" · ");
  return `<h1>${escapeHtml(session.team.name)}: runs</h1>
<section aria-labelledby="counts-h"><h2 id="counts-h">All ${total} runs by state</h2><ul class="counts">${countItems}</ul></section>
${filters}
${table}
${pages ? `<nav aria-label="Pages"><p>${pages}</p></nav>` : ""}`;
}

function renderRow(run: RunRecord, now: number): string {
  const summary = deliverySummary({
    agent_config: run.agentConfig,
    artifacts: run.artifacts,
    status_message: run.statusMessage,
    state: run.state,
  });
  const pr = summary?.pullRequest;
  const prHref = pr ? safeHref(pr.url) : undefined;
  const repository = summary
    ? `<code>${escapeHtml(repositoryLabel(summary))}</code>${pr ? ` · ${prHref ? `<a href="${prHref}">PR #${pr.number}</a>` : `PR #${pr.number}`}` : ""}`
    : `<span class="muted">—</span>`;
  const trigger = safeHref(run.triggerUrl);
  const sourceWords = escapeHtml(run.source);
  const source = trigger
    ? `${sourceWords} · <a href="${trigger}">${escapeHtml(SOURCE_LINKS[run.source] ?? "where it started")}</a>`
    : sourceWords;
  const agent = agentWords(run.agentConfig) ?? run.agentConfig.model_id ?? "";
  return `<tr data-run-id="${escapeHtml(run.id)}"><td><span class="state state-${run.state}">${escapeHtml(STATE_LABELS[run.state] ?? run.state)}</span></td>
<td><a href="/runs/${encodeURIComponent(run.id)}">${escapeHtml(run.title)}</a></td>
<td>${escapeHtml(run.creator.display_name)}</td><td>${source}</td><td>${repository}</td><td>${escapeHtml(agent)}</td>
<td><time datetime="${escapeHtml(run.createdAt)}">${formatDuration(now - Date.parse(run.createdAt))} ago</time></td>
<td class="num">${formatDuration(runTimeMs(run, now))}</td></tr>`;
}
