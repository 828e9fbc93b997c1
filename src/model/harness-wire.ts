/**
 * `agent_config.harness` on the wire (docs/api.md) against the keys of the harness registry.
 *
 * Oz names harnesses by `type ∈ oz | claude | codex | gemini`; its SDKs validate responses against
 * that enum. Dispatch's own harnesses are all `oz` on the wire and told apart by `name` (a Dispatch
 * extension): `{type: "oz", name: "builtin"}` is the registry key `builtin`. Runs store the registry
 * key (`{type: "builtin"}`), as they always have, and are shown in the wire form.
 */

export const WIRE_HARNESS_TYPES = ["oz", "claude", "codex", "gemini"] as const;
export type WireHarnessType = (typeof WIRE_HARNESS_TYPES)[number];

/** Dispatch's own harnesses: on the wire `{type: "oz", name}`. */
export const OZ_HARNESS_NAMES = ["builtin", "scripted"] as const;

export interface WireHarness {
  type: WireHarnessType;
  /** Dispatch extension: which of Dispatch's own harnesses, with `type: "oz"`. */
  name?: string;
}

/** The harness as a request gives it: the wire form, or the legacy `{type: "builtin" | "scripted"}`. */
export interface RequestedHarness {
  type: string;
  name?: string | null;
}

/**
 * The registry key a requested harness means. `{type: "oz"}` without a name is Dispatch's default for
 * the run (`defaultKey`: builtin with a model, else scripted); `{type: "builtin"}` is the legacy
 * spelling of `{type: "oz", name: "builtin"}`. A `name` with a type other than `oz` is a mistake
 * the caller should hear about rather than have ignored: returns a sentence then.
 */
export function harnessKeyOf(requested: RequestedHarness, defaultKey: string): string | { problem: string } {
  const name = requested.name ?? undefined;
  if (requested.type === "oz") return name ?? defaultKey;
  if (name !== undefined && name !== requested.type) {
    return {
      problem: `config.harness.name: only harness type "oz" takes a name (Dispatch's own harnesses: ${OZ_HARNESS_NAMES.join(", ")}); for "${requested.type}" leave name out`,
    };
  }
  return requested.type;
}

/** The wire form of a stored registry key: `builtin` → `{type: "oz", name: "builtin"}`, `claude` → `{type: "claude"}`. */
export function wireHarnessOf(key: string): WireHarness {
  if ((WIRE_HARNESS_TYPES as readonly string[]).includes(key) && key !== "oz") {
    return { type: key as WireHarnessType };
  }
  // Any other key is one of Dispatch's own harnesses (builtin, scripted, or one added later).
  return key === "oz" ? { type: "oz" } : { type: "oz", name: key };
}

/**
 * The model provider each external agent CLI runs (model ids `<provider>/<model>`): it reaches that
 * provider only, through Dispatch's model gateway. Aliases of `models.aliases` are the builtin harness's.
 */
export const EXTERNAL_MODEL_PROVIDERS: Readonly<Record<string, string>> = {
  claude: "anthropic",
  codex: "openai",
  gemini: "gemini",
};

/**
 * The model an external agent runs when neither the run nor DISPATCH_DEFAULT_MODEL names one of its
 * provider: Dispatch's choice (a model it has a price for), never the CLI's own, so that the model gateway
 * knows the one model the run may call and its cost limit can count every call.
 */
export const EXTERNAL_DEFAULT_MODELS: Readonly<Record<string, string>> = {
  claude: "anthropic/claude-sonnet-4-5",
  codex: "openai/gpt-5-codex",
  gemini: "gemini/gemini-2.5-pro",
};

/**
 * The model a run gets when it names none: DISPATCH_DEFAULT_MODEL for Dispatch's own harnesses; for an
 * external agent that model when it is of the agent's provider, else the agent's default model above.
 */
export function defaultModelFor(requested: RequestedHarness | undefined, defaultModel: string | undefined) {
  const provider = requested ? EXTERNAL_MODEL_PROVIDERS[requested.type] : undefined;
  if (!provider || !requested) return defaultModel;
  return defaultModel?.startsWith(`${provider}/`) ? defaultModel : EXTERNAL_DEFAULT_MODELS[requested.type];
}
