import type { LanguageModelV4 } from "@ai-sdk/provider";
import { MODEL_PROVIDERS, type ModelsConfig } from "../../models-config.ts";

/** A model the run cannot use, with a message that says exactly what to configure. */
export class ModelConfigError extends Error {
  readonly code: string;
  constructor(message: string, code = "model_not_configured") {
    super(message);
    this.code = code;
  }
}

export interface ResolvedModel {
  /** The `provider/model` actually used (after aliases). */
  id: string;
  model: LanguageModelV4;
  /** Whether the model takes images (GET /agent/models `vision_supported`); none are sent when false or absent. */
  vision?: boolean;
}

/** Turns a run's model_id into a model: injected in tests, built from configuration otherwise. */
export type ModelResolver = (modelId: string | undefined) => ResolvedModel | Promise<ResolvedModel>;

const MAX_ALIAS_DEPTH = 8;

/** Follows aliases to a `provider/model` id; throws ModelConfigError for anything unusable. */
export function canonicalModelId(modelId: string | undefined, config: ModelsConfig): string {
  const requested = modelId ?? config.defaultModel;
  if (!requested) {
    throw new ModelConfigError(
      "No model configured for the builtin harness: set config.model_id on the run (provider/model, e.g. " +
        "anthropic/claude-sonnet-4-5, openai/gpt-5 or openai-compatible/qwen2.5-coder) or DISPATCH_DEFAULT_MODEL " +
        'on the Dispatch server, or create the run with config.harness.type "scripted"',
    );
  }
  let id = requested;
  for (let depth = 0; Object.hasOwn(config.aliases, id); depth++) {
    if (depth >= MAX_ALIAS_DEPTH) {
      throw new ModelConfigError(
        `model alias "${requested}" loops: check models.aliases in dispatch.config.yaml`,
      );
    }
    id = config.aliases[id]!;
  }
  const slash = id.indexOf("/");
  const aliases = Object.keys(config.aliases);
  const aliasHint = aliases.length
    ? ` (configured aliases: ${aliases.join(", ")})`
    : " (no aliases configured: add them under models.aliases in dispatch.config.yaml)";
  if (slash <= 0 || slash === id.length - 1) {
    throw new ModelConfigError(
      `model_id "${requested}" is neither provider/model (anthropic/…, openai/…, openai-compatible/…) nor a configured alias${aliasHint}`,
      "unknown_model",
    );
  }
  const provider = id.slice(0, slash);
  if (!(MODEL_PROVIDERS as readonly string[]).includes(provider)) {
    throw new ModelConfigError(
      `unknown model provider "${provider}" in model_id "${requested}": use anthropic/<model>, openai/<model> or openai-compatible/<model>, or an alias${aliasHint}`,
      "unknown_provider",
    );
  }
  return id;
}

/**
 * ANTHROPIC_BASE_URL as Anthropic's SDKs and Claude Code take it (`https://api.anthropic.com`, they add
 * `/v1/messages`) for the AI SDK, whose base includes `/v1`: one setting serves both harnesses.
 */
function anthropicApiBase(baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, "");
  return /\/v1$/.test(trimmed) ? trimmed : `${trimmed}/v1`;
}

/**
 * What a model id needs from the configuration, checked: the canonical id and its provider's settings, or
 * a ModelConfigError saying what to configure. Synchronous and without the providers' SDKs, so that
 * start-up and GET /agent/models can check models without loading them.
 */
export type ModelSettings = { id: string; name: string } & (
  | { provider: "anthropic"; apiKey: string; baseUrl?: string | undefined }
  | { provider: "openai"; apiKey: string; baseUrl?: string | undefined }
  | { provider: "openai-compatible"; baseUrl: string; apiKey?: string | undefined }
);

export function checkModel(modelId: string | undefined, config: ModelsConfig): ModelSettings {
  const id = canonicalModelId(modelId, config);
  const slash = id.indexOf("/");
  const provider = id.slice(0, slash);
  const name = id.slice(slash + 1);
  switch (provider) {
    case "anthropic": {
      const { apiKey, baseUrl } = config.anthropic;
      if (!apiKey) {
        throw new ModelConfigError(
          `model "${id}" needs an Anthropic API key: set ANTHROPIC_API_KEY in the Dispatch server's environment (and ANTHROPIC_BASE_URL for a proxy or compatible endpoint), then restart it`,
        );
      }
      return { id, name, provider, apiKey, baseUrl };
    }
    case "openai": {
      const { apiKey, baseUrl } = config.openai;
      if (!apiKey) {
        throw new ModelConfigError(
          `model "${id}" needs an OpenAI API key: set OPENAI_API_KEY in the Dispatch server's environment (and OPENAI_BASE_URL for a proxy), then restart it; for a local OpenAI-compatible server use openai-compatible/<model>`,
        );
      }
      return { id, name, provider, apiKey, baseUrl };
    }
    default: {
      const { apiKey, baseUrl } = config.openaiCompatible;
      if (!baseUrl) {
        throw new ModelConfigError(
          `model "${id}" needs the base URL of an OpenAI-compatible server: set OPENAI_COMPATIBLE_BASE_URL (or models.openai_compatible.base_url in dispatch.config.yaml), e.g. http://127.0.0.1:11434/v1 for Ollama, then restart Dispatch`,
        );
      }
      return { id, name, provider: "openai-compatible", baseUrl, apiKey };
    }
  }
}

/**
 * The resolver used by a running server: providers built from ModelsConfig. A provider's SDK is loaded
 * when a run first uses one of its models, not at start: a server that runs no builtin run never holds it.
 */
export function configModelResolver(config: ModelsConfig): ModelResolver {
  return async (modelId) => {
    const settings = checkModel(modelId, config);
    return { id: settings.id, model: await buildModel(settings), vision: visionSupported(settings.id) };
  };
}

async function buildModel(settings: ModelSettings): Promise<LanguageModelV4> {
  switch (settings.provider) {
    case "anthropic": {
      const { createAnthropic } = await import("@ai-sdk/anthropic");
      const { apiKey, baseUrl } = settings;
      return createAnthropic({ apiKey, ...(baseUrl ? { baseURL: anthropicApiBase(baseUrl) } : {}) })(
        settings.name,
      );
    }
    case "openai": {
      const { createOpenAI } = await import("@ai-sdk/openai");
      const { apiKey, baseUrl } = settings;
      return createOpenAI({ apiKey, ...(baseUrl ? { baseURL: baseUrl } : {}) })(settings.name);
    }
    case "openai-compatible": {
      const { createOpenAICompatible } = await import("@ai-sdk/openai-compatible");
      const { apiKey, baseUrl } = settings;
      return createOpenAICompatible({
        name: "openai-compatible",
        baseURL: baseUrl,
        includeUsage: true,
        ...(apiKey ? { apiKey } : {}),
      }).chatModel(settings.name);
    }
  }
}

/**
 * Whether the model (a canonical `provider/model` id) takes images. Known families only: Claude 3 and
 * later, GPT-4o, GPT-4.1, GPT-5 and the o-series do; on an openai-compatible server, models whose names say
 * vision (llava, *-vl, *vision*, pixtral, gemma3, minicpm-v, moondream); any other is not assumed to.
 */
export function visionSupported(id: string): boolean {
  const [provider, name = ""] = [id.slice(0, id.indexOf("/")), id.slice(id.indexOf("/") + 1)];
  if (provider === "anthropic") return /^claude-(3|[a-z]+-[4-9]|[4-9])/.test(name);
  if (provider === "openai") return /^(gpt-4o|gpt-4\.1|gpt-5|o[1-9])/.test(name);
  if (provider === "openai-compatible") {
    return /(^|[/:_-])(llava|bakllava|pixtral|gemma-?3|minicpm-v|moondream)|[-_.]vl([-_.:]|$)|vision/i.test(
      name,
    );
  }
  return false;
}

/** For start-up logs: what a run without a model_id would use, or why it cannot. */
export function describeDefaultModel(config: ModelsConfig): { ok: boolean; text: string } {
  if (!config.defaultModel) {
    return { ok: true, text: "scripted (no model configured: a deterministic stand-in, not an LLM)" };
  }
  try {
    const id = checkModel(config.defaultModel, config).id;
    return {
      ok: true,
      text: `builtin (${config.defaultModel}${id !== config.defaultModel ? ` → ${id}` : ""})`,
    };
  } catch (err) {
    return { ok: false, text: `builtin (${config.defaultModel}): ${(err as Error).message}` };
  }
}
