import { startDispatch } from "../app.ts";
import { loadConfig } from "../config.ts";
import { describeDefaultModel } from "../executor/harnesses/builtin/models.ts";
import { createLogger } from "../log.ts";

/** `dispatch serve`: the whole service on one machine with embedded defaults. */
export async function serve(): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
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
      store: `sqlite:${config.databasePath}`,
      executorSlots: config.maxConcurrentRuns,
      harness: defaultModel.text,
    },
    `Dispatch listening on ${dispatch.url}`,
  );
  const key = dispatch.generatedAdminKey ?? "$DISPATCH_API_KEY";
  if (dispatch.generatedAdminKey) {
    // Printed once, outside the JSON log stream, so log shipping never carries it.
    process.stdout.write(
      `\nGenerated the admin API key (shown only now; store it, or set DISPATCH_ADMIN_API_KEY):\n\n  ${dispatch.generatedAdminKey}\n\n`,
    );
    log.info("generated an admin API key and printed it once above");
  }
  process.stdout.write(
    `Try it:\n  curl -s ${dispatch.url}/api/v1/agent/runs -H "Authorization: Bearer ${key}" \\\n    -H "Content-Type: application/json" -d '{"prompt": "$ echo hello from Dispatch"}'\n\n`,
  );

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
}
