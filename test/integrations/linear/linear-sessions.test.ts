import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { type LinearDispatch, REPO, startLinearDispatch } from "./support.ts";

/**
 * The Linear agent end to end: signed AgentSessionEvent webhooks into a real Dispatch, runs executed by the
 * scripted agent, and what Linear's GraphQL API (a loopback fake) receives back: the first thought, the
 * session's run link and plan, the steps, the final response or error, the issue moved and delegated.
 */
describe("Linear agent sessions", { timeout: 120_000 }, () => {
  let l: LinearDispatch;
  beforeAll(async () => {
    l = await startLinearDispatch();
  });
  afterAll(() => l?.stop());

  it("a delegated issue: a thought at once, a LINEAR run with its link, steps, the issue started, a final response", async () => {
    const issue = l.fake.issue(l.team, {
      title: "Say hello",
      description: "Print a greeting.\n$ echo hello-from-linear",
    });
    const event = l.fake.created(issue, l.ada);
    const sessionId = event.agentSession.id;
    const sentAt = Date.now();
    const answer = await l.deliver(event);
    expect(answer.status).toBe(200);

    const thought = await l.activity(
      sessionId,
      (a) => a.content.type === "thought",
      "the first thought",
      10_000,
    );
    expect(thought.at - sentAt).toBeLessThan(10_000);
    expect(String(thought.content.body)).toContain(`On it: ${issue.identifier} Say hello`);

    const [run] = await waitFor(async () => {
      const runs = (await l.runs()).filter((r) => r.trigger_url === issue.url);
      return runs.length ? runs : undefined;
    });
    expect(run!.source).toBe("LINEAR");
    expect(run!.title).toBe(`${issue.identifier} Say hello`);
    expect(run!.creator).toMatchObject({ type: "user", uid: `linear:${l.ada.id}`, display_name: "Ada" });
    expect(run!.agent_config.repository).toBe(REPO);
    expect(run!.metadata.fixes).toBe(issue.identifier);
    // The API lists it by its source, as it lists every other source.
    expect((await l.runs("&source=LINEAR")).map((r) => r.run_id)).toContain(run!.run_id);

    const runPage = `${l.t.url}/runs/${run!.run_id}`;
    await waitFor(() => l.fake.sessionUpdates.find((u) => u.id === sessionId && u.input.externalUrls), {
      what: "the session's external URL",
    });
    expect(l.fake.sessionUpdates.find((u) => u.input.externalUrls)!.input.externalUrls).toEqual([
      { label: "Dispatch run", url: runPage },
    ]);
    await waitFor(() => l.fake.stateOf(issue) === "In Progress", { what: "the issue to be started" });
    expect(issue.delegateId).toBe(l.fake.appUserId);

    await waitForState(l.t, run!.run_id, ["SUCCEEDED"], 60_000);
    const final = await l.activity(sessionId, (a) => a.content.type === "response", "the final response");
    expect(String(final.content.body)).toContain("Succeeded");
    expect(String(final.content.body)).toContain(runPage);
    // The agent's summary (its last message) leads the response.
    expect(String(final.content.body)).toContain("Ran 1 command");

    const activities = l.fake.activitiesOf(sessionId);
    const step = activities.find((a) => a.content.type === "action" && a.content.result !== undefined);
    expect(step?.content).toMatchObject({ action: "shell", parameter: "echo hello-from-linear" });
    expect(String(step?.content.result)).toContain("hello-from-linear");
    expect(activities.find((a) => a.content.type === "action" && a.ephemeral)).toBeDefined();
    // The final response is the session's last activity, and there is one.
    expect(activities.at(-1)).toBe(final);
    expect(activities.filter((a) => a.content.type === "response")).toHaveLength(1);
    // The plan followed the run to its end.
    const plans = l.fake.sessionUpdates.filter((u) => u.id === sessionId && u.input.plan);
    expect(plans.at(-1)!.input.plan).toContainEqual({ content: "Work on the issue", status: "completed" });
  });

  it("a run that fails ends with an error activity that says what failed and what to do", async () => {
    const issue = l.fake.issue(l.team, { title: "Break it", description: "$ false" });
    const event = l.fake.created(issue, l.ada);
    expect((await l.deliver(event)).status).toBe(200);
    const error = await l.activity(
      event.agentSession.id,
      (a) => a.content.type === "error",
      "the error activity",
      60_000,
    );
    expect(String(error.content.body)).toContain("What failed");
    expect(String(error.content.body)).toContain("false");
    expect(String(error.content.body)).toContain("What to do");
  });

  it("a message in the session is a follow-up on the same run; the stop signal cancels it with a final activity", async () => {
    const issue = l.fake.issue(l.team, { title: "Two steps", description: "$ echo first" });
    const event = l.fake.created(issue, l.ada);
    const sessionId = event.agentSession.id;
    await l.deliver(event);
    await l.activity(sessionId, (a) => a.content.type === "response", "the first final", 60_000);
    const [run] = (await l.runs()).filter((r) => r.trigger_url === issue.url);

    await l.deliver(l.fake.prompted(sessionId, l.ada, "$ echo second\n$ sleep 30"));
    await l.activity(
      sessionId,
      (a) => String(a.content.body ?? "").startsWith("Got it"),
      "the follow-up's answer",
    );
    await waitFor(
      () =>
        l.fake
          .activitiesOf(sessionId)
          .some((a) => a.content.type === "action" && a.content.parameter === "sleep 30"),
      { what: "the follow-up's steps", timeoutMs: 60_000 },
    );
    expect((await l.runs()).filter((r) => r.trigger_url === issue.url)).toHaveLength(1);

    await l.deliver(l.fake.prompted(sessionId, l.ada, "", { signal: "stop" }));
    const cancelled = await waitForState(l.t, run!.run_id, ["CANCELLED"], 30_000);
    expect(cancelled.status_message?.message).toContain("Ada");
    const finals = await waitFor(
      () => {
        const responses = l.fake.activitiesOf(sessionId).filter((a) => a.content.type === "response");
        return responses.length === 2 ? responses : undefined;
      },
      { what: "the stopped run's final activity", timeoutMs: 30_000 },
    );
    expect(String(finals[1]!.content.body)).toContain("Cancelled by Ada");
  });

  it("the same delivery twice, or the same session under a new delivery id, starts one run", async () => {
    const issue = l.fake.issue(l.team, { title: "Once", description: "$ echo once" });
    const event = l.fake.created(issue, l.ada);
    const delivery = crypto.randomUUID();
    expect((await l.deliver(event, { delivery })).status).toBe(200);
    const again = await l.deliver(event, { delivery });
    expect(again.status).toBe(200);
    expect(JSON.parse(again.text)).toMatchObject({ duplicate: true });
    expect(JSON.parse((await l.deliver(event)).text)).toMatchObject({ duplicate: true });
    await l.t.dispatch.surfaces.get("linear")!.inbound!.idle();
    await waitFor(async () => (await l.runs()).some((r) => r.trigger_url === issue.url));
    expect((await l.runs()).filter((r) => r.trigger_url === issue.url)).toHaveLength(1);
    const thoughts = () =>
      l.fake.activitiesOf(event.agentSession.id).filter((a) => String(a.content.body).startsWith("On it"));
    await waitFor(() => thoughts().length === 1, { what: "the first thought" });
    expect(thoughts()).toHaveLength(1);
  });

  it("a bad signature or a stale timestamp is refused and nothing is stored", async () => {
    const issue = l.fake.issue(l.team, { title: "Forged", description: "$ echo forged" });
    const event = l.fake.created(issue, l.ada);
    const forged = await l.deliver(event, { secret: "not-the-secret" });
    expect(forged.status).toBe(401);
    expect(forged.text).toContain("Linear-Signature does not match");
    const stale = await l.deliver(event, { timestamp: Date.now() - 5 * 60_000 });
    expect(stale.status).toBe(401);
    expect(stale.text).toContain("webhookTimestamp");
    const unsigned = await fetch(`${l.t.url}/linear/webhooks`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(event),
    });
    expect(unsigned.status).toBe(401);
    await l.t.dispatch.surfaces.get("linear")!.inbound!.idle();
    expect((await l.runs()).filter((r) => r.trigger_url === issue.url)).toHaveLength(0);
    expect(l.fake.activitiesOf(event.agentSession.id)).toHaveLength(0);
    // The genuine delivery of the same event still starts its run: nothing was remembered of the forgeries.
    expect(JSON.parse((await l.deliver(event)).text)).toEqual({ ok: true });
  });

  it("someone outside the issue's team is answered with an error and starts nothing", async () => {
    const issue = l.fake.issue(l.team, { title: "Not yours", description: "$ echo no" });
    const event = l.fake.created(issue, l.mallory);
    await l.deliver(event);
    const error = await l.activity(event.agentSession.id, (a) => a.content.type === "error", "the refusal");
    expect(String(error.content.body)).toContain("Only members of the ENG team");
    expect((await l.runs()).filter((r) => r.trigger_url === issue.url)).toHaveLength(0);
  });

  it("no repository anywhere: an error activity says how to name one", async () => {
    const other = l.fake.team("OPS", [l.ada.id]);
    const issue = l.fake.issue(other, { title: "Where?", description: "$ echo where" });
    const event = l.fake.created(issue, l.ada);
    await l.deliver(event);
    const error = await l.activity(event.agentSession.id, (a) => a.content.type === "error", "the answer");
    expect(String(error.content.body)).toContain("in owner/repo");
    expect(String(error.content.body)).toContain("linear.teams.OPS.repository");
    expect((await l.runs()).filter((r) => r.trigger_url === issue.url)).toHaveLength(0);
  });

  it("`in owner/repo` in the mention, or a GitHub link on the issue, chooses the repository", async () => {
    l.remotes.create("acme/docs", { "README.md": "# docs\n" });
    const other = l.fake.team("WEB", [l.ada.id]);
    const mentioned = l.fake.issue(other, { title: "Docs", description: "$ echo docs" });
    await l.deliver(l.fake.created(mentioned, l.ada, { comment: "@dispatch please do this in acme/docs" }));
    const linked = l.fake.issue(other, {
      title: "Linked",
      description: "$ echo linked",
      links: ["https://github.com/acme/docs/pull/7"],
    });
    await l.deliver(l.fake.created(linked, l.ada));
    const repos = await waitFor(async () => {
      const runs = (await l.runs()).filter(
        (r) => r.trigger_url === mentioned.url || r.trigger_url === linked.url,
      );
      return runs.length === 2 ? runs.map((r) => r.agent_config.repository) : undefined;
    });
    expect(repos).toEqual(["acme/docs", "acme/docs"]);
  });

  it("Linear's RATELIMITED answer is retried after its reset, and the final activity is not lost", async () => {
    const issue = l.fake.issue(l.team, { title: "Busy Linear", description: "$ echo patient" });
    const event = l.fake.created(issue, l.ada);
    const ofSession = (v: Record<string, unknown>) =>
      (v.input as { agentSessionId?: string } | undefined)?.agentSessionId === event.agentSession.id;
    const creates = () =>
      l.fake.received.filter((r) => r.field === "agentActivityCreate" && ofSession(r.variables)).length;
    l.fake.rateLimit("agentActivityCreate", 3, 300, ofSession);
    await l.deliver(event);
    const final = await l.activity(
      event.agentSession.id,
      (a) => a.content.type === "response",
      "the final",
      60_000,
    );
    expect(String(final.content.body)).toContain("Succeeded");
    const activities = l.fake.activitiesOf(event.agentSession.id);
    expect(activities.some((a) => String(a.content.body).startsWith("On it"))).toBe(true);
    expect(activities.at(-1)).toBe(final);
    // Each activity was created once; the three refused attempts were tried again.
    expect(creates()).toBe(activities.length + 3);
    expect(new Set(activities.map((a) => a.id)).size).toBe(activities.length);
    expect(activities.filter((a) => a.content.type === "response")).toHaveLength(1);
  });

  it("a server error is retried, and an activity whose answer was lost is not posted twice", async () => {
    const issue = l.fake.issue(l.team, { title: "Flaky Linear", description: "$ echo flaky" });
    const event = l.fake.created(issue, l.ada);
    const ofSession = (v: Record<string, unknown>) =>
      (v.input as { agentSessionId?: string } | undefined)?.agentSessionId === event.agentSession.id;
    l.fake.fail("agentActivityCreate", 2, 500, ofSession);
    l.fake.loseAnswer("agentActivityCreate", 2, ofSession);
    await l.deliver(event);
    await l.activity(event.agentSession.id, (a) => a.content.type === "response", "the final", 60_000);
    // The thought's own retries may still be under way when a quick run's final is posted.
    await l.activity(
      event.agentSession.id,
      (a) => String(a.content.body).startsWith("On it"),
      "the thought",
      60_000,
    );
    const activities = l.fake.activitiesOf(event.agentSession.id);
    expect(activities.filter((a) => String(a.content.body).startsWith("On it"))).toHaveLength(1);
    expect(activities.filter((a) => a.content.type === "response")).toHaveLength(1);
    expect(new Set(activities.map((a) => a.id)).size).toBe(activities.length);
    // Two creates were refused and retried; the two whose answer was lost were found, not made again.
    const creates = l.fake.received.filter(
      (r) => r.field === "agentActivityCreate" && ofSession(r.variables),
    );
    expect(creates).toHaveLength(activities.length + 2);
    const lookedUp = l.fake.received.filter((r) => r.field === "agentActivity").map((r) => r.variables.id);
    expect(activities.filter((a) => lookedUp.includes(a.id)).length).toBeGreaterThanOrEqual(2);
  });
});
