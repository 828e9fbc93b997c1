import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import type { Flavour } from "../../support/fake-jira.ts";
import { type JiraDispatch, SETTINGS, startJiraDispatch } from "./support.ts";

/**
 * Who and what the Jira surface accepts, on Cloud and Data Center: forged webhooks are refused before
 * anything is stored, redeliveries start nothing twice, whoever may not browse the project (or asks in a
 * project Dispatch does not serve) gets a reply and no run, and Jira's 429 is waited out as Retry-After says.
 */
describe.each<Flavour>(["cloud", "datacenter"])(
  "Jira %s: webhooks and refusals",
  { timeout: 120_000 },
  (flavour) => {
    let j: JiraDispatch;
    beforeAll(async () => {
      j = await startJiraDispatch(flavour, { settings: `${SETTINGS}  allowed_projects: [PROJ, OPS]\n` });
      j.jira.project("LAB", [j.ada]);
    });
    afterAll(() => j?.stop());

    it("an unsigned or wrongly signed webhook, or a wrong URL secret, is refused and stores nothing", async () => {
      const issue = j.jira.issue("PROJ", { summary: "Forged" });
      const event = j.jira.commentCreated(issue, j.ada, "$ echo forged");
      const forged = await j.deliver(event, { secret: "not-the-secret-at-all" });
      expect(forged.status).toBe(401);
      expect(forged.text).toContain(
        flavour === "cloud" ? "X-Hub-Signature does not match" : "secret is missing or wrong",
      );
      const unsigned = await j.deliver(event, { unsigned: true });
      expect(unsigned.status).toBe(401);
      await j.settle();
      expect(await j.runsOf(issue)).toHaveLength(0);
      expect(j.jira.botComments(issue)).toHaveLength(0);
      // The genuine delivery of the same event still starts its run: nothing was remembered of the forgeries.
      expect(JSON.parse((await j.deliver(event)).text)).toEqual({ ok: true });
      await waitFor(async () => (await j.runsOf(issue)).length === 1, { what: "the genuine delivery's run" });
    });

    it("a redelivered webhook, or the same comment under another identifier, starts one run", async () => {
      const issue = j.jira.issue("PROJ", { summary: "Once" });
      const event = j.jira.commentCreated(issue, j.ada, "$ echo once");
      const identifier = crypto.randomUUID();
      expect((await j.deliver(event, { identifier })).status).toBe(200);
      expect(JSON.parse((await j.deliver(event, { identifier })).text)).toMatchObject({ duplicate: true });
      expect(JSON.parse((await j.deliver(event)).text)).toMatchObject({ duplicate: true });
      await j.settle();
      await waitFor(async () => (await j.runsOf(issue)).length === 1, { what: "the run" });
      await j.comment(issue, (text) => text.includes("Succeeded"), "the run's end");
      await j.settle();
      expect(await j.runsOf(issue)).toHaveLength(1);
      // Dispatch's own comments (its card, its final) are never triggers.
      const own = j.jira.commentCreated(issue, j.jira.bot, "Dispatch says hello");
      expect(JSON.parse((await j.deliver(own)).text)).toMatchObject({ ignored: "own comment" });
    });

    it("someone who cannot browse the project is refused with a reply, and starts nothing", async () => {
      const issue = j.jira.issue("PROJ", { summary: "Not yours" });
      await j.deliver(j.jira.commentCreated(issue, j.mallory, "$ echo no"));
      const reply = await j.comment(
        issue,
        (text) => text.includes("Only people who can browse project PROJ"),
        "the refusal",
      );
      expect(j.jira.text(reply.body)).toContain(flavour === "cloud" ? "@Mallory" : `@${j.mallory.id}`);
      await j.deliver(j.jira.labelAdded(issue, j.mallory, "dispatch"));
      await j.settle();
      expect(await j.runsOf(issue)).toHaveLength(0);
      expect(
        j.jira.botComments(issue).filter((c) => j.jira.text(c.body).includes("Only people")),
      ).toHaveLength(2);
    });

    it("a project outside jira.allowed_projects, or one without a repository, is answered with what to do", async () => {
      const lab = j.jira.issue("LAB", { summary: "Elsewhere" });
      await j.deliver(j.jira.commentCreated(lab, j.ada, "$ echo lab"));
      await j.comment(lab, (text) => text.includes("jira.allowed_projects"), "the refusal");
      const ops = j.jira.issue("OPS", { summary: "Where?" });
      await j.deliver(j.jira.commentCreated(ops, j.ada, "$ echo where"));
      const reply = await j.comment(ops, (text) => text.includes("in owner/repo"), "the answer");
      expect(j.jira.text(reply.body)).toContain("jira.projects.OPS.repository");
      await j.settle();
      expect([...(await j.runsOf(lab)), ...(await j.runsOf(ops))]).toHaveLength(0);
    });

    it("a pull request in the issue's development panel, or `in owner/repo` in the comment, chooses the repository", async () => {
      j.remotes.create("acme/docs", { "README.md": "# docs\n" });
      const panel = j.jira.issue("OPS", {
        summary: "Panel",
        development: ["https://github.com/acme/docs/pull/7"],
      });
      await j.deliver(j.jira.commentCreated(panel, j.ada, "$ echo panel"));
      const named = j.jira.issue("OPS", { summary: "Named" });
      await j.deliver(j.jira.commentCreated(named, j.ada, "please do this in acme/docs"));
      const repos = await waitFor(async () => {
        const runs = [...(await j.runsOf(panel)), ...(await j.runsOf(named))];
        return runs.length === 2 ? runs.map((r) => r.agent_config.repository) : undefined;
      });
      expect(repos).toEqual(["acme/docs", "acme/docs"]);
    });

    it("Jira's 429 is waited out as its Retry-After says, reading the issue and posting the comment", async () => {
      const issue = j.jira.issue("PROJ", { summary: "Busy Jira" });
      const read = new RegExp(`^issue/${issue.id}$`);
      const post = new RegExp(`^issue/${issue.id}/comment$`);
      j.jira.rateLimit("GET", read, 1, 1);
      j.jira.rateLimit("POST", post, 2, 1);
      await j.deliver(j.jira.commentCreated(issue, j.ada, "$ echo patient"));
      await j.comment(issue, (text) => text.includes("Succeeded"), "the card at the run's end", 60_000);
      const tries = (method: string, path: RegExp) =>
        j.jira.requests.filter((r) => r.method === method && path.test(r.path));
      // Each try after a 429 came once its Retry-After (1 s) had passed, never before.
      for (const [method, path] of [
        ["GET", read],
        ["POST", post],
      ] as const) {
        const all = tries(method, path);
        const limited = all.filter((r) => r.status === 429);
        expect(limited.length).toBeGreaterThan(0);
        for (const refused of limited) {
          const next = all.find((r) => r.at > refused.at && r !== refused);
          expect(next).toBeDefined();
          expect(next!.at - refused.at).toBeGreaterThanOrEqual(1_000);
        }
      }
      // The card was posted once, and the final once: nothing twice after the refusals.
      await j.comment(issue, (text) => text.startsWith("@"), "the final");
      expect(j.jira.botComments(issue)).toHaveLength(2);
    });

    it("a comment whose answer was lost is found again by its property, not posted twice", async () => {
      const issue = j.jira.issue("PROJ", { summary: "Flaky Jira" });
      j.jira.loseAnswer("POST", new RegExp(`^issue/${issue.id}/comment$`), 2);
      j.jira.fail("PUT", new RegExp(`^issue/${issue.id}/comment/\\d+$`), 1, 503);
      await j.deliver(j.jira.commentCreated(issue, j.ada, "$ echo flaky"));
      await j.comment(
        issue,
        (text) => text.startsWith("@") && text.includes("Succeeded"),
        "the final",
        60_000,
      );
      const [run] = await j.runsOf(issue);
      const card = await j.comment(
        issue,
        (text) => text.includes("Succeeded") && !text.startsWith("@"),
        "the card",
      );
      expect(j.jira.botComments(issue)).toHaveLength(2);
      expect(card.properties).toContainEqual({
        key: "dispatch.message",
        value: { marker: `card:${run!.run_id}` },
      });
      // Both lost posts were looked for (the issue's comments with their properties) before anything was sent again.
      expect(
        j.jira.requests.filter((r) => r.method === "GET" && r.path === `issue/${issue.id}/comment`).length,
      ).toBeGreaterThanOrEqual(2);
    });
  },
);

describe("Jira: the steering policy", { timeout: 120_000 }, () => {
  let j: JiraDispatch;
  beforeAll(async () => {
    j = await startJiraDispatch("datacenter", { settings: `${SETTINGS}  cancel: requester\n` });
  });
  afterAll(() => j?.stop());

  it("under `jira.cancel: requester` someone else who may browse the project is told who may cancel", async () => {
    const bob = j.jira.user("Bob");
    j.jira.projects.get("PROJ")!.browse.add(bob.id);
    const issue = j.jira.issue("PROJ", { summary: "Mine" });
    await j.deliver(j.jira.commentCreated(issue, j.ada, "$ sleep 30"));
    const [run] = await waitFor(async () => {
      const runs = await j.runsOf(issue);
      return runs.length ? runs : undefined;
    });
    await j.deliver(j.jira.commentCreated(issue, bob, "cancel"));
    const refusal = await j.comment(issue, (text) => text.includes("who started this run"), "the refusal");
    expect(j.jira.text(refusal.body)).toContain(`only Jira user ${j.ada.id}`);
    expect((await j.t.api("GET", `/api/v1/agent/runs/${run!.run_id}`)).body.state).not.toBe("CANCELLED");
    await j.deliver(j.jira.commentCreated(issue, j.ada, "cancel"));
    await waitForState(j.t, run!.run_id, ["CANCELLED"], 30_000);
  });
});
