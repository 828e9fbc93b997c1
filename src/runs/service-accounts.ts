import { type Caller, DEFAULT_TEAM } from "../model/identity.ts";
import type { Store } from "../store/store.ts";

/**
 * A service account of this process (an integration, the notifier) in the default team, made the first
 * time it is asked for.
 */
export async function ensureServiceAccount(
  store: Pick<Store, "ensureTeam" | "ensurePrincipal">,
  who: { id: string; displayName: string },
): Promise<Pick<Caller, "principal" | "team">> {
  const team = await store.ensureTeam(DEFAULT_TEAM);
  const principal = await store.ensurePrincipal({
    id: who.id,
    teamId: team.id,
    type: "service_account",
    displayName: who.displayName,
    email: null,
  });
  return { principal, team };
}
