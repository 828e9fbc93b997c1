import { z } from "zod";
import { Timestamp } from "./common.ts";

/**
 * What the Warp Platform API reads of a run beyond the RunItem (docs/api.md): its normalised conversation,
 * its lifecycle timeline, its harness usage; and the answers of interrupt and of conversation-keyed routes.
 * The shapes are the warp-platform-sdk models'.
 */

const Category = z.enum([
  "command",
  "files",
  "search",
  "integration",
  "documents",
  "computer",
  "review",
  "skill",
]);
const messageId = { message_id: z.string().optional().meta({ description: "The transcript event's seq." }) };
const ContentBlock = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string(), ...messageId }),
  z.object({
    type: z.literal("action"),
    id: z.string(),
    category: Category,
    name: z.string().meta({ description: "The tool, as the agent named it." }),
    input: z.record(z.string(), z.unknown()),
    ...messageId,
  }),
  z.object({
    type: z.literal("action_result"),
    action_id: z.string(),
    category: Category,
    name: z.string(),
    output: z.record(z.string(), z.unknown()),
    state: z.enum(["running", "completed", "failed", "denied"]),
    ...messageId,
  }),
  z.object({
    type: z.literal("event"),
    name: z.string().meta({ description: "error or interrupt." }),
    data: z.record(z.string(), z.unknown()),
    ...messageId,
  }),
]);

const ConversationMessage = z.object({
  role: z.enum(["user", "assistant", "tool", "system"]),
  content: z.array(ContentBlock),
  message_ids: z.array(z.string()).optional(),
  timestamp: Timestamp.optional(),
});

interface StepShape {
  id: string;
  description?: string | undefined;
  messages: z.infer<typeof ConversationMessage>[];
  steps: StepShape[];
  started_at?: string | undefined;
  completed_at?: string | undefined;
}

export const ConversationStepSchema: z.ZodType<StepShape> = z
  .object({
    id: z.string().meta({ description: "`{run_id}:{execution}`: one step per execution of the run." }),
    description: z.string().optional().meta({ description: "The prompt or follow-up that started it." }),
    messages: z.array(ConversationMessage),
    get steps() {
      return z.array(ConversationStepSchema);
    },
    started_at: Timestamp.optional(),
    completed_at: Timestamp.optional(),
  })
  .meta({ id: "ConversationStep" });

export const ConversationResponseSchema = z
  .object({
    conversation_id: z.string().meta({ description: "The run's id: a run is its own conversation." }),
    steps: z.array(ConversationStepSchema),
  })
  .meta({ id: "ConversationResponse" });

export const TimelineResponseSchema = z
  .object({
    events: z.array(
      z.object({
        event_type: z.enum([
          "oz_run_created",
          "oz_run_claimed",
          "worker_container_ready",
          "shared_session_started",
          "agent_started",
          "oz_run_done",
          "oz_run_blocked",
          "oz_run_cancelled",
          "oz_run_failed",
          "oz_run_errored",
          "vm_shutdown",
        ]),
        event_uuid: z.string(),
        occurred_at: Timestamp,
        run_id: z.string(),
        execution_id: z.number().int(),
        payload: z.record(z.string(), z.unknown()),
      }),
    ),
  })
  .meta({ id: "TimelineResponse" });

const Coverage = z.object({
  tokenStatus: z.enum(["known", "partial", "unavailable"]),
  toolStatus: z.enum(["known", "partial", "unavailable"]),
});
const Tokens = z.record(z.string(), z.number().int()).meta({
  description: "The harness's own token categories; a category Dispatch does not count is absent, never 0.",
});

export const HarnessUsageResponseSchema = z
  .object({
    run_id: z.string(),
    conversation_id: z.string(),
    available: z
      .boolean()
      .meta({ description: "false for runs of other harnesses, and before the first model call." }),
    age_seconds: z.number().int().optional(),
    usage: z
      .object({
        harness: z.enum(["CLAUDE_CODE", "CODEX"]),
        metricsVersion: z.literal(1),
        executionId: z.number().int(),
        captureSequence: z.number().int(),
        capturedAt: Timestamp,
        snapshot: z.object({
          coverage: Coverage,
          payload: z.object({
            usage: Tokens,
            attribution: z.array(z.object({ model: z.string(), usage: Tokens })),
            toolCalls: z.object({ byName: z.record(z.string(), z.number().int()), total: z.number().int() }),
          }),
        }),
      })
      .optional(),
  })
  .meta({ id: "HarnessUsageResponse" });

export const InterruptResponseSchema = z
  .object({ run_id: z.string().meta({ description: "The run whose turn is being stopped." }) })
  .meta({ id: "InterruptResponse" });

export const RunReferenceResponseSchema = z
  .object({ run_id: z.string() })
  .meta({ id: "RunReferenceResponse" });

export const ExternalReferenceQuerySchema = z.strictObject({
  url: z.string().min(1).max(2000).meta({
    description:
      "A pull request URL, a GitHub issue or comment URL, a Slack message permalink or a Linear issue URL.",
  }),
});
