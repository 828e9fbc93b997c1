import { z } from "zod";

/**
 * The parts of Linear's AgentSessionEvent webhook (linear.app/developers/agent-interaction) that Dispatch
 * reads, checked once the signature is: `created` when someone delegates an issue to the agent or mentions
 * it, `prompted` when they write in the session (a follow-up, or the `stop` signal). Field names are those
 * of `AgentSessionEventWebhookPayload` in `@linear/sdk/webhooks`.
 */
const User = z.object({ id: z.string().min(1), name: z.string().default("") }).loose();

const SessionEventSchema = z
  .object({
    type: z.literal("AgentSessionEvent"),
    action: z.enum(["created", "prompted"]),
    organizationId: z.string().min(1),
    appUserId: z.string().min(1),
    promptContext: z.string().nullish(),
    agentSession: z
      .object({
        id: z.string().min(1),
        creator: User.nullish(),
        creatorId: z.string().nullish(),
        comment: z.object({ id: z.string(), body: z.string() }).loose().nullish(),
        issue: z
          .object({
            id: z.string().min(1),
            identifier: z.string().min(1),
            title: z.string(),
            description: z.string().nullish(),
            url: z.string(),
            team: z.object({ id: z.string().min(1), key: z.string().min(1) }).loose(),
          })
          .loose()
          .nullish(),
      })
      .loose(),
    agentActivity: z
      .object({
        id: z.string().min(1),
        signal: z.string().nullish(),
        content: z.record(z.string(), z.unknown()),
        user: User.nullish(),
        userId: z.string().nullish(),
      })
      .loose()
      .nullish(),
  })
  .loose();

export type SessionEvent = z.output<typeof SessionEventSchema>;
export type SessionIssue = NonNullable<SessionEvent["agentSession"]["issue"]>;

/** The event, or why it is not one Dispatch handles (another webhook type, a malformed payload). */
export function parseSessionEvent(payload: unknown): SessionEvent | string {
  const parsed = SessionEventSchema.safeParse(payload);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  return `${issue?.path.join(".") || "payload"}: ${issue?.message ?? "not an agent session event"}`;
}

/** Who wrote in the session: a `prompted` event's activity author, or the session's creator. */
export function actorOf(event: SessionEvent): { id: string; name: string } | undefined {
  const activityUser = event.agentActivity?.user ?? undefined;
  const id =
    activityUser?.id ??
    event.agentActivity?.userId ??
    event.agentSession.creator?.id ??
    event.agentSession.creatorId;
  if (!id) return undefined;
  const name = activityUser?.name || event.agentSession.creator?.name || id;
  return { id, name };
}
