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
 * Usage over the last USAGE_DAYS days: a small bar chart of runs per day (inline SVG, no script; hidden
 * from assistive technology since the table beside it says the same), the per-day table, and per person.
 */
export function renderUsage(summary: UsageSummary, now: number): string {
  const since = Date.parse(usageSince(now));
  const byDay = new Map(summary.days.map((d) => [d.day, d]));
  const days = Array.from({ length: USAGE_DAYS }, (_, i) => {
    const day = new Date(since + i * DAY_MS).toISOString().slice(0, 10);
    return byDay.get(day) ?? { day, runs: 0, tokens: 0, cost: null };
  });
  const total = sum(days);
  const max = Math.max(1, ...days.map((d) => d.runs));
  const W = 16;
  const H = 48;
  const bars = days
    .map((d, i) => {
      const h = d.runs ? Math.max(2, Math.round((d.runs / max) * H)) : 0;
      return `<rect x="${i * W + 2}" y="${H - h}" width="${W - 4}" height="${h}"><title>${d.day}: ${d.runs} run${d.runs === 1 ? "" : "s"}</title></rect>`;
    })
    .join("");
  const chart = `<svg aria-hidden="true" focusable="false" width="${USAGE_DAYS * W}" height="${H + 1}" viewBox="0 0 ${USAGE_DAYS * W} ${H + 1}" style="display:block;margin:.5rem 0"><g fill="#0969da">${bars}</g><line x1="0" y1="${H + 0.5}" x2="${USAGE_DAYS * W}" y2="${H + 0.5}" stroke="#d1d9e0"/></svg>`;
  const dayRows = days
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
  return `<section aria-labelledby="usage-h"><h2 id="usage-h">Usage, last ${USAGE_DAYS} days</h2>
<p class="muted">Runs by the day they were asked for; figures may be up to a minute old.</p>
<p>${total.runs} run${total.runs === 1 ? "" : "s"} · ${tokens(total.tokens)} tokens · ${total.cost === null ? "no cost recorded" : `${cost(total.cost)}`}</p>
${chart}<div class="usage"><table><caption>Per day (UTC)</caption>${head("Day")}<tbody>${dayRows}</tbody></table>
<table><caption>Per person</caption>${head("Person")}<tbody>${personRows || '<tr><td colspan="4">No runs.</td></tr>'}${otherRow}</tbody></table></div></section>`;
}

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
  const month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][
    d.getUTCMonth()
  ];
  return `<time datetime="${day}">${weekday} ${d.getUTCDate()} ${month}</time>`;
}
