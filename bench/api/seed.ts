import { randomBytes } from "node:crypto";
import { DatabaseSync } from "node:sqlite";
import { v7 as uuidv7 } from "uuid";
import { DEFAULT_TEAM } from "../../src/model/identity.ts";
import type { AgentConfig, Artifact, Creator, StatusMessage } from "../../src/model/run.ts";
import type { RunState } from "../../src/model/run-state.ts";
import { deriveTitle } from "../../src/runs/run-title.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";

/**
 * Fills a fresh Dispatch SQLite database with `count` runs of the default team, shaped like what the
 * service itself writes (same columns, JSON encodings, state events and last_event_seq).
 *
 * Going through SqliteStore.createRun would cost one fsync'd transaction per run (synchronous=FULL), so
 * the store only creates the schema here; the rows go in with one raw transaction and synchronous=OFF.
 * Content comes from a seeded PRNG so every bench run stores the same kind of data; ids and session ids
 * are random like the service's own.
 */
export async function seedRuns(dbPath: string, count: number): Promise<{ ids: string[]; ms: number }> {
  const started = performance.now();
  const store = new SqliteStore(dbPath);
  await store.migrate();
  await store.close();

  const db = new DatabaseSync(dbPath);
  try {
    db.exec("PRAGMA synchronous = OFF");
    const insertRun = db.prepare(
      `INSERT INTO runs (id, team_id, title, prompt, state, created_at, updated_at, queued_at, started_at,
         finished_at, run_time_ms, execution_started_at, execution, session_id, trigger_url, source, creator_uid,
         creator, config_name, model_id, environment_id, skill_spec, agent_config, agent_skill, status_message,
         artifacts, request_usage, metadata, worker_id, lease_expires_at, agent_started, requeue_count,
         last_event_seq)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)`,
    );
    const insertEvent = db.prepare(
      "INSERT INTO run_events (run_id, seq, at, type, data) VALUES (?, ?, ?, ?, ?)",
    );

    const rand = mulberry32(0x5eed);
    const now = Date.now();
    // Runs spread over the last 90 days, oldest first, so ids (UUIDv7) and created_at grow together.
    const spanMs = 90 * 24 * 3600_000;
    const ids: string[] = [];
    db.exec("BEGIN");
    for (let i = 0; i < count; i++) {
      const createdMs = now - spanMs + Math.floor(((i + rand()) / count) * (spanMs - 60_000));
      const run = fakeRun(rand, createdMs, now, count - i);
      const id = uuidv7({ msecs: createdMs });
      ids.push(id);
      insertRun.run(
        id,
        DEFAULT_TEAM.id,
        deriveTitle(run.prompt, run.agentConfig.name),
        run.prompt,
        run.state,
        iso(createdMs),
        iso(run.updatedMs),
        iso(createdMs),
        run.startedMs === null ? null : iso(run.startedMs),
        run.finishedMs === null ? null : iso(run.finishedMs),
        run.runTimeMs,
        run.state === "INPROGRESS" && run.startedMs !== null ? iso(run.startedMs) : null,
        1,
        randomBytes(24).toString("base64url"),
        run.triggerUrl,
        run.source,
        run.creator.uid,
        JSON.stringify(run.creator),
        run.agentConfig.name ?? null,
        run.agentConfig.model_id ?? null,
        run.agentConfig.environment_id ?? null,
        run.agentConfig.skill_spec ?? null,
        JSON.stringify(run.agentConfig),
        run.agentConfig.skill_spec
          ? JSON.stringify({
              name: run.agentConfig.name,
              full_path: `${run.agentConfig.skill_spec}/SKILL.md`,
            })
          : null,
        run.statusMessage ? JSON.stringify(run.statusMessage) : null,
        JSON.stringify(run.artifacts),
        JSON.stringify(run.usage),
        JSON.stringify(run.metadata),
        run.state === "INPROGRESS" ? "worker-bench-1" : null,
        run.state === "INPROGRESS" ? iso(now + 30_000) : null,
        run.state === "INPROGRESS" ? 1 : 0,
        run.events.length,
      );
      run.events.forEach((event, n) => {
        insertEvent.run(id, n + 1, iso(event.atMs), "state", JSON.stringify(event.data));
      });
    }
    db.exec("COMMIT");
    // Leave the rows in the main file, not a large WAL every reader would have to consult.
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    return { ids, ms: performance.now() - started };
  } finally {
    db.close();
  }
}

interface FakeRun {
  prompt: string;
  state: RunState;
  updatedMs: number;
  startedMs: number | null;
  finishedMs: number | null;
  runTimeMs: number;
  source: string;
  triggerUrl: string | null;
  creator: Creator;
  agentConfig: AgentConfig;
  statusMessage: StatusMessage | null;
  artifacts: Artifact[];
  usage: { input_tokens: number; output_tokens: number; total_tokens: number; inference_cost?: number };
  metadata: Record<string, string>;
  events: Array<{ atMs: number; data: Record<string, unknown> }>;
}

const REPOS = ["acme/web", "acme/api", "acme/mobile", "acme/infra", "acme/billing", "acme/docs"];
const FILES = [
  "src/checkout/cart.ts",
  "src/auth/session.go",
  "app/models/invoice.rb",
  "lib/parser.py",
  "services/notifier/index.ts",
  "charts/api/values.yaml",
  "README.md",
];
const TASKS = [
  "Fix the flaky test in {file}; it fails about one run in ten on CI with a timeout.",
  "Add pagination to the endpoint defined in {file} and update the client in {repo}.",
  "Upgrade the logging library across {repo} and fix the breaking changes.",
  "Investigate why {file} throws a null reference when the cart is empty and add a regression test.",
  "Write a migration that backfills the missing created_by column, then use it in {file}.",
  "Refactor {file} so the retry logic lives in one helper; keep the public behaviour unchanged.",
  "Translate the error messages in {file} into plain English and add them to the docs.",
  "$ npm test -- --grep checkout",
  "Bump the Node version in {repo} CI to 24 and fix whatever breaks.",
  "Review the open dependabot PRs in {repo} and merge the ones whose checks pass.",
];
const DETAILS = [
  "Context: customers reported it in #support this morning; see the linked thread.",
  "Keep the change small and open a pull request against main when the tests pass.",
  "Don't touch the generated files under gen/.",
  "The staging logs show the failure around 02:00 UTC, during the nightly batch.",
  "Please explain the root cause in the PR description.",
];
const PEOPLE = ["Ada Lovelace", "Grace Hopper", "Alan Turing", "Katherine Johnson", "Linus Torvalds"];
const MODELS = ["claude-sonnet-4-5", "gpt-5", "claude-opus-4-1"];
const FAILURES: Record<"FAILED" | "ERROR" | "CANCELLED", StatusMessage[]> = {
  FAILED: [
    { message: "The agent could not make the tests pass.", error_code: "agent_failed", retryable: false },
    {
      message: "Cloning the repository failed: access denied.",
      error_code: "setup_failed",
      retryable: false,
    },
  ],
  ERROR: [
    {
      message: "The worker running this run was lost (its lease expired).",
      error_code: "worker_lost",
      retryable: true,
    },
  ],
  CANCELLED: [{ message: "Cancelled by Ada Lovelace", error_code: "cancelled", retryable: false }],
};

function fakeRun(rand: () => number, createdMs: number, nowMs: number, fromNewest: number): FakeRun {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const repo = pick(REPOS);
  const task = pick(TASKS).replaceAll("{file}", pick(FILES)).replaceAll("{repo}", repo);
  const extra = Math.floor(rand() * 4);
  const prompt = [task, ...Array.from({ length: extra }, () => pick(DETAILS))].join("\n\n");

  // The newest few hundred runs are still queued or executing; everything older has finished.
  const roll = rand();
  const state: RunState =
    fromNewest <= 100
      ? "QUEUED"
      : fromNewest <= 300
        ? "INPROGRESS"
        : roll < 0.78
          ? "SUCCEEDED"
          : roll < 0.88
            ? "FAILED"
            : roll < 0.92
              ? "ERROR"
              : "CANCELLED";
  const cancelledEarly = state === "CANCELLED" && rand() < 0.3;
  const startedMs =
    state === "QUEUED" || cancelledEarly ? null : createdMs + 50 + Math.floor(rand() * 20_000);
  const finishedMs =
    state === "QUEUED" || state === "INPROGRESS"
      ? null
      : Math.min(nowMs, (startedMs ?? createdMs) + 20_000 + Math.floor(rand() * 30 * 60_000));
  const runTimeMs = startedMs !== null && finishedMs !== null ? finishedMs - startedMs : 0;

  const sourceRoll = rand();
  const person = pick(PEOPLE);
  const login = person.split(" ")[0]!.toLowerCase();
  let source: string;
  let triggerUrl: string | null = null;
  let creator: Creator;
  if (sourceRoll < 0.6) {
    source = "API";
    creator = { type: "service_account", uid: "admin", display_name: "Admin" };
  } else if (sourceRoll < 0.85) {
    source = "SLACK";
    creator = { type: "user", uid: `slack:T0ACME:U0${login.toUpperCase()}`, display_name: person };
    triggerUrl = `https://acme.slack.com/archives/C04ENG/p${createdMs}000`;
  } else {
    source = "GITHUB_WEBHOOK";
    creator = { type: "user", uid: `github:${login}`, display_name: login };
    triggerUrl = `https://github.com/${repo}/issues/${1 + Math.floor(rand() * 4000)}#issuecomment-${createdMs}`;
  }

  const agentConfig: AgentConfig = {};
  if (rand() < 0.15) {
    agentConfig.skill_spec = `${repo}:skills/${pick(["triage", "release-notes", "dep-bump"])}`;
    agentConfig.name = agentConfig.skill_spec.split("/").at(-1)!;
  }
  if (rand() < 0.7) agentConfig.model_id = pick(MODELS);
  if (rand() < 0.3) agentConfig.environment_id = `env_${repo.split("/")[1]}`;
  agentConfig.harness = { type: agentConfig.model_id ? "builtin" : "scripted" };

  const statusMessage =
    state === "FAILED" || state === "ERROR" || state === "CANCELLED" ? pick(FAILURES[state]) : null;
  const artifacts: Artifact[] =
    state === "SUCCEEDED" && rand() < 0.4 && finishedMs !== null
      ? [
          {
            artifact_type: "PULL_REQUEST",
            created_at: iso(finishedMs - 1000),
            data: {
              url: `https://github.com/${repo}/pull/${1 + Math.floor(rand() * 9000)}`,
              branch: `dispatch/${createdMs.toString(36)}`,
            },
          },
        ]
      : [];
  const input = startedMs === null ? 0 : 2_000 + Math.floor(rand() * 400_000);
  const output = startedMs === null ? 0 : Math.floor(input * (0.05 + rand() * 0.2));
  const usage = {
    input_tokens: input,
    output_tokens: output,
    total_tokens: input + output,
    ...(input > 0 ? { inference_cost: Math.round((input * 3 + output * 15) / 10_000) / 100 } : {}),
  };
  const metadata: Record<string, string> = rand() < 0.25 ? { ci_job: String(Math.floor(rand() * 1e6)) } : {};

  const events: FakeRun["events"] = [{ atMs: createdMs, data: { state: "QUEUED", previous: null } }];
  if (startedMs !== null) events.push({ atMs: startedMs, data: { state: "INPROGRESS", previous: "QUEUED" } });
  if (finishedMs !== null) {
    events.push({
      atMs: finishedMs,
      data: {
        state,
        previous: startedMs === null ? "QUEUED" : "INPROGRESS",
        ...(statusMessage ? { status_message: statusMessage } : {}),
      },
    });
  }

  return {
    prompt,
    state,
    updatedMs: finishedMs ?? startedMs ?? createdMs,
    startedMs,
    finishedMs,
    runTimeMs,
    source,
    triggerUrl,
    creator,
    agentConfig,
    statusMessage,
    artifacts,
    usage,
    metadata,
    events,
  };
}

/** Small deterministic PRNG (mulberry32): the same seed gives the same data set shape every run. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
