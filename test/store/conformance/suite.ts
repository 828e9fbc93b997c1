import { randomBytes } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import { expect } from "vitest";
import type { RunRecord } from "../../../src/model/run.ts";
import type { RunState } from "../../../src/model/run-state.ts";
import type { Store } from "../../../src/store/store.ts";

/** What every area of the conformance suite is given: the store under test and helpers to fill it. */
export interface StoreSuite {
  /** The store of the running test: opened afresh, migrated, with teams t1 and t2. */
  readonly store: Store;
  newRun(over?: Partial<RunRecord>): RunRecord;
  create(over?: Partial<RunRecord>): Promise<RunRecord>;
  /** Drives a fresh run into `state` through legal transitions only. */
  runIn(state: RunState): Promise<RunRecord>;
}

/** The worker that `runIn` claims runs for. */
export const W = "worker-a";

export function storeSuite(current: () => Store): StoreSuite {
  const newRun = (over: Partial<RunRecord> = {}): RunRecord => {
    const now = new Date().toISOString();
    return {
      id: uuidv7(),
      teamId: "t1",
      title: "a run",
      prompt: "do it",
      state: "QUEUED",
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
      runTimeMs: 0,
      executionStartedAt: null,
      execution: 1,
      sessionId: randomBytes(24).toString("base64url"),
      triggerUrl: null,
      source: "API",
      creator: { type: "user", uid: "u1", display_name: "U One" },
      agentConfig: { harness: { type: "scripted" } },
      agentSkill: null,
      statusMessage: null,
      artifacts: [],
      requestUsage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
      metadata: {},
      workerId: null,
      leaseExpiresAt: null,
      agentStarted: false,
      requeueCount: 0,
      ...over,
    };
  };
  const create = async (over: Partial<RunRecord> = {}) => {
    const result = await current().createRun(newRun(over));
    if (result.kind !== "created") throw new Error("not created");
    return result.value;
  };
  const runIn = async (state: RunState): Promise<RunRecord> => {
    const store = current();
    const run = await create();
    if (state === "QUEUED") return run;
    const claimed = await store.claimNextRun(W, 60_000);
    expect(claimed?.id).toBe(run.id);
    if (state === "INPROGRESS") return claimed!;
    if (state === "CANCELLED") return (await store.transition(run.id, "cancel"))!;
    if (state === "BLOCKED") {
      await store.startAgent(run.id, W);
      return (await store.transition(run.id, "block", {}, { workerId: W }))!;
    }
    const trigger = state === "SUCCEEDED" ? "succeed" : state === "FAILED" ? "fail" : "error";
    return (await store.transition(run.id, trigger, {}, { workerId: W }))!;
  };
  return {
    get store() {
      return current();
    },
    newRun,
    create,
    runIn,
  };
}

/** Lease expiry is compared to the wall clock: wait until `ms` have certainly passed. */
export async function waitPast(ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() <= until) await new Promise((r) => setImmediate(r));
}
