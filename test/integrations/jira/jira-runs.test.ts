import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import type { Flavour } from "../../support/fake-jira.ts";
import { type JiraDispatch, REPO, startJiraDispatch } from "./support.ts";

/**
 * The Jira surface end to end, on Cloud (REST v3, ADF) and Data Center (REST v2, wiki markup): webhooks
 * shaped as Jira sends them into a real Dispatch, runs executed by the scripted agent and delivered as pull
 * requests on a loopback GitHub, and what the loopback Jira receives back: one comment per run edited to
 * its end, the final comment mentioning the requester, the pull request linked and the issue moved.
 */
describe.each<Flavour>(["cloud", "datacenter"])(
  "Jira %s: runs from issues",
  { timeout: 180_000 },
  (flavour) => {
    let j: JiraDispatch;
    beforeAll(async () => {
      j = await startJiraDispatch(flavour);
    });
    afterAll(() => j?.stop());

    it("a mention starts a run; its one comment is edited to the end with the PR; the issue is moved and linked", async () => {
      const issue = j.jira.issue("PROJ", {
        summary: "Add a greeting file",
        description: "We need a *greeting* file.\nSee {{hello.txt}}.",
      });
      const answer = await j.deliver(
        j.jira.commentCreated(issue, j.ada, "please do it\n$ echo hello > hello.txt"),
      );
      expect(answer.status).toBe(200);

      const [run] = await waitFor(async () => {
        const runs = await j.runsOf(issue);
        return runs.length ? runs : undefined;
      });
      expect(run!.source).toBe("JIRA");
      expect(run!.title).toBe(`${issue.key} Add a greeting file`);
      expect(run!.creator).toMatchObject({ type: "user", uid: `jira:${j.ada.id}`, display_name: "Ada" });
      expect(run!.agent_config.repository).toBe(REPO);
      expect(run!.metadata.fixes).toBe(issue.key);
      // The description, converted to Markdown, is quoted context; the comment is the request.
      expect(run!.prompt).toContain(`Jira issue ${issue.key}: Add a greeting file`);
      expect(run!.prompt).toContain("> We need a **greeting** file.");
      expect(run!.prompt).toContain("`hello.txt`");
      expect(run!.prompt).toContain("Request:\nplease do it");

      await waitForState(j.t, run!.run_id, ["SUCCEEDED"], 90_000);
      const final = await j.comment(
        issue,
        (text) => text.startsWith(`@${flavour === "cloud" ? "Ada" : j.ada.id}`) && text.includes("Succeeded"),
        "the final comment mentioning the requester",
      );
      const pr = j.github.pulls.find((p) => p.repo === REPO && p.title.includes(issue.key));
      expect(pr?.body).toContain(`Fixes ${issue.key}`);

      // One card comment, edited in place until it showed the pull request.
      const cards = j.jira
        .botComments(issue)
        .filter((c) =>
          c.properties.some((p) => (p.value as { marker?: string }).marker === `card:${run!.run_id}`),
        );
      expect(cards).toHaveLength(1);
      // Edited in place until it showed the end: the state and the pull request.
      await waitFor(
        () => {
          const text = j.jira.text(cards[0]!.body);
          return text.includes("Succeeded") && text.includes(`PR #${pr!.number} opened`);
        },
        { what: "the card to show the run's end and its PR" },
      );
      const card = j.jira.text(cards[0]!.body);
      expect(card).toContain("Succeeded");
      expect(card).toContain(pr!.html_url);
      expect(card).toContain(`${j.t.url}/runs/${run!.run_id}`);
      expect(cards[0]!.versions.length).toBeGreaterThan(1);
      // Two comments in all: the card and the final, which mentions the requester.
      expect(j.jira.botComments(issue)).toHaveLength(2);
      if (flavour === "cloud") {
        expect(JSON.stringify(final.body)).toContain(`"type":"mention","attrs":{"id":"${j.ada.id}"`);
        expect((cards[0]!.body as { type: string }).type).toBe("doc");
      } else {
        expect(String(final.body)).toContain(`[~${j.ada.id}]`);
        expect(typeof cards[0]!.body).toBe("string");
      }
      // Moved to In Progress when the run started, to In Review when its pull request opened; the PR linked.
      expect(issue.transitions).toEqual(["In Progress", "In Review"]);
      expect(issue.remoteLinks).toContainEqual(expect.objectContaining({ url: pr!.html_url }));
    });

    it("the label and an assignment to the service account start a run from the issue, once each", async () => {
      const labelled = j.jira.issue("PROJ", {
        summary: "Tidy the docs",
        description: "The docs are untidy.",
      });
      const event = j.jira.labelAdded(labelled, j.ada, "dispatch");
      const identifier = crypto.randomUUID();
      expect((await j.deliver(event, { identifier })).status).toBe(200);
      expect(JSON.parse((await j.deliver(event, { identifier })).text)).toMatchObject({ duplicate: true });
      // Another label is not a trigger.
      expect(JSON.parse((await j.deliver(j.jira.labelAdded(labelled, j.ada, "docs"))).text)).toMatchObject({
        ignored: expect.stringContaining("neither"),
      });
      const [run] = await waitFor(async () => {
        const runs = await j.runsOf(labelled);
        return runs.length ? runs : undefined;
      });
      expect(run!.prompt).toContain('it was labelled "dispatch"');
      expect(run!.prompt).toContain("> The docs are untidy.");
      expect(run!.creator.uid).toBe(`jira:${j.ada.id}`);
      await waitForState(j.t, run!.run_id, ["SUCCEEDED"], 90_000);
      await j.comment(
        labelled,
        (text) => text.includes("Succeeded") && text.includes("No changes"),
        "the card",
      );

      const assigned = j.jira.issue("PROJ", { summary: "Assigned work" });
      await j.deliver(j.jira.assigned(assigned, j.ada, j.jira.bot));
      const [byAssignment] = await waitFor(async () => {
        const runs = await j.runsOf(assigned);
        return runs.length ? runs : undefined;
      });
      expect(byAssignment!.prompt).toContain("it was assigned to Dispatch");
      await j.settle();
      expect(await j.runsOf(labelled)).toHaveLength(1);
      expect(await j.runsOf(assigned)).toHaveLength(1);
    });

    it("a later mention is a follow-up on the issue's run; `status` answers; `cancel` stops it", async () => {
      const issue = j.jira.issue("PROJ", { summary: "Two steps" });
      await j.deliver(j.jira.commentCreated(issue, j.ada, "$ echo first"));
      const [run] = await waitFor(async () => {
        const runs = await j.runsOf(issue);
        return runs.length ? runs : undefined;
      });
      await waitForState(j.t, run!.run_id, ["SUCCEEDED"], 90_000);

      await j.deliver(j.jira.commentCreated(issue, j.ada, "$ echo second\n$ sleep 30"));
      await j.comment(issue, (text) => text.includes("got it"), "the follow-up's answer");
      await waitFor(
        async () => {
          const res = await j.t.api("GET", `/api/v1/agent/runs/${run!.run_id}/events?limit=500`);
          return (res.body.events ?? []).some(
            (e: { type: string; data: { command?: string } }) =>
              e.type === "tool_call" && e.data.command === "sleep 30",
          );
        },
        { what: "the follow-up to run", timeoutMs: 60_000 },
      );
      expect(await j.runsOf(issue)).toHaveLength(1);

      await j.deliver(j.jira.commentCreated(issue, j.ada, "status"));
      await j.comment(
        issue,
        (text) => text.includes("In progress") && !text.includes("Mention me to steer"),
        "the status",
      );

      await j.deliver(j.jira.commentCreated(issue, j.ada, "cancel"));
      const cancelled = await waitForState(j.t, run!.run_id, ["CANCELLED"], 30_000);
      expect(cancelled.status_message?.message).toContain("Ada");
      await j.comment(
        issue,
        (text) => text.startsWith("@") && text.includes("Cancelled by Ada"),
        "the final",
      );
      const card = j.jira
        .botComments(issue)
        .find((c) =>
          c.properties.some((p) => (p.value as { marker?: string }).marker === `card:${run!.run_id}`),
        );
      await waitFor(() => j.jira.text(card!.body).includes("Cancelled by Ada"), {
        what: "the card to say so",
      });
    });
  },
);
