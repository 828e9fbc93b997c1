import { z } from "zod";

/**
 * How configuration variables are read and how their problems are told (src/config.ts, config-github.ts):
 * a bad value stops the process with one line per variable, naming it and what is wrong.
 */

export class ConfigError extends Error {}

/** What is wrong with one variable: `path` names it. */
export interface Problem {
  path: PropertyKey[];
  message: string;
}

/** Every configuration error reads the same: one line per variable, naming it and what is wrong. */
export function invalidConfiguration(problems: readonly Problem[]): ConfigError {
  const lines = problems.map((p) => `  ${p.path.join(".")}: ${p.message}`);
  return new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
}

/** The variables of `env` that `schema` knows, leaving out unset and empty ones. */
export function variablesFor(schema: z.ZodObject, env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] =>
        entry[0] in schema.shape && entry[1] !== undefined && entry[1] !== "",
    ),
  );
}

/** The parsed variables, or the configuration error listing every problem found. */
export function parseVariables<S extends z.ZodType>(
  schema: S,
  variables: Record<string, string>,
): z.output<S> {
  const parsed = schema.safeParse(variables);
  if (!parsed.success) throw invalidConfiguration(parsed.error.issues);
  return parsed.data;
}

/** A true/false variable (also 1/0, yes/no), with its default when unset. */
export const flag = (fallback: boolean) =>
  z
    .string()
    .regex(/^(true|false|1|0|yes|no)$/i, "must be true or false")
    .transform((v) => /^(true|1|yes)$/i.test(v))
    .default(fallback);

/** Records a problem with `variable` on a transform's context; says whether any was recorded. */
export function problemRecorder(ctx: z.RefinementCtx) {
  let found = false;
  return {
    add(variable: string, message: string): void {
      found = true;
      ctx.addIssue({ code: "custom", path: [variable], message });
    },
    get found() {
      return found;
    },
  };
}
