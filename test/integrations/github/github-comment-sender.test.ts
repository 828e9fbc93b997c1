import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitHubClients } from "../../../src/integrations/github/github-clients.ts";
import {
  classifyGitHubError,
  GitHubCommentSender,
} from "../../../src/integrations/github/github-comment-sender.ts";
import { trackingMarker } from "../../../src/integrations/github/tracking-comment.ts";
import { createLogger } from "../../../src/log.ts";
import type { OutboxRow } from "../../../src/store/store.ts";
import { FakeGitHub } from "../../support/fake-github.ts";

function row(over: Partial<OutboxRow>): OutboxRow {
  return {
    id: 1,
    runId: "run-1",
    dedupeKey: "card:run-1:1",
    kind: "card",
    stream: "card:run-1",
    target: "github:acme",
    threadKey: "github:acme/widgets:5",
    payload: { repo: "acme/widgets", issue_number: 5, body: `${trackingMarker("run-1")}\nQueued` },
    state: "sending",
    attempts: 0,
    notBefore: new Date().toISOString(),
    lastError: null,
    createdAt: new Date().toISOString(),
    ...over,
  };
}

describe("GitHubCommentSender", () => {
  let fake: FakeGitHub;
  let sender: GitHubCommentSender;
  beforeAll(async () => {
    fake = await new FakeGitHub().start();
    const clients = new GitHubClients({
      auth: { kind: "token", token: fake.token },
      apiUrl: fake.url,
      log: createLogger("silent"),
      throttle: false,
    });
    sender = new GitHubCommentSender(clients, { getCardState: async () => undefined });
  });
  afterAll(() => fake.stop());

  it("a retried card post that had succeeded finds its comment by the marker instead of posting again", async () => {
    const first = await sender.send(row({}));
    expect(fake.botComments("acme/widgets", 5)).toHaveLength(1);
    // The process died before recording the comment id; the row comes back with one attempt counted.
    const again = await sender.send(
      row({ attempts: 1, payload: { ...row({}).payload, body: `${trackingMarker("run-1")}\nIn progress` } }),
    );
    expect(again.cardRef).toBe(first.cardRef);
    const comments = fake.botComments("acme/widgets", 5);
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain("In progress");
  });

  it("does not retry inside the call: a 502 is one request, classified retryable for the outbox", async () => {
    fake.failNext("POST /repos/*/*/issues/*/comments", { status: 502 });
    const before = fake.calls.length;
    await expect(sender.send(row({ id: 2, runId: "run-2", kind: "reply" }))).rejects.toMatchObject({
      kind: "retryable",
    });
    expect(fake.calls.length - before).toBe(1);
  });
});

describe("classifyGitHubError", () => {
  const err = (status: number, headers: Record<string, string> = {}, message = "x") =>
    Object.assign(new Error(message), { status, response: { headers } });

  it("rate limits: retry-after, x-ratelimit-reset, secondary without retry-after", () => {
    expect(classifyGitHubError(err(403, { "retry-after": "30" }))).toMatchObject({
      kind: "rate_limited",
      retryAfterMs: 30_000,
    });
    expect(classifyGitHubError(err(429, { "retry-after": "2" }))).toMatchObject({ retryAfterMs: 2000 });
    const now = 1_700_000_000_000;
    expect(
      classifyGitHubError(
        err(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(now / 1000 + 60) }),
        now,
      ),
    ).toMatchObject({ kind: "rate_limited", retryAfterMs: 61_000 });
    expect(classifyGitHubError(err(403, {}, "You have exceeded a secondary rate limit"))).toMatchObject({
      kind: "rate_limited",
      retryAfterMs: 60_000,
    });
  });

  it("other failures", () => {
    expect(classifyGitHubError(err(403, {}, "Resource not accessible by integration")).kind).toBe(
      "permanent",
    );
    expect(classifyGitHubError(err(404)).kind).toBe("permanent");
    expect(classifyGitHubError(err(422)).kind).toBe("permanent");
    expect(classifyGitHubError(err(502)).kind).toBe("retryable");
    expect(classifyGitHubError(err(401)).kind).toBe("retryable");
    expect(classifyGitHubError(new Error("socket hang up")).kind).toBe("retryable");
  });
});
