import type { ListModelsResponse } from "../api-types.ts";
import { APIPromise, parseJSON, type Transport } from "../core.ts";
import type { RunRequestOptions } from "./runs.ts";

/** /agent/models. */
export class Models {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** GET /agent/models: the configured models and `default_model_id`. */
  list(options?: RunRequestOptions): APIPromise<ListModelsResponse> {
    return new APIPromise(
      this.#transport.send("GET", "agent/models", options ?? {}),
      parseJSON<ListModelsResponse>,
    );
  }
}
