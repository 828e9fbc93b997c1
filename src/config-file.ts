import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { BudgetsSettingsSchema, NO_BUDGETS } from "./config-budgets.ts";
import { AGENT_NAMES } from "./model/agent-wording.ts";

/**
 * Structured settings that do not fit environment variables: `dispatch.config.yaml`, at the
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
    /**
     * How long a channel's members (conversations.members) are remembered: the access rule asks for every
     * read and action, and someone removed from the channel keeps access at most this long.
     */
    membership_cache_seconds: z.number().int().min(0).max(3600).default(30),
  })
  .strict();

/** A git repository cloned into a run's workspace before the agent starts. */
const EnvironmentRepoSchema = z
  .object({
    /** https://…, ssh, file:// or a local path; never with a token in it (use token_env). */
    url: z.string().min(1),
    /** A branch, tag or commit; the remote's default branch when absent. */
    ref: z.string().min(1).optional(),
    /** Where in the workspace, relative; the repository's name when absent. */
    path: z.string().min(1).optional(),
    /** The environment variable (of the Dispatch process) holding a token for a private https repo. */
    token_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
      .optional(),
  })
  .strict();

const EnvironmentSchema = z
  .object({
    description: z.string().optional(),
    repos: z.array(EnvironmentRepoSchema).default([]),
    /** Shell commands run in order in the sandbox, with network, on a run's first execution. */
    setup: z.array(z.string().min(1)).default([]),
    /** Whether the agent's own commands get the network (setup steps always do). */
    agent_network: z.boolean().default(false),
    setup_timeout_minutes: z
      .number()
      .positive()
      .max(24 * 60)
      .default(30),
  })
  .strict();

const SkillsSettingsSchema = z
  .object({
    /** Local directories searched for skills: `<dir>/<name>/SKILL.md` and `<dir>/<owner>/<repo>/…`. */
    dirs: z.array(z.string().min(1)).default([]),
    /** owner/repo → a local checkout path or a git URL (file://, https://) that stands for the repo. */
    repos: z
      .record(z.string().regex(/^[^/\s:]+\/[^/\s:]+$/, "must be owner/repo"), z.string().min(1))
      .default({}),
    /** Fetch owner/repo not listed in `repos` from https://github.com (at execution time). */
    github: z.boolean().default(true),
  })
  .strict();

/** Models for the builtin harness: aliases and an OpenAI-compatible endpoint (keys stay in env vars). */
const ModelsSettingsSchema = z
  .object({
    /** name → provider/model (or another alias), e.g. `fast: anthropic/claude-haiku-4-5`. */
    aliases: z
      .record(
        z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/, "alias names are letters, digits, . _ : -"),
        z.string().min(1),
      )
      .default({}),
    /** Any chat-completions server (Ollama, vLLM, llama.cpp server, LM Studio): openai-compatible/<model>. */
    openai_compatible: z
      .object({
        base_url: z.url().optional(),
        /** The environment variable (of the Dispatch process) holding its API key, if it needs one. */
        api_key_env: z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
          .optional(),
      })
      .strict()
      .default({}),
    /**
     * Models (`provider/model`) an external agent (claude, codex, gemini) may call through Dispatch's model
     * gateway besides its run's own model_id; the gateway refuses every other. Default: none.
     */
    gateway_allowed: z
      .array(
        z
          .string()
          .regex(
            /^(anthropic|openai|gemini)\/[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/,
            "must be provider/model of an external agent's provider, such as anthropic/claude-haiku-4-5",
          ),
      )
      .default([]),
  })
  .strict();

/** Limits of the builtin agent loop. */
const BuiltinSettingsSchema = z
  .object({
    /** Model calls per execution before the run fails. */
    max_steps: z.number().int().min(1).max(10_000).default(100),
    /** Wall-clock limit when a run sets no max_run_minutes. */
    max_run_minutes: z.number().int().min(1).max(10_080).default(30),
    /** Default timeout of one shell tool call (the agent may ask for up to 10× that). */
    command_timeout_seconds: z.number().int().min(1).max(86_400).default(120),
  })
  .strict();

/** MCP servers runs may name by `url`: Dispatch itself connects to them, so the operator decides which. */
const McpSettingsSchema = z
  .object({
    /**
     * Origins (`https://mcp.example.com`: any path there) or origin + path prefixes
     * (`https://example.com/mcp`: that path and below); a run naming any other `url` is refused.
     */
    allowed_urls: z
      .array(z.url({ protocol: /^https?$/, error: "must be an http(s) URL such as https://mcp.example.com" }))
      .default([]),
  })
  .strict();

/** Git hosts runs may name by URL: Dispatch's own process fetches and pushes them, so the operator decides. */
const GitSettingsSchema = z
  .object({
    /**
     * Hosts a run may name in `config.repository` by https:// URL, besides owner/repo on GITHUB_SERVER_URL:
     * `git.example.com` (port 443) or `git.example.com:8443`. Their addresses must be public when reached.
     */
    allowed_hosts: z
      .array(
        z
          .string()
          .regex(
            /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(?::\d{1,5})?$/,
            "must be a host name, optionally with a port, such as git.example.com or git.example.com:8443",
          ),
      )
      .default([]),
  })
  .strict();

const AUTOFIX_ATTEMPTS = z
  .number({ error: "must be a whole number of attempts, such as 3 (0 turns autofix off)" })
  .int("must be a whole number of attempts, such as 3 (0 turns autofix off)")
  .min(0, "must be 0 (off) or more")
  .max(10, "must be at most 10");

/** The `github:` section: who may act through issue and pull-request comments. */
const GitHubSettingsSchema = z
  .object({
    /** The least repository role (collaborator permission) a commenter needs to start or steer runs. */
    min_permission: z.enum(["read", "triage", "write", "maintain", "admin"]).default("write"),
    /** How long a commenter's role is remembered (a burst of mentions makes one permission call). */
    permission_cache_seconds: z.number().int().min(0).max(3600).default(60),
    /**
     * Per-repository settings by `owner/repo` (matched without regard to case): `agent`, the agent runs
     * started there use unless the comment names one (`@dispatch /codex …`). A repository not listed gets
     * the server's default agent.
     */
    repositories: z
      .record(
        z.string(),
        z
          .object({
            agent: z
              .enum(AGENT_NAMES as [string, ...string[]], {
                error: `must be one of the agents: ${AGENT_NAMES.join(", ")}`,
              })
              .optional(),
            /** This repository's own CI autofix limit (0: off here). */
            autofix: z.object({ max_attempts: AUTOFIX_ATTEMPTS }).strict().optional(),
          })
          .strict(),
      )
      // Checked here rather than by the key's schema, so that the message names the key and says why.
      .superRefine((repositories, ctx) => {
        for (const key of Object.keys(repositories)) {
          if (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(key)) {
            ctx.addIssue({ code: "custom", path: [key], message: "repository keys are owner/repo" });
          }
        }
      })
      .default({}),
    /** Labelling an issue with this starts a run from its title and body (one active run per issue). */
    label: z
      .string()
      .min(1, "must name a label, such as dispatch")
      .max(50, "GitHub labels are at most 50 characters")
      .default("dispatch"),
    /**
     * A failed CI run on the head commit of a pull request a run owns is an automatic follow-up on that run,
     * at most `max_attempts` times per pull request (0: never).
     */
    autofix: z
      .object({ max_attempts: AUTOFIX_ATTEMPTS.default(3) })
      .strict()
      .default({ max_attempts: 3 }),
  })
  .strict();

export type GitHubSettings = z.infer<typeof GitHubSettingsSchema>;

/** Who may follow up on or stop a run from its Linear session: anyone in the team, or only who started it. */
const LinearPolicy = z.enum(["anyone", "requester"]);

/** The `linear:` section: the Linear agent's steering policy and each team's default repository. */
const LinearSettingsSchema = z
  .object({
    followup: LinearPolicy.default("anyone"),
    cancel: LinearPolicy.default("anyone"),
    /** How long a team's member list is remembered (a burst of checks makes one GraphQL query). */
    membership_cache_seconds: z.number().int().min(0).max(3600).default(30),
    /**
     * Per team, by its key (`ENG`): `repository`, where runs of the team's issues work when neither the
     * prompt (`in owner/repo[@base]`) nor a GitHub link on the issue names one.
     */
    teams: z
      .record(z.string(), z.object({ repository: z.string().min(1) }).strict())
      // Checked here rather than by the key's schema, so that the message names the key and says why.
      .superRefine((teams, ctx) => {
        for (const key of Object.keys(teams)) {
          if (!/^[A-Za-z0-9_]{1,20}$/.test(key)) {
            ctx.addIssue({
              code: "custom",
              path: [key],
              message: "team keys are Linear team keys such as ENG",
            });
          }
        }
      })
      .default({}),
  })
  .strict();

export type LinearSettings = z.infer<typeof LinearSettingsSchema>;

/** A Jira project key: an upper-case letter, then upper-case letters, digits or underscores. */
const JIRA_PROJECT_KEY = /^[A-Z][A-Z0-9_]{0,254}$/;
const jiraProjectKeyMessage = "project keys are Jira project keys such as PROJ";

/** A workflow transition, named by the transition or by the status it leads to (as Jira shows them). */
const TransitionName = z.string().min(1, "must name a transition or a status, such as In Progress").max(255);

/** The `jira:` section: which projects Dispatch answers in, each one's defaults, the label and steering. */
const JiraSettingsSchema = z
  .object({
    /** Project keys where Dispatch starts and steers runs; every project the service account sees when absent. */
    allowed_projects: z.array(z.string().regex(JIRA_PROJECT_KEY, jiraProjectKeyMessage)).optional(),
    /** Adding this label to an issue starts a run from it (one active run per issue). */
    label: z.string().min(1, "must name a label, such as dispatch").max(255).default("dispatch"),
    /** Who may follow up on or cancel a run from its issue: anyone who can browse the project, or its requester. */
    followup: LinearPolicy.default("anyone"),
    cancel: LinearPolicy.default("anyone"),
    /** How long a person's browse permission on a project is remembered (a burst of checks makes one call). */
    permission_cache_seconds: z.number().int().min(0).max(3600).default(60),
    /**
     * Per project, by its key (`PROJ`): `repository`, where runs of its issues work when neither the request
     * (`in owner/repo[@base]`) nor a GitHub link on the issue names one; `transitions`, the workflow
     * transitions Dispatch makes on the issue when its run starts and when it opens a pull request.
     */
    projects: z
      .record(
        z.string(),
        z
          .object({
            repository: z.string().min(1).optional(),
            transitions: z
              .object({ started: TransitionName.optional(), pull_request: TransitionName.optional() })
              .strict()
              .default({}),
          })
          .strict(),
      )
      // Checked here rather than by the key's schema, so that the message names the key and says why.
      .superRefine((projects, ctx) => {
        for (const key of Object.keys(projects)) {
          if (!JIRA_PROJECT_KEY.test(key)) {
            ctx.addIssue({ code: "custom", path: [key], message: jiraProjectKeyMessage });
          }
        }
      })
      .default({}),
  })
  .strict();

export type JiraSettings = z.infer<typeof JiraSettingsSchema>;

/** USD per million tokens: a price of the table in pricing.ts. */
const perMtok = z
  .number({ error: "must be a number of US dollars per million tokens, such as 3 or 0.25" })
  .nonnegative("must be 0 or more (US dollars per million tokens)")
  .max(10_000, "must be at most 10000 (US dollars per million tokens)");

/**
 * `prices:` model id (`provider/model`) → its price, over Dispatch's defaults (pricing.ts): a run's
 * inference_cost and its cost limit use them. A model with no price has no cost shown.
 */
const PricesSettingsSchema = z
  .record(
    z.string(),
    z
      .object({
        input_per_mtok: perMtok,
        output_per_mtok: perMtok,
        /** Input read from the provider's prompt cache; the input price when absent. */
        cached_input_per_mtok: perMtok.optional(),
      })
      .strict(),
  )
  // Checked here rather than by the key's schema, so that the message names the key and says why.
  .superRefine((prices, ctx) => {
    for (const key of Object.keys(prices)) {
      if (!/^[a-z][a-z0-9-]*\/\S+$/.test(key)) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message:
            "price keys are model ids as config.model_id names them: provider/model, such as anthropic/claude-sonnet-4-5",
        });
      }
    }
  });

const SettingsSchema = z
  .object({
    models: ModelsSettingsSchema.default({ aliases: {}, openai_compatible: {}, gateway_allowed: [] }),
    builtin: BuiltinSettingsSchema.default({
      max_steps: 100,
      max_run_minutes: 30,
      command_timeout_seconds: 120,
    }),
    environments: z
      .record(
        z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "environment ids are letters, digits, . _ -"),
        EnvironmentSchema,
      )
      .default({}),
    skills: SkillsSettingsSchema.default({ dirs: [], repos: {}, github: true }),
    slack: SlackSettingsSchema.default({
      allow_external_users: false,
      cancel: "channel",
      followup: "channel",
      membership_cache_seconds: 30,
    }),
    github: GitHubSettingsSchema.default({
      min_permission: "write",
      permission_cache_seconds: 60,
      repositories: {},
      label: "dispatch",
      autofix: { max_attempts: 3 },
    }),
    linear: LinearSettingsSchema.default({
      followup: "anyone",
      cancel: "anyone",
      membership_cache_seconds: 30,
      teams: {},
    }),
    jira: JiraSettingsSchema.default({
      label: "dispatch",
      followup: "anyone",
      cancel: "anyone",
      permission_cache_seconds: 60,
      projects: {},
    }),
    mcp: McpSettingsSchema.default({ allowed_urls: [] }),
    git: GitSettingsSchema.default({ allowed_hosts: [] }),
    prices: PricesSettingsSchema.default({}),
    budgets: BudgetsSettingsSchema.default(NO_BUDGETS),
  })
  // Other sections (environments, GitHub) belong to other parts of the service and are read there.
  .loose();

export type SlackSettings = z.infer<typeof SlackSettingsSchema>;
export type EnvironmentSettings = z.infer<typeof EnvironmentSchema>;
export type EnvironmentRepoSettings = z.infer<typeof EnvironmentRepoSchema>;
export type SkillsSettings = z.infer<typeof SkillsSettingsSchema>;
export type ModelsSettings = z.infer<typeof ModelsSettingsSchema>;
export type BuiltinSettings = z.infer<typeof BuiltinSettingsSchema>;
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
