import { describe, expect, it } from "vitest";
import type { WebhookEndpoint } from "../../../src/model/webhook.ts";
import type { ClaimedWebhookDelivery } from "../../../src/store/store.ts";
import { type StoreSuite, W, waitPast } from "./suite.ts";

export function webhooksConformance(t: StoreSuite): void {
  const { create } = t;
  let n = 0;
  const endpoint = async (over: Partial<WebhookEndpoint> = {}): Promise<WebhookEndpoint> => {
    n += 1;
    const made: WebhookEndpoint = {
      id: `wh_${String(n).padStart(16, "0")}`,
      teamId: "t1",
      url: `https://hooks.example.com/${n}`,
      events: ["run.created", "run.state_changed", "run.followup", "run.delivered"],
      description: null,
      secret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0",
      createdBy: "u1",
      createdAt: new Date(Date.now() + n).toISOString(),
      ...over,
    };
    await t.store.createWebhookEndpoint(made);
    return made;
  };
  /** Claims everything due for `owner`, marking each claimed delivery succeeded; returns what was claimed. */
  const drain = async (owner = "s1"): Promise<ClaimedWebhookDelivery[]> => {
    const all: ClaimedWebhookDelivery[] = [];
    for (;;) {
      const claimed = await t.store.claimWebhookDeliveries(owner, { limit: 10, leaseMs: 60_000 });
      if (claimed.length === 0) return all;
      for (const d of claimed) {
        all.push(d);
        const ok = await t.store.finishWebhookAttempt(d.id, owner, {
          outcome: "succeeded",
          at: new Date().toISOString(),
          status: 200,
          error: null,
          responseExcerpt: "ok",
        });
        expect(ok).toBe(true);
      }
    }
  };
  const types = (ds: ClaimedWebhookDelivery[]) => ds.map((d) => d.eventType);

  describe("webhooks", () => {
    it("keep a team's endpoints apart from another team's", async () => {
      const a = await endpoint({ description: "CI" });
      await endpoint({ teamId: "t2" });
      expect(await t.store.listWebhookEndpoints("t1")).toEqual([a]);
      expect(await t.store.getWebhookEndpoint("t1", a.id)).toEqual(a);
      expect(await t.store.getWebhookEndpoint("t2", a.id)).toBeUndefined();
      expect(await t.store.deleteWebhookEndpoint("t2", a.id)).toBe(false);
      expect(await t.store.listWebhookDeliveries("t2", a.id, { limit: 10 })).toBeUndefined();
      expect(await t.store.deleteWebhookEndpoint("t1", a.id)).toBe(true);
      expect(await t.store.listWebhookEndpoints("t1")).toEqual([]);
    });

    it("write a run's events with its changes, to each endpoint of its team that takes them, in order", async () => {
      const all = await endpoint();
      const states = await endpoint({ events: ["run.state_changed"] });
      await endpoint({ teamId: "t2" });
      const run = await t.runIn("SUCCEEDED");
      await t.store.addFollowup("t1", run.id, { id: "f1", message: "more please", mode: "normal" });

      const sent = await drain();
      const toAll = sent.filter((d) => d.endpointId === all.id);
      expect(types(toAll)).toEqual([
        "run.created",
        "run.state_changed",
        "run.state_changed",
        "run.followup",
        "run.state_changed",
      ]);
      expect(types(sent.filter((d) => d.endpointId === states.id))).toEqual([
        "run.state_changed",
        "run.state_changed",
        "run.state_changed",
      ]);
      expect(sent.every((d) => d.event.teamId === "t1")).toBe(true);
      // Each event as it was: the state change with the state before it, the run as it was then.
      const [created, claimed, succeeded, followup, handoff] = toAll;
      expect(created!.event.run.state).toBe("QUEUED");
      expect(claimed!.event.data).toEqual({ state: "INPROGRESS", previous_state: "QUEUED" });
      expect(claimed!.event.run.state).toBe("INPROGRESS");
      expect(succeeded!.event.data).toEqual({ state: "SUCCEEDED", previous_state: "INPROGRESS" });
      expect(followup!.event.data).toEqual({
        followup: { id: "f1", message: "more please", mode: "normal", outcome: "handoff_execution" },
      });
      expect(handoff!.event.data).toEqual({ state: "QUEUED", previous_state: "SUCCEEDED" });
      expect(handoff!.event.run.state).toBe("QUEUED");
      // One event, one webhook-id, whatever the number of endpoints it goes to.
      const succeededToStates = sent.find(
        (d) => d.endpointId === states.id && d.event.data.state === "SUCCEEDED",
      );
      expect(succeededToStates!.eventId).toBe(succeeded!.eventId);
      expect(succeeded!.eventId).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(succeeded!.url).toBe(all.url);
      expect(succeeded!.secret).toBe(all.secret);
      expect(succeeded!.attempts).toBe(1);

      const page = await t.store.listWebhookDeliveries("t1", all.id, { limit: 2 });
      expect(page!.hasMore).toBe(true);
      expect(page!.deliveries.map((d) => d.eventType)).toEqual(["run.state_changed", "run.followup"]);
      expect(page!.deliveries[0]).toMatchObject({ state: "succeeded", attempts: 1, lastStatus: 200 });
      const rest = await t.store.listWebhookDeliveries("t1", all.id, {
        limit: 10,
        before: page!.deliveries[1]!.id,
      });
      expect(rest!.deliveries.map((d) => d.eventType)).toEqual([
        "run.state_changed",
        "run.state_changed",
        "run.created",
      ]);
      expect(rest!.hasMore).toBe(false);
    });

    it("report deliveries: a pushed branch and a pull request opened, then updated", async () => {
      await endpoint({ events: ["run.delivered"] });
      const run = await t.runIn("INPROGRESS");
      await t.store.appendEvent(run.id, "log", {
        phase: "delivery",
        message: "Pushed",
        pushed_branch: "dispatch/x",
      });
      await t.store.appendEvent(run.id, "log", { phase: "delivery", message: "no push here" });
      const pr = { url: "https://github.com/o/r/pull/7", number: 7, repository: "o/r", branch: "dispatch/x" };
      const artifact = (data: Record<string, unknown>) => ({
        artifact_type: "PULL_REQUEST",
        created_at: new Date().toISOString(),
        data,
      });
      await t.store.recordArtifact(run.id, artifact(pr));
      await t.store.recordArtifact(run.id, artifact({ ...pr, updated_at: new Date().toISOString() }));
      const sent = await drain();
      expect(sent.map((d) => d.event.data.delivery)).toEqual([
        { kind: "branch", branch: "dispatch/x" },
        expect.objectContaining({ kind: "pull_request", action: "opened", url: pr.url, number: 7 }),
        expect.objectContaining({ kind: "pull_request", action: "updated", url: pr.url }),
      ]);
      expect(sent[1]!.event.run.artifacts).toHaveLength(1);
    });

    it("keep the run's MCP secret values out of the event", async () => {
      await endpoint({ events: ["run.created"] });
      await create({
        agentConfig: { mcp_servers: { gh: { command: "gh-mcp", env: { GH_TOKEN: "ghp_secretvalue" } } } },
      });
      const [sent] = await drain();
      expect(JSON.stringify(sent!.event.run)).not.toContain("ghp_secretvalue");
      expect(sent!.event.run.agentConfig.mcp_servers?.gh?.env).toHaveProperty("GH_TOKEN");
    });

    it("claim each delivery once, and a run's next event only after the one before it finished", async () => {
      await endpoint({ events: ["run.created", "run.state_changed"] });
      const run = await t.runIn("INPROGRESS");
      const [first, second] = await Promise.all([
        t.store.claimWebhookDeliveries("a", { limit: 10, leaseMs: 60_000 }),
        t.store.claimWebhookDeliveries("b", { limit: 10, leaseMs: 60_000 }),
      ]);
      const claimed = [...first, ...second];
      expect(types(claimed)).toEqual(["run.created"]);
      const owner = first.length ? "a" : "b";
      const d = claimed[0]!;
      expect(d.runId).toBe(run.id);
      // A retry later: the run's state change waits behind it.
      const later = new Date(Date.now() + 60_000).toISOString();
      expect(
        await t.store.finishWebhookAttempt(d.id, owner === "a" ? "b" : "a", {
          outcome: "succeeded",
          at: new Date().toISOString(),
          status: 200,
          error: null,
          responseExcerpt: null,
        }),
      ).toBe(false); // not the holder
      expect(
        await t.store.finishWebhookAttempt(d.id, owner, {
          outcome: "retry",
          at: new Date().toISOString(),
          status: 503,
          error: "HTTP 503",
          responseExcerpt: "busy",
          nextAttemptAt: later,
        }),
      ).toBe(true);
      expect(await t.store.claimWebhookDeliveries("a", { limit: 10, leaseMs: 60_000 })).toEqual([]);
      const pending = await t.store.getWebhookDelivery("t1", d.endpointId, d.id);
      expect(pending).toMatchObject({
        state: "pending",
        attempts: 1,
        nextAttemptAt: later,
        lastStatus: 503,
        lastError: "HTTP 503",
        responseExcerpt: "busy",
      });
      // Redelivered: due now, attempts from zero; then the state change follows it.
      const again = await t.store.redeliverWebhook("t1", d.endpointId, d.id, new Date().toISOString());
      expect(again).toMatchObject({ state: "pending", attempts: 0 });
      expect(types(await drain())).toEqual(["run.created", "run.state_changed"]);
    });

    it("fail a delivery for good without holding back the run's later events; redeliver it", async () => {
      const e = await endpoint({ events: ["run.created", "run.state_changed"] });
      await t.runIn("INPROGRESS");
      const [d] = await t.store.claimWebhookDeliveries("s", { limit: 1, leaseMs: 60_000 });
      expect(await t.store.redeliverWebhook("t1", e.id, d!.id, new Date().toISOString())).toBe("sending");
      await t.store.finishWebhookAttempt(d!.id, "s", {
        outcome: "failed",
        at: new Date().toISOString(),
        status: null,
        error: "timed out after 10 s",
        responseExcerpt: null,
      });
      const failed = await t.store.getWebhookDelivery("t1", e.id, d!.id);
      expect(failed).toMatchObject({ state: "failed", nextAttemptAt: null, lastStatus: null });
      expect(failed!.finishedAt).not.toBeNull();
      expect(types(await drain())).toEqual(["run.state_changed"]);
      expect(await t.store.redeliverWebhook("t2", e.id, d!.id, new Date().toISOString())).toBeUndefined();
      await t.store.redeliverWebhook("t1", e.id, d!.id, new Date().toISOString());
      const resent = await drain();
      expect(resent.map((r) => r.id)).toEqual([d!.id]);
      expect(resent[0]!.eventId).toBe(d!.eventId);
    });

    it("take a delivery over once its sender's lease expired, the lost attempt counted", async () => {
      await endpoint({ events: ["run.created"] });
      await create();
      const [d] = await t.store.claimWebhookDeliveries("dead", { limit: 10, leaseMs: 1 });
      await waitPast(5);
      const [again] = await t.store.claimWebhookDeliveries("alive", { limit: 10, leaseMs: 60_000 });
      expect(again).toMatchObject({ id: d!.id, attempts: 2 });
      expect(
        await t.store.finishWebhookAttempt(d!.id, "dead", {
          outcome: "succeeded",
          at: new Date().toISOString(),
          status: 200,
          error: null,
          responseExcerpt: null,
        }),
      ).toBe(false);
      // Handed back unattempted (shutting down): due again, the attempt not counted.
      await t.store.releaseWebhookDelivery(d!.id, "alive");
      const [third] = await t.store.claimWebhookDeliveries("next", { limit: 10, leaseMs: 60_000 });
      expect(third).toMatchObject({ id: d!.id, attempts: 2 });
    });

    it("drop an endpoint's deliveries with it, and prune finished deliveries and their events", async () => {
      const e = await endpoint({ events: ["run.created"] });
      const kept = await endpoint({ events: ["run.created"] });
      await create();
      await drain();
      expect(await t.store.deleteWebhookEndpoint("t1", e.id)).toBe(true);
      expect(await t.store.listWebhookDeliveries("t1", e.id, { limit: 10 })).toBeUndefined();
      expect((await t.store.listWebhookDeliveries("t1", kept.id, { limit: 10 }))!.deliveries).toHaveLength(1);
      expect(await t.store.pruneWebhookDeliveries(new Date(Date.now() - 60_000).toISOString())).toBe(0);
      expect(await t.store.pruneWebhookDeliveries(new Date(Date.now() + 60_000).toISOString())).toBe(1);
      expect((await t.store.listWebhookDeliveries("t1", kept.id, { limit: 10 }))!.deliveries).toEqual([]);
    });

    it("write nothing for a team without endpoints", async () => {
      await endpoint({ teamId: "t2" });
      const run = await t.runIn("SUCCEEDED");
      expect(run.state).toBe("SUCCEEDED");
      expect(await t.store.claimWebhookDeliveries(W, { limit: 10, leaseMs: 60_000 })).toEqual([]);
    });
  });
}
