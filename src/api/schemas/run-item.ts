import { z } from "zod";
import { RUN_STATES } from "../../model/run-state.ts";
import { OZ_ERROR_CODES } from "../../model/status-reason.ts";
import { RunAgentConfigSchema } from "./agent-config.ts";
import { Timestamp } from "./common.ts";
import { RunBudgetSchema } from "./run-budget.ts";

/**
 * The run on the wire (RunItem, built by src/runs/run-item.ts), with the Warp Platform API's fields: the
 * shapes of its SDK's models (warp-platform-sdk), which validate responses strictly.
 */

const ProfileSchema = z.object({
  type: z.enum(["user", "service_account"]),
  uid: z.string(),
  display_name: z.string(),
  email: z.string().optional(),
});

const at = { created_at: Timestamp };

/** Artifacts by `artifact_type`; Dispatch records pull requests, patches (FILE) and the issue a run came from. */
export const ArtifactItemSchema = z
  .discriminatedUnion("artifact_type", [
    z.object({
      artifact_type: z.literal("PULL_REQUEST"),
      ...at,
      data: z.looseObject({
        url: z.string(),
        branch: z.string(),
        status: z.enum(["open", "draft", "merged", "closed", "unknown"]).meta({
          description: "unknown: Dispatch does not follow a pull request after opening or updating it.",
        }),
      }),
    }),
    z.object({
      artifact_type: z.literal("FILE"),
      ...at,
      data: z.looseObject({
        artifact_uid: z.string(),
        filename: z.string(),
        filepath: z.string(),
        mime_type: z.string(),
        size_bytes: z.number().int().optional(),
        description: z.string().optional(),
      }),
    }),
    z.object({
      artifact_type: z.literal("PLAN"),
      ...at,
      data: z.looseObject({
        document_uid: z.string().meta({ description: "The plan's id (its text is stored under this uid)." }),
        artifact_uid: z.string().optional(),
        title: z.string().optional(),
      }),
    }),
    z.object({
      artifact_type: z.literal("EXTERNAL_REFERENCE"),
      ...at,
      data: z.object({
        reference_type: z
          .string()
          .meta({ description: "github_issue, github_pull_request or linear_issue." }),
        url: z.string().meta({ description: "The canonical URL: what run-by-external-reference matches." }),
        title: z.string().optional(),
      }),
    }),
  ])
  .meta({ id: "ArtifactItem" });

const cents = z.number();
const InferenceUsageSchema = z.object({
  token_count: z.object({
    input: z.number().int(),
    input_cache_read: z.number().int(),
    input_cache_write: z.number().int().meta({ description: "0: cache writes are counted as input." }),
    output: z.number().int(),
  }),
  cost_in_cents: z.object({
    input_cost_in_cents: cents,
    input_cache_read_cost_in_cents: cents,
    input_cache_write_cost_in_cents: cents,
    output_cost_in_cents: cents,
  }),
  web_search_count: z.number().int(),
  web_search_cost_in_cents: cents,
});

export const RequestUsageSchema = z
  .object({
    input_tokens: z.number().meta({ description: "Dispatch extension: input tokens over all executions." }),
    output_tokens: z.number().meta({ description: "Dispatch extension." }),
    total_tokens: z.number(),
    inference_cost: z.number().optional().meta({
      description:
        "What the run's model calls cost so far, in US dollars, at the server's model prices; absent when a model it used has no price.",
    }),
    inference_cost_usd: z.number().optional().meta({ description: "The same as inference_cost." }),
    model_token_usage: z
      .array(
        z.object({
          model_id: z.string(),
          total_tokens: z.number().int(),
          usage_type: z.enum(["byok", "custom_endpoint"]).meta({
            description: "byok: the operator's provider key; custom_endpoint: an OpenAI-compatible endpoint.",
          }),
          tokens_by_category: z.record(z.string(), z.number().int()),
        }),
      )
      .optional()
      .meta({
        description: "Per model, as the run's cost meter counted its calls; absent for runs without calls.",
      }),
    usage_by_category: z
      .record(
        z.string(),
        z.object({
          platform_usage_in_cents: cents,
          byok_inference_usage: z.record(z.string(), InferenceUsageSchema).optional(),
          custom_endpoint_inference_usage: z.record(z.string(), InferenceUsageSchema).optional(),
        }),
      )
      .optional()
      .meta({
        description:
          "Costs in cents by category (primary_agent) and model: only when every model the run called has a price and the run used the builtin harness.",
      }),
  })
  .meta({ id: "RequestUsage" });

export const RunStateSchema = z.enum(RUN_STATES).meta({ id: "RunState" });
export const RunItemSchema = z
  .object({
    run_id: z.string(),
    task_id: z.string(),
    title: z.string(),
    prompt: z.string(),
    submitted_prompt: z.string().optional().meta({
      description:
        "The prompt with the follow-ups added to it before the run started, separated by blank lines (cut like prompt in lists).",
    }),
    state: RunStateSchema,
    created_at: Timestamp,
    updated_at: Timestamp,
    started_at: Timestamp.nullable(),
    finished_at: Timestamp.nullable(),
    run_time: z.string(),
    session_id: z.string(),
    session_link: z.string(),
    trigger_url: z
      .string()
      .optional()
      .meta({ description: "Where the run was started: a Slack or GitHub URL." }),
    source: z.string(),
    creator: ProfileSchema,
    executor: ProfileSchema.meta({ description: "Who the agent ran for: the creator." }),
    agent_config: RunAgentConfigSchema,
    agent_skill: z
      .object({ name: z.string(), description: z.string().optional(), full_path: z.string() })
      .optional(),
    status_message: z
      .object({
        message: z.string(),
        error_code: z.enum(OZ_ERROR_CODES).optional().meta({ description: "Oz's ErrorCode, when one fits." }),
        reason: z.string().optional().meta({
          description:
            "Dispatch extension: the finer reason, e.g. time_limit, command_failed, delivery_failed, worker_lost, cancelled; for a BLOCKED run what it waits for: awaiting_approval, awaiting_budget or awaiting_input (unanswered: cancelled after DISPATCH_BLOCKED_TIMEOUT_S).",
        }),
        retryable: z.boolean().optional(),
      })
      .optional(),
    artifacts: z.array(ArtifactItemSchema),
    request_usage: RequestUsageSchema,
    is_run_type_cancellable: z
      .literal(true)
      .meta({ description: "Every Dispatch run can be cancelled (while active)." }),
    is_sandbox_running: z.boolean(),
    schedule: z
      .object({
        schedule_id: z.string(),
        schedule_name: z.string().meta({ description: "The schedule's name when it fired this run." }),
        cron_schedule: z.string(),
        fire_time: Timestamp.meta({ description: "Dispatch extension: the cron slot this run is for." }),
      })
      .optional()
      .meta({ description: "The schedule that fired this run (scheduled runs only)." }),
    scope: z.object({ type: z.literal("Team"), uid: z.string() }),
    metadata: z.record(z.string(), z.string()),
    conversation_id: z.string().meta({
      description: "The run's conversation: the run id (create with conversation_id continues the run).",
    }),
    parent_run_id: z.string().optional(),
    root_run_id: z
      .string()
      .meta({ description: "The top of the run's tree of parents: the run itself when it has no parent." }),
    execution_location: z.literal("REMOTE"),
    budget: RunBudgetSchema.optional().meta({
      description: "Dispatch extension: the run's budget (docs/api.md, Budgets); absent without a limit.",
    }),
  })
  .meta({ id: "RunItem" });

export const ListRunsResponseSchema = z
  .object({
    runs: z.array(RunItemSchema),
    page_info: z.object({ has_next_page: z.boolean(), next_cursor: z.string().optional() }),
  })
  .meta({ id: "ListRunsResponse" });
