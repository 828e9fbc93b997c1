import type { AudiencePlace } from "../model/audience.ts";
import type { ThreadBinding } from "../model/thread-binding.ts";

/** Whether a person is in a place's audience now, as the platform says; `unknown` when it cannot say. */
export type Membership = { kind: "member" } | { kind: "not_member" } | { kind: "unknown"; reason: string };

/** What someone in a run's audience may ask of it, each under the surface's steering policy. */
export type SteerAction = "followup" | "cancel" | "retry";

/**
 * `anyone`: anyone in the run's audience; `requester`: only who asked for the run. Admins always may.
 * (Per surface configuration: docs/surfaces.md.)
 */
export type SteeringPolicy = "anyone" | "requester";

/**
 * What a surface tells the access rule about its threads (docs/surfaces.md: the audience of its
 * threads, the mapping of its users to principals). Registered once per surface with RunAccess.
 */
export interface Audience {
  /** The `platform` of the thread bindings this surface owns. */
  readonly platform: ThreadBinding["platform"];
  /** Where one audience sees the runs of a thread: a Slack channel; a GitHub repository (every issue of it). */
  place(binding: Pick<ThreadBinding, "workspace" | "channel">): AudiencePlace;
  /** Whether the principal `principalId` is in `place`'s audience now (a principal of another surface never is). */
  includes(principalId: string, place: AudiencePlace): Promise<Membership>;
  /** The surface's steering policy for `action`. */
  steering(action: SteerAction): SteeringPolicy;
  /** The principal id of a binding's requester, as the surface names its users (`slack:T:U`, `github:login`). */
  requesterOf(binding: ThreadBinding): string;
  /** How the surface names that requester to a person (`<@U123>`, `@login`). */
  requesterName(binding: ThreadBinding): string;
}
