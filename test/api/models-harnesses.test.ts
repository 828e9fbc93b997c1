import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";

// GET /agent/models says which harnesses can run each model, and lists the external agents' models once
// their provider key is configured. Nothing runs here (no worker): the listing and create-time checks only.

let root: string;
let d: TestDispatch;

/** The fields of Oz's Model, exactly: anything else a response carries is a Dispatch extension. */
const OZ_MODEL_FIELDS = ["description", "display_name", "id", "provider", "vision_supported"];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "dispatch-models-"));
  const configFile = join(root, "dispatch.config.yaml");
  await writeFile(
    configFile,
    JSON.stringify({ models: { aliases: { fast: "anthropic/claude-haiku-4-5" } } }),
  );
  d = await startTestDispatch({
    DISPATCH_CONFIG_FILE: configFile,
    DISPATCH_DEFAULT_MODEL: "openai/gpt-5",
    ANTHROPIC_API_KEY: "sk-ant-test",
    GEMINI_API_KEY: "gemini-test",
    DISPATCH_MAX_CONCURRENT_RUNS: "0",
  });
});
afterAll(async () => {
  await d?.stop();
  await rm(root, { recursive: true, force: true });
});

describe("GET /api/v1/agent/models: harnesses", () => {
  it("says which harnesses can run each model, keeping Oz's fields as they are", async () => {
    const res = await d.api("GET", "/api/v1/agent/models");
    expect(res.status, res.text).toBe(200);
    const byId = Object.fromEntries(res.body.models.map((m: { id: string }) => [m.id, m]));
    // The default model: the builtin and Codex (OpenAI) can run it.
    expect(byId["openai/gpt-5"].harnesses).toEqual(["oz", "codex"]);
    // An alias is the builtin's: an external agent is handed the model id as written.
    expect(byId.fast.harnesses).toEqual(["oz"]);
    // Claude Code's known models, listed because ANTHROPIC_API_KEY is set; the builtin runs them too.
    expect(byId["anthropic/claude-sonnet-4-5"]).toMatchObject({
      provider: "ANTHROPIC",
      vision_supported: true,
      harnesses: ["oz", "claude"],
    });
    expect(byId["anthropic/claude-sonnet-4-5"].description).toContain("Claude Code");
    // Gemini CLI's, because GEMINI_API_KEY is set: only the gemini harness runs them.
    expect(byId["gemini/gemini-2.5-pro"]).toMatchObject({ provider: "GOOGLE", harnesses: ["gemini"] });
    // No OpenAI key: Codex's known models are not offered.
    expect(byId["openai/gpt-5-codex"]).toBeUndefined();
    for (const model of res.body.models) {
      const { harnesses, ...oz } = model;
      expect(
        Object.keys(oz).every((k) => OZ_MODEL_FIELDS.includes(k)),
        JSON.stringify(model),
      ).toBe(true);
      expect(["OPENAI", "ANTHROPIC", "GOOGLE", "UNKNOWN"]).toContain(oz.provider);
      expect(typeof oz.vision_supported).toBe("boolean");
      expect(harnesses.length).toBeGreaterThan(0);
    }
  });

  it("a listed model runs on the harness it names; the default model is not forced on another provider's agent", async () => {
    const claude = await d.api("POST", "/api/v1/agent/runs", {
      prompt: "hi",
      config: { harness: { type: "claude" }, model_id: "anthropic/claude-sonnet-4-5" },
    });
    expect(claude.status, claude.text).toBe(200);
    // No model_id: DISPATCH_DEFAULT_MODEL is OpenAI's, so Claude Code runs its default model (one with a
    // price, named on the run: the model gateway forwards that model only) instead of a refusal.
    const bare = await d.api("POST", "/api/v1/agent/runs", {
      prompt: "hi",
      config: { harness: { type: "claude" } },
    });
    expect(bare.status, bare.text).toBe(200);
    const run = await d.api("GET", `/api/v1/agent/runs/${bare.body.run_id}`);
    expect(run.body.agent_config.harness).toEqual({ type: "claude" });
    expect(run.body.agent_config.model_id).toBe("anthropic/claude-sonnet-4-5");
    // A model of another provider is refused with the reason, at create.
    const wrong = await d.api("POST", "/api/v1/agent/runs", {
      prompt: "hi",
      config: { harness: { type: "gemini" }, model_id: "anthropic/claude-sonnet-4-5" },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.detail).toContain("gemini");
  });
});
