import { type AudienceFilter, audienceKey } from "../model/audience.ts";
import type { Store, UsageSummary, UsageTotals } from "../store/store.ts";
import { costWords } from "./dashboard-rows.ts";
import { escapeHtml } from "./html.ts";

/** The usage section covers this many UTC days, today included. */
export const USAGE_DAYS = 14;
/** People listed in the usage table (most runs first); the rest are summed in one line. */
const PEOPLE_SHOWN = 10;

const DAY_MS = 24 * 3600_000;

/** Midnight UTC USAGE_DAYS - 1 days before `now`: what `summarizeUsage` is asked for. */
export function usageSince(now: number): string {
  const today = Date.UTC(
    new Date(now).getUTCFullYear(),
    new Date(now).getUTCMonth(),
    new Date(now).getUTCDate(),
  );
  return new Date(today - (USAGE_DAYS - 1) * DAY_MS).toISOString();
}

/** How long a team's usage is reused: it sums days of runs, and a minute's lag does not change its story. */
const USAGE_TTL_MS = 60_000;
/** Teams whose usage is kept at once; beyond this the oldest entries go. */
const USAGE_CACHED_TEAMS = 1_000;

/**
 * Each team's usage, read at most once per USAGE_TTL_MS (concurrent page loads share the read): the sums
 * scan every run of the last days, which the counts and the list do not.
 */
export class UsageCache {
  private readonly store: Pick<Store, "summarizeUsage">;
  private readonly entries = new Map<
    string,
    { since: string; until: number; value: Promise<UsageSummary> }
  >();

  constructor(store: Pick<Store, "summarizeUsage">) {
    this.store = store;
  }

  /** The usage of the team's runs within `audience` (a viewer's: RunAccess), all of them when absent. */
  get(teamId: string, now: number, audience?: AudienceFilter): Promise<UsageSummary> {
    const since = usageSince(now);
    const key = audienceKey(teamId, audience);
    const cached = this.entries.get(key);
    if (cached && cached.since === since && cached.until > now) return cached.value;
    const value = this.store.summarizeUsage(teamId, since, audience);
    this.entries.delete(key);
    if (this.entries.size >= USAGE_CACHED_TEAMS) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { since, until: now + USAGE_TTL_MS, value });
    // A failed read is not kept: the next page load tries again.
    value.catch(() => {
      if (this.entries.get(key)?.value === value) this.entries.delete(key);
    });
    return value;
  }
}

const tokens = (n: number) => n.toLocaleString("en-US");
const cost = (n: number | null) => escapeHtml(costWords(n)) || "—";

/**
 * Usage over the last USAGE_DAYS days: a line of runs per day (inline SVG, no script; an image whose text
 * alternative sums it up, each point titled with its day's figures), the busy days as a table (days
 * without a run are left out: the line shows them), and usage per person.
 */
export function renderUsage(summary: UsageSummary, now: number): string {
  const since = Date.parse(usageSince(now));
  const byDay = new Map(summary.days.map((d) => [d.day, d]));
  const days = Array.from({ length: USAGE_DAYS }, (_, i) => {
    const day = new Date(since + i * DAY_MS).toISOString().slice(0, 10);
    return byDay.get(day) ?? { day, runs: 0, tokens: 0, cost: null };
  });
  const total = sum(days);
  const busy = days.filter((d) => d.runs > 0);
  const dayRows = busy
    .map(
      (d) =>
        `<tr><th scope="row">${shortDay(d.day)}</th><td class="num">${d.runs}</td><td class="num">${tokens(d.tokens)}</td><td class="num">${cost(d.cost)}</td></tr>`,
    )
    .join("");
  const shown = summary.people.slice(0, PEOPLE_SHOWN);
  const others = summary.people.slice(PEOPLE_SHOWN);
  const personRows = shown
    .map(
      (p) =>
        `<tr><th scope="row"><a href="/?creator=${encodeURIComponent(p.uid)}">${escapeHtml(p.displayName)}</a></th><td class="num">${p.runs}</td><td class="num">${tokens(p.tokens)}</td><td class="num">${cost(p.cost)}</td></tr>`,
    )
    .join("");
  const otherRow = others.length
    ? (() => {
        const o = sum(others);
        return `<tr><th scope="row">${others.length} more</th><td class="num">${o.runs}</td><td class="num">${tokens(o.tokens)}</td><td class="num">${cost(o.cost)}</td></tr>`;
      })()
    : "";
  const head = (first: string) =>
    `<thead><tr><th scope="col">${first}</th><th scope="col" class="num">Runs</th><th scope="col" class="num">Tokens</th><th scope="col" class="num">Cost</th></tr></thead>`;
  const perDay = busy.length
    ? `<table><caption>Busy days (UTC)</caption>${head("Day")}<tbody>${dayRows}</tbody></table>`
    : "";
  return `<section aria-labelledby="usage-h"><h2 id="usage-h">Usage, last ${USAGE_DAYS} days</h2>
<p class="muted">Runs by the day they were asked for; figures may be up to a minute old.</p>
<p>${total.runs} run${total.runs === 1 ? "" : "s"} · ${tokens(total.tokens)} tokens · ${total.cost === null ? "no cost recorded" : `${cost(total.cost)}`}</p>
${usageChart(days)}<div class="usage">${perDay}
<table><caption>Per person</caption>${head("Person")}<tbody>${personRows || '<tr><td colspan="4">No runs.</td></tr>'}${otherRow}</tbody></table></div></section>`;
}

const CHART = { width: 560, height: 120, left: 28, right: 8, top: 8, bottom: 20 };

/** The runs of each day as one line, with the busiest day's count on its axis and the days at its foot. */
function usageChart(days: readonly (UsageTotals & { day: string })[]): string {
  const { width, height, left, right, top, bottom } = CHART;
  const max = Math.max(1, ...days.map((d) => d.runs));
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const x = (i: number) => left + (days.length === 1 ? plotW / 2 : (i * plotW) / (days.length - 1));
  const y = (runs: number) => top + plotH - (runs / max) * plotH;
  const points = days.map((d, i) => `${x(i).toFixed(1)},${y(d.runs).toFixed(1)}`);
  const area = `M${x(0).toFixed(1)},${top + plotH} L${points.join(" L")} L${x(days.length - 1).toFixed(1)},${top + plotH} Z`;
  const dots = days
    .map(
      (d, i) =>
        `<circle cx="${x(i).toFixed(1)}" cy="${y(d.runs).toFixed(1)}" r="${d.runs ? 3 : 2}"><title>${d.day}: ${d.runs} run${d.runs === 1 ? "" : "s"}, ${tokens(d.tokens)} tokens${d.cost !== null ? `, ${cost(d.cost)}` : ""}</title></circle>`,
    )
    .join("");
  const label = (i: number, anchor: string) =>
    `<text x="${x(i).toFixed(1)}" y="${height - 4}" text-anchor="${anchor}">${dayWords(days[i]!.day)}</text>`;
  const busiest = days.reduce((a, b) => (b.runs > a.runs ? b : a), days[0]!);
  const total = days.reduce((n, d) => n + d.runs, 0);
  const alt =
    total === 0
      ? `No runs in the last ${days.length} days.`
      : `Runs per day over the last ${days.length} days: ${total} in all, most on ${dayWords(busiest.day)} (${busiest.runs}).`;
  return `<svg class="usage-chart" role="img" aria-labelledby="usage-chart-t" viewBox="0 0 ${width} ${height}" width="100%" preserveAspectRatio="xMinYMin meet">
<title id="usage-chart-t">${alt}</title>
<g class="axis"><line x1="${left}" y1="${top + plotH + 0.5}" x2="${width - right}" y2="${top + plotH + 0.5}"/><line x1="${left}" y1="${top}" x2="${width - right}" y2="${top}" stroke-dasharray="2 3"/></g>
<g class="axis-text"><text x="${left - 6}" y="${top + 4}" text-anchor="end">${max}</text><text x="${left - 6}" y="${top + plotH + 4}" text-anchor="end">0</text>${label(0, "start")}${label(Math.floor((days.length - 1) / 2), "middle")}${label(days.length - 1, "end")}</g>
<path class="area" d="${area}"/><polyline class="line" points="${points.join(" ")}"/><g class="dots">${dots}</g></svg>`;
}

/** "2026-03-04" → "4 Mar". */
function dayWords(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]}`;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** The chart's style (the dashboard adds it to its own). */
export const USAGE_CHART_STYLE = `.usage-chart{display:block;max-width:40rem;margin:.5rem 0}
.usage-chart .axis line{stroke:#d1d9e0} .usage-chart .axis-text text{font-size:11px;fill:#59636e}
.usage-chart .area{fill:#ddf4ff} .usage-chart .line{fill:none;stroke:#0969da;stroke-width:2} .usage-chart .dots{fill:#0969da}`;

function sum(list: readonly UsageTotals[]): UsageTotals {
  let costs: number | null = null;
  let runs = 0;
  let tokenSum = 0;
  for (const t of list) {
    runs += t.runs;
    tokenSum += t.tokens;
    if (t.cost !== null) costs = (costs ?? 0) + t.cost;
  }
  return { runs, tokens: tokenSum, cost: costs };
}

/** "2026-03-04" → "Wed 4 Mar". */
function shortDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  const weekday = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][d.getUTCDay()];
  const month = MONTHS[d.getUTCMonth()];
  return `<time datetime="${day}">${weekday} ${d.getUTCDate()} ${month}</time>`;
}
