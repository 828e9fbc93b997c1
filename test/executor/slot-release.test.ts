import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Executor } from "../../src/executor/executor.ts";
import { HarnessRegistry } from "../../src/harnesses/harness.ts";
import { ScriptedHarness } from "../../src/harnesses/scripted.ts";
import type { RunRecord } from "../../src/model/run.ts";
import { createSandboxProvider, type SandboxProvider } from "../../src/sandbox/sandbox-provider.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { storeSuite } from "../store/conformance/suite.ts";
import { waitFor } from "../support/dispatch.ts";

/**
 * A run's executor slot is free once its end is committed: the next run is claimed while the last one's
 * sandbox is still being released (its processes ended, its cgroup removed), not after.
 */
describe("executor slots", () => {
  let dir: string;
  let store: SqliteStore;
  let executor: Executor | undefined;
  let openRelease: () => void = () => {};

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "dispatch-slots-"));
    store = new SqliteStore(join(dir, "dispatch.db"));
    await store.migrate();
    await store.ensureTeam({ id: "t1", name: "Team one" });
  });
  afterEach(async () => {
    openRelease();
    await executor?.stop(0);
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const log = pino({ level: "silent" });
  const sandboxesOff = () =>
    createSandboxProvider({
      mode: "none",
      hide: [],
      limits: { memoryBytes: 512 * 2 ** 20, pidsMax: 512 },
      log,
    });

  /** An executor with `slots` on the test's store (or `on`, a view of it), scripted runs only, no poll. */
  async function startExecutor(slots: number, sandboxes: SandboxProvider, on: SqliteStore = store) {
    executor = new Executor({
      store: on,
      harnesses: new HarnessRegistry().register(new ScriptedHarness()),
      dataDir: dir,
      slots,
      leaseMs: 60_000,
      pollIntervalMs: 60_000, // no poll in these tests: only signals and freed slots wake the executor
      log,
      sandboxes,
    });
    await executor.start();
  }

  /** The test's store, counting the claims made on their own and noting the runs claimed by runs' ends. */
  function counting() {
    const seen = { claims: 0, handedOver: [] as string[] };
    const view = new Proxy(store, {
      get(target, key, receiver) {
        if (key === "claimNextRun")
          return (...args: Parameters<SqliteStore["claimNextRun"]>) => {
            seen.claims += 1;
            return target.claimNextRun(...args);
          };
        if (key === "finishExecution")
          return async (...args: Parameters<SqliteStore["finishExecution"]>) => {
            const end = await target.finishExecution(...args);
            if (end.next) seen.handedOver.push(end.next.id);
            return end;
          };
        const value = Reflect.get(target, key, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    return { view, seen };
  }

  const state = async (run: RunRecord) => (await store.getRun("t1", run.id))?.state;

  it("claims the next run as soon as the last one has ended, while its sandbox is still being released", async () => {
    const real = await sandboxesOff();
    // Each sandbox's release waits until the test lets it go, as a slow one (many processes, a busy disk) would.
    const release = new Promise<void>((resolve) => {
      openRelease = resolve;
    });
    let closesStarted = 0;
    let closesDone = 0;
    const sandboxes: SandboxProvider = {
      kind: real.kind,
      warning: real.warning,
      limits: real.limits,
      released: () => real.released(),
      async create(opts) {
        const sandbox = await real.create(opts);
        return Object.assign(Object.create(sandbox), {
          close: async () => {
            closesStarted += 1;
            await release;
            await sandbox.close?.();
            closesDone += 1;
          },
        });
      },
    };
    const t = storeSuite(() => store);
    const first = await t.create({ prompt: "$ echo first" });
    const second = await t.create({ prompt: "$ echo second" });

    await startExecutor(1, sandboxes);

    // Both runs end while the first one's sandbox is still held: one slot served them one after the other.
    await waitFor(async () => (await state(second)) === "SUCCEEDED", {
      timeoutMs: 20_000,
      what: "both runs ended",
    });
    expect(await state(first)).toBe("SUCCEEDED");
    await waitFor(() => closesStarted === 2, { what: "the second run's sandbox release to begin" });
    expect(closesDone).toBe(0);
    const [a, b] = [await store.getRun("t1", first.id), await store.getRun("t1", second.id)];
    // Never two at once: the second started once the first had ended.
    expect(Date.parse(b!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(a!.finishedAt!));

    openRelease();
    await waitFor(async () => closesDone === 2, { timeoutMs: 20_000, what: "both sandboxes released" });
  });

  it("fills the slot a run's end frees with the next run, claimed in the end's own write", async () => {
    const { view, seen } = counting();
    const t = storeSuite(() => store);
    const runs: RunRecord[] = [];
    for (const n of ["first", "second", "third"]) runs.push(await t.create({ prompt: `$ echo ${n}` }));
    await startExecutor(1, await sandboxesOff(), view);
    await waitFor(async () => (await state(runs[2]!)) === "SUCCEEDED", { what: "the three runs to end" });
    await waitFor(() => executor!.activeRuns === 0, { what: "the slot to be free" });
    for (const run of runs) expect(await state(run)).toBe("SUCCEEDED");
    // The first run's end claimed the second, the second's the third; the third's found nothing.
    expect(seen.handedOver).toEqual([runs[1]!.id, runs[2]!.id]);
    // The slot asked on its own twice: for the first run, and once the third's end had found the queue empty.
    expect(seen.claims).toBe(2);
  });

  it("asks the store for a run when one was signalled, not each time a slot frees after the queue ran dry", async () => {
    const { view, seen } = counting();
    const t = storeSuite(() => store);
    const first = await t.create({ prompt: "$ echo first" });
    await startExecutor(4, await sandboxesOff(), view);
    await waitFor(async () => (await state(first)) === "SUCCEEDED", { what: "the first run to end" });
    await waitFor(() => executor!.activeRuns === 0, { what: "its slot to be free" });
    // Four free slots asked once each (one found the run); its slot, freed after the queue ran dry, asked nothing.
    expect(seen.claims).toBe(4);

    // A run created now is signalled, and claimed at once: the four free slots ask again, once.
    const second = await t.create({ prompt: "$ echo second" });
    await waitFor(async () => (await state(second)) === "SUCCEEDED", { what: "the second run to end" });
    await waitFor(() => executor!.activeRuns === 0, { what: "its slot to be free" });
    expect(seen.claims).toBe(8);
  });
});
