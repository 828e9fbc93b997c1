// Generated from openapi.json by test/client/support/openapi-codegen.ts; do not edit by hand.
// Regenerate with `node test/client/support/openapi-codegen.ts --write` after `npm run openapi`;
// test/client/api-types.test.ts fails while this file and openapi.json disagree.

export interface AgentConfig {
  name?: string | null;
  model_id?: string | null;
  base_prompt?: string | null;
  environment_id?: string | null;
  skill_spec?: string | null;
  mcp_servers?: Record<string, MCPServerConfig> | null;
  harness?: {
    type: string;
    name?: string | null;
  } | null;
  idle_timeout_minutes?: number | null;
  max_run_minutes?: number | null;
  max_cost_usd?: number | null;
  repository?: string | null;
  base_branch?: string | null;
  branch?: string | null;
  delivery?: "pull_request" | "branch" | "none" | null;
}

export interface AgentIdentity {
  uid: string;
  name: string;
  available: boolean;
  created_at: string;
  updated_at: string;
  default_runner_uid: string;
  memory: {
    attached_stores: Array<{
      uid: string;
    }>;
    auto_memory: {
      enabled: boolean;
    };
  };
  description?: string;
  prompt?: string;
  base_model?: string;
  skills: string[];
  secrets: Array<{
    name: string;
  }>;
}

export interface AgentSkill {
  name: string;
  variants: Array<{
    id: string;
    description: string;
    base_prompt: string;
    source: {
      owner: string;
      name: string;
      skill_path: string;
    };
    environments: Array<{
      uid: string;
      name: string;
    }>;
    last_run_timestamp: string | null;
    error?: string;
  }>;
}

export interface ApproveRunRequest {
  action: "approve" | "revise";
  message?: string;
}

export type ArtifactItem =
  | {
      artifact_type: "PULL_REQUEST";
      created_at: string;
      data: {
        url: string;
        branch: string;
        status: "open" | "draft" | "merged" | "closed" | "unknown";
      };
    }
  | {
      artifact_type: "FILE";
      created_at: string;
      data: {
        artifact_uid: string;
        filename: string;
        filepath: string;
        mime_type: string;
        size_bytes?: number;
        description?: string;
      };
    }
  | {
      artifact_type: "PLAN";
      created_at: string;
      data: {
        document_uid: string;
        artifact_uid?: string;
        title?: string;
      };
    }
  | {
      artifact_type: "EXTERNAL_REFERENCE";
      created_at: string;
      data: {
        reference_type: string;
        url: string;
        title?: string;
      };
    };

export interface Attachment {
  file_name: string;
  mime_type: string;
  data: string;
}

export interface AuditEvent {
  id: number;
  at: string;
  actor: string;
  actor_name?: string;
  action:
    | "run.created"
    | "run.followed_up"
    | "run.cancelled"
    | "run.retried"
    | "api_key.created"
    | "api_key.revoked"
    | "identity.created"
    | "identity.updated"
    | "identity.deleted"
    | "session.signed_in"
    | "webhook.created"
    | "webhook.deleted"
    | "webhook.redelivered"
    | "channel.repository_set"
    | "channel.agent_set";
  target?: string;
  details: Record<string, unknown>;
}

export interface BudgetRequest {
  action: "extend" | "stop";
  amount_usd?: number;
  on_behalf_of?: {
    creator: {
      type: "user" | "service_account";
      uid: string;
      display_name: string;
      email?: string;
    };
  } | null;
}

export interface BudgetResponse {
  run_id: string;
  state: string;
  budget: RunBudget;
}

export interface CancelRunRequest {
  on_behalf_of?: {
    creator: {
      type: "user" | "service_account";
      uid: string;
      display_name: string;
      email?: string;
    };
  } | null;
}

export interface CloudEnvironment {
  uid: string;
  config: {
    name: string;
    description: string | null;
    github_repos: Array<{
      owner: string;
      repo: string;
    }>;
    setup_commands: string[];
  };
  last_updated: string;
  setup_failed: boolean;
  last_task_run_timestamp: string | null;
  last_task_created: {
    id: string;
    title: string;
    state: RunState;
    created_at: string;
    updated_at: string;
    started_at: string | null;
  } | null;
}

export interface ConversationFollowupResponse {
  followup_id: string;
  outcome: "queued_prompt" | "live_session" | "queue_pending" | "handoff_execution";
  run_id: string;
}

export interface ConversationRedirectResponse {
  session_id?: string;
}

export interface ConversationResponse {
  conversation_id: string;
  steps: ConversationStep[];
}

export interface ConversationStep {
  id: string;
  description?: string;
  messages: Array<{
    role: "user" | "assistant" | "tool" | "system";
    content: Array<
      | {
          type: "text";
          text: string;
          message_id?: string;
        }
      | {
          type: "action";
          id: string;
          category:
            | "command"
            | "files"
            | "search"
            | "integration"
            | "documents"
            | "computer"
            | "review"
            | "skill";
          name: string;
          input: Record<string, unknown>;
          message_id?: string;
        }
      | {
          type: "action_result";
          action_id: string;
          category:
            | "command"
            | "files"
            | "search"
            | "integration"
            | "documents"
            | "computer"
            | "review"
            | "skill";
          name: string;
          output: Record<string, unknown>;
          state: "running" | "completed" | "failed" | "denied";
          message_id?: string;
        }
      | {
          type: "event";
          name: string;
          data: Record<string, unknown>;
          message_id?: string;
        }
    >;
    message_ids?: string[];
    timestamp?: string;
  }>;
  steps: ConversationStep[];
  started_at?: string;
  completed_at?: string;
}

export interface CreateAgentIdentityRequest {
  name: string;
  description?: string | null;
  prompt?: string | null;
  base_model?: string | null;
  skills?: string[] | null;
  secrets?: Array<{
    name: string;
  }> | null;
}

export interface CreateRunRequest {
  prompt?: string | null;
  title?: string | null;
  config?: AgentConfig | null;
  skill?: string | null;
  metadata?: Record<string, string> | null;
  team?: true | null;
  interactive?: boolean | null;
  conversation_id?: string | null;
  parent_run_id?: string | null;
  mode?: "normal" | "plan" | "orchestrate" | null;
  attachments?: Attachment[] | null;
  on_behalf_of?:
    | string
    | {
        creator?: {
          type: "user" | "service_account";
          uid: string;
          display_name: string;
          email?: string;
        };
        source?: string;
        trigger_url?: string;
      }
    | null;
}

export interface CreateRunResponse {
  run_id: string;
  task_id: string;
  state: "QUEUED" | "INPROGRESS" | "BLOCKED" | "SUCCEEDED" | "FAILED" | "ERROR" | "CANCELLED";
  at_capacity: boolean;
}

export interface CreateScheduleRequest {
  name: string;
  cron_schedule: string;
  timezone?: string | null;
  prompt?: string | null;
  agent_config?: AgentConfig | null;
  metadata?: Record<string, string> | null;
  mode?: "normal" | null;
  agent_uid?: null;
  enabled?: boolean | null;
  team?: true | null;
}

export interface CreateWebhookRequest {
  url: string;
  events?: Array<"run.created" | "run.state_changed" | "run.followup" | "run.delivered">;
  description?: string;
}

export interface CreatedWebhook {
  id: string;
  url: string;
  events: Array<"run.created" | "run.state_changed" | "run.followup" | "run.delivered">;
  description?: string;
  created_at: string;
  created_by: string;
  secret: string;
}

export interface DeleteScheduleResponse {
  success: boolean;
}

export interface EgressRangesResponse {
  cidrs: string[];
}

export interface FileArtifactResponse {
  artifact_uid: string;
  artifact_type: "FILE";
  created_at: string;
  data: {
    download_url: string;
    expires_at: string;
    content_type: string;
    filepath: string;
    filename: string;
    size_bytes: number;
    description?: string;
  };
}

export interface FollowupRequest {
  message: string;
  mode?: "normal" | "plan" | "orchestrate" | null;
  attachments?: Attachment[] | null;
}

export interface FollowupResponse {
  followup_id: string;
  outcome: "queued_prompt" | "live_session" | "queue_pending" | "handoff_execution";
}

export interface HarnessUsageResponse {
  run_id: string;
  conversation_id: string;
  available: boolean;
  age_seconds?: number;
  usage?: {
    harness: "CLAUDE_CODE" | "CODEX";
    metricsVersion: 1;
    executionId: number;
    captureSequence: number;
    capturedAt: string;
    snapshot: {
      coverage: {
        tokenStatus: "known" | "partial" | "unavailable";
        toolStatus: "known" | "partial" | "unavailable";
      };
      payload: {
        usage: Record<string, number>;
        attribution: Array<{
          model: string;
          usage: Record<string, number>;
        }>;
        toolCalls: {
          byName: Record<string, number>;
          total: number;
        };
      };
    };
  };
}

export interface InterruptResponse {
  run_id: string;
}

export interface ListAgentIdentitiesResponse {
  agents: AgentIdentity[];
}

export interface ListAgentsResponse {
  agents: AgentSkill[];
}

export interface ListAttachmentsResponse {
  attachments: Array<{
    attachment_id: string;
    download_url: string;
    filename: string;
    mime_type?: string | null;
    expires_at: string;
    size_bytes: number;
    followup_id: string | null;
    created_at: string;
  }>;
}

export interface ListAuditEventsResponse {
  events: AuditEvent[];
  page_info: {
    has_next_page: boolean;
    next_cursor?: string;
  };
}

export interface ListEnvironmentsResponse {
  environments: CloudEnvironment[];
}

export interface ListModelsResponse {
  default_model_id: string;
  models: Model[];
}

export interface ListRunsResponse {
  runs: RunItem[];
  page_info: {
    has_next_page: boolean;
    next_cursor?: string;
  };
}

export interface ListSchedulesResponse {
  schedules: ScheduledAgentItem[];
}

export interface ListWebhookDeliveriesResponse {
  deliveries: WebhookDelivery[];
  page_info: {
    has_next_page: boolean;
    next_cursor?: string;
  };
}

export interface ListWebhooksResponse {
  webhooks: Webhook[];
}

export interface MCPServerConfig {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  url?: string;
  headers?: Record<string, string>;
}

export interface Model {
  id: string;
  display_name: string;
  provider: "OPENAI" | "ANTHROPIC" | "GOOGLE" | "UNKNOWN";
  vision_supported: boolean;
  description?: string;
  harnesses?: Array<"oz" | "claude" | "codex" | "gemini">;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  error: string;
  error_code: string;
  retryable: boolean;
  instance: string;
  trace_id?: string;
}

export interface RequestUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  inference_cost?: number;
  inference_cost_usd?: number;
  model_token_usage?: Array<{
    model_id: string;
    total_tokens: number;
    usage_type: "byok" | "custom_endpoint";
    tokens_by_category: Record<string, number>;
  }>;
  usage_by_category?: Record<
    string,
    {
      platform_usage_in_cents: number;
      byok_inference_usage?: Record<
        string,
        {
          token_count: {
            input: number;
            input_cache_read: number;
            input_cache_write: number;
            output: number;
          };
          cost_in_cents: {
            input_cost_in_cents: number;
            input_cache_read_cost_in_cents: number;
            input_cache_write_cost_in_cents: number;
            output_cost_in_cents: number;
          };
          web_search_count: number;
          web_search_cost_in_cents: number;
        }
      >;
      custom_endpoint_inference_usage?: Record<
        string,
        {
          token_count: {
            input: number;
            input_cache_read: number;
            input_cache_write: number;
            output: number;
          };
          cost_in_cents: {
            input_cost_in_cents: number;
            input_cache_read_cost_in_cents: number;
            input_cache_write_cost_in_cents: number;
            output_cost_in_cents: number;
          };
          web_search_count: number;
          web_search_cost_in_cents: number;
        }
      >;
    }
  >;
}

export interface RunAgentConfig {
  name?: string | null;
  model_id?: string | null;
  base_prompt?: string | null;
  environment_id?: string | null;
  skill_spec?: string | null;
  mcp_servers?: Record<string, MCPServerConfig> | null;
  harness?: {
    type: "oz" | "claude" | "codex" | "gemini";
    name?: string;
  };
  idle_timeout_minutes?: number | null;
  max_run_minutes?: number | null;
  max_cost_usd?: number | null;
  repository?: string | null;
  base_branch?: string | null;
  branch?: string | null;
  delivery?: "pull_request" | "branch" | "none" | null;
}

export interface RunBudget {
  extended_usd?: number;
  limit?: {
    scope: "run" | "server" | "person" | "repository" | "channel" | "schedule" | "team";
    name: string;
    used_usd: number;
    limit_usd: number;
  };
  spent_usd?: number;
  needs_usd?: number;
}

export interface RunEvent {
  seq: number;
  at: string;
  type: string;
  data: Record<string, unknown>;
}

export interface RunEventsResponse {
  events: RunEvent[];
  next_after: number;
}

export interface RunItem {
  run_id: string;
  task_id: string;
  title: string;
  prompt: string;
  submitted_prompt?: string;
  state: RunState;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  run_time: string;
  session_id: string;
  session_link: string;
  trigger_url?: string;
  source: string;
  creator: {
    type: "user" | "service_account";
    uid: string;
    display_name: string;
    email?: string;
  };
  executor: {
    type: "user" | "service_account";
    uid: string;
    display_name: string;
    email?: string;
  };
  agent_config: RunAgentConfig;
  agent_skill?: {
    name: string;
    description?: string;
    full_path: string;
  };
  status_message?: {
    message: string;
    error_code?:
      | "insufficient_credits"
      | "feature_not_available"
      | "external_authentication_required"
      | "not_authorized"
      | "invalid_request"
      | "resource_not_found"
      | "budget_exceeded"
      | "integration_disabled"
      | "integration_not_configured"
      | "operation_not_supported"
      | "environment_setup_failed"
      | "content_policy_violation"
      | "conflict"
      | "authentication_required"
      | "resource_unavailable"
      | "internal_error";
    reason?: string;
    retryable?: boolean;
  };
  artifacts: ArtifactItem[];
  request_usage: RequestUsage;
  is_run_type_cancellable: true;
  is_sandbox_running: boolean;
  schedule?: {
    schedule_id: string;
    schedule_name: string;
    cron_schedule: string;
    fire_time: string;
  };
  scope: {
    type: "Team";
    uid: string;
  };
  metadata: Record<string, string>;
  conversation_id: string;
  parent_run_id?: string;
  root_run_id: string;
  execution_location: "REMOTE";
  budget?: RunBudget;
}

export interface RunReferenceResponse {
  run_id: string;
}

export type RunState = "QUEUED" | "INPROGRESS" | "BLOCKED" | "SUCCEEDED" | "FAILED" | "ERROR" | "CANCELLED";

export interface ScheduledAgentItem {
  id: string;
  name: string;
  cron_schedule: string;
  timezone: string;
  enabled: boolean;
  prompt: string;
  created_at: string;
  updated_at: string;
  last_spawn_error: string | null;
  agent_config: AgentConfig;
  metadata: Record<string, string>;
  created_by: {
    type: "user" | "service_account";
    uid: string;
    display_name: string;
    email?: string;
  };
  updated_by: {
    type: "user" | "service_account";
    uid: string;
    display_name: string;
    email?: string;
  };
  history: {
    last_ran: string | null;
    next_run: string | null;
  };
  scope: {
    type: "Team";
    uid: string;
  };
}

export interface SessionRedirectResponse {
  conversation_id?: string;
}

export interface TimelineResponse {
  events: Array<{
    event_type:
      | "oz_run_created"
      | "oz_run_claimed"
      | "worker_container_ready"
      | "shared_session_started"
      | "agent_started"
      | "oz_run_done"
      | "oz_run_blocked"
      | "oz_run_cancelled"
      | "oz_run_failed"
      | "oz_run_errored"
      | "vm_shutdown";
    event_uuid: string;
    occurred_at: string;
    run_id: string;
    execution_id: number;
    payload: Record<string, unknown>;
  }>;
}

export interface UpdateAgentIdentityRequest {
  name?: string;
  description?: string | null;
  prompt?: string | null;
  base_model?: string | null;
  skills?: string[] | null;
  secrets?: Array<{
    name: string;
  }> | null;
}

export interface UpdateScheduleRequest {
  name: string;
  cron_schedule: string;
  timezone?: string | null;
  prompt?: string | null;
  agent_config?: AgentConfig | null;
  metadata?: Record<string, string> | null;
  mode?: "normal" | null;
  agent_uid?: null;
  enabled: boolean;
}

export interface UsageReport {
  period: {
    from: string;
    to: string;
  };
  group_by: Array<"person" | "repository" | "channel" | "schedule" | "model">;
  rows: UsageRow[];
  totals: UsageTotals;
}

export interface UsageRow {
  runs: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
  known_cost_usd: number;
  unpriced_runs: number;
  person?: string | null;
  person_name?: string;
  repository?: string | null;
  channel?: string | null;
  schedule?: string | null;
  schedule_name?: string;
  model?: string | null;
}

export interface UsageTotals {
  runs: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
  known_cost_usd: number;
  unpriced_runs: number;
}

export interface Webhook {
  id: string;
  url: string;
  events: Array<"run.created" | "run.state_changed" | "run.followup" | "run.delivered">;
  description?: string;
  created_at: string;
  created_by: string;
}

export interface WebhookDelivery {
  id: number;
  message_id: string;
  event_type: "run.created" | "run.state_changed" | "run.followup" | "run.delivered";
  run_id: string;
  state: "pending" | "sending" | "succeeded" | "failed";
  attempts: number;
  next_attempt_at?: string;
  last_attempt_at?: string;
  last_status?: number;
  last_error?: string;
  response_excerpt?: string;
  created_at: string;
  finished_at?: string;
}

/** Query parameters of listRuns; whole numbers travel as strings but are given as numbers. */
export interface ListRunsQuery {
  limit?: number;
  cursor?: string;
  sort_by?: "updated_at" | "created_at" | "title" | "agent";
  sort_order?: "asc" | "desc";
  state?:
    | "QUEUED"
    | "INPROGRESS"
    | "BLOCKED"
    | "SUCCEEDED"
    | "FAILED"
    | "ERROR"
    | "CANCELLED"
    | "PENDING"
    | "CLAIMED"
    | Array<
        | "QUEUED"
        | "INPROGRESS"
        | "BLOCKED"
        | "SUCCEEDED"
        | "FAILED"
        | "ERROR"
        | "CANCELLED"
        | "PENDING"
        | "CLAIMED"
      >;
  name?: string;
  config_name?: string;
  model_id?: string;
  creator?: string;
  source?: string | string[];
  environment_id?: string;
  skill_spec?: string;
  skill?: string;
  metadata?: Record<string, string>;
  artifact_type?: "PLAN" | "PULL_REQUEST" | "SCREENSHOT" | "FILE" | "EXTERNAL_REFERENCE";
  schedule_id?: string;
  ancestor_run_id?: string;
  executor?: string;
  execution_location?: "LOCAL" | "REMOTE";
  created_after?: string;
  created_before?: string;
  updated_after?: string;
  q?: string;
  task_status?:
    | "running"
    | "failed"
    | "blocked"
    | "cancelled"
    | "complete"
    | Array<"running" | "failed" | "blocked" | "cancelled" | "complete">;
}

/** Query parameters of listRunEvents; whole numbers travel as strings but are given as numbers. */
export interface ListRunEventsQuery {
  after?: number;
  limit?: number;
}

/** Query parameters of listEnvironments; whole numbers travel as strings but are given as numbers. */
export interface ListEnvironmentsQuery {
  sort_by?: "name" | "last_updated";
}

/** Query parameters of listAgents; whole numbers travel as strings but are given as numbers. */
export interface ListAgentsQuery {
  repo?: string;
  sort_by?: "name" | "last_run";
  refresh?: "true" | "false";
  include_malformed_skills?: "true" | "false";
}
