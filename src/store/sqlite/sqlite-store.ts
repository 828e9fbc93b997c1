import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import type { ApiKeyRecord, Caller, Principal, Team } from "../../model/identity.ts";
import type { FollowupOutcome, FollowupRecord, RunEvent, RunEventType, RunRecord } from "../../model/run.ts";
import { canApply, RUN_STATES, type RunState, type Trigger } from "../../model/run-state.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import { StoreSignals } from "../signals.ts";
import {
  type CardChange,
  type CardState,
  type IdempotencyClaim,
  type IdempotentResult,
  type NewApiKey,
  type NotifierCursor,
  OUTBOX_STATES,
  type OutboxMessage,
  type OutboxRow,
  type OutboxState,
  type RunListQuery,
  type RunPatch,
  type Store,
} from "../store.ts";

const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations/", import.meta.url));

type Row = Record<string, SQLInputValue>;

/**
 * The embedded backend: SQLite through node:sqlite in WAL mode. node:sqlite is synchronous, so each
 * method body runs to completion without interleaving inside this process; BEGIN IMMEDIATE plus a busy
 * timeout serialises writers across processes (the admin CLI next to a running server).
 */
export class SqliteStore implements Store {
  readonly kind = "sqlite";
  readonly signals = new StoreSignals();
  private readonly db: DatabaseSync;
  private readonly statements = new Map<string, StatementSync>();
  private pending: Array<{
    work: () => unknown;
    resolve: (value: unknown) => void;
    reject: (err: unknown) => void;
  }> = [];

  constructor(path: string, opts: { busyTimeoutMs?: number } = {}) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.db = new DatabaseSync(path);
    this.db.exec("PRAGMA journal_mode = WAL");
    // FULL: a run is on disk, not only in the WAL buffer, before its creation is acknowledged.
    this.db.exec("PRAGMA synchronous = FULL");
    // node:sqlite waits synchronously: keep this short, another process holds the lock only briefly.
    this.db.exec(`PRAGMA busy_timeout = ${Math.trunc(opts.busyTimeoutMs ?? 2000)}`);
    this.db.exec("PRAGMA foreign_keys = ON");
    // Reads through a memory map skip a pread per page: run lookups are random over the whole table.
    this.db.exec("PRAGMA mmap_size = 268435456");
  }

  async migrate(): Promise<void> {
    this.db.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    );
    const files = readdirSync(MIGRATIONS_DIR)
      .filter((f) => /^\d+_.*\.sql$/.test(f))
      .sort();
    for (const file of files) {
      const version = Number.parseInt(file, 10);
      this.tx(() => {
        if (this.sql("SELECT 1 FROM schema_migrations WHERE version = ?").get(version)) return;
        this.db.exec(readFileSync(MIGRATIONS_DIR + file, "utf8"));
        this.sql("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
          version,
          file,
          new Date().toISOString(),
        );
      });
    }
  }

  classifyError(err: unknown): "conflict" | "unavailable" | undefined {
    const e = err as { code?: string; errcode?: number };
    if (e?.code === "ERR_INVALID_STATE") return "unavailable"; // the database was closed
    if (e?.code !== "ERR_SQLITE_ERROR" || typeof e.errcode !== "number") return undefined;
    const primary = e.errcode & 0xff;
    if (primary === 5 || primary === 6) return "conflict"; // SQLITE_BUSY, SQLITE_LOCKED: another writer
    // SQLITE_CORRUPT, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_NOTADB
    if ([8, 10, 11, 13, 14, 26].includes(primary)) return "unavailable";
    return undefined;
  }

  async ping(): Promise<void> {
    this.sql("SELECT 1").get();
  }

  async close(): Promise<void> {
    if (this.db.isOpen) this.db.close();
  }

  // --- teams, principals, keys -------------------------------------------------------------------

  async ensureTeam(team: Team): Promise<Team> {
    this.sql("INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING").run(
      team.id,
      team.name,
      new Date().toISOString(),
    );
    const row = this.sql("SELECT id, name FROM teams WHERE id = ?").get(team.id) as Row;
    return { id: String(row.id), name: String(row.name) };
  }

  async ensurePrincipal(p: Principal): Promise<Principal> {
    this.sql(
      `INSERT INTO principals (id, team_id, type, display_name, email, created_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO NOTHING`,
    ).run(p.id, p.teamId, p.type, p.displayName, p.email, new Date().toISOString());
    return toPrincipal(this.sql("SELECT * FROM principals WHERE id = ?").get(p.id) as Row);
  }

  async insertApiKey(k: NewApiKey): Promise<ApiKeyRecord> {
    this.sql(
      "INSERT INTO api_keys (id, principal_id, name, role, hash, prefix, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ).run(k.id, k.principalId, k.name, k.role, k.hash, k.prefix, k.createdAt);
    return toApiKey(this.sql("SELECT * FROM api_keys WHERE id = ?").get(k.id) as Row);
  }

  async findCallerByKeyHash(hash: string): Promise<Caller | undefined> {
    const row = this.sql(
      `SELECT k.*, p.team_id AS p_team_id, p.type AS p_type, p.display_name AS p_display_name, p.email AS p_email,
              t.name AS t_name
         FROM api_keys k JOIN principals p ON p.id = k.principal_id JOIN teams t ON t.id = p.team_id
        WHERE k.hash = ? AND k.revoked_at IS NULL`,
    ).get(hash) as Row | undefined;
    if (!row) return undefined;
    return {
      key: toApiKey(row),
      principal: {
        id: String(row.principal_id),
        teamId: String(row.p_team_id),
        type: row.p_type as Principal["type"],
        displayName: String(row.p_display_name),
        email: (row.p_email as string | null) ?? null,
      },
      team: { id: String(row.p_team_id), name: String(row.t_name) },
    };
  }

  async listApiKeys(): Promise<Array<ApiKeyRecord & { principal: Principal }>> {
    const rows = this.sql(
      `SELECT k.*, p.id AS p_id, p.team_id, p.type, p.display_name, p.email
         FROM api_keys k JOIN principals p ON p.id = k.principal_id ORDER BY k.created_at, k.id`,
    ).all() as Row[];
    return rows.map((row) => ({
      ...toApiKey(row),
      principal: toPrincipal({ ...row, id: row.p_id ?? null }),
    }));
  }

  async revokeApiKey(idOrPrefix: string, at: string): Promise<ApiKeyRecord | undefined> {
    const revoked = this.tx(() => {
      const rows = this.sql("SELECT * FROM api_keys WHERE id = ? OR prefix = ?").all(
        idOrPrefix,
        idOrPrefix,
      ) as Row[];
      if (rows.length !== 1) return undefined;
      const id = String(rows[0]!.id);
      this.sql("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?").run(at, id);
      return toApiKey(this.sql("SELECT * FROM api_keys WHERE id = ?").get(id) as Row);
    });
    if (revoked) this.signals.emit("api_key_revoked", revoked.id);
    return revoked;
  }

  async countActiveApiKeys(): Promise<number> {
    const row = this.sql("SELECT COUNT(*) AS n FROM api_keys WHERE revoked_at IS NULL").get() as Row;
    return Number(row.n);
  }

  // --- runs ------------------------------------------------------------------------------------

  async createRun(run: RunRecord, idem?: IdempotencyClaim): Promise<IdempotentResult<RunRecord>> {
    const result = await this.grouped((): IdempotentResult<RunRecord> => {
      if (idem) {
        const seen = this.checkIdempotency(idem);
        if (seen) return seen;
      }
      this.sql(
        `INSERT INTO runs (id, team_id, title, prompt, state, created_at, updated_at, queued_at, started_at, finished_at,
           run_time_ms, execution_started_at, execution, session_id, trigger_url, source, creator_uid, creator,
           config_name, model_id, environment_id, skill_spec, agent_config, agent_skill, status_message, artifacts,
           request_usage, metadata)
         VALUES (?, ?, ?, ?, 'QUEUED', ?, ?, ?, NULL, NULL, 0, NULL, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, '[]', ?, ?)`,
      ).run(
        run.id,
        run.teamId,
        run.title,
        run.prompt,
        run.createdAt,
        run.updatedAt,
        run.createdAt,
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
      );
      this.insertEvent(run.id, "state", { state: "QUEUED", previous: null }, run.createdAt);
      const created = this.readRun(run.id)!;
      const response = idem ? this.rememberResponse(idem, created) : undefined;
      return { kind: "created", value: created, response };
    });
    if (result.kind === "created") {
      this.signals.emit("run_changed", run.id);
      this.signals.emit("run_queued", run.id);
    }
    return result;
  }

  async getRun(teamId: string, runId: string): Promise<RunRecord | undefined> {
    const row = this.sql("SELECT * FROM runs WHERE id = ? AND team_id = ?").get(runId, teamId) as
      | Row
      | undefined;
    return row ? toRun(row) : undefined;
  }

  async getRunBySession(sessionId: string): Promise<RunRecord | undefined> {
    const row = this.sql("SELECT * FROM runs WHERE session_id = ?").get(sessionId) as Row | undefined;
    return row ? toRun(row) : undefined;
  }

  async listRuns(teamId: string, q: RunListQuery): Promise<{ runs: RunRecord[]; hasMore: boolean }> {
    const where: string[] = ["team_id = ?"];
    const params: SQLInputValue[] = [teamId];
    const column = { updated_at: "updated_at", created_at: "created_at", title: "title" }[q.sortBy];
    const dir = q.sortOrder === "asc" ? "ASC" : "DESC";
    if (q.states) {
      if (q.states.length === 0) return { runs: [], hasMore: false };
      where.push(`state IN (${q.states.map(() => "?").join(", ")})`);
      params.push(...q.states);
    }
    const equal: Array<[string, string | undefined]> = [
      ["config_name", q.name],
      ["model_id", q.modelId],
      ["creator_uid", q.creator],
      ["source", q.source],
      ["environment_id", q.environmentId],
      ["skill_spec", q.skillSpec],
    ];
    for (const [col, value] of equal) {
      if (value !== undefined) {
        where.push(`${col} = ?`);
        params.push(value);
      }
    }
    const ranges: Array<[string, string | undefined]> = [
      ["created_at >", q.createdAfter],
      ["created_at <", q.createdBefore],
      ["updated_at >", q.updatedAfter],
    ];
    for (const [condition, value] of ranges) {
      if (value !== undefined) {
        where.push(`${condition} ?`);
        params.push(value);
      }
    }
    if (q.q) {
      where.push("(instr(lower(title), ?) > 0 OR instr(lower(prompt), ?) > 0)");
      const needle = q.q.toLowerCase();
      params.push(needle, needle);
    }
    if (q.after) {
      where.push(`(${column}, id) ${dir === "ASC" ? ">" : "<"} (?, ?)`);
      params.push(q.after.value, q.after.id);
    }
    // One cached statement per combination of filters in use: a bounded set, since values are bound.
    const rows = this.sql(
      `SELECT * FROM runs WHERE ${where.join(" AND ")} ORDER BY ${column} ${dir}, id ${dir} LIMIT ?`,
    ).all(...params, q.limit + 1) as Row[];
    const hasMore = rows.length > q.limit;
    return { runs: rows.slice(0, q.limit).map(toRun), hasMore };
  }

  async countRunsByState(): Promise<Record<RunState, number>> {
    const counts = Object.fromEntries(RUN_STATES.map((s) => [s, 0])) as Record<RunState, number>;
    for (const row of this.sql("SELECT state, COUNT(*) AS n FROM runs GROUP BY state").all() as Row[]) {
      counts[row.state as RunState] = Number(row.n);
    }
    return counts;
  }

  async countActiveRuns(upTo: number): Promise<number> {
    const row = this.sql(
      "SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs WHERE state IN ('QUEUED', 'INPROGRESS') LIMIT ?)",
    ).get(upTo) as Row;
    return Number(row.n);
  }

  async transition(
    runId: string,
    trigger: Trigger,
    patch: RunPatch = {},
    opts: { workerId?: string } = {},
  ): Promise<RunRecord | undefined> {
    const run = await this.grouped(() => this.applyTransition(runId, trigger, patch, opts.workerId));
    if (run) this.announce(run);
    return run;
  }

  async cancelRun(
    teamId: string,
    runId: string,
    patch: RunPatch,
    idem?: IdempotencyClaim,
  ): Promise<IdempotentResult<RunRecord> | { kind: "refused"; state: RunState } | undefined> {
    const result = await this.grouped(
      (): IdempotentResult<RunRecord> | { kind: "refused"; state: RunState } | undefined => {
        const state = this.teamRunState(teamId, runId);
        if (!state) return undefined;
        const seen = idem && this.checkIdempotency(idem);
        if (seen) return seen;
        const run = this.applyTransition(runId, "cancel", patch);
        if (!run) return { kind: "refused", state };
        return { kind: "created", value: run, response: idem ? this.rememberResponse(idem, run) : undefined };
      },
    );
    if (result?.kind === "created") this.announce(result.value);
    return result;
  }

  // --- executor --------------------------------------------------------------------------------

  async claimNextRun(workerId: string, leaseMs: number): Promise<RunRecord | undefined> {
    const run = await this.grouped(() => {
      const row = this.sql(
        "SELECT id FROM runs WHERE state = 'QUEUED' ORDER BY queued_at, id LIMIT 1",
      ).get() as Row | undefined;
      if (!row) return undefined;
      const now = Date.now();
      this.sql(
        `UPDATE runs SET state = 'INPROGRESS', worker_id = ?, lease_expires_at = ?, updated_at = ?,
            started_at = COALESCE(started_at, ?), execution_started_at = ?, agent_started = 0
          WHERE id = ? AND state = 'QUEUED'`,
      ).run(workerId, iso(now + leaseMs), iso(now), iso(now), iso(now), String(row.id));
      this.insertEvent(String(row.id), "state", { state: "INPROGRESS", previous: "QUEUED" }, iso(now));
      return this.readRun(String(row.id));
    });
    if (run) this.announce(run);
    return run;
  }

  async renewLease(runId: string, workerId: string, leaseMs: number): Promise<boolean> {
    return this.grouped(() => {
      const res = this.sql(
        "UPDATE runs SET lease_expires_at = ? WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'",
      ).run(iso(Date.now() + leaseMs), runId, workerId);
      return Number(res.changes) === 1;
    });
  }

  async startAgent(runId: string, workerId: string): Promise<FollowupRecord[] | undefined> {
    return this.grouped(() => {
      const row = this.sql(
        "UPDATE runs SET agent_started = 1 WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS' RETURNING execution",
      ).get(runId, workerId) as Row | undefined;
      return row ? this.takePending(runId, Number(row.execution)) : undefined;
    });
  }

  async finishExecution(
    runId: string,
    workerId: string,
    trigger: "succeed" | "fail" | "error",
    patch: RunPatch,
  ): Promise<{ run?: RunRecord; pending: FollowupRecord[] }> {
    const result = await this.grouped(() => {
      const owner = this.sql(
        "SELECT execution FROM runs WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'",
      ).get(runId, workerId) as Row | undefined;
      if (!owner) return { pending: [] };
      const pending = this.takePending(runId, Number(owner.execution));
      if (pending.length > 0) return { pending };
      return { run: this.applyTransition(runId, trigger, patch, workerId), pending };
    });
    if (result.run) this.announce(result.run);
    return result;
  }

  async recoverExpiredLeases(): Promise<RunRecord[]> {
    const changed = await this.grouped(() => {
      const now = iso(Date.now());
      const expired = this.sql(
        "SELECT id, agent_started, requeue_count FROM runs WHERE state = 'INPROGRESS' AND lease_expires_at < ?",
      ).all(now) as Row[];
      const out: RunRecord[] = [];
      for (const row of expired) {
        const id = String(row.id);
        if (Number(row.agent_started) === 0 && Number(row.requeue_count) === 0) {
          out.push(
            this.applyTransition(id, "requeue", {
              eventData: { reason: "lease expired before the agent started" },
            })!,
          );
          continue;
        }
        const run = this.abandon(id, undefined, {
          message: "The worker running this run was lost (its lease expired).",
          error_code: "worker_lost",
          retryable: true,
        })!;
        out.push(run);
      }
      return out;
    });
    for (const run of changed) this.announce(run);
    return changed;
  }

  async recordUsage(runId: string, usage: RunRecord["requestUsage"]): Promise<void> {
    await this.grouped(() =>
      this.sql("UPDATE runs SET request_usage = ? WHERE id = ?").run(JSON.stringify(usage), runId),
    );
  }

  async recordSkill(
    runId: string,
    workerId: string,
    agentConfig: RunRecord["agentConfig"],
    agentSkill: NonNullable<RunRecord["agentSkill"]>,
  ): Promise<boolean> {
    const changed = await this.grouped(
      () =>
        Number(
          this.sql(
            `UPDATE runs SET agent_config = ?, config_name = ?, agent_skill = ?, updated_at = ?
              WHERE id = ? AND worker_id = ? AND state = 'INPROGRESS'`,
          ).run(
            JSON.stringify(agentConfig),
            agentConfig.name ?? null,
            JSON.stringify(agentSkill),
            iso(Date.now()),
            runId,
            workerId,
          ).changes,
        ) === 1,
    );
    if (changed) this.signals.emit("run_changed", runId);
    return changed;
  }

  async abandonRun(
    runId: string,
    workerId: string,
    statusMessage: NonNullable<RunRecord["statusMessage"]>,
  ): Promise<RunRecord | undefined> {
    const run = await this.grouped(() => this.abandon(runId, workerId, statusMessage));
    if (run) this.announce(run);
    return run;
  }

  // --- follow-ups ------------------------------------------------------------------------------

  async addFollowup(
    teamId: string,
    runId: string,
    f: { id: string; message: string; mode: string },
    idem?: IdempotencyClaim,
  ): Promise<IdempotentResult<{ followup: FollowupRecord; run: RunRecord }> | undefined> {
    const result = await this.grouped(
      (): IdempotentResult<{ followup: FollowupRecord; run: RunRecord }> | undefined => {
        const state = this.teamRunState(teamId, runId);
        if (!state) return undefined;
        const seen = idem && this.checkIdempotency(idem);
        if (seen) return seen;
        const outcome: FollowupOutcome =
          state === "QUEUED"
            ? "queued_prompt"
            : state === "INPROGRESS"
              ? "live_session"
              : "handoff_execution";
        const now = iso(Date.now());
        this.sql(
          "INSERT INTO followups (id, run_id, message, mode, outcome, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        ).run(f.id, runId, f.message, f.mode, outcome, now);
        this.insertEvent(
          runId,
          "followup",
          { followup_id: f.id, message: f.message, mode: f.mode, outcome },
          now,
        );
        const run =
          outcome === "handoff_execution"
            ? this.applyTransition(runId, "handoff", { eventData: { followup_id: f.id } })!
            : this.touch(runId, now);
        const followup = toFollowup(this.sql("SELECT * FROM followups WHERE id = ?").get(f.id) as Row);
        const value = { followup, run };
        const response = idem ? this.rememberResponse(idem, value) : undefined;
        return { kind: "created", value, response };
      },
    );
    if (result?.kind === "created") {
      this.announce(result.value.run);
      this.signals.emit("followup_added", runId);
    }
    return result;
  }

  async takePendingFollowups(runId: string, execution: number): Promise<FollowupRecord[]> {
    return this.grouped(() => this.takePending(runId, execution));
  }

  // --- transcript ------------------------------------------------------------------------------

  async appendEvent(runId: string, type: RunEventType, data: Record<string, unknown>): Promise<RunEvent> {
    const event = await this.grouped(() => this.insertEvent(runId, type, data, iso(Date.now())));
    this.signals.emit("event_appended", runId, event.seq);
    return event;
  }

  async listEvents(runId: string, after: number, limit: number): Promise<RunEvent[]> {
    const rows = this.sql(
      "SELECT seq, at, type, data FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    ).all(runId, after, limit) as Row[];
    return rows.map((r) => ({
      seq: Number(r.seq),
      at: String(r.at),
      type: r.type as RunEventType,
      data: JSON.parse(String(r.data)),
    }));
  }

  // --- integrations ----------------------------------------------------------------------------

  async claimInbound(key: string, source: string, windowMs?: number): Promise<boolean> {
    return this.grouped(() => {
      const now = Date.now();
      const seen = this.sql("SELECT received_at FROM inbox WHERE key = ?").get(key) as Row | undefined;
      if (seen && (windowMs === undefined || now - Date.parse(String(seen.received_at)) < windowMs))
        return false;
      this.sql(
        "INSERT INTO inbox (key, source, received_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET received_at = excluded.received_at",
      ).run(key, source, iso(now));
      return true;
    });
  }

  async bindThread(b: ThreadBinding): Promise<void> {
    await this.grouped(() =>
      this.sql(
        `INSERT INTO thread_bindings (run_id, platform, workspace, channel, thread, trigger_ref, requester, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`,
      ).run(b.runId, b.platform, b.workspace, b.channel, b.thread, b.triggerRef, b.requester, b.createdAt),
    );
    // Where the run reports to is part of its reporting state: the notifier can act on it now.
    this.signals.emit("run_changed", b.runId);
  }

  async getThreadBinding(runId: string): Promise<ThreadBinding | undefined> {
    const row = this.sql("SELECT * FROM thread_bindings WHERE run_id = ?").get(runId) as Row | undefined;
    return row ? toBinding(row) : undefined;
  }

  async findLatestBinding(
    where: Pick<ThreadBinding, "platform" | "workspace" | "channel"> & { thread: string | null },
  ): Promise<ThreadBinding | undefined> {
    const row = this.sql(
      `SELECT * FROM thread_bindings WHERE platform = ? AND workspace = ? AND channel = ? AND thread IS ?
        ORDER BY created_at DESC, run_id DESC LIMIT 1`,
    ).get(where.platform, where.workspace, where.channel, where.thread) as Row | undefined;
    return row ? toBinding(row) : undefined;
  }

  async setBindingThread(runId: string, thread: string): Promise<void> {
    await this.grouped(() =>
      this.sql("UPDATE thread_bindings SET thread = ? WHERE run_id = ? AND thread IS NULL").run(
        thread,
        runId,
      ),
    );
  }

  async pruneInbox(olderThan: string): Promise<number> {
    return this.grouped(() =>
      Number(this.sql("DELETE FROM inbox WHERE received_at < ?").run(olderThan).changes),
    );
  }

  async pruneIdempotencyKeys(olderThan: string): Promise<number> {
    return Number(this.sql("DELETE FROM idempotency_keys WHERE created_at < ?").run(olderThan).changes);
  }

  // --- notifier --------------------------------------------------------------------------------

  async getNotifierCursor(name: string): Promise<NotifierCursor | undefined> {
    const row = this.sql("SELECT updated_at, run_id FROM notifier_cursors WHERE name = ?").get(name) as
      | Row
      | undefined;
    return row ? { updatedAt: String(row.updated_at), runId: String(row.run_id) } : undefined;
  }

  async setNotifierCursor(name: string, cursor: NotifierCursor): Promise<void> {
    await this.grouped(() =>
      this.sql(
        `INSERT INTO notifier_cursors (name, updated_at, run_id) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET updated_at = excluded.updated_at, run_id = excluded.run_id`,
      ).run(name, cursor.updatedAt, cursor.runId),
    );
  }

  async loadNotifierState(
    runIds: string[],
  ): Promise<Map<string, { binding?: ThreadBinding; card?: CardState }>> {
    const out = new Map<string, { binding?: ThreadBinding; card?: CardState }>();
    // Bounded batches keep the number of distinct cached statements small.
    for (let i = 0; i < runIds.length; i += 100) {
      const ids = runIds.slice(i, i + 100);
      const marks = ids.map(() => "?").join(", ");
      for (const row of this.sql(`SELECT * FROM thread_bindings WHERE run_id IN (${marks})`).all(
        ...ids,
      ) as Row[]) {
        out.set(String(row.run_id), { binding: toBinding(row) });
      }
      for (const row of this.sql(`SELECT * FROM notifier_cards WHERE run_id IN (${marks})`).all(
        ...ids,
      ) as Row[]) {
        const id = String(row.run_id);
        out.set(id, { ...out.get(id), card: toCardState(row) });
      }
    }
    return out;
  }

  async getCardState(runId: string): Promise<CardState | undefined> {
    const row = this.sql("SELECT * FROM notifier_cards WHERE run_id = ?").get(runId) as Row | undefined;
    return row ? toCardState(row) : undefined;
  }

  async recordCardChange(c: CardChange): Promise<boolean> {
    const done = await this.grouped(() => {
      const current = this.sql("SELECT * FROM notifier_cards WHERE run_id = ?").get(c.runId) as
        | Row
        | undefined;
      if ((current ? Number(current.version) : 0) !== c.expectedVersion) return false;
      const version = c.expectedVersion + 1;
      let lastCardAt = current ? str(current.last_card_at) : null;
      if (c.card) {
        const superseded = this.sql(
          `UPDATE outbox SET state = 'superseded', updated_at = ?
            WHERE run_id = ? AND kind = 'card' AND state = 'pending' RETURNING not_before`,
        ).all(c.now, c.runId) as Row[];
        let notBefore: string;
        if (superseded.length > 0) {
          // The newer content takes the place (and the due time) of the edit that was waiting.
          notBefore = superseded.map((r) => String(r.not_before)).sort()[0]!;
        } else if (lastCardAt) {
          notBefore = maxIso(c.now, iso(Date.parse(lastCardAt) + c.card.editIntervalMs));
        } else {
          notBefore = c.now;
        }
        lastCardAt = notBefore;
        this.insertOutbox(
          { dedupeKey: `card:${c.runId}:${version}`, kind: "card", ...c.card },
          c.runId,
          notBefore,
          c.now,
        );
      }
      for (const m of c.messages) this.insertOutbox(m, c.runId, c.now, c.now);
      this.sql(
        `INSERT INTO notifier_cards (run_id, version, fingerprint, run_updated_at, last_card_at, last_final, card_ts, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, NULL, ?)
         ON CONFLICT (run_id) DO UPDATE SET version = excluded.version, fingerprint = excluded.fingerprint,
           run_updated_at = excluded.run_updated_at, last_card_at = excluded.last_card_at,
           last_final = excluded.last_final, updated_at = excluded.updated_at`,
      ).run(c.runId, version, c.fingerprint, c.runUpdatedAt, lastCardAt, c.lastFinal, c.now);
      return true;
    });
    if (done) this.signals.emit("outbox_enqueued", c.runId);
    return done;
  }

  async claimOutbox(
    owner: string,
    opts: { limit: number; leaseMs: number; excludeTargets?: string[] },
  ): Promise<OutboxRow[]> {
    const exclude = opts.excludeTargets ?? [];
    return this.grouped(() => {
      const now = Date.now();
      const nowIso = iso(now);
      // Candidates in due order; each must be the first unfinished row of its stream, and a thread
      // message must wait for its run's card (a slash command's card is the thread it replies in).
      const rows = this.sql(
        `SELECT o.* FROM outbox o
          WHERE o.state IN ('pending', 'sending') AND o.not_before <= ?
            AND (o.state = 'pending' OR o.lease_expires_at < ?)
            AND o.target NOT IN (SELECT value FROM json_each(?))
            AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.stream = o.stream AND p.id < o.id
                              AND p.state IN ('pending', 'sending'))
            AND (o.kind = 'card'
                 OR EXISTS (SELECT 1 FROM notifier_cards c WHERE c.run_id = o.run_id AND c.card_ts IS NOT NULL)
                 OR NOT EXISTS (SELECT 1 FROM outbox q WHERE q.run_id = o.run_id AND q.kind = 'card'
                                  AND q.id < o.id AND q.state IN ('pending', 'sending')))
          ORDER BY o.not_before, o.id LIMIT ?`,
      ).all(nowIso, nowIso, JSON.stringify(exclude), opts.limit) as Row[];
      const claimed: OutboxRow[] = [];
      const until = iso(now + opts.leaseMs);
      for (const row of rows) {
        this.sql(
          "UPDATE outbox SET state = 'sending', lease_owner = ?, lease_expires_at = ?, updated_at = ? WHERE id = ?",
        ).run(owner, until, nowIso, row.id!);
        claimed.push(toOutbox({ ...row, state: "sending" }));
      }
      return claimed;
    });
  }

  async beginOutboxAttempt(id: number, owner: string, leaseMs: number): Promise<number | undefined> {
    return this.grouped(() => {
      const now = Date.now();
      const row = this.sql(
        `UPDATE outbox SET attempts = attempts + 1, lease_expires_at = ?, updated_at = ?
          WHERE id = ? AND state = 'sending' AND lease_owner = ? RETURNING attempts`,
      ).get(iso(now + leaseMs), iso(now), id, owner) as Row | undefined;
      return row ? Number(row.attempts) : undefined;
    });
  }

  async completeOutbox(id: number, owner: string, result: { cardRef?: string } = {}): Promise<boolean> {
    return this.grouped(() => {
      const now = iso(Date.now());
      const row = this.sql(
        `UPDATE outbox SET state = 'sent', lease_owner = NULL, lease_expires_at = NULL, last_error = NULL, updated_at = ?
          WHERE id = ? AND state = 'sending' AND lease_owner = ? RETURNING run_id`,
      ).get(now, id, owner) as Row | undefined;
      if (!row) return false;
      if (result.cardRef) {
        const runId = String(row.run_id);
        this.sql("UPDATE notifier_cards SET card_ts = ?, updated_at = ? WHERE run_id = ?").run(
          result.cardRef,
          now,
          runId,
        );
        this.sql(
          "UPDATE thread_bindings SET thread = ? WHERE run_id = ? AND thread IS NULL AND platform = 'slack'",
        ).run(result.cardRef, runId);
      }
      return true;
    });
  }

  async retryOutbox(id: number, owner: string, notBefore: string, error: string | null): Promise<boolean> {
    return this.grouped(() => {
      const res = this.sql(
        `UPDATE outbox SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, not_before = ?,
            last_error = COALESCE(?, last_error), updated_at = ?
          WHERE id = ? AND state = 'sending' AND lease_owner = ?`,
      ).run(notBefore, error, iso(Date.now()), id, owner);
      return Number(res.changes) === 1;
    });
  }

  async deadLetterOutbox(id: number, owner: string, error: string): Promise<boolean> {
    return this.grouped(() => {
      const res = this.sql(
        `UPDATE outbox SET state = 'dead', lease_owner = NULL, lease_expires_at = NULL, last_error = ?, updated_at = ?
          WHERE id = ? AND state = 'sending' AND lease_owner = ?`,
      ).run(error, iso(Date.now()), id, owner);
      return Number(res.changes) === 1;
    });
  }

  async enqueueOutbox(runId: string, messages: OutboxMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.grouped(() => {
      const now = iso(Date.now());
      for (const m of messages) this.insertOutbox(m, runId, now, now);
    });
    this.signals.emit("outbox_enqueued", runId);
  }

  async countOutboxByState(): Promise<Record<OutboxState, number>> {
    const counts = Object.fromEntries(OUTBOX_STATES.map((s) => [s, 0])) as Record<OutboxState, number>;
    for (const row of this.sql("SELECT state, COUNT(*) AS n FROM outbox GROUP BY state").all() as Row[]) {
      counts[row.state as OutboxState] = Number(row.n);
    }
    return counts;
  }

  async listOutbox(runId: string): Promise<OutboxRow[]> {
    return (this.sql("SELECT * FROM outbox WHERE run_id = ? ORDER BY id").all(runId) as Row[]).map(toOutbox);
  }

  async pruneOutbox(olderThan: string): Promise<number> {
    return this.grouped(() =>
      Number(
        this.sql("DELETE FROM outbox WHERE state IN ('sent', 'superseded') AND updated_at < ?").run(olderThan)
          .changes,
      ),
    );
  }

  private insertOutbox(m: OutboxMessage, runId: string, notBefore: string, now: string): void {
    this.sql(
      `INSERT INTO outbox (dedupe_key, run_id, kind, stream, target, payload, state, attempts, not_before, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING`,
    ).run(m.dedupeKey, runId, m.kind, m.stream, m.target, JSON.stringify(m.payload), notBefore, now, now);
  }

  // --- internals -------------------------------------------------------------------------------

  private sql(text: string): StatementSync {
    let stmt = this.statements.get(text);
    if (!stmt) {
      stmt = this.db.prepare(text);
      this.statements.set(text, stmt);
    }
    return stmt;
  }

  /**
   * Group commit: writes that arrive in the same event-loop turn share one transaction and so one fsync
   * (synchronous=FULL makes each COMMIT wait for the disk). Each write runs in its own savepoint, so one
   * failing write does not undo the others; every caller is answered only after the COMMIT.
   */
  private grouped<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      this.db.exec("BEGIN IMMEDIATE");
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    for (const item of batch) {
      this.db.exec("SAVEPOINT write");
      try {
        results.push({ ok: true, value: item.work() });
        this.db.exec("RELEASE write");
      } catch (error) {
        this.db.exec("ROLLBACK TO write");
        this.db.exec("RELEASE write");
        results.push({ ok: false, error });
      }
    }
    try {
      this.db.exec("COMMIT");
    } catch (error) {
      if (this.db.isTransaction) this.db.exec("ROLLBACK");
      for (const item of batch) item.reject(error);
      return;
    }
    batch.forEach((item, i) => {
      const result = results[i]!;
      if (result.ok) item.resolve(result.value);
      else item.reject(result.error);
    });
  }

  private tx<T>(fn: () => T): T {
    if (this.db.isTransaction) return fn();
    this.db.exec("BEGIN IMMEDIATE");
    try {
      const out = fn();
      this.db.exec("COMMIT");
      return out;
    } catch (err) {
      this.db.exec("ROLLBACK");
      throw err;
    }
  }

  /** The state of the team's run, or undefined when the team has no such run. */
  private teamRunState(teamId: string, runId: string): RunState | undefined {
    const row = this.sql("SELECT state FROM runs WHERE id = ? AND team_id = ?").get(runId, teamId) as
      | Row
      | undefined;
    return row?.state as RunState | undefined;
  }

  private readRun(id: string): RunRecord | undefined {
    const row = this.sql("SELECT * FROM runs WHERE id = ?").get(id) as Row | undefined;
    return row ? toRun(row) : undefined;
  }

  /** The compare-and-set at the heart of the lifecycle; must run inside a transaction. */
  private applyTransition(
    runId: string,
    trigger: Trigger,
    patch: RunPatch,
    workerId?: string,
  ): RunRecord | undefined {
    const run = this.readRun(runId);
    if (!run || !canApply(trigger, run.state)) return undefined;
    if (workerId !== undefined && run.workerId !== workerId) return undefined;
    const now = Date.now();
    const nowIso = iso(now);
    const executionMs = run.executionStartedAt ? Math.max(0, now - Date.parse(run.executionStartedAt)) : 0;
    let sets: Record<string, SQLInputValue>;
    switch (trigger) {
      case "succeed":
      case "fail":
      case "error":
      case "cancel":
        sets = {
          state:
            trigger === "cancel"
              ? "CANCELLED"
              : trigger === "succeed"
                ? "SUCCEEDED"
                : trigger === "fail"
                  ? "FAILED"
                  : "ERROR",
          finished_at: nowIso,
          run_time_ms: run.runTimeMs + executionMs,
          execution_started_at: null,
          worker_id: null,
          lease_expires_at: null,
        };
        break;
      case "handoff":
        sets = {
          state: "QUEUED",
          finished_at: null,
          status_message: null,
          queued_at: nowIso,
          execution: run.execution + 1,
          requeue_count: 0,
          agent_started: 0,
        };
        break;
      case "requeue":
        sets = {
          state: "QUEUED",
          worker_id: null,
          lease_expires_at: null,
          execution_started_at: null,
          requeue_count: run.requeueCount + 1,
        };
        break;
      case "claim":
        throw new Error("claims go through claimNextRun");
    }
    sets.updated_at = nowIso;
    if (patch.statusMessage !== undefined) sets.status_message = json(patch.statusMessage);
    if (patch.requestUsage !== undefined) sets.request_usage = json(patch.requestUsage);
    if (patch.artifacts !== undefined) sets.artifacts = json(patch.artifacts);
    const columns = Object.keys(sets);
    const res = this.db
      .prepare(`UPDATE runs SET ${columns.map((c) => `${c} = ?`).join(", ")} WHERE id = ? AND state = ?`)
      .run(...columns.map((c) => sets[c]!), runId, run.state);
    if (Number(res.changes) !== 1) return undefined;
    const updated = this.readRun(runId)!;
    this.insertEvent(
      runId,
      "state",
      {
        state: updated.state,
        previous: run.state,
        ...(updated.statusMessage ? { status_message: updated.statusMessage } : {}),
        ...patch.eventData,
      },
      nowIso,
    );
    return updated;
  }

  /** ERROR for a run its worker can no longer finish; follow-ups it never took start the next execution. */
  private abandon(
    runId: string,
    workerId: string | undefined,
    statusMessage: NonNullable<RunRecord["statusMessage"]>,
  ): RunRecord | undefined {
    const errored = this.applyTransition(runId, "error", { statusMessage }, workerId);
    if (!errored) return undefined;
    const waiting = this.sql("SELECT 1 FROM followups WHERE run_id = ? AND delivered_at IS NULL LIMIT 1").get(
      runId,
    );
    if (!waiting) return errored;
    return this.applyTransition(runId, "handoff", { eventData: { reason: "undelivered follow-up" } });
  }

  private touch(runId: string, at: string): RunRecord {
    this.sql("UPDATE runs SET updated_at = ? WHERE id = ?").run(at, runId);
    return this.readRun(runId)!;
  }

  private takePending(runId: string, execution: number): FollowupRecord[] {
    const rows = this.sql(
      "SELECT * FROM followups WHERE run_id = ? AND delivered_at IS NULL ORDER BY created_at, id",
    ).all(runId) as Row[];
    const now = iso(Date.now());
    for (const row of rows) {
      this.sql("UPDATE followups SET delivered_at = ?, delivered_execution = ? WHERE id = ?").run(
        now,
        execution,
        row.id!,
      );
    }
    return rows.map((r) => toFollowup({ ...r, delivered_at: now, delivered_execution: execution }));
  }

  private insertEvent(
    runId: string,
    type: RunEventType,
    data: Record<string, unknown>,
    at: string,
  ): RunEvent {
    const row = this.sql(
      "UPDATE runs SET last_event_seq = last_event_seq + 1 WHERE id = ? RETURNING last_event_seq",
    ).get(runId) as Row | undefined;
    if (!row) throw new Error(`run ${runId} does not exist`);
    const seq = Number(row.last_event_seq);
    this.sql("INSERT INTO run_events (run_id, seq, at, type, data) VALUES (?, ?, ?, ?, ?)").run(
      runId,
      seq,
      at,
      type,
      JSON.stringify(data),
    );
    return { seq, at, type, data };
  }

  private checkIdempotency(
    idem: IdempotencyClaim,
  ): { kind: "replayed"; response: unknown } | { kind: "key_reused" } | undefined {
    const row = this.sql(
      "SELECT request_hash, response, created_at FROM idempotency_keys WHERE principal_id = ? AND key = ?",
    ).get(idem.principalId, idem.key) as Row | undefined;
    if (!row) return undefined;
    if (String(row.created_at) < idem.notBefore) {
      this.sql("DELETE FROM idempotency_keys WHERE principal_id = ? AND key = ?").run(
        idem.principalId,
        idem.key,
      );
      return undefined;
    }
    if (row.request_hash !== idem.requestHash) return { kind: "key_reused" };
    return { kind: "replayed", response: JSON.parse(String(row.response)) };
  }

  private rememberResponse(idem: IdempotencyClaim, value: unknown): unknown {
    const response = idem.respond(value);
    this.sql(
      "INSERT INTO idempotency_keys (principal_id, key, request_hash, response, created_at) VALUES (?, ?, ?, ?, ?)",
    ).run(idem.principalId, idem.key, idem.requestHash, JSON.stringify(response), iso(Date.now()));
    return response;
  }

  /** Signals go out after the transaction committed, so listeners re-reading the store see the change. */
  private announce(run: RunRecord): void {
    this.signals.emit("run_changed", run.id);
    if (run.state === "QUEUED") this.signals.emit("run_queued", run.id);
    this.signals.emit("event_appended", run.id, -1);
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function json(value: unknown): string | null {
  return value === null ? null : JSON.stringify(value);
}

function parseJson<T>(value: SQLInputValue | undefined, fallback: T): T {
  return typeof value === "string" ? (JSON.parse(value) as T) : fallback;
}

function str(value: SQLInputValue | undefined): string | null {
  return value === null || value === undefined ? null : String(value);
}

function toRun(row: Row): RunRecord {
  return {
    id: String(row.id),
    teamId: String(row.team_id),
    title: String(row.title),
    prompt: String(row.prompt),
    state: row.state as RunState,
    createdAt: String(row.created_at),
    updatedAt: String(row.updated_at),
    startedAt: str(row.started_at),
    finishedAt: str(row.finished_at),
    runTimeMs: Number(row.run_time_ms),
    executionStartedAt: str(row.execution_started_at),
    execution: Number(row.execution),
    sessionId: String(row.session_id),
    triggerUrl: str(row.trigger_url),
    source: String(row.source),
    creator: parseJson(row.creator, { type: "user", uid: "", display_name: "" }),
    agentConfig: parseJson(row.agent_config, {}),
    agentSkill: parseJson(row.agent_skill, null),
    statusMessage: parseJson(row.status_message, null),
    artifacts: parseJson(row.artifacts, []),
    requestUsage: parseJson(row.request_usage, { input_tokens: 0, output_tokens: 0, total_tokens: 0 }),
    metadata: parseJson(row.metadata, {}),
    workerId: str(row.worker_id),
    leaseExpiresAt: str(row.lease_expires_at),
    agentStarted: Number(row.agent_started) === 1,
    requeueCount: Number(row.requeue_count),
  };
}

function toBinding(row: Row): ThreadBinding {
  return {
    runId: String(row.run_id),
    platform: row.platform as ThreadBinding["platform"],
    workspace: String(row.workspace),
    channel: String(row.channel),
    thread: str(row.thread),
    triggerRef: str(row.trigger_ref),
    requester: String(row.requester),
    createdAt: String(row.created_at),
  };
}

function toCardState(row: Row): CardState {
  return {
    runId: String(row.run_id),
    version: Number(row.version),
    fingerprint: String(row.fingerprint),
    runUpdatedAt: String(row.run_updated_at),
    lastCardAt: str(row.last_card_at),
    lastFinal: str(row.last_final),
    cardRef: str(row.card_ts),
  };
}

function toOutbox(row: Row): OutboxRow {
  return {
    id: Number(row.id),
    dedupeKey: String(row.dedupe_key),
    runId: String(row.run_id),
    kind: row.kind as OutboxRow["kind"],
    stream: String(row.stream),
    target: String(row.target),
    payload: parseJson(row.payload, {}),
    state: row.state as OutboxState,
    attempts: Number(row.attempts),
    notBefore: String(row.not_before),
    lastError: str(row.last_error),
    createdAt: String(row.created_at),
  };
}

function maxIso(a: string, b: string): string {
  return a > b ? a : b;
}

function toFollowup(row: Row): FollowupRecord {
  return {
    id: String(row.id),
    runId: String(row.run_id),
    message: String(row.message),
    mode: String(row.mode),
    outcome: row.outcome as FollowupOutcome,
    createdAt: String(row.created_at),
    deliveredAt: str(row.delivered_at),
    deliveredExecution: row.delivered_execution == null ? null : Number(row.delivered_execution),
  };
}

function toPrincipal(row: Row): Principal {
  return {
    id: String(row.id),
    teamId: String(row.team_id),
    type: row.type as Principal["type"],
    displayName: String(row.display_name),
    email: str(row.email),
  };
}

function toApiKey(row: Row): ApiKeyRecord {
  return {
    id: String(row.id),
    principalId: String(row.principal_id),
    name: String(row.name),
    role: row.role as ApiKeyRecord["role"],
    prefix: String(row.prefix),
    createdAt: String(row.created_at),
    revokedAt: str(row.revoked_at),
  };
}
