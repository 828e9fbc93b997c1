import type { NewAttachment } from "../../model/attachment.ts";
import type { NewAuditEvent } from "../../model/audit.ts";
import type { RunRecord } from "../../model/run.ts";
import { createdRun } from "../created-run.ts";
import { foldCase } from "../fold-case.ts";
import type { IdempotencyClaim, IdempotentResult } from "../store.ts";
import { keyIsLiveCondition } from "./api-keys.ts";
import { insertAttachments } from "./attachments.ts";
import { appendAuditEvent } from "./audit.ts";
import type { Database, Tx } from "./database.ts";
import { checkIdempotency, rememberResponse } from "./idempotency.ts";
import { type BatchStatements, createInBatch } from "./run-create-batch.ts";
import { recordRunTrace } from "./run-traces.ts";
import { enqueueWebhooks, webhookEndpoints } from "./webhooks.ts";

/**
 * Creating runs: the row, its folded search text and its first `state` event (numbered 1) in one statement
 * (INSERT_RUN). A plain create (no idempotency key, attachment or trace) is that statement alone, with its
 * notification, outside a transaction: one round trip. It inserts nothing when the team has a webhook
 * endpoint taking run.created, whose delivery must be written in the same transaction: then the create
 * runs as a transaction. The record returned is built from what was inserted (createdRun): the statement
 * returns only the new row's id and team (`RETURNING *` had the driver parse 45 columns per create).
 *
 * With `liveKeyId` (the creating request's API key, which authentication did not look up again: src/api/auth.ts)
 * the key is checked where the run is written: the plain create's statement inserts only while the key is
 * live, and the transaction checks it before anything else. A revocation committed before that statement
 * began is seen by it (READ COMMITTED takes each statement's snapshot at its start), so a revoked key
 * changes nothing once its revocation has committed (SECURITY.md), in the create's one round trip.
 *
 * Plain creates that arrive in the same event-loop turn are one statement, a multi-row form of the same
 * one with each row guarded on its own (run-create-batch.ts): one round trip and one commit for all of them.
 */

const COLUMNS = `id, team_id, title, prompt, state, created_at, updated_at, queued_at, started_at, finished_at,
  run_time_ms, execution_started_at, execution, session_id, trigger_url, source, creator_uid, creator,
  config_name, model_id, environment_id, skill_spec, agent_config, agent_skill, status_message, artifacts,
  request_usage, metadata, schedule_id, schedule_name, schedule_cron, schedule_fire_time, parent_run_id, mode,
  root_run_id, last_event_seq, last_event_at`;

/** $1–$27: the run (runValues), $28–$30: its folded title and prompt and its first event's data. */
const VALUES = `$1, $2, $3, $4, 'QUEUED', $5, $6, $5, NULL, NULL, 0, NULL, 1, $7, $8, $9, $10, $11, $12, $13, $14,
  $15, $16, $17, NULL, $27, $18, $19, $20, $21, $22, $23, $24, $25, $26, 1, $5`;

/** The created event (webhook run.created), as transition() words a state event. */
const CREATED_EVENT = { state: "QUEUED", previous: null };

function insertRunStatement(guard: string, tail: string, head = ""): string {
  return `WITH ${head} created AS (
      INSERT INTO runs (${COLUMNS}) SELECT ${VALUES} ${guard} RETURNING id, team_id
    ), search AS (
      INSERT INTO run_search_text (run_id, title, prompt) SELECT id, $28, $29 FROM created
    ), event AS (
      INSERT INTO run_events (run_id, seq, at, type, data) SELECT id, 1, $5, 'state', $30 FROM created
    )${tail}`;
}

/** $31: the key to check, or NULL for none; the statement answers whether it is live even when it inserted nothing. */
const LIVE_KEY = `live_key AS (SELECT $31::text IS NULL OR ${keyIsLiveCondition(31)} AS live),`;
const ALONE_GUARD = `WHERE (SELECT live FROM live_key)
  AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.team_id = $2 AND e.events::jsonb ? 'run.created')`;
const NOTIFIED = `notified AS (SELECT pg_notify($32, $33) FROM created)`;
const ALONE_ANSWER = `SELECT (SELECT live FROM live_key) AS live, (SELECT id FROM created) AS id,
  (SELECT count(*) FROM notified) AS notified`;

/** Alone: only when the key is live and no endpoint of the team takes run.created; the notification goes with it. */
const INSERT_ALONE = insertRunStatement(ALONE_GUARD, `, ${NOTIFIED} ${ALONE_ANSWER}`, LIVE_KEY);

/** Alone with its audit entry ($34–$40), written only if the run is (docs/api.md, the audit log). */
const INSERT_ALONE_AUDITED = insertRunStatement(
  ALONE_GUARD,
  `, ${NOTIFIED}, audited AS (
      INSERT INTO audit_events (team_id, at, actor, actor_name, action, target, details)
      SELECT $34, $35, $36, $37, $38, $39, $40 FROM created
    ) ${ALONE_ANSWER}`,
  LIVE_KEY,
);

/** A parameter of the single statement as the batch's statement reads it: column `pN` of its row `i`. */
function batchParam(n: number): string {
  // artifacts and metadata are json columns; the row's columns are text, cast to json only explicitly.
  return `i.p${n}${n === 19 || n === 27 ? "::json" : ""}`;
}

const fromBatch = (sql: string) => sql.replace(/\$(\d+)/g, (_, n: string) => batchParam(Number(n)));

/** Each create's parameters taken out of its JSON array once, as text columns p1–p40 (jsonb: direct access). */
const BATCH_COLUMNS = Array.from({ length: 40 }, (_, i) => `e.v->>${i} AS p${i + 1}`).join(", ");

/**
 * The plain creates of one turn in one statement (run-create-batch.ts): `$1` is a JSON array with one array
 * per create holding its single statement's parameters. Each create is guarded as alone (its key live, no
 * endpoint of its team taking run.created) and answered by its ordinal.
 */
function insertBatchStatement(audited: boolean): string {
  return `WITH input AS (
      SELECT e.ord, ${BATCH_COLUMNS} FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS e(v, ord)
    ), checked AS (
      SELECT i.*, ${fromBatch(`$31::text IS NULL OR ${keyIsLiveCondition(31)}`)} AS live,
        NOT EXISTS (SELECT 1 FROM webhook_endpoints e
          WHERE e.team_id = ${batchParam(2)} AND e.events::jsonb ? 'run.created') AS plain
      FROM input i
    ), created AS (
      INSERT INTO runs (${COLUMNS}) SELECT ${fromBatch(VALUES)} FROM checked i WHERE i.live AND i.plain
      RETURNING id
    ), inserted AS (
      SELECT i.* FROM checked i WHERE i.p1 IN (SELECT id FROM created)
    ), search AS (
      INSERT INTO run_search_text (run_id, title, prompt) SELECT ${fromBatch("$1, $28, $29")} FROM inserted i
    ), event AS (
      INSERT INTO run_events (run_id, seq, at, type, data) SELECT ${fromBatch("$1, 1, $5, 'state', $30")} FROM inserted i
    ), notified AS (
      SELECT pg_notify(${fromBatch("$32, $33")}) FROM inserted i
    )${
      audited
        ? `, audited AS (
      INSERT INTO audit_events (team_id, at, actor, actor_name, action, target, details)
      SELECT ${fromBatch("$34, $35, $36, $37, $38, $39, $40")} FROM inserted i
    )`
        : ""
    }
    SELECT i.ord, i.live, c.id IS NOT NULL AS inserted, (SELECT count(*) FROM notified) AS notified
      FROM checked i LEFT JOIN created c ON c.id = i.p1`;
}

const PLAIN: BatchStatements = { alone: INSERT_ALONE, batch: insertBatchStatement(false) };
const PLAIN_AUDITED: BatchStatements = { alone: INSERT_ALONE_AUDITED, batch: insertBatchStatement(true) };

const KEY_IS_LIVE = `SELECT ${keyIsLiveCondition(1)} AS live`;

/** In a transaction: the team's endpoints come back with the run, for the webhook's delivery. */
const INSERT_IN_TX = insertRunStatement(
  "",
  ` SELECT created.id,
      (SELECT json_agg(json_build_object('id', e.id, 'events', e.events) ORDER BY e.created_at, e.id)
         FROM webhook_endpoints e WHERE e.team_id = created.team_id) AS endpoints
    FROM created`,
);

export async function createRun(
  db: Database,
  run: RunRecord,
  idem?: IdempotencyClaim,
  attachments: readonly NewAttachment[] = [],
  also: { traceparent?: string; audit?: NewAuditEvent; liveKeyId?: string } = {},
): Promise<IdempotentResult<RunRecord> | { kind: "key_revoked" }> {
  const { traceparent, audit } = also;
  let keyToCheck = also.liveKeyId;
  if (!idem && attachments.length === 0 && !traceparent) {
    const answer = await createInBatch(db, audit ? PLAIN_AUDITED : PLAIN, {
      values: [
        ...insertValues(run),
        keyToCheck ?? null,
        ...db.notification([
          ["run_changed", run.id],
          ["run_queued", run.id],
        ]),
        ...(audit ? auditValues(audit) : []),
      ],
    });
    if (!answer.live) return { kind: "key_revoked" };
    // Checked: the transaction below (an endpoint takes run.created) need not check it again.
    keyToCheck = undefined;
    if (answer.inserted) {
      db.announceHere(["run_changed", run.id]);
      db.announceHere(["run_queued", run.id]);
      return { kind: "created", value: createdRun(run), response: undefined };
    }
  }
  return db.tx(async (tx): Promise<IdempotentResult<RunRecord> | { kind: "key_revoked" }> => {
    if (keyToCheck && !(await tx.row(KEY_IS_LIVE, [keyToCheck]))!.live) return { kind: "key_revoked" };
    if (idem) {
      const seen = await checkIdempotency(tx, idem);
      if (seen) return seen;
    }
    const created = await insertRun(tx, run, attachments);
    if (traceparent) await recordRunTrace(tx, run.id, traceparent);
    if (audit) await appendAuditEvent(tx, audit);
    const response = idem ? await rememberResponse(tx, idem, created) : undefined;
    return { kind: "created", value: created, response };
  });
}

/**
 * Inserts a QUEUED run with its attachments, its folded search text and its first `state` event (with the
 * webhook deliveries it makes), and signals it with the transaction's commit.
 */
export async function insertRun(
  tx: Tx,
  run: RunRecord,
  attachments: readonly NewAttachment[] = [],
): Promise<RunRecord> {
  const row = (await tx.row(INSERT_IN_TX, insertValues(run)))!;
  await insertAttachments(
    tx,
    { runId: run.id, teamId: run.teamId, followupId: null, createdAt: run.createdAt },
    attachments,
  );
  await enqueueWebhooks(tx, run.id, "state", CREATED_EVENT, run.createdAt, webhookEndpoints(row.endpoints));
  tx.signal("run_changed", run.id);
  tx.signal("run_queued", run.id);
  return createdRun(run);
}

function auditValues(e: NewAuditEvent): unknown[] {
  return [e.teamId, e.at, e.actor, e.actorName, e.action, e.target, JSON.stringify(e.details)];
}

function insertValues(run: RunRecord): unknown[] {
  const search = runSearchText(run);
  return [
    run.id,
    run.teamId,
    run.title,
    run.prompt,
    run.createdAt,
    run.updatedAt,
    run.sessionId,
    run.triggerUrl,
    run.source,
    run.creator.uid,
    JSON.stringify(run.creator),
    run.agentConfig.name ?? null,
    run.agentConfig.model_id ?? null,
    run.agentConfig.environment_id ?? null,
    run.agentConfig.skill_spec ?? null,
    JSON.stringify(run.agentConfig),
    run.agentSkill ? JSON.stringify(run.agentSkill) : null,
    JSON.stringify(run.requestUsage),
    JSON.stringify(run.metadata),
    run.schedule?.scheduleId ?? null,
    run.schedule?.scheduleName ?? null,
    run.schedule?.cronSchedule ?? null,
    run.schedule?.fireTime ?? null,
    run.parentRunId ?? null,
    run.mode ?? "normal",
    run.rootRunId ?? null,
    JSON.stringify(run.artifacts),
    search.title,
    search.prompt,
    JSON.stringify(CREATED_EVENT),
  ];
}

/**
 * A run's row of run_search_text: its title and prompt folded as `q` is (also written by
 * migrate-to-postgres for the runs it copies, so they match `q` as if created here).
 */
export function runSearchText(run: { title: string; prompt: string }): { title: string; prompt: string } {
  return { title: foldCase(run.title), prompt: foldCase(run.prompt) };
}
