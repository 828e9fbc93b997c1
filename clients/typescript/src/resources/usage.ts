import type { UsageReport } from "../api-types.ts";
import { APIPromise, parseJSON, type QueryValue, type Transport } from "../core.ts";
import { DispatchError } from "../errors.ts";
import type { RunRequestOptions } from "./runs.ts";

/** What a usage report can be grouped by. */
export type UsageGroup = UsageReport["group_by"][number];

export interface UsageRetrieveParams {
  /** Inclusive: a date (`2026-03-01`, midnight UTC) or an RFC 3339 time; the first of `to`'s month when not given. */
  from?: string | Date;
  /** Exclusive; now when not given. At most 366 days after `from`. */
  to?: string | Date;
  /** Any of person, repository, channel, schedule, model; none: one row of the whole period. */
  groupBy?: readonly UsageGroup[];
}

/** /usage (a Dispatch extension): spend by person, repository, channel, schedule and model. */
export class Usage {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** GET /usage: the runs the key may see in the period, grouped and summed, with totals. */
  retrieve(params: UsageRetrieveParams = {}, options?: RunRequestOptions): APIPromise<UsageReport> {
    return new APIPromise(
      this.#transport.send("GET", "usage", { ...options, query: usageQuery(params) }),
      parseJSON<UsageReport>,
    );
  }

  /** GET /usage?format=csv: the same rows as CSV with a header row (the period on every row, no totals). */
  csv(params: UsageRetrieveParams = {}, options?: RunRequestOptions): APIPromise<string> {
    return new APIPromise(
      this.#transport.send("GET", "usage", { ...options, query: { ...usageQuery(params), format: "csv" } }),
      (response) => response.text(),
    );
  }
}

function usageQuery(params: UsageRetrieveParams): Record<string, QueryValue> {
  if (typeof params.groupBy === "string")
    throw new DispatchError("groupBy must be a list of keys, not one string");
  return {
    from: bound(params.from),
    to: bound(params.to),
    group_by: params.groupBy?.length ? params.groupBy.join(",") : undefined,
  };
}

const bound = (value: string | Date | undefined) => (value instanceof Date ? value.toISOString() : value);
