import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { Store } from "../store/store.ts";
import { removeExpiredWorkspaces } from "../workspace/workspace-retention.ts";

const HOUSEKEEPING_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 3600_000;

/**
 * Every role's hourly housekeeping: idempotency keys live 24 h (the API's promise); inbound dedupe keys,
 * delivered outbox rows and finished webhook deliveries a week; audit entries
 * DISPATCH_AUDIT_RETENTION_DAYS; web sign-ins a day; finished runs' workspaces and
 * checkpoints DISPATCH_WORKSPACE_RETENTION_HOURS. Returns the function that stops it.
 */
export function startHousekeeping(config: Config, store: Store, log: Logger): () => void {
  const timer = setInterval(() => {
    const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
    const retentionMs = config.disk.workspaceRetentionMs;
    Promise.all([
      store.pruneIdempotencyKeys(ago(DAY_MS)),
      store.pruneInbox(ago(7 * DAY_MS)),
      store.pruneOutbox(ago(7 * DAY_MS)),
      store.pruneWebhookDeliveries(ago(7 * DAY_MS)),
      config.auditRetentionMs > 0 && store.pruneAuditEvents(ago(config.auditRetentionMs)),
      store.pruneWebSignIns(ago(DAY_MS)),
      retentionMs > 0 &&
        removeExpiredWorkspaces({ store, dataDir: config.dataDir, finishedBefore: ago(retentionMs), log }),
      // Checkpoints are in the store, not on a worker's disk: they go at the same age wherever the workspace was.
      retentionMs > 0 && store.pruneCheckpoints(ago(retentionMs)),
    ]).catch((err) => log.warn({ err }, "housekeeping failed; retrying at the next interval"));
  }, HOUSEKEEPING_MS);
  timer.unref();
  return () => clearInterval(timer);
}
