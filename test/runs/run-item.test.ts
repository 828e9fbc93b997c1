import { describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/model/run.ts";
import { toRunItem } from "../../src/runs/run-item.ts";

/**
 * The RunItem on the wire, byte for byte: every key in its order (JSON.stringify keeps insertion order),
 * optional keys only when the run has them. The expected answers are what GET /runs/{id} sent before
 * toRunItem was rebuilt for speed; clients and the SDKs read the same bytes.
 */
const full = {
  id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a50",
  teamId: "t1",
  title: "Fix the flaky test",
  prompt: "Fix the flaky test in src/checkout/cart.ts",
  state: "INPROGRESS",
  createdAt: "2030-01-01T00:00:00.000Z",
  updatedAt: "2030-01-01T00:01:00.000Z",
  startedAt: "2030-01-01T00:00:10.000Z",
  finishedAt: null,
  runTimeMs: 150500,
  executionStartedAt: null,
  execution: 2,
  sessionId: "s3ss10n",
  triggerUrl: "https://github.com/acme/app/issues/42#issuecomment-777",
  source: "GITHUB_WEBHOOK",
  creator: { type: "user", uid: "u1", display_name: "Ann", email: "ann@example.com" },
  agentConfig: {
    name: "fixer",
    model_id: "anthropic/claude-sonnet-4",
    harness: { type: "builtin" },
    mcp_servers: {
      search: { command: "mcp-search", env: { TOKEN: "secret" }, headers: { authorization: "Bearer x" } },
    },
    environment_id: "node",
  },
  agentSkill: { name: "fix", description: "Fixes things", full_path: "skills/fix/SKILL.md" },
  statusMessage: { message: "Over its time limit", error_code: "time_limit", retryable: false },
  artifacts: [
    {
      artifact_type: "PULL_REQUEST",
      created_at: "2030-01-01T00:02:00.000Z",
      data: { url: "https://github.com/acme/app/pull/7", branch: "dispatch/fix", state: "merged" },
    },
    {
      artifact_type: "PULL_REQUEST",
      created_at: "2030-01-01T00:03:00.000Z",
      data: { url: "https://github.com/acme/app/pull/8", branch: "dispatch/fix-2" },
    },
    {
      artifact_type: "EXTERNAL_REFERENCE",
      created_at: "2030-01-01T00:00:00.000Z",
      data: {
        reference_type: "github_issue",
        url: "https://github.com/acme/app/issues/42",
        title: "acme/app#42",
      },
    },
  ],
  requestUsage: {
    input_tokens: 1200,
    output_tokens: 300,
    total_tokens: 1500,
    inference_cost: 0.0123,
    models: {
      "anthropic/claude-sonnet-4": {
        input_tokens: 1200,
        cached_input_tokens: 200,
        output_tokens: 300,
        cost: { input: 0.003, cached_input: 0.0003, output: 0.009 },
      },
    },
  },
  metadata: { ticket: "OPS-1", "2": "numeric key" },
  workerId: "w1",
  leaseExpiresAt: "2030-01-01T00:05:00.000Z",
  agentStarted: true,
  requeueCount: 0,
  lastEventAt: "2030-01-01T00:01:00.000Z",
  parentRunId: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a40",
  rootRunId: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a30",
  interrupts: 1,
  mode: "plan",
  schedule: {
    scheduleId: "sch1",
    scheduleName: "nightly",
    cronSchedule: "0 3 * * *",
    fireTime: "2030-01-01T03:00:00.000Z",
  },
  resumes: 1,
  budget: {
    extended_usd: 5,
    limit: { scope: "team", name: "t1", used_usd: 12.5, limit_usd: 20 },
    spent_usd: 2.25,
    over_usd: 0.5,
    needs_usd: 1,
    answer: { action: "extend" },
  },
} as unknown as RunRecord;
const bare = {
  id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a51",
  teamId: "t1",
  title: "",
  prompt: "",
  state: "QUEUED",
  createdAt: "2030-01-01T00:00:00.000Z",
  updatedAt: "2030-01-01T00:00:00.000Z",
  startedAt: null,
  finishedAt: null,
  runTimeMs: 0,
  executionStartedAt: null,
  execution: 1,
  sessionId: "s2",
  triggerUrl: null,
  source: "API",
  creator: { type: "service_account", uid: "k1", display_name: "CI" },
  agentConfig: {},
  agentSkill: null,
  statusMessage: null,
  artifacts: [],
  requestUsage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
  metadata: {},
  workerId: null,
  leaseExpiresAt: null,
  agentStarted: false,
  requeueCount: 0,
} as unknown as RunRecord;

/** What GET /runs/{id} answers for `full` with one queued follow-up. */
const fullAnswer = {
  run_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a50",
  task_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a50",
  title: "Fix the flaky test",
  prompt: "Fix the flaky test in src/checkout/cart.ts",
  submitted_prompt: "Fix the flaky test in src/checkout/cart.ts\n\nand the second",
  state: "INPROGRESS",
  created_at: "2030-01-01T00:00:00.000Z",
  updated_at: "2030-01-01T00:01:00.000Z",
  started_at: "2030-01-01T00:00:10.000Z",
  finished_at: null,
  run_time: "PT2M30.5S",
  session_id: "s3ss10n",
  session_link: "https://dispatch.example.com/sessions/s3ss10n",
  trigger_url: "https://github.com/acme/app/issues/42#issuecomment-777",
  source: "GITHUB_WEBHOOK",
  creator: {
    type: "user",
    uid: "u1",
    display_name: "Ann",
    email: "ann@example.com",
  },
  executor: {
    type: "user",
    uid: "u1",
    display_name: "Ann",
    email: "ann@example.com",
  },
  agent_config: {
    name: "fixer",
    model_id: "anthropic/claude-sonnet-4",
    mcp_servers: {
      search: {
        command: "mcp-search",
        env: {
          TOKEN: "[redacted]",
        },
        headers: {
          authorization: "[redacted]",
        },
      },
    },
    environment_id: "node",
    harness: {
      type: "oz",
      name: "builtin",
    },
  },
  agent_skill: {
    name: "fix",
    description: "Fixes things",
    full_path: "skills/fix/SKILL.md",
  },
  status_message: {
    message: "Over its time limit",
    error_code: "budget_exceeded",
    reason: "time_limit",
    retryable: false,
  },
  artifacts: [
    {
      artifact_type: "PULL_REQUEST",
      created_at: "2030-01-01T00:02:00.000Z",
      data: {
        url: "https://github.com/acme/app/pull/7",
        branch: "dispatch/fix",
        state: "merged",
        status: "merged",
      },
    },
    {
      artifact_type: "PULL_REQUEST",
      created_at: "2030-01-01T00:03:00.000Z",
      data: {
        url: "https://github.com/acme/app/pull/8",
        branch: "dispatch/fix-2",
        status: "unknown",
      },
    },
    {
      artifact_type: "EXTERNAL_REFERENCE",
      created_at: "2030-01-01T00:00:00.000Z",
      data: {
        reference_type: "github_issue",
        url: "https://github.com/acme/app/issues/42",
        title: "acme/app#42",
      },
    },
  ],
  request_usage: {
    input_tokens: 1200,
    output_tokens: 300,
    total_tokens: 1500,
    inference_cost: 0.0123,
    inference_cost_usd: 0.0123,
    model_token_usage: [
      {
        model_id: "anthropic/claude-sonnet-4",
        total_tokens: 1500,
        usage_type: "byok",
        tokens_by_category: {
          primary_agent: 1500,
        },
      },
    ],
    usage_by_category: {
      primary_agent: {
        platform_usage_in_cents: 0,
        byok_inference_usage: {
          "anthropic/claude-sonnet-4": {
            token_count: {
              input: 1000,
              input_cache_read: 200,
              input_cache_write: 0,
              output: 300,
            },
            cost_in_cents: {
              input_cost_in_cents: 0.3,
              input_cache_read_cost_in_cents: 0.03,
              input_cache_write_cost_in_cents: 0,
              output_cost_in_cents: 0.9,
            },
            web_search_count: 0,
            web_search_cost_in_cents: 0,
          },
        },
      },
    },
  },
  is_run_type_cancellable: true,
  is_sandbox_running: true,
  schedule: {
    schedule_id: "sch1",
    schedule_name: "nightly",
    cron_schedule: "0 3 * * *",
    fire_time: "2030-01-01T03:00:00.000Z",
  },
  scope: {
    type: "Team",
    uid: "t1",
  },
  metadata: {
    "2": "numeric key",
    ticket: "OPS-1",
  },
  conversation_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a50",
  parent_run_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a40",
  root_run_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a30",
  execution_location: "REMOTE",
  budget: {
    extended_usd: 5,
    limit: {
      scope: "team",
      name: "t1",
      used_usd: 12.5,
      limit_usd: 20,
    },
    spent_usd: 2.25,
    needs_usd: 1,
  },
};

describe("toRunItem", () => {
  it("a run with every optional field: each key in the wire order, secrets redacted", () => {
    const item = toRunItem(full, "https://dispatch.example.com", { queuedPrompts: ["and the second"] });
    expect(JSON.stringify(item)).toBe(JSON.stringify(fullAnswer));
  });

  it("a list item: the prompt and submitted_prompt cut, nothing else changed", () => {
    const item = toRunItem(full, "https://dispatch.example.com", {
      promptLimit: 10,
      queuedPrompts: ["and the second"],
    });
    // Spreading keeps each key where it was.
    const cut = { ...fullAnswer, prompt: "Fix the fl", submitted_prompt: "Fix the fl" };
    expect(JSON.stringify(item)).toBe(JSON.stringify(cut));
  });

  it("a list item of a run without queued follow-ups: submitted_prompt is the prompt, cut alike", () => {
    const item = toRunItem(full, "https://dispatch.example.com", { promptLimit: 10, queuedPrompts: [] });
    expect(JSON.stringify(item)).toBe(
      JSON.stringify({ ...fullAnswer, prompt: "Fix the fl", submitted_prompt: "Fix the fl" }),
    );
    const uncut = toRunItem(full, "https://dispatch.example.com", { promptLimit: 2000, queuedPrompts: [] });
    expect(uncut.submitted_prompt).toBe(full.prompt);
    // An empty prompt and nothing queued: an empty submitted prompt, as the joined list gave.
    expect(toRunItem(bare, "https://dispatch.example.com", { queuedPrompts: [] }).submitted_prompt).toBe("");
    expect(
      toRunItem(bare, "https://dispatch.example.com", { queuedPrompts: ["only this"] }).submitted_prompt,
    ).toBe("only this");
  });

  it("request_usage: the cost's USD key only with a cost, the breakdown only with models", () => {
    const usage = (requestUsage: RunRecord["requestUsage"], harness?: string) =>
      JSON.stringify(
        toRunItem(
          { ...bare, requestUsage, agentConfig: harness ? { harness: { type: harness } } : {} } as RunRecord,
          "https://dispatch.example.com",
        ).request_usage,
      );
    expect(usage({ input_tokens: 1, output_tokens: 2, total_tokens: 3, inference_cost: 0.5 })).toBe(
      '{"input_tokens":1,"output_tokens":2,"total_tokens":3,"inference_cost":0.5,"inference_cost_usd":0.5}',
    );
    expect(usage({ input_tokens: 1, output_tokens: 2, total_tokens: 3, models: {} })).toBe(
      '{"input_tokens":1,"output_tokens":2,"total_tokens":3}',
    );
    // Another harness's models: the token usage per model, no cost breakdown.
    expect(
      usage(
        {
          input_tokens: 1,
          output_tokens: 2,
          total_tokens: 3,
          models: {
            "openai-compatible/llama": {
              input_tokens: 1,
              cached_input_tokens: 0,
              output_tokens: 2,
              cost: { input: 0, cached_input: 0, output: 0 },
            },
          },
        },
        "claude",
      ),
    ).toBe(
      '{"input_tokens":1,"output_tokens":2,"total_tokens":3,"model_token_usage":[{"model_id":"openai-compatible/llama","total_tokens":3,"usage_type":"custom_endpoint","tokens_by_category":{"primary_agent":3}}]}',
    );
  });

  it("a run with none: no optional key at all", () => {
    const item = toRunItem(bare, "https://dispatch.example.com");
    expect(JSON.stringify(item)).toBe(
      JSON.stringify({
        run_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a51",
        task_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a51",
        title: "",
        prompt: "",
        state: "QUEUED",
        created_at: "2030-01-01T00:00:00.000Z",
        updated_at: "2030-01-01T00:00:00.000Z",
        started_at: null,
        finished_at: null,
        run_time: "PT0S",
        session_id: "s2",
        session_link: "https://dispatch.example.com/sessions/s2",
        source: "API",
        creator: {
          type: "service_account",
          uid: "k1",
          display_name: "CI",
        },
        executor: {
          type: "service_account",
          uid: "k1",
          display_name: "CI",
        },
        agent_config: {},
        artifacts: [],
        request_usage: {
          input_tokens: 0,
          output_tokens: 0,
          total_tokens: 0,
        },
        is_run_type_cancellable: true,
        is_sandbox_running: false,
        scope: {
          type: "Team",
          uid: "t1",
        },
        metadata: {},
        conversation_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a51",
        root_run_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a51",
        execution_location: "REMOTE",
      }),
    );
  });
});
