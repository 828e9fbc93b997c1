/**
 * A run's audience (docs/architecture.md): who may see it, derived from the threads it is bound to, never
 * stored by hand. The store filters a team's runs by what a viewer's audience check allowed.
 */

/**
 * A place whose audience sees the runs bound there: a Slack channel (`channel` set), a GitHub repository
 * (`channel` null: every issue and pull request of it).
 */
export interface AudiencePlace {
  platform: string;
  workspace: string;
  channel: string | null;
}

/**
 * The runs of a team a viewer sees: runs asked for in no thread (the API's, even once they opened a pull
 * request: the team is their audience) when `unbound`, and runs bound to any of `places`.
 */
export interface AudienceFilter {
  unbound: boolean;
  places: AudiencePlace[];
}

/** A place a run of the team is bound to, as the store lists them. */
export interface BoundPlace {
  platform: string;
  workspace: string;
  channel: string;
}

/** A key naming what a filter admits, for caches and for grouping viewers who see the same runs. */
export function audienceKey(teamId: string, filter: AudienceFilter | undefined): string {
  if (!filter) return `${teamId}\n*`;
  const places = filter.places.map((p) => JSON.stringify([p.platform, p.workspace, p.channel])).sort();
  return `${teamId}\n${filter.unbound ? "u" : ""}\n${places.join("\n")}`;
}

/** Whether a run bound at `bound` (or unbound, when undefined) is among what `filter` admits (undefined: all). */
export function admits(
  filter: AudienceFilter | undefined,
  bound: { platform: string; workspace: string; channel: string } | null | undefined,
): boolean {
  if (!filter) return true;
  if (!bound) return filter.unbound;
  return filter.places.some(
    (p) =>
      p.platform === bound.platform &&
      p.workspace === bound.workspace &&
      (p.channel === null || p.channel === bound.channel),
  );
}

/** The filter's places as one JSON array of [platform, workspace, channel|null]: one bound parameter whatever their number. */
export function placesJson(filter: AudienceFilter): string {
  return JSON.stringify(filter.places.map((p) => [p.platform, p.workspace, p.channel]));
}
