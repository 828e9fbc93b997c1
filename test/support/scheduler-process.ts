/**
 * A scheduler as its own OS process, for the exactly-once tests: the real SQLite store on
 * DISPATCH_TEST_DB, the real run service and the real Scheduler, on a test clock read from the file
 * DISPATCH_TEST_CLOCK (an RFC 3339 time the test moves forward). No executor: fired runs stay QUEUED until the test starts them.
 * Prints "ready" once the scheduler runs; SIGTERM stops it cleanly (a firing under way completes),
 * SIGKILL is the crash.
 *
 *   node test/support/scheduler-process.ts   (with DISPATCH_TEST_DB and DISPATCH_TEST_CLOCK set)
 */

import { readFileSync } from "node:fs";
import { RunAccess } from "../../src/access/run-access.ts";
import { createLogger } from "../../src/log.ts";
import { RunService } from "../../src/runs/run-service.ts";
import { Scheduler } from "../../src/schedules/scheduler.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";

const dbPath = process.env.DISPATCH_TEST_DB;
const clockFile = process.env.DISPATCH_TEST_CLOCK;
if (!dbPath || !clockFile) {
  process.stderr.write("set DISPATCH_TEST_DB and DISPATCH_TEST_CLOCK\n");
  process.exit(2);
}

const log = createLogger(process.env.DISPATCH_LOG_LEVEL ?? "warn");
const store = new SqliteStore(dbPath);
await store.migrate();
// No environment is configured here: a schedule naming one fails to spawn, as after a config change.
const runService = new RunService(store, { capacity: 4, environmentIds: [], access: new RunAccess(store) });
const scheduler = new Scheduler({
  store,
  runService,
  log,
  now: () => Date.parse(readFileSync(clockFile, "utf8").trim()),
  // The test clock jumps without a signal: look at it often (a real clock is slept on until due).
  maxSleepMs: 20,
});
scheduler.start();
process.stdout.write("ready\n");

process.once("SIGTERM", async () => {
  await scheduler.stop();
  await store.close();
  process.exit(0);
});
