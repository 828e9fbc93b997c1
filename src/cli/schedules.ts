import { parseArgs } from "node:util";
import type { AgentConfig, Dispatch, ScheduledAgentItem, ScheduleUpdateParams } from "@agent-dispatch/client";
import {
  apiClient,
  EXIT_OK,
  EXIT_USAGE,
  printJSON,
  reportApiError,
  table,
  UsageError,
} from "./api-output.ts";
import { SCHEDULES_USAGE } from "./schedule-commands.ts";
import { agoCell, whenLine } from "./time-text.ts";

const FIELDS = {
  name: { type: "string" },
  cron: { type: "string" },
  timezone: { type: "string" },
  prompt: { type: "string" },
  skill: { type: "string" },
  model: { type: "string" },
  env: { type: "string" },
  repo: { type: "string" },
  json: { type: "boolean" },
} as const;

type FieldValues = {
  [K in keyof typeof FIELDS]?: (typeof FIELDS)[K]["type"] extends "boolean" ? boolean : string;
};

/** `dispatch schedules list|get|create|update|pause|resume|delete`: the team's scheduled agents. */
export async function schedulesCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`Usage:\n${SCHEDULES_USAGE}\n`);
    return sub === undefined ? EXIT_USAGE : EXIT_OK;
  }
  try {
    switch (sub) {
      case "list":
        return await list(rest);
      case "get":
        return await get(rest);
      case "create":
        return await create(rest);
      case "update":
        return await update(rest);
      case "pause":
      case "resume":
        return await setEnabled(rest, sub);
      case "delete":
        return await remove(rest);
      default:
        throw new UsageError(`unknown schedules command "${sub}"`);
    }
  } catch (err) {
    return reportApiError(err, SCHEDULES_USAGE);
  }
}

async function list(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { json: { type: "boolean" } } });
  const { schedules } = await apiClient().schedules.list();
  if (values.json) {
    printJSON(schedules);
    return EXIT_OK;
  }
  const now = Date.now();
  const rows = schedules.map((s) => [
    s.id,
    s.name,
    s.timezone === "UTC" ? s.cron_schedule : `${s.cron_schedule} (${s.timezone})`,
    s.enabled ? agoCell(s.history.next_run, now) : "paused",
    agoCell(s.history.last_ran, now),
    s.last_spawn_error ? `error: ${s.last_spawn_error}` : "",
  ]);
  process.stdout.write(table([["ID", "NAME", "CRON", "NEXT RUN", "LAST RAN", ""], ...rows]));
  return EXIT_OK;
}

async function get(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: "boolean" } },
  });
  const schedule = await resolve(apiClient(), positionals);
  if (values.json) printJSON(schedule);
  else printSchedule(schedule);
  return EXIT_OK;
}

async function create(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { ...FIELDS, paused: { type: "boolean" } } });
  if (!values.name) throw new UsageError("give the schedule's --name");
  if (!values.cron) throw new UsageError('give --cron, five fields such as "0 9 * * 1-5"');
  if (!values.prompt && !values.skill) throw new UsageError("give --prompt (or --skill)");
  const agentConfig = configChanges({}, values);
  const created = await apiClient().schedules.create({
    name: values.name,
    cron_schedule: values.cron,
    ...(values.timezone ? { timezone: values.timezone } : {}),
    ...(values.prompt ? { prompt: values.prompt } : {}),
    ...(Object.keys(agentConfig).length ? { agent_config: agentConfig } : {}),
    ...(values.paused ? { enabled: false } : {}),
  });
  if (values.json) printJSON(created);
  else {
    process.stdout.write(`${created.id}\n`);
    const next = created.history.next_run;
    process.stderr.write(
      `Created ${created.name}${next ? `; next run ${whenLine(next)}` : " (paused)"}. Its runs: dispatch list, or GET /api/v1/agent/runs?schedule_id=${created.id}\n`,
    );
  }
  return EXIT_OK;
}

/** PUT replaces a schedule: the current one with the given changes applied is sent back whole. */
async function update(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: FIELDS });
  const changes = Object.keys(values).filter((k) => k !== "json");
  if (changes.length === 0) {
    throw new UsageError(
      "say what to change: --name, --cron, --timezone, --prompt, --skill, --model, --env or --repo",
    );
  }
  const client = apiClient();
  const current = await resolve(client, positionals);
  const body: ScheduleUpdateParams = {
    name: values.name || current.name,
    cron_schedule: values.cron || current.cron_schedule,
    // An empty --timezone goes back to UTC.
    timezone: values.timezone ?? current.timezone,
    enabled: current.enabled,
    prompt: values.prompt ?? current.prompt,
    agent_config: configChanges(current.agent_config, values),
    metadata: current.metadata,
  };
  if (body.timezone === "") body.timezone = null;
  const updated = await client.schedules.update(current.id, body);
  if (values.json) printJSON(updated);
  else printSchedule(updated);
  return EXIT_OK;
}

async function setEnabled(argv: string[], action: "pause" | "resume"): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: "boolean" } },
  });
  const client = apiClient();
  const { id } = await resolve(client, positionals);
  const schedule = await (action === "pause" ? client.schedules.pause(id) : client.schedules.resume(id));
  if (values.json) printJSON(schedule);
  else {
    const next = schedule.history.next_run;
    process.stdout.write(
      action === "pause"
        ? `Paused ${schedule.name}.\n`
        : `Resumed ${schedule.name}${next ? `; next run ${whenLine(next)}` : ""}.\n`,
    );
  }
  return EXIT_OK;
}

async function remove(argv: string[]): Promise<number> {
  const { positionals } = parseArgs({ args: argv, allowPositionals: true, options: {} });
  const client = apiClient();
  const { id, name } = await resolve(client, positionals);
  await client.schedules.delete(id);
  process.stdout.write(`Deleted ${name}; the runs it made are kept.\n`);
  return EXIT_OK;
}

/** The schedule a command names, by id or by name (names are unique in a team). */
async function resolve(client: Dispatch, positionals: string[]): Promise<ScheduledAgentItem> {
  const ref = positionals[0];
  if (!ref) throw new UsageError("give the schedule's id or name (see dispatch schedules list)");
  if (positionals.length > 1) throw new UsageError(`one schedule at a time; quote a name with spaces`);
  const { schedules } = await client.schedules.list();
  const found = schedules.find((s) => s.id === ref) ?? schedules.find((s) => s.name === ref);
  if (!found) throw new UsageError(`this team has no schedule "${ref}" (see dispatch schedules list)`);
  return found;
}

/** `agent_config` with the options given: a value sets, an empty one removes. */
function configChanges(current: AgentConfig, values: FieldValues): AgentConfig {
  const config: Record<string, unknown> = { ...current };
  const set = (key: keyof AgentConfig, value: string | undefined) => {
    if (value === undefined) return;
    if (value === "") delete config[key];
    else config[key] = value;
  };
  set("skill_spec", values.skill);
  set("model_id", values.model);
  set("environment_id", values.env);
  set("repository", values.repo);
  if (values.repo !== undefined) delete config.base_branch;
  return config as AgentConfig;
}

function printSchedule(schedule: ScheduledAgentItem): void {
  const config = schedule.agent_config;
  const fields: Array<[string, string | null | undefined]> = [
    ["id", schedule.id],
    ["name", schedule.name],
    ["cron", `${schedule.cron_schedule} (${schedule.timezone})`],
    ["state", schedule.enabled ? "enabled" : "paused"],
    ["next run", whenLine(schedule.history.next_run)],
    ["last ran", whenLine(schedule.history.last_ran)],
    ["last error", schedule.last_spawn_error],
    ["model", config.model_id],
    ["env", config.environment_id],
    ["skill", config.skill_spec],
    ["repository", config.base_branch ? `${config.repository}@${config.base_branch}` : config.repository],
    ["created by", schedule.created_by.display_name],
    ["prompt", schedule.prompt],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  for (const [key, value] of fields) {
    if (value) process.stdout.write(`${key.padEnd(width)}  ${value}\n`);
  }
}
