import { describe, expect, it } from "vitest";
import { type StoreSuite, waitPast } from "./suite.ts";

export function outboxConformance(t: StoreSuite): void {
  const { create } = t;

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
    const SLACK = "slack:T1:C1";
    const change = (runId: string, expectedVersion: number, over: Record<string, unknown> = {}) => ({
      runId,
      threadKey: SLACK,
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
        await t.store.recordCardChange({ ...change(run.id, 0), messages: [msg(run.id, "final:1")] }),
      ).toBe(true);
      expect(await t.store.recordCardChange(change(run.id, 0))).toBe(false); // another notifier won
      expect(
        await t.store.recordCardChange({ ...change(run.id, 1), messages: [msg(run.id, "final:1")] }),
      ).toBe(true);
      const rows = await t.store.listOutbox(run.id);
      expect(rows.filter((r) => r.dedupeKey === "final:1")).toHaveLength(1);
      // The newer card content replaced the one still waiting.
      expect(rows.filter((r) => r.kind === "card").map((r) => r.state)).toEqual(["superseded", "pending"]);
      expect(await t.store.getCardState(run.id, SLACK)).toMatchObject({ version: 2, fingerprint: "fp1" });
      const state = await t.store.loadNotifierState([run.id, "nope"]);
      expect(state.get(run.id)?.cards.get(SLACK)?.version).toBe(2);
      expect(state.has("nope")).toBe(false);
    });

    it("spaces card messages by the edit interval", async () => {
      const run = await create();
      await t.store.recordCardChange(change(run.id, 0));
      const [post] = await t.store.claimOutbox("w", { limit: 10, leaseMs: 60_000 });
      await t.store.completeOutbox(post!.id, "w", { cardRef: "1.1" });
      const now = new Date().toISOString();
      await t.store.recordCardChange({
        ...change(run.id, 1),
        now,
        card: { stream: `card:${run.id}`, target: "slack:T1:C1", payload: {}, editIntervalMs: 60_000 },
      });
      const edit = (await t.store.listOutbox(run.id)).find((r) => r.state === "pending")!;
      expect(Date.parse(edit.notBefore) - Date.parse(post!.notBefore)).toBe(60_000);
      expect(await t.store.claimOutbox("w", { limit: 10, leaseMs: 60_000 })).toEqual([]); // not due yet
    });

    it("claims each row once across concurrent claimers, in stream order, and waits for the card", async () => {
      const run = await create();
      await t.store.bindThread({
        runId: run.id,
        platform: "slack",
        workspace: "T1",
        channel: "C1",
        thread: null,
        triggerRef: null,
        requester: "U1",
        createdAt: new Date().toISOString(),
      });
      await t.store.recordCardChange({
        ...change(run.id, 0),
        messages: [msg(run.id, "a"), msg(run.id, "b")],
      });
      const other = await create();
      await t.store.recordCardChange({
        ...change(other.id, 0, { card: undefined }),
        messages: [msg(other.id, "x", "reply", "slack:T1:C2")],
      });
      const claims = await Promise.all(
        ["w1", "w2", "w3"].map((w) => t.store.claimOutbox(w, { limit: 10, leaseMs: 60_000 })),
      );
      const claimed = claims.flat();
      expect(new Set(claimed.map((r) => r.id)).size).toBe(claimed.length);
      // The card of `run` and the reply of `other`; `run`'s replies wait for its card to be posted.
      expect(claimed.map((r) => r.dedupeKey).sort()).toEqual([`card:${run.id}:${SLACK}:1`, "x"]);
      const card = claimed.find((r) => r.kind === "card")!;
      const owner = ["w1", "w2", "w3"][claims.findIndex((c) => c.some((r) => r.id === card.id))]!;
      expect(await t.store.completeOutbox(card.id, "intruder", { cardRef: "9.9" })).toBe(false);
      expect(await t.store.completeOutbox(card.id, owner, { cardRef: "1.5", thread: "1.5" })).toBe(true);
      expect((await t.store.getCardState(run.id))?.cardRef).toBe("1.5");
      expect((await t.store.getThreadBinding(run.id))?.thread).toBe("1.5");
      const next = await t.store.claimOutbox("w1", { limit: 10, leaseMs: 60_000 });
      expect(next.map((r) => r.dedupeKey)).toEqual(["a"]); // "b" waits behind "a" in its stream
      expect(await t.store.claimOutbox("w2", { limit: 10, leaseMs: 60_000, excludeTargets: [] })).toEqual([]);
    });

    it("counts attempts, hands rows back for a retry, dead-letters, and reclaims expired leases", async () => {
      const run = await create();
      await t.store.recordCardChange({
        ...change(run.id, 0, { card: undefined }),
        messages: [msg(run.id, "m")],
      });
      const [row] = await t.store.claimOutbox("w1", { limit: 1, leaseMs: 1 });
      expect(await t.store.beginOutboxAttempt(row!.id, "w1", 1)).toBe(1);
      await waitPast(3);
      const [taken] = await t.store.claimOutbox("w2", { limit: 1, leaseMs: 60_000 });
      expect(taken?.id).toBe(row!.id);
      expect(await t.store.beginOutboxAttempt(row!.id, "w1", 60_000)).toBeUndefined(); // lost the lease
      expect(await t.store.beginOutboxAttempt(row!.id, "w2", 60_000)).toBe(2);
      const later = new Date(Date.now() + 60_000).toISOString();
      expect(await t.store.retryOutbox(row!.id, "w2", later, "HTTP 500")).toBe(true);
      expect(await t.store.claimOutbox("w2", { limit: 1, leaseMs: 60_000 })).toEqual([]);
      expect(
        await t.store.claimOutbox("w2", { limit: 1, leaseMs: 60_000, excludeTargets: ["slack:T1:C1"] }),
      ).toEqual([]);
      const [again] = (await t.store.listOutbox(run.id)).filter((r) => r.state === "pending");
      expect(again).toMatchObject({ attempts: 2, lastError: "HTTP 500", notBefore: later });
      const counts = await t.store.countOutboxByState();
      expect(counts.pending).toBe(1);
      await t.store.setNotifierCursor("slack", { updatedAt: "2026-01-01T00:00:00.000Z", runId: "r1" });
      await t.store.setNotifierCursor("slack", { updatedAt: "2026-01-01T00:00:01.000Z", runId: "r2" });
      expect(await t.store.getNotifierCursor("slack")).toEqual({
        updatedAt: "2026-01-01T00:00:01.000Z",
        runId: "r2",
      });
      expect(await t.store.getNotifierCursor("github")).toBeUndefined();
    });

    it("dead letters stay out of the queue and are counted", async () => {
      const run = await create();
      await t.store.recordCardChange({
        ...change(run.id, 0, { card: undefined }),
        messages: [msg(run.id, "d")],
      });
      const [row] = await t.store.claimOutbox("w", { limit: 1, leaseMs: 60_000 });
      expect(await t.store.deadLetterOutbox(row!.id, "w", "channel_not_found")).toBe(true);
      expect((await t.store.countOutboxByState()).dead).toBe(1);
      expect(await t.store.claimOutbox("w", { limit: 10, leaseMs: 60_000 })).toEqual([]);
      expect(await t.store.pruneOutbox(new Date(Date.now() + 1000).toISOString())).toBe(0); // dead rows are kept
    });

    // GitHub: messages outside card changes, and bindings whose thread is the issue itself.
    it("enqueueOutbox adds due rows once per dedupe key, claimable without a card", async () => {
      const group = "github:o/r#7";
      const eyes = {
        ...msg(group, "gh-react:o/r:1:eyes", "reaction", "github:o"),
        stream: "gh-react:o/r:1",
      };
      await t.store.enqueueOutbox(group, [eyes]);
      await t.store.enqueueOutbox(group, [eyes]);
      expect(await t.store.listOutbox(group)).toHaveLength(1);
      const claimed = await t.store.claimOutbox("w", { limit: 10, leaseMs: 60_000 });
      expect(claimed.map((r) => r.dedupeKey)).toEqual(["gh-react:o/r:1:eyes"]);
    });

    it("a card that does not start a thread leaves the binding's thread alone (a GitHub issue is its thread)", async () => {
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
      await t.store.bindThread(binding);
      await t.store.recordCardChange({
        ...change(run.id, 0),
        threadKey: "github:o/r:7",
        card: { stream: `card:${run.id}`, target: "github:o", payload: {}, editIntervalMs: 0 },
      });
      const [card] = await t.store.claimOutbox("w", { limit: 10, leaseMs: 60_000 });
      await t.store.completeOutbox(card!.id, "w", { cardRef: "123456" });
      expect((await t.store.getCardState(run.id))?.cardRef).toBe("123456");
      expect(await t.store.getThreadBinding(run.id)).toMatchObject({ thread: null });
      const found = await t.store.findLatestBinding({
        platform: "github",
        workspace: "o/r",
        channel: "7",
        thread: null,
      });
      expect(found?.runId).toBe(run.id);
    });

    it("keeps a card per thread of a run: each thread's replies wait for its own card", async () => {
      const run = await create();
      const slack = {
        runId: run.id,
        platform: "slack",
        workspace: "T1",
        channel: "C1",
        thread: "1.1",
        triggerRef: "1.1",
        requester: "U1",
        createdAt: "2026-01-01T00:00:00.000Z",
      };
      const pr = {
        ...slack,
        platform: "github",
        workspace: "o/r",
        channel: "12",
        thread: null,
        triggerRef: null,
      };
      await t.store.bindThread(slack);
      await t.store.bindThread({ ...pr, createdAt: "2026-01-01T00:05:00.000Z" });
      await t.store.bindThread({ ...pr, createdAt: "2026-01-01T00:09:00.000Z" }); // bound already: no change
      const PR = "github:o/r:12";
      expect(
        (await t.store.listThreadBindings(run.id)).map((b) => `${b.platform}:${b.workspace}:${b.channel}`),
      ).toEqual([SLACK, PR]);
      expect(await t.store.getThreadBinding(run.id)).toMatchObject({ platform: "slack" }); // the origin
      expect(await t.store.getThreadBinding(run.id, PR)).toMatchObject({ channel: "12", askedAt: null });
      await t.store.markThreadAsked(run.id, PR, "2026-01-01T00:10:00.000Z");
      expect((await t.store.getThreadBinding(run.id, PR))?.askedAt).toBe("2026-01-01T00:10:00.000Z");
      expect((await t.store.getThreadBinding(run.id, SLACK))?.askedAt).toBeNull();

      await t.store.recordCardChange({ ...change(run.id, 0), messages: [msg(run.id, "slack-final")] });
      await t.store.recordCardChange({
        ...change(run.id, 0),
        threadKey: PR,
        card: { stream: `card:${run.id}:${PR}`, target: "github:o", payload: {}, editIntervalMs: 0 },
        messages: [{ ...msg(run.id, "pr-final", "reply", "github:o"), stream: `thread:${run.id}:${PR}` }],
      });
      const state = (await t.store.loadNotifierState([run.id])).get(run.id)!;
      expect(state.bindings.map((b) => b.platform)).toEqual(["slack", "github"]);
      expect([...state.cards.keys()].sort()).toEqual([PR, SLACK]);
      // Both cards go out first; neither thread's reply before its own card exists.
      const first = await t.store.claimOutbox("w", { limit: 10, leaseMs: 60_000 });
      expect(first.map((r) => r.kind)).toEqual(["card", "card"]);
      const prCard = first.find((r) => r.threadKey === PR)!;
      await t.store.completeOutbox(prCard.id, "w", { cardRef: "777" });
      expect(
        (await t.store.claimOutbox("w", { limit: 10, leaseMs: 60_000 })).map((r) => r.dedupeKey),
      ).toEqual(["pr-final"]);
      expect((await t.store.getCardState(run.id, PR))?.cardRef).toBe("777");
      expect((await t.store.getCardState(run.id, SLACK))?.cardRef).toBeNull();

      // The pull request merged: the thread ends once.
      expect(await t.store.endThread(run.id, PR, "merged")).toBe(true);
      expect(await t.store.endThread(run.id, PR, "closed")).toBe(false);
      expect(await t.store.getThreadBinding(run.id, PR)).toMatchObject({ ended: "merged" });
      expect(await t.store.getThreadBinding(run.id, SLACK)).toMatchObject({ ended: null });
    });
  });
}
