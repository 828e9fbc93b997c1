import { parseArgs } from "node:util";
import { apiClient, EXIT_OK, printJSON, reportApiError, table } from "./api-output.ts";
import { CATALOG_USAGE } from "./catalog-commands.ts";
import { agoCell } from "./time-text.ts";

/** `dispatch models`, `dispatch environments` and `dispatch agents`: read-only listings over the API. */
export async function catalogCommand(
  command: "models" | "environments" | "agents",
  argv: string[],
): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`Usage:\n${CATALOG_USAGE}\n`);
    return EXIT_OK;
  }
  try {
    switch (command) {
      case "models":
        return await models(argv);
      case "environments":
        return await environments(argv);
      case "agents":
        return await agents(argv);
    }
  } catch (err) {
    return reportApiError(err, CATALOG_USAGE);
  }
}

async function models(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { json: { type: "boolean" } } });
  const list = await apiClient().models.list();
  if (values.json) {
    printJSON(list);
    return EXIT_OK;
  }
  const rows = list.models.map((m) => [
    m.id === list.default_model_id ? `${m.id} (default)` : m.id,
    m.provider,
    m.vision_supported ? "yes" : "no",
    m.description ?? "",
  ]);
  process.stdout.write(table([["MODEL", "PROVIDER", "VISION", "DESCRIPTION"], ...rows]));
  return EXIT_OK;
}

async function environments(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { json: { type: "boolean" } } });
  const { environments } = await apiClient().environments.list();
  if (values.json) {
    printJSON(environments);
    return EXIT_OK;
  }
  const rows = environments.map((e) => [
    e.uid,
    e.config.github_repos.map((r) => `${r.owner}/${r.repo}`).join(",") || "-",
    e.last_task_created ? `${e.last_task_created.state} ${agoCell(e.last_task_created.created_at)}` : "-",
    e.setup_failed ? "setup failed" : "",
  ]);
  process.stdout.write(table([["ENVIRONMENT", "REPOS", "LAST RUN", ""], ...rows]));
  return EXIT_OK;
}

async function agents(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { repo: { type: "string" }, json: { type: "boolean" } },
  });
  const { agents } = await apiClient().agents.list(values.repo ? { repo: values.repo } : {});
  if (values.json) {
    printJSON(agents);
    return EXIT_OK;
  }
  const rows = agents.flatMap((a) =>
    a.variants.map((v) => [a.name, v.id, agoCell(v.last_run_timestamp), v.description.replace(/\s+/g, " ")]),
  );
  process.stdout.write(table([["AGENT", "SKILL SPEC", "LAST RUN", "DESCRIPTION"], ...rows]));
  return EXIT_OK;
}
