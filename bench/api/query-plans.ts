import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { DEFAULT_TEAM } from "../../src/model/identity.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { postgresUnavailable, startPostgres } from "../../test/support/postgres.ts";
import { seedRuns } from "./seed.ts";

/**
 * The query plans of the statements that read `runs` by state or in a team's order, on 100k runs of one
 * team (`node bench/api/query-plans.ts [count]`): which index each uses, to decide which indexes a create
 * must write (bench/README.md, "Fifth round: create"). SQLite is seeded as the API bench seeds it and not
 * ANALYZEd (Dispatch never runs ANALYZE); PostgreSQL gets the same mix of states from generate_series and
 * an ANALYZE, as autovacuum would give it.
 */

const COUNT = Number(process.argv[2] ?? 100_000);
const TEAM = DEFAULT_TEAM.id;

/** [what, SQLite text, PostgreSQL text]: the store's statements with representative values bound. */
const QUERIES: Array<[string, string, string]> = [
  [
    "count of active runs (at_capacity)",
    `SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE state = 'QUEUED' LIMIT 4))
      + (SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE state = 'INPROGRESS' LIMIT 4)) AS n`,
    `SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE state = 'QUEUED' LIMIT 4) queued)
      + (SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE state = 'INPROGRESS' LIMIT 4) running) AS n`,
  ],
  [
    "claim: the oldest queued run",
    "SELECT id FROM runs WHERE state = 'QUEUED' ORDER BY queued_at, id LIMIT 1",
    "SELECT id FROM runs WHERE state = 'QUEUED' ORDER BY queued_at, id LIMIT 1",
  ],
  [
    "expired leases",
    "SELECT id FROM runs WHERE state = 'INPROGRESS' AND lease_expires_at < '2030-01-01'",
    "SELECT id FROM runs WHERE state = 'INPROGRESS' AND lease_expires_at < '2030-01-01'",
  ],
  [
    "dashboard: a team's runs by state",
    `SELECT state, COUNT(*) AS n FROM runs WHERE team_id = '${TEAM}' GROUP BY state`,
    `SELECT state, COUNT(*) AS n FROM runs WHERE team_id = '${TEAM}' GROUP BY state`,
  ],
  [
    "list, task status: the team's active runs and those above them",
    `SELECT id FROM runs WHERE team_id = '${TEAM}' AND id IN (WITH RECURSIVE above(id, parent) AS (
       SELECT id, parent_run_id FROM runs WHERE team_id = '${TEAM}' AND state IN ('QUEUED', 'INPROGRESS')
       UNION SELECT runs.id, runs.parent_run_id FROM runs JOIN above ON runs.id = above.parent
     ) SELECT id FROM above) ORDER BY updated_at DESC, id DESC LIMIT 21`,
    `SELECT id FROM runs WHERE team_id = '${TEAM}' AND id IN (WITH RECURSIVE above(id, parent) AS (
       SELECT id, parent_run_id FROM runs WHERE team_id = '${TEAM}' AND state IN ('QUEUED', 'INPROGRESS')
       UNION SELECT runs.id, runs.parent_run_id FROM runs JOIN above ON runs.id = above.parent
     ) SELECT id FROM above) ORDER BY updated_at DESC, id DESC LIMIT 21`,
  ],
  [
    "list by updated_at",
    `SELECT id FROM runs WHERE team_id = '${TEAM}' ORDER BY updated_at DESC, id DESC LIMIT 21`,
    `SELECT id FROM runs WHERE team_id = '${TEAM}' ORDER BY updated_at DESC, id DESC LIMIT 21`,
  ],
  [
    "list by created_at",
    `SELECT id FROM runs WHERE team_id = '${TEAM}' ORDER BY created_at DESC, id DESC LIMIT 21`,
    `SELECT id FROM runs WHERE team_id = '${TEAM}' ORDER BY created_at DESC, id DESC LIMIT 21`,
  ],
  [
    "list by title",
    `SELECT id FROM runs WHERE team_id = '${TEAM}' ORDER BY title ASC, id ASC LIMIT 21`,
    `SELECT id FROM runs WHERE team_id = '${TEAM}' ORDER BY title ASC, id ASC LIMIT 21`,
  ],
  [
    "list, state filter",
    `SELECT id FROM runs WHERE team_id = '${TEAM}' AND state IN ('QUEUED') ORDER BY updated_at DESC, id DESC LIMIT 21`,
    `SELECT id FROM runs WHERE team_id = '${TEAM}' AND state = ANY('{QUEUED}'::text[]) ORDER BY updated_at DESC, id DESC LIMIT 21`,
  ],
];

async function sqlitePlans(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "dispatch-plans-"));
  try {
    const path = join(dir, "dispatch.db");
    await seedRuns(path, COUNT);
    const db = new DatabaseSync(path);
    console.log(`## SQLite, ${COUNT.toLocaleString("en")} runs\n`);
    for (const [what, text] of QUERIES) {
      const plan = db.prepare(`EXPLAIN QUERY PLAN ${text}`).all() as Array<{ detail: string }>;
      console.log(`${what}:\n${plan.map((p) => `  ${p.detail}`).join("\n")}`);
    }
    db.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function postgresPlans(): Promise<void> {
  const missing = postgresUnavailable();
  if (missing) {
    console.log(`PostgreSQL skipped: ${missing}`);
    return;
  }
  const cluster = await startPostgres();
  try {
    const url = await cluster.createDatabase();
    const store = new PostgresStore(url);
    await store.migrate();
    await store.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    // As the SQLite seed: the newest 100 runs queued, the 200 before them executing, the rest finished.
    await client.query(
      `INSERT INTO runs (id, team_id, title, prompt, state, created_at, updated_at, queued_at, session_id, source,
         creator_uid, creator, agent_config, request_usage, lease_expires_at)
       SELECT lpad(i::text, 12, '0'), $1, 'run ' || (i * 7919 % $2), 'prompt',
         CASE WHEN i > $2 - 100 THEN 'QUEUED' WHEN i > $2 - 300 THEN 'INPROGRESS'
              WHEN i % 10 = 0 THEN 'FAILED' ELSE 'SUCCEEDED' END,
         to_char(timestamp '2026-01-01' + i * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
         to_char(timestamp '2026-01-01' + i * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
         to_char(timestamp '2026-01-01' + i * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
         'session-' || i, 'API', 'u1', '{}', '{}', '{}',
         CASE WHEN i > $2 - 300 AND i <= $2 - 100 THEN '2030-01-01T00:00:00.000Z' END
       FROM generate_series(1, $2) i`,
      [TEAM, COUNT],
    );
    await client.query("ANALYZE runs");
    console.log(`\n## PostgreSQL, ${COUNT.toLocaleString("en")} runs\n`);
    for (const [what, , text] of QUERIES) {
      const plan = await client.query(`EXPLAIN (COSTS OFF) ${text}`);
      console.log(`${what}:\n${plan.rows.map((r) => `  ${r["QUERY PLAN"]}`).join("\n")}`);
    }
    await client.end();
  } finally {
    await cluster.stop();
  }
}

await sqlitePlans();
await postgresPlans();
