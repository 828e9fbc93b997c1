import { z } from "zod";
import type { ModelsSettings } from "./config-file.ts";

/** The providers a model id can name: `<provider>/<model>`. */
export const MODEL_PROVIDERS = ["anthropic", "openai", "openai-compatible"] as const;

/** The environment variables that choose and reach model providers. */
export const ModelsEnvSchema = z.object({
  DISPATCH_DEFAULT_MODEL: z.string().min(1).optional(),
  ANTHROPIC_API_KEY: z.string().min(1).optional(),
  ANTHROPIC_BASE_URL: z.url().optional(),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: z.url().optional(),
  OPENAI_COMPATIBLE_BASE_URL: z.url().optional(),
  OPENAI_COMPATIBLE_API_KEY: z.string().min(1).optional(),
  /** The Gemini API (the gemini harness): key and base URL (https://generativelanguage.googleapis.com). */
  GEMINI_API_KEY: z.string().min(1).optional(),
  GEMINI_BASE_URL: z.url().optional(),
});

/**
 * Which models the builtin harness can reach, from the Dispatch process's own configuration
 * (environment variables and dispatch.config.yaml). Keys live here only: they are never handed to a
 * run's sandbox.
 */
export interface ModelsConfig {
  /** DISPATCH_DEFAULT_MODEL: used when a run names no model (filled in at create time). */
  defaultModel?: string | undefined;
  /** Named aliases → `provider/model` (or another alias), from `models.aliases`. */
  aliases: Record<string, string>;
  anthropic: { apiKey?: string | undefined; baseUrl?: string | undefined };
  openai: { apiKey?: string | undefined; baseUrl?: string | undefined };
  /** Any chat-completions endpoint (Ollama, vLLM, llama.cpp server, LM Studio). */
  openaiCompatible: { baseUrl?: string | undefined; apiKey?: string | undefined };
  /** The Gemini API, for the gemini harness (Gemini CLI) only. */
  gemini: { apiKey?: string | undefined; baseUrl?: string | undefined };
}

export const EMPTY_MODELS_CONFIG: ModelsConfig = {
  aliases: {},
  anthropic: {},
  openai: {},
  openaiCompatible: {},
  gemini: {},
};

/**
 * The variables win over `models:` of dispatch.config.yaml; `env` holds the key that
 * `models.openai_compatible.api_key_env` names.
 */
export function modelsConfig(
  vars: z.output<typeof ModelsEnvSchema>,
  settings: ModelsSettings,
  env: NodeJS.ProcessEnv,
): ModelsConfig {
  const keyEnv = settings.openai_compatible.api_key_env;
  return {
    defaultModel: vars.DISPATCH_DEFAULT_MODEL,
    aliases: settings.aliases,
    anthropic: { apiKey: vars.ANTHROPIC_API_KEY, baseUrl: vars.ANTHROPIC_BASE_URL },
    openai: { apiKey: vars.OPENAI_API_KEY, baseUrl: vars.OPENAI_BASE_URL },
    openaiCompatible: {
      baseUrl: vars.OPENAI_COMPATIBLE_BASE_URL ?? settings.openai_compatible.base_url,
      apiKey: vars.OPENAI_COMPATIBLE_API_KEY ?? (keyEnv ? env[keyEnv] || undefined : undefined),
    },
    gemini: { apiKey: vars.GEMINI_API_KEY, baseUrl: vars.GEMINI_BASE_URL },
  };
}
