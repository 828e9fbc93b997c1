import type { UsageSummary } from "./store.ts";

/** One group of `summarizeUsage`'s single scan: a requester's runs of one UTC day. */
export interface UsageGroup {
  day: string;
  uid: string;
  /** The requester's name on their latest run of that day, and when that run was created. */
  displayName: string;
  latest: string;
  runs: number;
  tokens: number;
  cost: number | null;
}

/**
 * Both backends read usage in one scan grouped by (day, requester) — reading each run's JSON usage once —
 * and fold the groups into the per-day and per-person sums here.
 */
export function foldUsage(groups: readonly UsageGroup[]): UsageSummary {
  const days = new Map<string, UsageSummary["days"][number]>();
  const people = new Map<string, UsageSummary["people"][number] & { latest: string }>();
  const add = (into: { runs: number; tokens: number; cost: number | null }, g: UsageGroup) => {
    into.runs += g.runs;
    into.tokens += g.tokens;
    if (g.cost !== null) into.cost = (into.cost ?? 0) + g.cost;
  };
  for (const g of groups) {
    let day = days.get(g.day);
    if (!day) {
      day = { day: g.day, runs: 0, tokens: 0, cost: null };
      days.set(g.day, day);
    }
    add(day, g);
    let person = people.get(g.uid);
    if (!person) {
      person = { uid: g.uid, displayName: g.displayName, latest: g.latest, runs: 0, tokens: 0, cost: null };
      people.set(g.uid, person);
    }
    if (g.latest > person.latest) {
      person.latest = g.latest;
      person.displayName = g.displayName;
    }
    add(person, g);
  }
  return {
    days: [...days.values()].sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0)),
    people: [...people.values()]
      .sort((a, b) => b.runs - a.runs || (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0))
      .map(({ latest: _latest, ...person }) => person),
  };
}

export function numberOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}
