#!/usr/bin/env node
import { CATALOG_USAGE, isCatalogCommand } from "./cli/catalog-commands.ts";
import { isRunCommand, RUNS_USAGE } from "./cli/run-commands.ts";
import { SCHEDULES_USAGE } from "./cli/schedule-commands.ts";
import { USAGE_REPORT_USAGE } from "./cli/usage-commands.ts";
import { WEBHOOKS_USAGE } from "./cli/webhook-commands.ts";
import { ConfigError } from "./config.ts";

const USAGE = `Dispatch: hand work to coding agents from Slack, GitHub and HTTP.

Usage:
  dispatch serve [--role R,…]    start the API, workers and integrations (npm start); roles: api,
                                 worker, notifier, scheduler (default all; DISPATCH_ROLES)
  dispatch keys create|list|revoke   manage API keys on this machine's store
  dispatch migrate-to-postgres [--from dispatch.db] [--to postgres://…]
                                 copy this machine's SQLite database into a new PostgreSQL database

Runs (over the HTTP API):
${RUNS_USAGE}

Models, environments, skills and identities (over the HTTP API):
${CATALOG_USAGE}

Schedules (over the HTTP API):
${SCHEDULES_USAGE}

Webhooks (over the HTTP API):
${WEBHOOKS_USAGE}

Usage and cost (over the HTTP API):
${USAGE_REPORT_USAGE}
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (isRunCommand(command)) return (await import("./cli/runs.ts")).runCommand(command, rest);
  if (command === "identities") return (await import("./cli/identities.ts")).identitiesCommand(rest);
  if (command === "schedules") return (await import("./cli/schedules.ts")).schedulesCommand(rest);
  if (command === "webhooks") return (await import("./cli/webhooks.ts")).webhooksCommand(rest);
  if (command === "usage") return (await import("./cli/usage.ts")).usageCommand(rest);
  if (isCatalogCommand(command)) return (await import("./cli/catalog.ts")).catalogCommand(command, rest);
  switch (command) {
    case "serve":
      // Loaded on demand: the run commands should not pay for the server's modules at start-up.
      return (await import("./cli/serve.ts")).serve(rest);
    case "keys":
      return (await import("./cli/keys.ts")).keys(rest);
    case "migrate-to-postgres":
      return (await import("./cli/migrate-to-postgres.ts")).migrateToPostgresCommand(rest);
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(USAGE);
      return 0;
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err) => {
    process.stderr.write(
      `${err instanceof ConfigError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
