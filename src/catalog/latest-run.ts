import type { RunRecord } from "../model/run.ts";
import type { Store } from "../store/store.ts";

export type LatestRunStore = Pick<Store, "listRuns">;

/** The team's most recently created run matching a filter (an environment, a skill spec), if any. */
export async function latestRun(
  store: LatestRunStore,
  teamId: string,
  filter: { environmentId?: string; skillSpec?: string },
): Promise<RunRecord | undefined> {
  const { runs } = await store.listRuns(teamId, {
    limit: 1,
    sortBy: "created_at",
    sortOrder: "desc",
    ...filter,
  });
  return runs[0];
}
