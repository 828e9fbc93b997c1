import { readdir, realpath, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { Logger } from "pino";
import { deleteCheckpointRef, restoreCheckpointRef, saveCheckpointRef } from "../delivery/checkpoint-ref.ts";
import type { RemotePolicy } from "../delivery/remote-access.ts";
import type { DeliveryTarget } from "../delivery/repository-checkout.ts";
import { AGENT_AREA_SUFFIX } from "../harnesses/external/agent-area.ts";
import type { RunRecord } from "../model/run.ts";
import type { Sandbox } from "../sandbox/sandbox.ts";
import type { Store } from "../store/store.ts";
import {
  MAX_SNAPSHOT_BYTES,
  restoreDirectories,
  snapshotDirectories,
} from "../workspace/checkpoint-archive.ts";
import { type DiskQuota, measureDiskUsage, runDiskPaths } from "../workspace/disk-quota.ts";
import { listTree } from "../workspace/tree-listing.ts";

/** What the checkpoints of a run need to reach its repository (run-execution.ts's checkout has it all). */
export interface CheckpointRepository {
  target: DeliveryTarget;
  /** The git token minted for the execution (never stored, never in the sandbox). */
  token: string | undefined;
  remotes: RemotePolicy;
  /** The run's sandbox, where the checkpoint commit is made (save only). */
  sandbox?: Sandbox;
}

export interface RunCheckpointsOptions {
  store: Pick<Store, "saveCheckpoint" | "loadCheckpoint" | "deleteCheckpoint" | "holdsRun">;
  workerId: string;
  run: RunRecord;
  /** The run's workspace (workspace.ts's prepareWorkspace). */
  workspace: string;
  /** DISPATCH_RUN_DISK_QUOTA_MB: the most a checkpoint holds; MAX_SNAPSHOT_BYTES without one. */
  diskQuota?: DiskQuota;
  /** The execution's logger, which binds the run's id. */
  log: Logger;
  /** For a run with a repository whose delivery may push: its workspace goes to the hidden ref. */
  repository?: CheckpointRepository;
}

export type CheckpointSaved =
  /**
   * `bytes`: the snapshot stored plus the bundle pushed; `ref`: the hidden ref's commit, if any;
   * `unchanged`: nothing changed since this worker's last checkpoint, which stands (nothing was written).
   */
  | { saved: true; bytes: number; ms: number; ref?: string; unchanged?: true }
  | { saved: false; reason: string };

export type CheckpointRestored =
  | { restored: true; execution: number; takenAt: string; ref?: string }
  /** `reason` absent: the run has no checkpoint. */
  | { restored: false; reason?: string };

const ENDED: CheckpointSaved = { saved: false, reason: "the execution ended" };

/**
 * The checkpoints of one run on this worker (docs/runtime.md#checkpoints): `save()` after a step, and
 * `restore()` into a new workspace (after the checkout, for a run with a repository) when the run resumes
 * elsewhere. What is saved: for a run with a repository, the working tree and local commits as the
 * hidden ref `refs/dispatch/checkpoints/<run>` (checkpoint-ref.ts) and the agent's area in the store; for
 * any other run, the workspace and the agent's area in the store (checkpoint-archive.ts). The builtin
 * harness's conversation needs nothing: it is rebuilt from the transcript.
 */
export class RunCheckpoints {
  private readonly opts: RunCheckpointsOptions;
  private readonly log: Logger;
  /** The hidden ref's commit as this worker last pushed or restored it; undefined until it knows. */
  private lastRef: string | null | undefined;
  /** The settled listing (tree-listing.ts) of what this worker's last checkpoint saved. */
  private lastDigest: string | undefined;

  constructor(opts: RunCheckpointsOptions) {
    this.opts = opts;
    this.log = opts.log.child({ component: "checkpoints" });
  }

  /** `signal`: the execution ended; a save under way stops at its next phase, quietly (nothing to save for). */
  async save(signal: AbortSignal = new AbortController().signal): Promise<CheckpointSaved> {
    const started = performance.now();
    const { store, run, workerId } = this.opts;
    // Asked first, so a stale worker does not even push (the store's fenced write is what guarantees it).
    // Asked after the listing instead, a step's checkpoint that the end of the execution would overtake
    // more often got as far as its snapshot and write (bench/README.md, "Sixth round").
    if (!(await this.holdsRun())) return this.lost(signal);
    const { root, names } = await this.directories();
    const repository = this.pushableRepository();
    // A repository's checkpoint is its tree and HEAD's commits: the objects and the local ref the commit in
    // the sandbox writes (checkpoint-ref.ts) are not changes of the workspace.
    const git = `${names[0]}/.git`;
    const listing = await listTree(root, names, repository ? [`${git}/objects`, `${git}/refs/dispatch`] : []);
    if (signal.aborted) return ENDED;
    // Nothing of the workspace or the agent's area changed since the last checkpoint: it stands as it is,
    // and neither the sandbox, the remote nor the store is asked anything more.
    if (listing.settled && listing.digest === this.lastDigest) {
      const ms = Math.round(performance.now() - started);
      return { saved: true, bytes: 0, ms, unchanged: true, ...(this.lastRef ? { ref: this.lastRef } : {}) };
    }
    const limitBytes = this.limitBytes();
    let refSha: string | null = null;
    let bundleBytes = 0;
    let snapshotNames: string[] = names;
    if (repository) {
      if (this.lastRef === undefined) this.lastRef = (await store.loadCheckpoint(run.id))?.refSha ?? null;
      const ref = await saveCheckpointRef({
        runId: run.id,
        target: repository.target,
        workspace: this.opts.workspace,
        sandbox: repository.sandbox!,
        token: repository.token,
        remotes: repository.remotes,
        expected: this.lastRef ?? undefined,
        holdsRun: () => this.holdsRun(),
        ...(await this.quotaLeft()),
        signal,
        log: this.log,
      });
      if (ref.ok) {
        refSha = ref.sha;
        bundleBytes = ref.bundleBytes;
        snapshotNames = names.slice(1);
      } else if (ref.notRepository) {
        this.log.info(
          { reason: ref.reason },
          "checkpoint: the workspace is no git repository; snapshotting it",
        );
      } else {
        return this.skipped(`its workspace could not be pushed to the hidden ref: ${ref.reason}`);
      }
    }
    const snapshot = await snapshotDirectories({
      root,
      names: snapshotNames,
      limitBytes,
      ...(repository ? {} : { listing }),
    });
    if (signal.aborted) return ENDED;
    if (!snapshot.ok) return this.skipped(snapshot.reason);
    const saved = await store.saveCheckpoint(run.id, workerId, {
      takenAt: new Date().toISOString(),
      sizeBytes: snapshot.archive.length + bundleBytes,
      refSha,
      snapshot: snapshot.archive,
    });
    if (!saved) return this.lost(signal);
    if (refSha) this.lastRef = refSha;
    // What was saved was read after the listing: an equal settled listing later means the same content.
    this.lastDigest = listing.settled ? listing.digest : undefined;
    const result = {
      saved: true as const,
      bytes: snapshot.archive.length + bundleBytes,
      ms: Math.round(performance.now() - started),
      ...(refSha ? { ref: refSha } : {}),
    };
    this.log.debug(result, "checkpoint saved");
    return result;
  }

  /**
   * Puts the run's latest checkpoint into its workspace, which holds nothing of the agent yet (new, or
   * just checked out for a run with a repository). Not restored: no checkpoint, or why.
   */
  async restore(signal: AbortSignal = new AbortController().signal): Promise<CheckpointRestored> {
    const { run, workspace } = this.opts;
    const checkpoint = await this.opts.store.loadCheckpoint(run.id);
    if (!checkpoint) return { restored: false };
    const { root, names } = await this.directories();
    let archiveNames: string[] = names;
    if (checkpoint.refSha) {
      const repository = this.opts.repository;
      if (!repository) return this.notRestored("its workspace is in a repository this run no longer names");
      const ref = await restoreCheckpointRef({
        runId: run.id,
        target: repository.target,
        workspace,
        token: repository.token,
        remotes: repository.remotes,
        sha: checkpoint.refSha,
        signal,
        log: this.log,
      });
      if (!ref.ok) return this.notRestored(`its workspace could not be fetched: ${ref.reason}`);
      archiveNames = names.slice(1);
    } else if (this.opts.repository) {
      // The workspace is in the snapshot, .git and all: the checkout just made is Dispatch's own, unused.
      for (const entry of await readdir(workspace)) await rm(join(workspace, entry), { recursive: true });
    }
    const unpacked = await restoreDirectories({
      root,
      names: archiveNames,
      archive: checkpoint.snapshot,
      limitBytes: this.limitBytes(),
    });
    if (!unpacked.ok) return this.notRestored(unpacked.reason);
    this.lastRef = checkpoint.refSha;
    return {
      restored: true,
      execution: checkpoint.execution,
      takenAt: checkpoint.takenAt,
      ...(checkpoint.refSha ? { ref: checkpoint.refSha } : {}),
    };
  }

  /**
   * Gives the run's checkpoint up: its row (unless `stored` is false: gone already), and the hidden ref on
   * the remote (best effort, logged).
   */
  async discard(opts: { stored: boolean } = { stored: true }): Promise<void> {
    const repository = this.pushableRepository();
    if (repository) {
      const removed = await deleteCheckpointRef({
        runId: this.opts.run.id,
        target: repository.target,
        workspace: this.opts.workspace,
        token: repository.token,
        remotes: repository.remotes,
        signal: new AbortController().signal,
        log: this.log,
      });
      if (!removed.ok)
        this.log.warn({ reason: removed.reason }, "the checkpoint's hidden ref was not removed");
    }
    if (opts.stored) await this.opts.store.deleteCheckpoint(this.opts.run.id);
    this.lastRef = null;
    this.lastDigest = undefined;
  }

  /** The workspace and the agent's area, as names in their (real) parent directory. */
  private async directories(): Promise<{ root: string; names: [string, string] }> {
    const real = await realpath(this.opts.workspace);
    return { root: dirname(real), names: [basename(real), `${basename(real)}${AGENT_AREA_SUFFIX}`] };
  }

  /**
   * The repository the hidden ref goes to: not for a run whose delivery is "none" (Dispatch writes
   * nothing to a repository such a run names; its workspace goes to the store instead).
   */
  private pushableRepository(): CheckpointRepository | undefined {
    const repository = this.opts.repository;
    return repository?.sandbox && repository.target.mode !== "none" ? repository : undefined;
  }

  private limitBytes(): number {
    const quota = this.opts.diskQuota?.limitBytes ?? 0;
    return quota > 0 ? Math.min(quota, MAX_SNAPSHOT_BYTES) : MAX_SNAPSHOT_BYTES;
  }

  private async quotaLeft(): Promise<{ quotaLeftBytes?: number }> {
    const quota = this.opts.diskQuota?.limitBytes ?? 0;
    if (quota <= 0) return {};
    const used = await measureDiskUsage(runDiskPaths(this.opts.workspace), quota);
    return { quotaLeftBytes: Math.max(0, quota - used.bytes) };
  }

  private holdsRun(): Promise<boolean> {
    return this.opts.store.holdsRun(this.opts.run.id, this.opts.workerId);
  }

  /** The run is no longer this worker's: quietly when its execution here has ended. */
  private lost(signal: AbortSignal): CheckpointSaved {
    return signal.aborted ? ENDED : this.skipped("the run is no longer this worker's");
  }

  private skipped(reason: string): CheckpointSaved {
    this.log.warn({ reason }, `no checkpoint of the run was saved: ${reason}`);
    return { saved: false, reason };
  }

  private notRestored(reason: string): CheckpointRestored {
    this.log.warn({ reason }, `the run's checkpoint was not restored: ${reason}`);
    return { restored: false, reason };
  }
}
