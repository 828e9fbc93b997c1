import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { buildHarnesses, openSandbox, skillResolver, startWorker } from "../../src/roles/worker.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { Store } from "../../src/store/store.ts";
import { storeSuite } from "../store/conformance/suite.ts";
import { waitFor } from "../support/dispatch.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../support/postgres.ts";

/**
 * What a scripted run with one command costs the store, claim to finish, through the real worker role
 * (sandbox off, as the scale bench runs it): one durable commit per step (bench/README.md, "Third round:
 * commits per run"). The claim; the agent's start with the prompt and the preparation's notes; the tool
 * call (the step under way, shown and named by a resume); the end of the run with the command's result
 * and the answer: 4. Should the end come later than the result's hold (RESULT_HOLD_MS, a loaded machine),
 * the result is written on its own and a checkpoint may follow it: 6 at most. Counted by the store itself
 * (Store.activity), read from another store on the same database so that watching costs nothing.
 */
const FEWEST_COMMITS = 4;
const MAX_COMMITS = 6;
/**
 * PostgreSQL round trips, start-up recovery pass and the empty claim after the run included: the start is
 * one, with the run's attachments' list in it, and the end one, computed from the run as claimed, with the
 * next run's claim (test/store/postgres-round-trips.test.ts): 6–7, and 10 with a result written on its own
 * and a checkpoint after it (see MAX_COMMITS).
 */
const MAX_POSTGRES_ROUND_TRIPS = 10;

const missing = process.env.CI ? undefined : postgresUnavailable();
let cluster: PostgresCluster | undefined;
beforeAll(async () => {
  if (!missing) cluster = await startPostgres();
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
});

async function scriptedRun(databaseUrl?: string) {
  const dataDir = await mkdtemp(join(tmpdir(), "dispatch-commits-"));
  const config = loadConfig({
    DISPATCH_DATA_DIR: dataDir,
    DISPATCH_SANDBOX: "none",
    DISPATCH_MAX_CONCURRENT_RUNS: "1",
    // No heartbeat or recovery pass during the run: only the run's own writes are counted.
    DISPATCH_POLL_INTERVAL_MS: "600000",
    DISPATCH_LEASE_MS: "600000",
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  });
  const where = { postgresUrl: config.postgresUrl, sqlitePath: config.databasePath };
  const store = await openStore(where);
  const observer = await openStore(where);
  const log = createLogger("silent");
  try {
    await store.migrate();
    await store.ensureTeam({ id: "t1", name: "Team one" });
    const created = await storeSuite(() => store).create({ prompt: "Scale bench run\n$ echo scale" });
    const before = { ...store.activity };
    const { sandboxes } = await openSandbox(config, log);
    const worker = await startWorker({
      config,
      log,
      store,
      sandboxes: sandboxes!,
      harnesses: buildHarnesses(config, {}),
      skills: skillResolver(config),
      pullRequests: undefined,
      publicUrl: () => "http://127.0.0.1",
    });
    const run = await waitFor(
      async () => {
        const seen = await observer.getRun("t1", created.id);
        return seen && ["SUCCEEDED", "FAILED", "ERROR"].includes(seen.state) ? seen : undefined;
      },
      { timeoutMs: 30_000, what: "the run to end" },
    );
    await worker.stop(0);
    const transcript = await observer.listEvents(run.id, 0, 100);
    return {
      run,
      transcript: transcript.map((e) => (e.type === "state" ? `state ${e.data.state}` : `${e.type}`)),
      checkpoint: await observer.loadCheckpoint(run.id),
      commits: store.activity.commits - before.commits,
      statements: store.activity.statements - before.statements,
    };
  } finally {
    await store.close();
    await observer.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

function expectWholeRun(result: Awaited<ReturnType<typeof scriptedRun>>): void {
  expect(result.run.state).toBe("SUCCEEDED");
  // Everything the run did is there, in order, though fewer commits carried it.
  expect(result.transcript).toEqual([
    "state QUEUED",
    "state INPROGRESS",
    "log", // the sandbox is off
    "message", // the prompt
    "tool_call",
    "tool_result",
    "message", // the answer
    "state SUCCEEDED",
  ]);
  // A checkpoint only serves a run in progress: none is left of one that ended.
  expect(result.checkpoint).toBeUndefined();
}

describe("a one-command scripted run", () => {
  it(`makes at most ${MAX_COMMITS} commits on SQLite`, async () => {
    const result = await scriptedRun();
    expectWholeRun(result);
    expect(result.commits).toBeGreaterThanOrEqual(FEWEST_COMMITS);
    expect(result.commits).toBeLessThanOrEqual(MAX_COMMITS);
  });

  it.skipIf(Boolean(missing))(
    `makes at most ${MAX_COMMITS} commits and ${MAX_POSTGRES_ROUND_TRIPS} round trips on PostgreSQL`,
    async () => {
      const result = await scriptedRun(await cluster!.createDatabase());
      expectWholeRun(result);
      expect(result.commits).toBeGreaterThanOrEqual(FEWEST_COMMITS);
      expect(result.commits).toBeLessThanOrEqual(MAX_COMMITS);
      expect(result.statements).toBeLessThanOrEqual(MAX_POSTGRES_ROUND_TRIPS);
    },
  );
});

/** The store's counts themselves: what the assertions above rest on. */
describe("Store.activity", () => {
  const counted = async (store: Store) => {
    await store.migrate();
    await store.ensureTeam({ id: "t1", name: "Team one" });
    const suite = storeSuite(() => store);
    const before = { ...store.activity };
    await suite.create();
    const afterCreate = store.activity.commits - before.commits;
    const createStatements = store.activity.statements - before.statements;
    // A claim that finds nothing makes nothing durable.
    await store.claimNextRun("w", 60_000);
    const afterClaim = store.activity.commits - before.commits;
    await store.claimNextRun("w", 60_000);
    return {
      commits: { afterCreate, afterClaim, afterEmptyClaim: store.activity.commits - before.commits },
      createStatements,
    };
  };

  it("counts a commit per write that changed something, on SQLite", async () => {
    const dir = await mkdtemp(join(tmpdir(), "dispatch-activity-"));
    const store = await openStore({ sqlitePath: join(dir, "dispatch.db") });
    try {
      expect((await counted(store)).commits).toEqual({ afterCreate: 1, afterClaim: 2, afterEmptyClaim: 2 });
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(Boolean(missing))("counts a commit per write that changed something, on PostgreSQL", async () => {
    const store = await openStore({ postgresUrl: await cluster!.createDatabase(), sqlitePath: "" });
    try {
      const { commits, createStatements } = await counted(store);
      expect(commits).toEqual({ afterCreate: 1, afterClaim: 2, afterEmptyClaim: 2 });
      // A plain create is one statement, its notification included (src/store/postgres/run-create.ts).
      expect(createStatements).toBe(1);
    } finally {
      await store.close();
    }
  });
});
