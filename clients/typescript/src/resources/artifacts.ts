import type { FileArtifactResponse } from "../api-types.ts";
import { APIPromise, parseJSON, type Transport } from "../core.ts";
import { DispatchError } from "../errors.ts";
import type { RunRequestOptions } from "./runs.ts";

/** /agent/artifacts: FILE artifacts of runs (the delivered patch), by their `artifact_uid`. */
export class Artifacts {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * GET /agent/artifacts/{uid}: the artifact with `data.download_url`, a signed link that works without
   * an API key until `data.expires_at` (15 minutes).
   */
  get(uid: string, options?: RunRequestOptions): APIPromise<FileArtifactResponse> {
    return new APIPromise(
      this.#transport.send("GET", artifactPath(uid), options ?? {}),
      parseJSON<FileArtifactResponse>,
    );
  }

  /** The same as `get` (the name the Oz SDKs use). */
  retrieve(uid: string, options?: RunRequestOptions): APIPromise<FileArtifactResponse> {
    return this.get(uid, options);
  }

  /** GET /agent/artifacts/{uid}/download, following its redirect to the signed link: the bytes. */
  download(uid: string, options?: RunRequestOptions): APIPromise<Uint8Array> {
    return new APIPromise(
      this.#transport.send("GET", `${artifactPath(uid)}/download`, options ?? {}),
      async (response) => new Uint8Array(await response.arrayBuffer()),
    );
  }
}

function artifactPath(uid: string): string {
  if (typeof uid !== "string" || uid === "") throw new DispatchError("uid must be a non-empty string");
  return `agent/artifacts/${encodeURIComponent(uid)}`;
}
