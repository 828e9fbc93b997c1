import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GIF_1x1, PNG_1x1 } from "../../attachments/images.ts";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { commentPayload, type GitHubDispatch, HANDLE, startGitHubDispatch, uniqueIssue } from "./support.ts";

// Images in a comment (and, for a new run, in the issue's body) become the run's attachments: fetched
// only from GitHub's attachment links (here the loopback fake GitHub, the configured API host) with the
// App's installation token, through the real signed /github/webhooks path.

const FIVE_MB = 5 * 1024 * 1024;

async function runOnIssue(g: GitHubDispatch, issue: number) {
  const binding = await waitFor(
    () =>
      g.t.dispatch.store.findLatestBinding({
        platform: "github",
        workspace: g.repo,
        channel: String(issue),
        thread: null,
      }),
    { what: `a run bound to #${issue}` },
  );
  return (await g.runs()).find((r) => r.run_id === binding.runId)!;
}

async function attachmentsOf(g: GitHubDispatch, runId: string) {
  const res = await g.t.api("GET", `/api/v1/agent/runs/${runId}/handoff/attachments`);
  expect(res.status).toBe(200);
  return res.body.attachments as Array<Record<string, string>>;
}

async function bytesOf(url: string): Promise<Buffer> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

function notices(g: GitHubDispatch, issue: number) {
  return g.fake.botComments(g.repo, issue).filter((c) => c.body.startsWith("<!-- dispatch:notice -->"));
}

describe("GitHub comment images as run attachments", () => {
  let g: GitHubDispatch;
  /** A host that is not GitHub's: must never be asked for anything. */
  let elsewhere: Server;
  const elsewhereHits: string[] = [];
  let elsewhereUrl = "";

  beforeAll(async () => {
    g = await startGitHubDispatch({ auth: "app" });
    g.fake.permissions.set("octocat", "write");
    elsewhere = createServer((req, res) => {
      elsewhereHits.push(`${req.method} ${req.url} ${req.headers.authorization ?? ""}`);
      res.writeHead(200, { "content-type": "image/png" }).end(PNG_1x1);
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve));
    elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await g?.stop();
    await new Promise<void>((resolve) => elsewhere.close(() => resolve()));
  });

  it("the comment's and the issue body's images are attached; another host is never fetched", async () => {
    const issue = uniqueIssue();
    const shot = g.fake.uploadAttachment(PNG_1x1);
    const fromIssue = g.fake.uploadAttachment(GIF_1x1, "image/gif");
    const inCode = g.fake.uploadAttachment(PNG_1x1);
    await g.comment({
      issue,
      login: "octocat",
      issueBody: `The page breaks:\n\n<img width="300" alt="issue shot" src="${fromIssue}">`,
      body: [
        `@${HANDLE} $ echo with images`,
        `![screenshot](${shot})`,
        `![tracker](${elsewhereUrl}/pixel.png)`,
        "```",
        `![not an image, code](${inCode})`,
        "```",
      ].join("\n"),
    });
    const run = await runOnIssue(g, issue);
    const attachments = await attachmentsOf(g, run.run_id);
    expect(attachments.map((a) => [a.filename, a.mime_type])).toEqual([
      ["screenshot.png", "image/png"],
      ["issue shot.gif", "image/gif"],
    ]);
    expect(await bytesOf(attachments[0]!.download_url!)).toEqual(PNG_1x1);
    expect(await bytesOf(attachments[1]!.download_url!)).toEqual(GIF_1x1);

    // Fetched with the App's installation token; the image in code was not fetched at all.
    const fetched = g.fake.calls.filter((c) => c.path.startsWith("/user-attachments/"));
    expect(fetched.map((c) => c.path).sort()).toEqual(
      [new URL(shot).pathname, new URL(fromIssue).pathname].sort(),
    );
    for (const call of fetched) expect(call.auth).toMatch(/^Bearer ghs_/);
    expect(elsewhereHits).toEqual([]);

    const notice = await waitFor(() => notices(g, issue)[0], { what: "the note on images not attached" });
    expect(notice.body).toContain(
      "`tracker` is not an image uploaded to GitHub, so it was not downloaded or attached.",
    );
    expect(notice.body).toContain("@octocat");
  });

  it("a follow-up comment's image is the follow-up's attachment", async () => {
    const issue = uniqueIssue();
    await g.comment({ issue, login: "octocat", body: `@${HANDLE} $ echo first` });
    const run = await runOnIssue(g, issue);
    await waitForState(g.t, run.run_id, ["SUCCEEDED"]);
    const diagram = g.fake.uploadAttachment(GIF_1x1, "image/gif");
    await g.comment({ issue, login: "octocat", body: `@${HANDLE} and look at this <img src="${diagram}">` });
    const attachments = await waitFor(
      async () => {
        const list = await attachmentsOf(g, run.run_id);
        return list.length > 0 ? list : undefined;
      },
      { what: "the follow-up's attachment" },
    );
    expect(attachments).toHaveLength(1);
    expect(attachments[0]!.mime_type).toBe("image/gif");
    expect(attachments[0]!.followup_id).toEqual(expect.any(String));
    expect(await bytesOf(attachments[0]!.download_url!)).toEqual(GIF_1x1);
  });

  it("refuses politely in one reply, naming each image: too large, not an image, more than five", async () => {
    const issue = uniqueIssue();
    const huge = g.fake.uploadAttachment(Buffer.concat([PNG_1x1, Buffer.alloc(FIVE_MB)]));
    const text = g.fake.uploadAttachment(Buffer.from("<html>not a picture</html>"), "image/png");
    const shots = Array.from({ length: 6 }, () => g.fake.uploadAttachment(PNG_1x1));
    await g.comment({
      issue,
      login: "octocat",
      body: [
        `@${HANDLE} $ echo many images`,
        `![huge](${huge}) ![text](${text})`,
        ...shots.map((url, i) => `![shot ${i + 1}](${url})`),
      ].join("\n"),
    });
    const run = await runOnIssue(g, issue);
    const attachments = await attachmentsOf(g, run.run_id);
    expect(attachments.map((a) => a.filename)).toEqual([1, 2, 3, 4, 5].map((i) => `shot ${i}.png`));

    const notice = await waitFor(() => notices(g, issue)[0], { what: "the note on images not attached" });
    expect(notice.body).toContain("`huge` is over 5 MB, so it was not attached.");
    expect(notice.body).toContain("`text` is not an image, so it was not attached");
    expect(notice.body).toContain(
      "Only 5 images can be attached to one message, so `shot 6` was not attached.",
    );
    // Past the count, nothing is downloaded.
    expect(g.fake.calls.some((c) => c.path === new URL(shots[5]!).pathname)).toBe(false);
  });

  it("a redelivered comment makes one run with its images once and one note", async () => {
    const issue = uniqueIssue();
    const shot = g.fake.uploadAttachment(PNG_1x1);
    const payload = commentPayload({
      issue,
      login: "octocat",
      body: `@${HANDLE} $ echo once ![shot](${shot}) ![elsewhere](${elsewhereUrl}/a.png)`,
    });
    await g.deliver(payload, { delivery: "22222222-aaaa-bbbb-cccc-000000000001" });
    await g.deliver(payload, { delivery: "22222222-aaaa-bbbb-cccc-000000000002" });
    const run = await runOnIssue(g, issue);
    await g.settle();
    expect((await g.runs()).filter((r) => r.trigger_url === payload.comment.html_url)).toHaveLength(1);
    expect((await attachmentsOf(g, run.run_id)).map((a) => a.filename)).toEqual(["shot.png"]);
    expect(notices(g, issue)).toHaveLength(1);
    expect(elsewhereHits).toEqual([]);
  });
});
