import type { ListEnvironmentsQuery, ListEnvironmentsResponse } from "../api-types.ts";
import { APIPromise, parseJSON, type Transport } from "../core.ts";
import type { RunRequestOptions } from "./runs.ts";

export type EnvironmentListParams = ListEnvironmentsQuery;

/** /agent/environments. */
export class Environments {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** GET /agent/environments: the configured environments with the team's latest run in each. */
  list(query: EnvironmentListParams = {}, options?: RunRequestOptions): APIPromise<ListEnvironmentsResponse> {
    const sent = this.#transport.send("GET", "agent/environments", { ...options, query: { ...query } });
    return new APIPromise(sent, parseJSON<ListEnvironmentsResponse>);
  }
}
