import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";

/**
 * Structured settings that do not fit environment variables (DESIGN.md): `dispatch.config.yaml`, at the
 * path in DISPATCH_CONFIG_FILE, else `./dispatch.config.yaml` when that file exists. Optional: without it
 * every setting has its default. Validated at start-up; an error names the file and the field.
 */
const SLACK_ID = /^[A-Z0-9][A-Z0-9_-]{1,40}$/;
const idList = (what: string) =>
  z.array(
    z
      .string()
      .regex(
        SLACK_ID,
        `must be Slack ${what} ids such as ${what === "user" ? "U" : what === "channel" ? "C" : "T"}0123ABCD`,
      ),
  );

/** Who may cancel a run or send it a follow-up from Slack. */
const Policy = z.enum(["channel", "requester"]);

const SlackSettingsSchema = z
  .object({
    /** Workspace (team) ids that may use the app; every workspace it is installed in when absent. */
    allowed_workspaces: idList("workspace").optional(),
    /** Channel ids where the app answers; every channel it is in when absent. */
    allowed_channels: idList("channel").optional(),
    /** User ids that may start and steer runs; every member when absent. */
    allowed_users: idList("user").optional(),
    /** Slack Connect: people from other organisations in shared channels. */
    allow_external_users: z.boolean().default(false),
    /** `channel`: anyone allowed in the run's channel; `requester`: only who started the run. */
    cancel: Policy.default("channel"),
    followup: Policy.default("channel"),
  })
  .strict();

const SettingsSchema = z
  .object({
    slack: SlackSettingsSchema.default({
      allow_external_users: false,
      cancel: "channel",
      followup: "channel",
    }),
  })
  // Other sections (environments, GitHub) belong to other parts of the service and are read there.
  .loose();

export type SlackSettings = z.infer<typeof SlackSettingsSchema>;
export type Settings = z.infer<typeof SettingsSchema>;

export class SettingsError extends Error {}

export const DEFAULT_SETTINGS_FILE = "dispatch.config.yaml";

/** Reads and validates the settings file; `explicit` (DISPATCH_CONFIG_FILE) must exist when given. */
export function loadSettings(explicit: string | undefined, cwd = process.cwd()): Settings {
  const path = explicit ? resolve(cwd, explicit) : resolve(cwd, DEFAULT_SETTINGS_FILE);
  if (!existsSync(path)) {
    if (explicit) throw new SettingsError(`DISPATCH_CONFIG_FILE: no such file ${path}`);
    return SettingsSchema.parse({});
  }
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, "utf8"));
  } catch (err) {
    throw new SettingsError(`${path}: not valid YAML: ${err instanceof Error ? err.message : String(err)}`);
  }
  return parseSettings(raw ?? {}, path);
}

/** Validates settings already parsed from YAML (or built in a test). */
export function parseSettings(raw: unknown, source = "settings"): Settings {
  const parsed = SettingsSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".") || "(top level)"}: ${i.message}`);
    throw new SettingsError(`Invalid settings in ${source}:\n${lines.join("\n")}`);
  }
  return parsed.data;
}
