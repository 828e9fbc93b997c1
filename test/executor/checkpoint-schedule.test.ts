import { describe, expect, it } from "vitest";
import { CheckpointSchedule } from "../../src/executor/checkpoint-schedule.ts";
import { waitFor } from "../support/dispatch.ts";

/** A save that runs until it is told the execution ended, as RunCheckpoints.save gives up at its next phase. */
function savesUntilEnded() {
  const signals: AbortSignal[] = [];
  const save = (signal: AbortSignal) => {
    signals.push(signal);
    return new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener("abort", () => resolve(), { once: true });
    });
  };
  return { signals, save };
}

describe("the checkpoint schedule", () => {
  it("tells a save under way that the execution ended, and stops once it returns", async () => {
    const { signals, save } = savesUntilEnded();
    const schedule = new CheckpointSchedule(save, 60_000);
    schedule.stepEnded();
    await waitFor(() => signals.length === 1, { what: "the step's save to start" });
    schedule.stepEnded(); // covered by one more save after the first, never started: the execution ends
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(false);
    await schedule.stop();
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(true);
    schedule.stepEnded();
    expect(signals).toHaveLength(1);
  });

  it("tells a save under way at once when the run ended, before anyone waits for it", async () => {
    const { signals, save } = savesUntilEnded();
    const schedule = new CheckpointSchedule(save, 60_000);
    schedule.stepEnded();
    await waitFor(() => signals.length === 1, { what: "the step's save to start" });
    schedule.end();
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(true);
    schedule.stepEnded();
    await schedule.stop();
    expect(signals).toHaveLength(1);
  });

  it("lets the last save before a hand-over run to its end", async () => {
    const seen: boolean[] = [];
    const schedule = new CheckpointSchedule(async (signal) => {
      seen.push(signal.aborted);
    }, 60_000);
    schedule.stepEnded();
    await waitFor(() => seen.length === 1, { what: "the step's save" });
    await schedule.flush();
    expect(seen).toEqual([false, false]);
  });

  it("takes no checkpoint of a step the execution ends right after: its end drops it", async () => {
    const { signals, save } = savesUntilEnded();
    const schedule = new CheckpointSchedule(save, 60_000);
    schedule.stepEnded();
    schedule.end(); // the turn's end, committed before the step settled
    await schedule.stop();
    expect(signals).toHaveLength(0);
  });

  it("saves once for the steps that end while the last one settles", async () => {
    const saved: number[] = [];
    let steps = 0;
    const schedule = new CheckpointSchedule(async () => {
      saved.push(steps);
    }, 60_000);
    for (steps = 1; steps <= 3; steps++) schedule.stepEnded();
    await waitFor(() => saved.length === 1, { what: "the settled save" });
    expect(saved).toEqual([4]);
    await schedule.stop();
    expect(saved).toHaveLength(1);
  });
});
