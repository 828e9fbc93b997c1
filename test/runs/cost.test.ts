import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { RunCost } from "../../src/executor/run-cost.ts";
import { ResponseUsage } from "../../src/harnesses/external/response-usage.ts";
import { renderTrackingComment } from "../../src/integrations/github/tracking-comment.ts";
import { renderStatusCard } from "../../src/integrations/slack/status-card.ts";
import { costOf, DEFAULT_PRICES, priceTable } from "../../src/model/pricing.ts";
import { formatCost } from "../../src/model/run-wording.ts";
import type { RunItem } from "../../src/runs/run-item.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";

/**
 * Run costs: each model call priced from the price table (Dispatch's defaults, the operator's
 * `prices:` over them), request_usage.inference_cost on the run, and config.max_cost_usd stopping a run
 * whose cost passes it. The builtin harness runs against a loopback Anthropic API that reports usage.
 */

const SONNET = "anthropic/claude-sonnet-4-5";
const turns: ScriptedTurn[] = [];
let fake: FakeModel;
let t: TestDispatch;
let configDir: string;

beforeAll(async () => {
  fake = await startFakeModel(turns);
  configDir = await mkdtemp(join(tmpdir(), "dispatch-prices-"));
  const configFile = join(configDir, "dispatch.config.yaml");
  // An operator's price for a model Dispatch has no default for.
  await writeFile(
    configFile,
    "prices:\n  anthropic/claude-house-model:\n    input_per_mtok: 10\n    output_per_mtok: 20\n",
  );
  t = await startTestDispatch({
    ANTHROPIC_API_KEY: "test-anthropic-key",
    // The AI SDK's Anthropic provider takes the base URL with /v1.
    ANTHROPIC_BASE_URL: fake.baseUrl("anthropic"),
    DISPATCH_CONFIG_FILE: configFile,
  });
});
afterAll(async () => {
  await t?.stop();
  await fake?.close();
  await rm(configDir, { recursive: true, force: true });
});

async function runWith(config: Record<string, unknown>) {
  const res = await t.api("POST", "/api/v1/agent/runs", { prompt: "Do the task", config });
  expect(res.status, res.text).toBe(200);
  return res.body.run_id as string;
}

describe("the price table", () => {
  it("prices a call per million tokens, cached input at its own price; a dated snapshot is the same model", () => {
    const table = priceTable();
    expect(costOf(table, SONNET, { input_tokens: 1_000_000, output_tokens: 100_000 })).toBeCloseTo(4.5);
    expect(
      costOf(table, "anthropic/claude-sonnet-4-5-20250929", {
        input_tokens: 1_000_000,
        cached_input_tokens: 1_000_000,
        output_tokens: 0,
      }),
    ).toBeCloseTo(0.3);
    expect(costOf(table, "openai/gpt-5-2025-08-07", { input_tokens: 0, output_tokens: 1_000_000 })).toBe(10);
    expect(costOf(table, "gemini/gemini-2.5-pro", { input_tokens: 1_000_000, output_tokens: 0 })).toBe(1.25);
  });

  it("has no price for a model it does not know, and never guesses one", () => {
    expect(costOf(priceTable(), "anthropic/claude-made-up", { input_tokens: 10, output_tokens: 10 })).toBe(
      undefined,
    );
    expect(
      costOf(priceTable(), "openai-compatible/qwen2.5-coder", { input_tokens: 1, output_tokens: 1 }),
    ).toBe(undefined);
  });

  it("has a default for every model the catalog lists for the external agents", () => {
    for (const id of [
      "anthropic/claude-sonnet-4-5",
      "anthropic/claude-opus-4-1",
      "anthropic/claude-haiku-4-5",
      "openai/gpt-5-codex",
      "openai/gpt-5",
      "gemini/gemini-2.5-pro",
      "gemini/gemini-2.5-flash",
    ]) {
      expect(DEFAULT_PRICES[id], id).toBeDefined();
    }
  });

  it("formats costs as people read them", () => {
    expect(formatCost(0.4213)).toBe("$0.42");
    expect(formatCost(12.5)).toBe("$12.50");
    expect(formatCost(0.003)).toBe("<$0.01");
    expect(formatCost(0)).toBe("$0.00");
  });
});

describe("cost on the thread surfaces", () => {
  const finished = (inference_cost?: number) =>
    ({
      run_id: "0193-run",
      task_id: "0193-run",
      title: "Fix the login test",
      prompt: "Fix it",
      state: "SUCCEEDED",
      created_at: "2026-01-01T00:00:00.000Z",
      updated_at: "2026-01-01T00:02:31.000Z",
      started_at: "2026-01-01T00:00:01.000Z",
      finished_at: "2026-01-01T00:02:31.000Z",
      run_time: "PT2M30S",
      session_id: "sess",
      session_link: "http://dispatch.test/sessions/sess",
      source: "API",
      creator: { type: "user", uid: "u", display_name: "Ada" },
      agent_config: { model_id: SONNET },
      artifacts: [],
      request_usage: {
        input_tokens: 1000,
        output_tokens: 100,
        total_tokens: 1100,
        ...(inference_cost !== undefined ? { inference_cost } : {}),
      },
      is_sandbox_running: false,
      scope: { type: "Team", uid: "t" },
      metadata: {},
    }) as unknown as RunItem;

  it("the GitHub tracking comment and the Slack card show the cost next to the run time, only when known", () => {
    expect(renderTrackingComment(finished(0.4213))).toContain("elapsed 2m 30s · $0.42");
    expect(JSON.stringify(renderStatusCard(finished(0.4213)))).toContain("elapsed 2m 30s · $0.42");
    expect(renderTrackingComment(finished())).not.toContain("$");
    expect(JSON.stringify(renderStatusCard(finished()))).not.toContain("$0");
  });
});

describe("usage read from provider responses (the model gateway)", () => {
  it("Anthropic's event stream: input with cache writes and reads, output from the last message_delta", () => {
    const reader = new ResponseUsage("anthropic", "/v1/messages", "text/event-stream; charset=utf-8");
    const events = [
      `event: message_start\ndata: {"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":1000,"output_tokens":1}}}\n\n`,
      `event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":250}}\n\n`,
    ].join("");
    // Split mid-line, as a stream arrives.
    reader.push(events.slice(0, 57));
    reader.push(events.slice(57));
    expect(reader.end()).toEqual({
      model: "claude-sonnet-4-5-20250929",
      input_tokens: 1120,
      cached_input_tokens: 1000,
      output_tokens: 250,
    });
  });

  it("OpenAI Responses (response.completed) and a Gemini JSON answer (model from the path)", () => {
    const openai = new ResponseUsage("openai", "/v1/responses", "text/event-stream");
    openai.push(
      `data: {"type":"response.completed","response":{"model":"gpt-5-codex","usage":{"input_tokens":500,"input_tokens_details":{"cached_tokens":200},"output_tokens":40}}}\n\n`,
    );
    expect(openai.end()).toEqual({
      model: "gpt-5-codex",
      input_tokens: 500,
      cached_input_tokens: 200,
      output_tokens: 40,
    });
    const gemini = new ResponseUsage(
      "gemini",
      "/v1beta/models/gemini-2.5-pro:generateContent",
      "application/json",
    );
    gemini.push(
      JSON.stringify({
        candidates: [],
        usageMetadata: { promptTokenCount: 300, candidatesTokenCount: 30, thoughtsTokenCount: 12 },
      }),
    );
    expect(gemini.end()).toEqual({
      model: "gemini-2.5-pro",
      input_tokens: 300,
      cached_input_tokens: 0,
      output_tokens: 42,
    });
  });
});

describe("request_usage.inference_cost", () => {
  it("is the run's model calls priced from the default table, on the run and in the list", async () => {
    turns.push(
      {
        calls: [{ name: "shell", input: { command: "echo hi" } }],
        usage: { input_tokens: 1000, output_tokens: 500 },
      },
      { text: "Done.", usage: { input_tokens: 2000, output_tokens: 100 } },
    );
    const id = await runWith({ model_id: SONNET });
    const run = await waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    // 3000 input at $3/MTok + 600 output at $15/MTok.
    expect(run.request_usage).toMatchObject({ input_tokens: 3000, output_tokens: 600 });
    expect(run.request_usage.inference_cost).toBeCloseTo(0.018, 6);
    const list = await t.api("GET", "/api/v1/agent/runs?limit=50");
    const listed = list.body.runs.find((r: { run_id: string }) => r.run_id === id);
    expect(listed.request_usage.inference_cost).toBeCloseTo(0.018, 6);
    // Each step's usage event says what it cost.
    const events = await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`);
    const usage = JSON.stringify(events.body);
    expect(usage).toContain('"cost_usd":0.0105');
  });

  it("uses the operator's price from dispatch.config.yaml", async () => {
    turns.push({ text: "Done.", usage: { input_tokens: 1000, output_tokens: 1000 } });
    const id = await runWith({ model_id: "anthropic/claude-house-model" });
    const run = await waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    // 1000 × $10/MTok + 1000 × $20/MTok.
    expect(run.request_usage.inference_cost).toBeCloseTo(0.03, 6);
  });

  it("is absent for a model without a price, and the transcript says why", async () => {
    turns.push({ text: "Done.", usage: { input_tokens: 1000, output_tokens: 1000 } });
    const id = await runWith({ model_id: "anthropic/claude-unpriced-test" });
    const run = await waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    expect(run.request_usage.input_tokens).toBe(1000);
    expect(run.request_usage).not.toHaveProperty("inference_cost");
    const events = await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`);
    expect(JSON.stringify(events.body)).toContain(
      "No price is known for model anthropic/claude-unpriced-test",
    );
  });
});

describe("config.max_cost_usd", () => {
  it("pauses the run once its cost passes the limit: BLOCKED, awaiting_budget, with the cost, the limit and what it needs", async () => {
    const before = fake.agentRequests().length;
    turns.push(
      // $0.0105: over a one-cent limit after the first step.
      {
        calls: [{ name: "shell", input: { command: "echo step" } }],
        usage: { input_tokens: 1000, output_tokens: 500 },
      },
      {
        calls: [{ name: "shell", input: { command: "echo never" } }],
        usage: { input_tokens: 1000, output_tokens: 500 },
      },
      { text: "Done." },
    );
    const id = await runWith({ model_id: SONNET, max_cost_usd: 0.01 });
    const run = await waitForState(t, id, ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR", "CANCELLED"], 30_000);
    turns.length = 0;
    expect(run.state).toBe("BLOCKED");
    expect(run.status_message).toMatchObject({ reason: "awaiting_budget" });
    expect(run.status_message.message).toContain("has cost $0.0105");
    expect(run.status_message.message).toContain("config.max_cost_usd");
    expect(run.status_message.message).toContain("$0.01");
    expect(run.request_usage.inference_cost).toBeCloseTo(0.0105, 6);
    expect(run.agent_config.max_cost_usd).toBe(0.01);
    // The second model call was never made.
    expect(fake.agentRequests().length - before).toBe(1);

    // A follow-up answers the run, but its limit is spent: it waits again without a model call.
    const followup = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "go on" });
    expect(followup.status, followup.text).toBeLessThan(300);
    await waitFor(
      async () => {
        const events = (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events;
        return (
          events.filter((e: { type: string; data: { state?: string } }) => e.data.state === "BLOCKED")
            .length === 2
        );
      },
      { what: "the answered run to wait again", timeoutMs: 30_000 },
    );
    expect((await t.api("GET", `/api/v1/agent/runs/${id}`)).body.status_message.reason).toBe(
      "awaiting_budget",
    );
    expect(fake.agentRequests().length - before).toBe(1);
    expect((await t.api("POST", `/api/v1/agent/runs/${id}/cancel`)).status).toBe(200);
  });

  it("is refused at create for a model without a price: nothing could count its calls", async () => {
    const res = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "x",
      config: { model_id: "anthropic/claude-unpriced-test", max_cost_usd: 1 },
    });
    expect(res.status, res.text).toBe(400);
    expect(res.body.detail).toContain("model anthropic/claude-unpriced-test has no price on this server");
    expect(res.body.detail).toContain("prices in dispatch.config.yaml");
  });

  it("stops a run whose model call turns out to have no price, saying so", () => {
    // The price may be gone by the time the run executes (the operator changed prices:): the first call
    // of that model ends the run rather than leaving its calls uncounted.
    const stops: Array<{ message: string; error_code?: string }> = [];
    const cost = new RunCost({
      prices: priceTable(),
      limit: { usd: 0.5, name: "its cost limit (config.max_cost_usd)" },
      before: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
      onUnpricedUnderLimit: (status) => stops.push(status),
      onLimitReached: () => {
        throw new Error("a model without a price does not reach the limit, it has no cost");
      },
      onUnpriced: () => {
        throw new Error("a run with a limit is stopped, not told its cost is unknown");
      },
    });
    expect(cost.charge(SONNET, { input_tokens: 1000, output_tokens: 10 })).toBeGreaterThan(0);
    expect(stops).toEqual([]);
    expect(cost.charge("anthropic/claude-unpriced-test", { input_tokens: 10, output_tokens: 10 })).toBe(
      undefined,
    );
    expect(stops).toHaveLength(1);
    expect(stops[0]).toMatchObject({ error_code: "cost_limit" });
    expect(stops[0]!.message).toContain("model anthropic/claude-unpriced-test has no price on this server");
    expect(stops[0]!.message).toContain("$0.50");
  });

  it("must be a positive number of dollars", async () => {
    for (const bad of [0, -1, "5", 1e9]) {
      const res = await t.api("POST", "/api/v1/agent/runs", { prompt: "x", config: { max_cost_usd: bad } });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.text).toContain("max_cost_usd");
    }
  });
});

describe("cost configuration", () => {
  async function withConfigFile(yaml: string): Promise<string> {
    const file = join(configDir, `bad-${Math.random().toString(36).slice(2)}.yaml`);
    await writeFile(file, yaml);
    try {
      loadConfig({ DISPATCH_DATA_DIR: configDir, DISPATCH_CONFIG_FILE: file });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error("the configuration was accepted");
  }

  it("refuses bad prices with a message naming the field", async () => {
    const negative = await withConfigFile(
      "prices:\n  anthropic/claude-sonnet-4-5:\n    input_per_mtok: -3\n    output_per_mtok: 15\n",
    );
    expect(negative).toContain("prices.anthropic/claude-sonnet-4-5.input_per_mtok");
    expect(negative).toContain("must be 0 or more");
    const missing = await withConfigFile("prices:\n  anthropic/claude-sonnet-4-5:\n    input_per_mtok: 3\n");
    expect(missing).toContain("prices.anthropic/claude-sonnet-4-5.output_per_mtok");
    const text = await withConfigFile(
      'prices:\n  anthropic/claude-sonnet-4-5:\n    input_per_mtok: "three"\n    output_per_mtok: 15\n',
    );
    expect(text).toContain("US dollars per million tokens");
    const key = await withConfigFile("prices:\n  sonnet:\n    input_per_mtok: 3\n    output_per_mtok: 15\n");
    expect(key).toContain("prices.sonnet");
    expect(key).toContain("provider/model");
  });

  it("refuses a DISPATCH_MAX_COST_USD that is not a positive amount", () => {
    for (const bad of ["0", "-1", "five"]) {
      expect(() => loadConfig({ DISPATCH_DATA_DIR: configDir, DISPATCH_MAX_COST_USD: bad })).toThrow(
        /DISPATCH_MAX_COST_USD/,
      );
    }
    expect(
      loadConfig({ DISPATCH_DATA_DIR: configDir, DISPATCH_MAX_COST_USD: "2.50" }).cost.defaultMaxCostUsd,
    ).toBe(2.5);
  });
});
