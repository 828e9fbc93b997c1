import type { Creator } from "../../model/run.ts";
import type { ReportTarget, ScheduleRecord } from "../../model/schedule.ts";
import type { ScheduleService, ScheduleSpec } from "../../schedules/schedule-service.ts";
import type { ChannelKey } from "../../store/store.ts";

/**
 * What the Slack app does with schedules, in the team its service account belongs to. Only in process:
 * a schedule's runs are bound to its channel by the Dispatch that fires them, in that Dispatch's store,
 * and the notifier that posts status cards reads the bindings of its own store. A bot fronting a remote
 * Dispatch (DISPATCH_RUN_SERVICE_URL) has no ChannelSchedules and says so to whoever asks.
 */
export interface ChannelSchedules {
  /** `idempotencyKey`: a delivery handled twice creates one schedule. */
  create(
    who: Creator,
    spec: ScheduleSpec,
    reportTo: ReportTarget,
    idempotency: { key: string; request: unknown },
  ): Promise<ScheduleRecord>;
  /** The schedules reporting to the channel, sorted by name. */
  list(channel: ChannelKey): Promise<ScheduleRecord[]>;
  findByName(name: string): Promise<ScheduleRecord | undefined>;
  delete(id: string): Promise<void>;
  /** The next fire time (RFC 3339), or null when paused or never again. */
  nextRun(schedule: ScheduleRecord): string | null;
}

/** ChannelSchedules over this process's ScheduleService, acting in `teamId` as the principal `principalId`. */
export function inProcessChannelSchedules(
  service: Pick<ScheduleService, "create" | "list" | "findByName" | "delete" | "history">,
  teamId: string,
  principalId: string,
): ChannelSchedules {
  return {
    create: (who, spec, reportTo, idempotency) =>
      service.create({ teamId, who }, spec, {
        reportTo,
        idempotency: { principalId, key: idempotency.key, rawBody: idempotency.request },
      }),
    list: (channel) => service.list(teamId, { reportTo: channel }),
    findByName: (name) => service.findByName(teamId, name),
    delete: (id) => service.delete(teamId, id),
    nextRun: (schedule) => service.history(schedule).next_run,
  };
}
