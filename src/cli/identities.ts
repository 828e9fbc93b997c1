import { parseArgs } from "node:util";
import type { AgentIdentity, UpdateAgentIdentityRequest } from "@agent-dispatch/client";
import {
  apiClient,
  EXIT_OK,
  EXIT_USAGE,
  printJSON,
  reportApiError,
  table,
  UsageError,
} from "./api-output.ts";
import { CATALOG_USAGE } from "./catalog-commands.ts";
import { agoCell, whenLine } from "./time-text.ts";

const FIELDS = {
  description: { type: "string" },
  prompt: { type: "string" },
  model: { type: "string" },
  skill: { type: "string", multiple: true },
  json: { type: "boolean" },
} as const;

/** `dispatch identities list|create|get|update|delete`: the team's service accounts (admin key). */
export async function identitiesCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`Usage:\n${CATALOG_USAGE}\n`);
    return sub === undefined ? EXIT_USAGE : EXIT_OK;
  }
  try {
    switch (sub) {
      case "list":
        return await list(rest);
      case "create":
        return await create(rest);
      case "get":
        return await get(rest);
      case "update":
        return await update(rest);
      case "delete":
        return await remove(rest);
      default:
        throw new UsageError(`unknown identities command "${sub}"`);
    }
  } catch (err) {
    return reportApiError(err, CATALOG_USAGE);
  }
}

async function list(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { json: { type: "boolean" } } });
  const { agents } = await apiClient().identities.list();
  if (values.json) {
    printJSON(agents);
    return EXIT_OK;
  }
  const now = Date.now();
  const rows = agents.map((a) => [a.uid, agoCell(a.created_at, now), a.base_model ?? "-", a.name]);
  process.stdout.write(table([["UID", "CREATED", "MODEL", "NAME"], ...rows]));
  return EXIT_OK;
}

async function create(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: FIELDS });
  const name = positionals.join(" ").trim();
  if (!name) throw new UsageError("give the identity's name");
  const created = await apiClient().identities.create({ name, ...changes(values) });
  if (values.json) printJSON(created);
  else {
    process.stdout.write(`${created.uid}\n`);
    process.stderr.write(
      `Created ${created.name}. Give it a key with: dispatch keys create --principal ${created.uid}\n`,
    );
  }
  return EXIT_OK;
}

async function get(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: "boolean" } },
  });
  const identity = await apiClient().identities.retrieve(uidFrom(positionals));
  if (values.json) printJSON(identity);
  else printIdentity(identity);
  return EXIT_OK;
}

async function update(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { ...FIELDS, name: { type: "string" } },
  });
  const body: UpdateAgentIdentityRequest = {
    ...(values.name !== undefined ? { name: values.name } : {}),
    ...changes(values),
  };
  if (Object.keys(body).length === 0) {
    throw new UsageError("say what to change: --name, --description, --prompt, --model or --skill");
  }
  const updated = await apiClient().identities.update(uidFrom(positionals), body);
  if (values.json) printJSON(updated);
  else printIdentity(updated);
  return EXIT_OK;
}

async function remove(argv: string[]): Promise<number> {
  const { positionals } = parseArgs({ args: argv, allowPositionals: true, options: {} });
  const uid = uidFrom(positionals);
  await apiClient().identities.delete(uid);
  process.stdout.write(`Deleted ${uid}; its API keys are revoked.\n`);
  return EXIT_OK;
}

function changes(values: {
  description?: string | undefined;
  prompt?: string | undefined;
  model?: string | undefined;
  skill?: string[] | undefined;
}): UpdateAgentIdentityRequest {
  return {
    ...(values.description !== undefined ? { description: values.description } : {}),
    ...(values.prompt !== undefined ? { prompt: values.prompt } : {}),
    ...(values.model !== undefined ? { base_model: values.model } : {}),
    // --skill "" clears the list.
    ...(values.skill ? { skills: values.skill.filter((s) => s !== "") } : {}),
  };
}

function printIdentity(identity: AgentIdentity): void {
  const fields: Array<[string, string | undefined]> = [
    ["uid", identity.uid],
    ["name", identity.name],
    ["created", whenLine(identity.created_at)],
    ["description", identity.description],
    ["model", identity.base_model],
    ["skills", identity.skills.join(", ") || undefined],
    ["prompt", identity.prompt],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  for (const [key, value] of fields) {
    if (value) process.stdout.write(`${key.padEnd(width)}  ${value}\n`);
  }
}

function uidFrom(positionals: string[]): string {
  const uid = positionals[0];
  if (!uid) throw new UsageError("give the identity's uid (see dispatch identities list)");
  return uid;
}
