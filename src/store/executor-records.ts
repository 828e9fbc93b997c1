import type { AttachmentInfo } from "../model/attachment.ts";
import type { FollowupRecord, RunRecord } from "../model/run.ts";
import type { NewRunCheckpoint, NewRunEvent, RunCheckpoint, RunPatch } from "./store-types.ts";

/**
 * What an agent starts with: the follow-ups handed to it (marked delivered, oldest first) and the run's
 * attachments as listAttachments lists them, read in the start's step after those follow-ups were taken,
 * so the attachments of every one of them are among them.
 */
export interface AgentStart {
  followups: FollowupRecord[];
  attachments: AttachmentInfo[];
}

/** A claim made with a run's end (finishExecution): the worker id the next run is claimed under, and its lease. */
export interface NextClaim {
  workerId: string;
  leaseMs: number;
}

/** How finishExecution may go further than the end itself. */
export interface EndOptions {
  /** Claim the next run for the slot the end frees. */
  next?: NextClaim;
  /**
   * The run as this worker claimed it: a backend may compute the end from it instead of reading the run
   * first, and writes it only if the run still shows what it was computed from.
   */
  held?: RunRecord;
}

/** What finishExecution did: the run it ended, or the follow-ups that continue it; and the run it claimed. */
export interface ExecutionEnd {
  run?: RunRecord;
  pending: FollowupRecord[];
  next?: RunRecord;
}

/**
 * The Store's executor side (part of Store, store.ts): a worker claims a run with a lease, starts its
 * agent, finishes or hands back its execution, and keeps the run's latest checkpoint, from which another
 * worker resumes it (docs/runtime.md#checkpoints). Every write that takes a `workerId` happens only while
 * that worker holds the run (lease fencing).
 */
export interface ExecutorRecords {
  /** Marks the oldest QUEUED run INPROGRESS for this worker with a lease. */
  claimNextRun(workerId: string, leaseMs: number): Promise<RunRecord | undefined>;
  /** Extends the lease; false when the worker no longer owns the run (cancelled, recovered). */
  renewLease(runId: string, workerId: string, leaseMs: number): Promise<boolean>;
  /**
   * Marks the execution's agent as started, appends `events` (what the agent starts from: the prompt, a
   * resume note, notes of the preparation) and hands it every follow-up waiting so far, in one step:
   * undefined (nothing written) when the worker no longer owns the run.
   */
  startAgent(
    runId: string,
    workerId: string,
    events?: readonly NewRunEvent[],
  ): Promise<AgentStart | undefined>;
  /**
   * Appends `events` (the end of the agent's turn: its answer), then ends the current execution with
   * `trigger` unless live follow-ups are still waiting: then the run stays as it is and they are returned
   * (marked delivered) so the agent continues with them. This closes the race in which a follow-up
   * accepted as `live_session` would otherwise be lost by a finishing worker. All in one step, only while
   * the worker holds the run (nothing is written otherwise). An execution that ends the run (any trigger
   * but `block`) drops the run's checkpoint with it: a checkpoint only serves a run in progress. With
   * `options.next`, an execution that ended its run (the slot it held is free) claims the next run as claimNextRun
   * does, in the same step: the run it claimed is `next` of the answer. No claim is made otherwise.
   */
  finishExecution(
    runId: string,
    workerId: string,
    trigger: "succeed" | "fail" | "error" | "block",
    patch: RunPatch,
    events?: readonly NewRunEvent[],
    options?: EndOptions,
  ): Promise<ExecutionEnd>;
  /**
   * Sets the run's token usage whatever its state: a cancelled or lost execution still consumed tokens
   * (the finishing transition records it otherwise). With `workerId`, only while that worker holds the
   * run or after it ended (never on a run another worker holds now).
   */
  recordUsage(runId: string, usage: RunRecord["requestUsage"], workerId?: string): Promise<void>;
  /**
   * Records a skill resolved at execution time (a remote repo) on the run this worker holds: the run's
   * agent_config (with the skill's base prompt and name) and agent_skill. False when it lost the run.
   */
  recordSkill(
    runId: string,
    workerId: string,
    agentConfig: RunRecord["agentConfig"],
    agentSkill: NonNullable<RunRecord["agentSkill"]>,
  ): Promise<boolean>;
  /**
   * Hands the run this worker holds back, still INPROGRESS, for another worker to resume from its checkpoint
   * (the worker is shutting down): no worker, `resuming: "shutdown"`, and a `log` event with `message`.
   * False when the worker no longer holds the run.
   */
  handBackRun(runId: string, workerId: string, message: string): Promise<boolean>;
  /**
   * Runs whose lease has expired (docs/architecture.md, "Runs survive their worker"): re-queued once if the
   * agent had not started; else handed back for another worker to resume (`resuming: "worker_lost"`), at
   * most `maxResumes` times per execution (default 3), and then ERROR `worker_lost`. Returns the runs it changed.
   */
  recoverExpiredLeases(maxResumes?: number): Promise<RunRecord[]>;
  /**
   * Runs BLOCKED since before `blockedBefore` (nobody answered them in time) end CANCELLED with
   * `statusMessage`. Returns the runs it ended.
   */
  cancelUnansweredRuns(
    blockedBefore: string,
    statusMessage: (run: RunRecord) => NonNullable<RunRecord["statusMessage"]>,
  ): Promise<RunRecord[]>;

  /**
   * Records the agent_config of the run this worker holds (what delivery resolved: the base branch).
   * False when it lost the run.
   */
  recordAgentConfig(runId: string, workerId: string, agentConfig: RunRecord["agentConfig"]): Promise<boolean>;
  /** Records what the run this worker holds keeps of its budget (model/budget.ts). False when it lost the run. */
  recordBudget(runId: string, workerId: string, budget: NonNullable<RunRecord["budget"]>): Promise<boolean>;

  // Checkpoints (docs/runtime.md#checkpoints): the latest of each run, from which another worker resumes it
  /**
   * Replaces the run's checkpoint (recorded with the run's current execution) only while `workerId`
   * holds the run INPROGRESS, checked in the same statement: false otherwise, so a stale worker never
   * overwrites the checkpoint of a run that moved on.
   */
  saveCheckpoint(runId: string, workerId: string, checkpoint: NewRunCheckpoint): Promise<boolean>;
  /**
   * Whether `workerId` holds the run INPROGRESS now: what a checkpoint asks before it pushes or reports an
   * unchanged checkpoint as standing (one boolean, not the run's row).
   */
  holdsRun(runId: string, workerId: string): Promise<boolean>;
  loadCheckpoint(runId: string): Promise<RunCheckpoint | undefined>;
  deleteCheckpoint(runId: string): Promise<void>;
  /** Drops the checkpoints of runs that finished before `finishedBefore` (retention, with their workspaces). */
  pruneCheckpoints(finishedBefore: string): Promise<number>;
}
