import { randomBytes } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RunRecord } from "../../src/model/run.ts";
import { RUN_STATES, type RunState } from "../../src/model/run-state.ts";
import type { IdempotencyClaim, Store } from "../../src/store/store.ts";

/**
 * The Store contract, written once and run against every backend (the way River tests every driver):
 * a new backend is done when this suite passes on it.
 */
export function storeConformance(
  name: string,
  open: () => Promise<{ store: Store; cleanup: () => Promise<void> }>,
) {
  describe(`Store conformance: ${name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    const W = "worker-a";

    beforeEach(async () => {
      ({ store, cleanup } = await open());
      await store.migrate();
      await store.ensureTeam({ id: "t1", name: "Team one" });
      await store.ensureTeam({ id: "t2", name: "Team two" });
    });
    afterEach(async () => {
      await store.close();
      await cleanup();
    });

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
      const result = await store.createRun(newRun(over));
      if (result.kind !== "created") throw new Error("not created");
      return result.value;
    };
    /** Drives a fresh run into `state` through legal transitions only. */
    const runIn = async (state: RunState): Promise<RunRecord> => {
      const run = await create();
      if (state === "QUEUED") return run;
      const claimed = await store.claimNextRun(W, 60_000);
      expect(claimed?.id).toBe(run.id);
      if (state === "INPROGRESS") return claimed!;
      if (state === "CANCELLED") return (await store.transition(run.id, "cancel"))!;
      const trigger = state === "SUCCEEDED" ? "succeed" : state === "FAILED" ? "fail" : "error";
      return (await store.transition(run.id, trigger, {}, { workerId: W }))!;
    };

    it("migrations are idempotent", async () => {
      await store.migrate();
      await store.migrate();
      expect(await store.countActiveRuns(10)).toBe(0);
    });

    it("creates a QUEUED run with a state event, visible only to its team", async () => {
      const run = await create({ metadata: { a: "b" } });
      const got = await store.getRun("t1", run.id);
      expect(got).toMatchObject({ id: run.id, state: "QUEUED", metadata: { a: "b" }, execution: 1 });
      expect(await store.getRun("t2", run.id)).toBeUndefined();
      expect(await store.getRunBySession(run.sessionId)).toMatchObject({ id: run.id });
      const events = await store.listEvents(run.id, 0, 10);
      expect(events).toEqual([
        expect.objectContaining({ seq: 1, type: "state", data: { state: "QUEUED", previous: null } }),
      ]);
    });

    describe("transitions are compare-and-set on the current state", () => {
      const cases: Array<{ trigger: Parameters<Store["transition"]>[1]; from: RunState[]; to: RunState }> = [
        { trigger: "succeed", from: ["INPROGRESS"], to: "SUCCEEDED" },
        { trigger: "fail", from: ["INPROGRESS"], to: "FAILED" },
        { trigger: "error", from: ["INPROGRESS"], to: "ERROR" },
        { trigger: "cancel", from: ["QUEUED", "INPROGRESS"], to: "CANCELLED" },
        { trigger: "handoff", from: ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"], to: "QUEUED" },
        { trigger: "requeue", from: ["INPROGRESS"], to: "QUEUED" },
      ];
      for (const { trigger, from, to } of cases) {
        for (const state of RUN_STATES) {
          const allowed = from.includes(state);
          it(`${trigger} from ${state} is ${allowed ? `applied (→ ${to})` : "refused"}`, async () => {
            const run = await runIn(state);
            const result = await store.transition(run.id, trigger);
            const after = await store.getRun("t1", run.id);
            if (allowed) {
              expect(result?.state).toBe(to);
              expect(after?.state).toBe(to);
              const events = await store.listEvents(run.id, 0, 100);
              expect(events.at(-1)).toMatchObject({ type: "state", data: { state: to, previous: state } });
            } else {
              expect(result).toBeUndefined();
              expect(after?.state).toBe(state);
            }
          });
        }
      }

      it("a worker that does not hold the lease cannot finish the run", async () => {
        const run = await runIn("INPROGRESS");
        expect(await store.transition(run.id, "succeed", {}, { workerId: "someone-else" })).toBeUndefined();
        expect((await store.getRun("t1", run.id))?.state).toBe("INPROGRESS");
      });

      it("handoff clears status_message and finished_at and starts a new execution", async () => {
        const run = await runIn("INPROGRESS");
        await store.transition(run.id, "fail", { statusMessage: { message: "boom" } }, { workerId: W });
        const failed = await store.getRun("t1", run.id);
        expect(failed).toMatchObject({ state: "FAILED", statusMessage: { message: "boom" } });
        expect(failed?.finishedAt).not.toBeNull();
        const again = await store.transition(run.id, "handoff");
        expect(again).toMatchObject({ state: "QUEUED", statusMessage: null, finishedAt: null, execution: 2 });
      });
    });

    it("concurrent cancel and finish leave exactly one terminal state", async () => {
      for (let i = 0; i < 30; i++) {
        const run = await runIn("INPROGRESS");
        const [cancelled, finished] = await Promise.all([
          store.transition(run.id, "cancel"),
          store.finishExecution(run.id, W, "succeed", {}),
        ]);
        const final = await store.getRun("t1", run.id);
        expect([cancelled?.state, finished.run?.state].filter(Boolean)).toHaveLength(1);
        expect(["CANCELLED", "SUCCEEDED"]).toContain(final?.state);
        const terminalEvents = (await store.listEvents(run.id, 0, 100)).filter(
          (e) => e.type === "state" && e.data.state !== "QUEUED" && e.data.state !== "INPROGRESS",
        );
        expect(terminalEvents).toHaveLength(1);
      }
    });

    it("claims the oldest queued run once, and never the same run twice", async () => {
      const a = await create();
      const b = await create();
      const [first, second, third] = await Promise.all([
        store.claimNextRun("w1", 60_000),
        store.claimNextRun("w2", 60_000),
        store.claimNextRun("w3", 60_000),
      ]);
      expect([first?.id, second?.id].sort()).toEqual([a.id, b.id].sort());
      expect(third).toBeUndefined();
      expect(first).toMatchObject({ state: "INPROGRESS" });
      expect(first?.startedAt).not.toBeNull();
      expect(first?.leaseExpiresAt).not.toBeNull();
    });

    it("cancelRun cancels the team's active run once, refuses a finished one, and ignores other teams", async () => {
      const run = await create();
      expect(await store.cancelRun("t2", run.id, {})).toBeUndefined();
      const first = await store.cancelRun("t1", run.id, { statusMessage: { message: "stop" } });
      expect(first?.kind === "created" && first.value).toMatchObject({
        state: "CANCELLED",
        statusMessage: { message: "stop" },
      });
      expect(await store.cancelRun("t1", run.id, {})).toEqual({ kind: "refused", state: "CANCELLED" });
    });

    it("records usage whatever the run's state", async () => {
      const run = await runIn("CANCELLED");
      const usage = { input_tokens: 7, output_tokens: 3, total_tokens: 10 };
      await store.recordUsage(run.id, usage);
      expect((await store.getRun("t1", run.id))?.requestUsage).toEqual(usage);
    });

    it("records a skill resolved at execution on the run its worker holds", async () => {
      const run = await runIn("INPROGRESS");
      const skill = { name: "triage", full_path: "acme/skills:skills/triage/SKILL.md" };
      const config = { ...run.agentConfig, name: "triage", base_prompt: "Triage issues." };
      expect(await store.recordSkill(run.id, "someone-else", config, skill)).toBe(false);
      expect(await store.recordSkill(run.id, W, config, skill)).toBe(true);
      expect(await store.getRun("t1", run.id)).toMatchObject({ agentSkill: skill, agentConfig: config });
      const listed = await store.listRuns("t1", {
        limit: 10,
        sortBy: "created_at",
        sortOrder: "asc",
        name: "triage",
      });
      expect(listed.runs.map((r) => r.id)).toEqual([run.id]);
    });

    it("renewing a lease fails once the run is cancelled", async () => {
      const run = await runIn("INPROGRESS");
      expect(await store.renewLease(run.id, W, 60_000)).toBe(true);
      await store.transition(run.id, "cancel");
      expect(await store.renewLease(run.id, W, 60_000)).toBe(false);
      expect(await store.startAgent(run.id, W)).toBeUndefined();
    });

    describe("lease recovery", () => {
      it("re-queues once a run whose agent had not started, then errors it", async () => {
        const run = await create();
        await store.claimNextRun(W, 1);
        await waitPast(2);
        const first = await store.recoverExpiredLeases();
        expect(first.map((r) => [r.id, r.state])).toEqual([[run.id, "QUEUED"]]);
        await store.claimNextRun(W, 1);
        await waitPast(2);
        const second = await store.recoverExpiredLeases();
        expect(second[0]).toMatchObject({
          id: run.id,
          state: "ERROR",
          statusMessage: { error_code: "worker_lost" },
        });
      });

      it("errors a run whose agent had started", async () => {
        const run = await create();
        await store.claimNextRun(W, 1);
        expect(await store.startAgent(run.id, W)).toEqual([]);
        await waitPast(2);
        const [recovered] = await store.recoverExpiredLeases();
        expect(recovered).toMatchObject({
          state: "ERROR",
          statusMessage: { error_code: "worker_lost", retryable: true },
        });
      });

      it("never drops an undelivered follow-up: it starts the next execution", async () => {
        const run = await create();
        await store.claimNextRun(W, 1);
        await store.startAgent(run.id, W);
        const added = await store.addFollowup("t1", run.id, {
          id: uuidv7(),
          message: "more",
          mode: "normal",
        });
        expect(added?.kind === "created" && added.value.followup.outcome).toBe("live_session");
        await waitPast(2);
        const [recovered] = await store.recoverExpiredLeases();
        expect(recovered).toMatchObject({ state: "QUEUED", execution: 2 });
        await store.claimNextRun(W, 60_000);
        const delivered = await store.startAgent(run.id, W);
        expect(delivered?.map((f) => f.message)).toEqual(["more"]);
      });

      it("leaves runs with a live lease alone", async () => {
        await create();
        await store.claimNextRun(W, 60_000);
        expect(await store.recoverExpiredLeases()).toEqual([]);
      });
    });

    describe("follow-ups", () => {
      const outcomes: Record<RunState, string> = {
        QUEUED: "queued_prompt",
        INPROGRESS: "live_session",
        SUCCEEDED: "handoff_execution",
        FAILED: "handoff_execution",
        ERROR: "handoff_execution",
        CANCELLED: "handoff_execution",
      };
      for (const state of RUN_STATES) {
        it(`to a ${state} run → ${outcomes[state]}`, async () => {
          const run = await runIn(state);
          const result = await store.addFollowup("t1", run.id, {
            id: uuidv7(),
            message: "next",
            mode: "normal",
          });
          expect(result?.kind).toBe("created");
          if (result?.kind !== "created") return;
          expect(result.value.followup.outcome).toBe(outcomes[state]);
          const expectedState = state === "INPROGRESS" ? "INPROGRESS" : "QUEUED";
          expect((await store.getRun("t1", run.id))?.state).toBe(expectedState);
          const events = await store.listEvents(run.id, 0, 100);
          expect(events.some((e) => e.type === "followup" && e.data.message === "next")).toBe(true);
        });
      }

      it("is refused for another team's run", async () => {
        const run = await create();
        expect(
          await store.addFollowup("t2", run.id, { id: uuidv7(), message: "x", mode: "normal" }),
        ).toBeUndefined();
      });

      it("a finishing worker cannot lose a live follow-up: it gets it back instead of finishing", async () => {
        const run = await runIn("INPROGRESS");
        await store.startAgent(run.id, W);
        await store.addFollowup("t1", run.id, { id: uuidv7(), message: "late", mode: "normal" });
        const first = await store.finishExecution(run.id, W, "succeed", {});
        expect(first.run).toBeUndefined();
        expect(first.pending.map((f) => f.message)).toEqual(["late"]);
        const second = await store.finishExecution(run.id, W, "succeed", {});
        expect(second.run?.state).toBe("SUCCEEDED");
      });

      it("takePendingFollowups hands each follow-up over once, oldest first", async () => {
        const run = await runIn("INPROGRESS");
        for (const m of ["one", "two"])
          await store.addFollowup("t1", run.id, { id: uuidv7(), message: m, mode: "normal" });
        expect((await store.takePendingFollowups(run.id, 1)).map((f) => f.message)).toEqual(["one", "two"]);
        expect(await store.takePendingFollowups(run.id, 1)).toEqual([]);
      });
    });

    describe("idempotency", () => {
      const claim = (hash: string, notBefore = "1970-01-01T00:00:00.000Z"): IdempotencyClaim => ({
        principalId: "p1",
        key: "k1",
        requestHash: hash,
        respond: (value) => ({ id: (value as RunRecord).id }),
        notBefore,
      });

      it("replays the remembered response for the same request and refuses another request", async () => {
        const first = await store.createRun(newRun(), claim("h1"));
        expect(first.kind).toBe("created");
        const again = await store.createRun(newRun(), claim("h1"));
        expect(again).toEqual({
          kind: "replayed",
          response: first.kind === "created" ? first.response : null,
        });
        expect(await store.createRun(newRun(), claim("h2"))).toEqual({ kind: "key_reused" });
        expect(await store.countActiveRuns(10)).toBe(1);
      });

      it("forgets records older than the window", async () => {
        await store.createRun(newRun(), claim("h1"));
        const later = await store.createRun(newRun(), claim("h2", new Date(Date.now() + 1000).toISOString()));
        expect(later.kind).toBe("created");
      });
    });

    describe("integrations", () => {
      it("claims an inbound key once; with a window, an old key counts as new again", async () => {
        const results = await Promise.all(
          Array.from({ length: 5 }, () => store.claimInbound("slack:event:E1", "slack")),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await store.claimInbound("slack:event:E1", "slack")).toBe(false);
        expect(await store.claimInbound("slack:cmd:x", "slack", 60_000)).toBe(true);
        expect(await store.claimInbound("slack:cmd:x", "slack", 60_000)).toBe(false);
        await waitPast(5);
        expect(await store.claimInbound("slack:cmd:x", "slack", 1)).toBe(true);
      });

      it("binds runs to threads and finds a thread's latest run", async () => {
        const a = await create();
        const b = await create();
        const base = {
          platform: "slack" as const,
          workspace: "T1",
          channel: "C1",
          triggerRef: null,
          requester: "U1",
        };
        await store.bindThread({
          ...base,
          runId: a.id,
          thread: "111.1",
          createdAt: "2026-01-01T00:00:00.000Z",
        });
        await store.bindThread({ ...base, runId: b.id, thread: null, createdAt: "2026-01-01T00:00:01.000Z" });
        expect(
          await store.findLatestBinding({
            platform: "slack",
            workspace: "T1",
            channel: "C1",
            thread: "111.1",
          }),
        ).toMatchObject({ runId: a.id });
        await store.setBindingThread(b.id, "111.1");
        expect(
          await store.findLatestBinding({
            platform: "slack",
            workspace: "T1",
            channel: "C1",
            thread: "111.1",
          }),
        ).toMatchObject({ runId: b.id });
        await store.setBindingThread(b.id, "999.9"); // only a binding without a thread gets one
        expect((await store.getThreadBinding(b.id))?.thread).toBe("111.1");
        expect(
          await store.findLatestBinding({ platform: "github", workspace: "T1", channel: "C1", thread: null }),
        ).toBeUndefined();
      });
    });

    describe("notifier outbox and cards", () => {
      const msg = (
        runId: string,
        key: string,
        kind: "reply" | "reaction" = "reply",
        target = "slack:T1:C1",
      ) => ({
        dedupeKey: key,
        kind,
        stream: `thread:${runId}`,
        target,
        payload: { channel: "C1", text: key },
      });
      const change = (runId: string, expectedVersion: number, over: Record<string, unknown> = {}) => ({
        runId,
        expectedVersion,
        fingerprint: `fp${expectedVersion}`,
        runUpdatedAt: new Date().toISOString(),
        lastFinal: null,
        card: {
          stream: `card:${runId}`,
          target: "slack:T1:C1",
          payload: { v: expectedVersion },
          editIntervalMs: 0,
        },
        messages: [],
        now: new Date().toISOString(),
        ...over,
      });

      it("records a card change only at the expected version, and skips duplicate dedupe keys", async () => {
        const run = await create();
        expect(
          await store.recordCardChange({ ...change(run.id, 0), messages: [msg(run.id, "final:1")] }),
        ).toBe(true);
        expect(await store.recordCardChange(change(run.id, 0))).toBe(false); // another notifier won
        expect(
          await store.recordCardChange({ ...change(run.id, 1), messages: [msg(run.id, "final:1")] }),
        ).toBe(true);
        const rows = await store.listOutbox(run.id);
        expect(rows.filter((r) => r.dedupeKey === "final:1")).toHaveLength(1);
        // The newer card content replaced the one still waiting.
        expect(rows.filter((r) => r.kind === "card").map((r) => r.state)).toEqual(["superseded", "pending"]);
        expect(await store.getCardState(run.id)).toMatchObject({ version: 2, fingerprint: "fp1" });
        const state = await store.loadNotifierState([run.id, "nope"]);
        expect(state.get(run.id)?.card?.version).toBe(2);
        expect(state.has("nope")).toBe(false);
      });

      it("spaces card messages by the edit interval", async () => {
        const run = await create();
        await store.recordCardChange(change(run.id, 0));
        const [post] = await store.claimOutbox("w", { limit: 10, leaseMs: 60_000 });
        await store.completeOutbox(post!.id, "w", { cardRef: "1.1" });
        const now = new Date().toISOString();
        await store.recordCardChange({
          ...change(run.id, 1),
          now,
          card: { stream: `card:${run.id}`, target: "slack:T1:C1", payload: {}, editIntervalMs: 60_000 },
        });
        const edit = (await store.listOutbox(run.id)).find((r) => r.state === "pending")!;
        expect(Date.parse(edit.notBefore) - Date.parse(post!.notBefore)).toBe(60_000);
        expect(await store.claimOutbox("w", { limit: 10, leaseMs: 60_000 })).toEqual([]); // not due yet
      });

      it("claims each row once across concurrent claimers, in stream order, and waits for the card", async () => {
        const run = await create();
        await store.bindThread({
          runId: run.id,
          platform: "slack",
          workspace: "T1",
          channel: "C1",
          thread: null,
          triggerRef: null,
          requester: "U1",
          createdAt: new Date().toISOString(),
        });
        await store.recordCardChange({
          ...change(run.id, 0),
          messages: [msg(run.id, "a"), msg(run.id, "b")],
        });
        const other = await create();
        await store.recordCardChange({
          ...change(other.id, 0, { card: undefined }),
          messages: [msg(other.id, "x", "reply", "slack:T1:C2")],
        });
        const claims = await Promise.all(
          ["w1", "w2", "w3"].map((w) => store.claimOutbox(w, { limit: 10, leaseMs: 60_000 })),
        );
        const claimed = claims.flat();
        expect(new Set(claimed.map((r) => r.id)).size).toBe(claimed.length);
        // The card of `run` and the reply of `other`; `run`'s replies wait for its card to be posted.
        expect(claimed.map((r) => r.dedupeKey).sort()).toEqual([`card:${run.id}:1`, "x"]);
        const card = claimed.find((r) => r.kind === "card")!;
        const owner = ["w1", "w2", "w3"][claims.findIndex((c) => c.some((r) => r.id === card.id))]!;
        expect(await store.completeOutbox(card.id, "intruder", { cardRef: "9.9" })).toBe(false);
        expect(await store.completeOutbox(card.id, owner, { cardRef: "1.5" })).toBe(true);
        expect((await store.getCardState(run.id))?.cardRef).toBe("1.5");
        expect((await store.getThreadBinding(run.id))?.thread).toBe("1.5");
        const next = await store.claimOutbox("w1", { limit: 10, leaseMs: 60_000 });
        expect(next.map((r) => r.dedupeKey)).toEqual(["a"]); // "b" waits behind "a" in its stream
        expect(await store.claimOutbox("w2", { limit: 10, leaseMs: 60_000, excludeTargets: [] })).toEqual([]);
      });

      it("counts attempts, hands rows back for a retry, dead-letters, and reclaims expired leases", async () => {
        const run = await create();
        await store.recordCardChange({
          ...change(run.id, 0, { card: undefined }),
          messages: [msg(run.id, "m")],
        });
        const [row] = await store.claimOutbox("w1", { limit: 1, leaseMs: 1 });
        expect(await store.beginOutboxAttempt(row!.id, "w1", 1)).toBe(1);
        await waitPast(3);
        const [taken] = await store.claimOutbox("w2", { limit: 1, leaseMs: 60_000 });
        expect(taken?.id).toBe(row!.id);
        expect(await store.beginOutboxAttempt(row!.id, "w1", 60_000)).toBeUndefined(); // lost the lease
        expect(await store.beginOutboxAttempt(row!.id, "w2", 60_000)).toBe(2);
        const later = new Date(Date.now() + 60_000).toISOString();
        expect(await store.retryOutbox(row!.id, "w2", later, "HTTP 500")).toBe(true);
        expect(await store.claimOutbox("w2", { limit: 1, leaseMs: 60_000 })).toEqual([]);
        expect(
          await store.claimOutbox("w2", { limit: 1, leaseMs: 60_000, excludeTargets: ["slack:T1:C1"] }),
        ).toEqual([]);
        const [again] = (await store.listOutbox(run.id)).filter((r) => r.state === "pending");
        expect(again).toMatchObject({ attempts: 2, lastError: "HTTP 500", notBefore: later });
        const counts = await store.countOutboxByState();
        expect(counts.pending).toBe(1);
        await store.setNotifierCursor("slack", { updatedAt: "2026-01-01T00:00:00.000Z", runId: "r1" });
        await store.setNotifierCursor("slack", { updatedAt: "2026-01-01T00:00:01.000Z", runId: "r2" });
        expect(await store.getNotifierCursor("slack")).toEqual({
          updatedAt: "2026-01-01T00:00:01.000Z",
          runId: "r2",
        });
        expect(await store.getNotifierCursor("github")).toBeUndefined();
      });

      it("dead letters stay out of the queue and are counted", async () => {
        const run = await create();
        await store.recordCardChange({
          ...change(run.id, 0, { card: undefined }),
          messages: [msg(run.id, "d")],
        });
        const [row] = await store.claimOutbox("w", { limit: 1, leaseMs: 60_000 });
        expect(await store.deadLetterOutbox(row!.id, "w", "channel_not_found")).toBe(true);
        expect((await store.countOutboxByState()).dead).toBe(1);
        expect(await store.claimOutbox("w", { limit: 10, leaseMs: 60_000 })).toEqual([]);
        expect(await store.pruneOutbox(new Date(Date.now() + 1000).toISOString())).toBe(0); // dead rows are kept
      });

      // GitHub (issue 4): messages outside card changes, and bindings whose thread is the issue itself.
      it("enqueueOutbox adds due rows once per dedupe key, claimable without a card", async () => {
        const group = "github:o/r#7";
        const eyes = {
          ...msg(group, "gh-react:o/r:1:eyes", "reaction", "github:o"),
          stream: "gh-react:o/r:1",
        };
        await store.enqueueOutbox(group, [eyes]);
        await store.enqueueOutbox(group, [eyes]);
        expect(await store.listOutbox(group)).toHaveLength(1);
        const claimed = await store.claimOutbox("w", { limit: 10, leaseMs: 60_000 });
        expect(claimed.map((r) => r.dedupeKey)).toEqual(["gh-react:o/r:1:eyes"]);
      });

      it("a GitHub tracking comment does not become the binding's thread (the issue is the thread)", async () => {
        const run = await create();
        const binding = {
          runId: run.id,
          platform: "github" as const,
          workspace: "o/r",
          channel: "7",
          thread: null,
          triggerRef: "555",
          requester: "octocat",
          createdAt: new Date().toISOString(),
        };
        await store.bindThread(binding);
        await store.recordCardChange({
          ...change(run.id, 0),
          card: { stream: `card:${run.id}`, target: "github:o", payload: {}, editIntervalMs: 0 },
        });
        const [card] = await store.claimOutbox("w", { limit: 10, leaseMs: 60_000 });
        await store.completeOutbox(card!.id, "w", { cardRef: "123456" });
        expect((await store.getCardState(run.id))?.cardRef).toBe("123456");
        expect(await store.getThreadBinding(run.id)).toMatchObject({ thread: null });
        const found = await store.findLatestBinding({
          platform: "github",
          workspace: "o/r",
          channel: "7",
          thread: null,
        });
        expect(found?.runId).toBe(run.id);
      });
    });

    it("appends transcript events with consecutive sequence numbers", async () => {
      const run = await create();
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.appendEvent(run.id, "log", { i })));
      const events = await store.listEvents(run.id, 0, 1000);
      expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
      expect((await store.listEvents(run.id, 5, 3)).map((e) => e.seq)).toEqual([6, 7, 8]);
    });

    it("keyset pagination visits every run once while runs are being inserted", async () => {
      const existing = new Set<string>();
      for (let i = 0; i < 300; i++) existing.add((await create({ title: `t${i % 17}` })).id);
      for (const sortBy of ["created_at", "updated_at", "title"] as const) {
        for (const sortOrder of ["asc", "desc"] as const) {
          const seen: string[] = [];
          let after: { value: string; id: string } | undefined;
          for (;;) {
            const page = await store.listRuns("t1", {
              limit: 37,
              sortBy,
              sortOrder,
              ...(after ? { after } : {}),
            });
            seen.push(...page.runs.map((r) => r.id));
            await create({ title: "t3" }); // a concurrent insert between pages
            const last = page.runs.at(-1);
            if (!page.hasMore || !last) break;
            after = {
              value:
                sortBy === "title" ? last.title : sortBy === "created_at" ? last.createdAt : last.updatedAt,
              id: last.id,
            };
          }
          expect(new Set(seen).size, `${sortBy} ${sortOrder}: no duplicates`).toBe(seen.length);
          for (const id of existing) expect(seen, `${sortBy} ${sortOrder}: no gaps`).toContain(id);
        }
      }
    });

    it("filters runs", async () => {
      const a = await create({
        title: "Fix the flaky LOGIN test",
        agentConfig: { name: "n1", model_id: "m1" },
        source: "SLACK",
      });
      await create({
        title: "other",
        prompt: "nothing",
        creator: { type: "user", uid: "u2", display_name: "U2" },
      });
      const ids = async (q: Partial<Parameters<Store["listRuns"]>[1]>) =>
        (await store.listRuns("t1", { limit: 50, sortBy: "created_at", sortOrder: "asc", ...q })).runs.map(
          (r) => r.id,
        );
      expect(await ids({ q: "login" })).toEqual([a.id]);
      expect(await ids({ name: "n1" })).toEqual([a.id]);
      expect(await ids({ modelId: "m1" })).toEqual([a.id]);
      expect(await ids({ source: "SLACK" })).toEqual([a.id]);
      expect(await ids({ creator: "u2" })).toHaveLength(1);
      expect(await ids({ states: ["SUCCEEDED"] })).toEqual([]);
      expect(await ids({ states: [] })).toEqual([]);
      expect(await ids({ createdAfter: "2999-01-01T00:00:00.000Z" })).toEqual([]);
      expect(await store.listRuns("t2", { limit: 50, sortBy: "created_at", sortOrder: "asc" })).toEqual({
        runs: [],
        hasMore: false,
      });
    });
  });
}

/** Lease expiry is compared to the wall clock: wait until `ms` have certainly passed. */
async function waitPast(ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() <= until) await new Promise((r) => setImmediate(r));
}
