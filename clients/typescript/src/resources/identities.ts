import type {
  AgentIdentity,
  CreateAgentIdentityRequest,
  ListAgentIdentitiesResponse,
  UpdateAgentIdentityRequest,
} from "../api-types.ts";
import { APIPromise, parseJSON, type RequestOptions, type Transport } from "../core.ts";
import { DispatchError } from "../errors.ts";
import type { RunRequestOptions } from "./runs.ts";

export type IdentityCreateParams = CreateAgentIdentityRequest;
export type IdentityUpdateParams = UpdateAgentIdentityRequest;

/** /agent/identities: the team's service accounts. Every call needs an admin key. */
export class Identities {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** POST /agent/identities. */
  create(body: IdentityCreateParams, options?: RunRequestOptions): APIPromise<AgentIdentity> {
    return this.#json("POST", "agent/identities", { ...options, body });
  }

  /** GET /agent/identities: oldest first. */
  list(options?: RunRequestOptions): APIPromise<ListAgentIdentitiesResponse> {
    return this.#json("GET", "agent/identities", options);
  }

  /** GET /agent/identities/{uid}. */
  retrieve(uid: string, options?: RunRequestOptions): APIPromise<AgentIdentity> {
    return this.#json("GET", identityPath(uid), options);
  }

  /** PUT /agent/identities/{uid}: absent or null fields stay; an empty string or list clears one. */
  update(uid: string, body: IdentityUpdateParams, options?: RunRequestOptions): APIPromise<AgentIdentity> {
    return this.#json("PUT", identityPath(uid), { ...options, body });
  }

  /** DELETE /agent/identities/{uid}: also revokes the identity's API keys. */
  delete(uid: string, options?: RunRequestOptions): APIPromise<void> {
    return this.#json("DELETE", identityPath(uid), options);
  }

  #json<T>(method: string, path: string, options: RequestOptions = {}): APIPromise<T> {
    return new APIPromise(this.#transport.send(method, path, options), parseJSON<T>);
  }
}

function identityPath(uid: string): string {
  if (typeof uid !== "string" || uid === "") throw new DispatchError("uid must be a non-empty string");
  return `agent/identities/${encodeURIComponent(uid)}`;
}
