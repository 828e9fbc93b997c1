import { startDispatch } from "../app.ts";
import { loadConfig } from "../config.ts";
import { describeDefaultModel } from "../harnesses/builtin/models.ts";
import { createLogger } from "../log.ts";
import { describeStore } from "../store/open-store.ts";
import { EXIT_USAGE } from "./api-output.ts";
import { releaseStartUpMemory } from "./start-up-memory.ts";

/**
 * `dispatch serve [--role api,worker,notifier,scheduler]`: the whole service on one machine with embedded
 * defaults, or the given roles of it (replicas on PostgreSQL). Resolves -1 once serving (the process lives
 * on), or an exit code for a usage error.
 */
export async function serve(args: string[] = []): Promise<number> {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    const value = arg === "--role" ? args[++i] : arg.startsWith("--role=") ? arg.slice(7) : undefined;
    if (value === undefined) {
      process.stderr.write(
        `dispatch serve: unexpected ${JSON.stringify(arg)}.\nUsage: dispatch serve [--role api,worker,notifier,scheduler]\n`,
      );
      return EXIT_USAGE;
    }
    // Through the environment, so that the configuration validates it with every other setting.
    process.env.DISPATCH_ROLES = value;
  }
  const config = loadConfig();
  const log = createLogger(config.logLevel, undefined, { format: config.logFormat });
  const dispatch = await startDispatch(config, log);
  // Runs without a model_id use the builtin harness with DISPATCH_DEFAULT_MODEL, else the scripted one.
  const defaultModel = describeDefaultModel(config.models);
  if (!defaultModel.ok) {
    log.warn(
      `DISPATCH_DEFAULT_MODEL cannot be used, runs without a model_id will fail: ${defaultModel.text}`,
    );
  }
  log.info(
    {
      url: dispatch.url,
      publicUrl: config.publicUrl ?? dispatch.url,
      store: describeStore({ postgresUrl: config.postgresUrl, sqlitePath: config.databasePath }),
      roles: [...config.roles].join(","),
      executorSlots: config.roles.has("worker") ? config.maxConcurrentRuns : 0,
      harness: defaultModel.text,
    },
    `Dispatch listening on ${dispatch.url}`,
  );
  if (config.postgresUrl && !config.publicUrl) {
    // Replicas sharing a store must render the same session links, or their notifiers keep re-editing
    // each other's cards.
    log.warn(
      "DATABASE_URL is PostgreSQL but DISPATCH_PUBLIC_URL is not set: set it to the address people reach Dispatch at (the load balancer's), the same on every replica",
    );
  }
  const key = dispatch.generatedAdminKey ?? "$DISPATCH_API_KEY";
  if (dispatch.generatedAdminKey) {
    // Printed once, outside the JSON log stream, so log shipping never carries it.
    process.stdout.write(
      `\nGenerated the admin API key (shown only now; store it, or set DISPATCH_ADMIN_API_KEY):\n\n  ${dispatch.generatedAdminKey}\n\n`,
    );
    log.info("generated an admin API key and printed it once above");
  }
  if (config.roles.has("api")) {
    process.stdout.write(
      `Try it:\n  curl -s ${dispatch.url}/api/v1/agent/runs -H "Authorization: Bearer ${key}" \\\n    -H "Content-Type: application/json" -d '{"prompt": "$ echo hello from Dispatch"}'\n\n`,
    );
  } else {
    // Whatever the log level, say where this replica's health answers (a worker has no API to try).
    process.stdout.write(`Ready when this answers 200:\n  curl -s ${dispatch.url}/readyz\n\n`);
  }

  let signals = 0;
  const shutdown = (signal: string) => {
    signals += 1;
    if (signals > 1) process.exit(1);
    log.info({ signal }, "shutting down: finishing running work");
    dispatch.stop().then(
      () => {
        log.info("stopped");
        process.exit(0);
      },
      (err) => {
        log.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  releaseStartUpMemory();
  return -1;
}
