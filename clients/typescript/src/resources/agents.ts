import type { ListAgentsResponse } from "../api-types.ts";
import { APIPromise, parseJSON, type Transport } from "../core.ts";
import type { RunRequestOptions } from "./runs.ts";

export interface AgentListParams {
  /** Only the skills of this repository (`owner/repo`). */
  repo?: string;
  sort_by?: "name" | "last_run";
  refresh?: boolean;
  /** Also list SKILL.md files that cannot be read as skills, with `error` saying why. */
  include_malformed_skills?: boolean;
}

/** /agent: the skills runs can use, grouped by name. */
export class Agents {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** GET /agent. */
  list(query: AgentListParams = {}, options?: RunRequestOptions): APIPromise<ListAgentsResponse> {
    const sent = this.#transport.send("GET", "agent", { ...options, query: { ...query } });
    return new APIPromise(sent, parseJSON<ListAgentsResponse>);
  }
}
