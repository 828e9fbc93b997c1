import type {
  CreateScheduleRequest,
  DeleteScheduleResponse,
  ListSchedulesResponse,
  ScheduledAgentItem,
  UpdateScheduleRequest,
} from "../api-types.ts";
import { APIPromise, parseJSON, type RequestOptions, type Transport } from "../core.ts";
import { DispatchError } from "../errors.ts";
import type { RunRequestOptions } from "./runs.ts";

export type ScheduleCreateParams = CreateScheduleRequest;
export type ScheduleUpdateParams = UpdateScheduleRequest;

/** /agent/schedules: the team's scheduled agents; each firing of one creates a run. */
export class Schedules {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * POST /agent/schedules. `name` is unique in the team; `prompt` is required unless
   * `agent_config.skill_spec` names a skill. Pass `idempotencyKey` to make a retried create land once.
   */
  create(body: ScheduleCreateParams, options?: RunRequestOptions): APIPromise<ScheduledAgentItem> {
    return this.#json("POST", "agent/schedules", { ...options, body });
  }

  /** GET /agent/schedules: sorted by name. */
  list(options?: RunRequestOptions): APIPromise<ListSchedulesResponse> {
    return this.#json("GET", "agent/schedules", options);
  }

  /** GET /agent/schedules/{id}. */
  retrieve(scheduleId: string, options?: RunRequestOptions): APIPromise<ScheduledAgentItem> {
    return this.#json("GET", schedulePath(scheduleId), options);
  }

  /** PUT /agent/schedules/{id}: replaces the schedule; what is left out takes its default. */
  update(
    scheduleId: string,
    body: ScheduleUpdateParams,
    options?: RunRequestOptions,
  ): APIPromise<ScheduledAgentItem> {
    return this.#json("PUT", schedulePath(scheduleId), { ...options, body });
  }

  /** DELETE /agent/schedules/{id}: the runs it made stay. */
  delete(scheduleId: string, options?: RunRequestOptions): APIPromise<DeleteScheduleResponse> {
    return this.#json("DELETE", schedulePath(scheduleId), options);
  }

  /** POST /agent/schedules/{id}/pause: nothing fires until it is resumed. */
  pause(scheduleId: string, options?: RunRequestOptions): APIPromise<ScheduledAgentItem> {
    return this.#json("POST", `${schedulePath(scheduleId)}/pause`, options);
  }

  /** POST /agent/schedules/{id}/resume: the slots missed while paused do not fire. */
  resume(scheduleId: string, options?: RunRequestOptions): APIPromise<ScheduledAgentItem> {
    return this.#json("POST", `${schedulePath(scheduleId)}/resume`, options);
  }

  #json<T>(method: string, path: string, options: RequestOptions = {}): APIPromise<T> {
    return new APIPromise(this.#transport.send(method, path, options), parseJSON<T>);
  }
}

function schedulePath(scheduleId: string): string {
  if (typeof scheduleId !== "string" || scheduleId === "") {
    throw new DispatchError("scheduleId must be a non-empty string");
  }
  return `agent/schedules/${encodeURIComponent(scheduleId)}`;
}
