import { randomUUID } from "node:crypto";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/dispatch.ts";
import {
  commentPayload,
  type GitHubDispatch,
  HANDLE,
  signGitHub,
  startGitHubDispatch,
  uniqueIssue,
  WEBHOOK_SECRET,
} from "./support.ts";

const MiB = 1024 * 1024;

interface StreamedAnswer {
  status: number;
  /** Bytes of the body the client had written when the answer arrived. */
  sentWhenAnswered: number;
}

/**
 * POSTs `body` in 64 KiB writes, each after the previous one drained, and stops writing once an answer
 * arrives: a server that answers before reading the body is answered while the client is still sending.
 */
function postStreaming(
  url: string,
  event: string,
  body: Buffer,
  opts: { chunked: boolean },
): Promise<StreamedAnswer> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answeredAt: number | undefined;
    const req = request(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": event,
        "x-github-delivery": randomUUID(),
        "x-hub-signature-256": signGitHub(WEBHOOK_SECRET, body.toString("utf8")),
        ...(opts.chunked ? { "transfer-encoding": "chunked" } : { "content-length": String(body.length) }),
      },
    });
    req.on("response", (res) => {
      answeredAt = sent;
      res.resume();
      res.on("end", () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, sentWhenAnswered: answeredAt! });
      });
    });
    // Once answered, the server may close the connection under the rest of the body.
    req.on("error", (err) => {
      if (answeredAt === undefined) reject(err);
    });
    const pump = () => {
      while (sent < body.length && answeredAt === undefined) {
        const chunk = body.subarray(sent, sent + 64 * 1024);
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once("drain", pump);
          return;
        }
      }
      if (answeredAt === undefined) req.end();
    };
    pump();
  });
}

/** A validly signed JSON body of about `size` bytes. */
function paddedPayload(payload: Record<string, unknown>, size: number): Buffer {
  return Buffer.from(JSON.stringify({ ...payload, padding: "x".repeat(size) }));
}

describe("POST /github/webhooks body limits", () => {
  let g: GitHubDispatch;
  beforeAll(async () => {
    g = await startGitHubDispatch();
    g.fake.permissions.set("octocat", "write");
  });
  afterAll(() => g.stop());

  it("refuses an event Dispatch does not handle beyond 1 MiB, before reading the body", async () => {
    const body = paddedPayload({ ref: "refs/heads/main" }, 24 * MiB);
    const answer = await postStreaming(`${g.t.url}/github/webhooks`, "push", body, { chunked: false });
    expect(answer.status).toBe(413);
    expect(answer.sentWhenAnswered).toBeLessThan(body.length);
  });

  it("refuses it too when the body comes chunked, without a Content-Length", async () => {
    const body = paddedPayload({ ref: "refs/heads/main" }, 24 * MiB);
    const answer = await postStreaming(`${g.t.url}/github/webhooks`, "push", body, { chunked: true });
    expect(answer.status).toBe(413);
    expect(answer.sentWhenAnswered).toBeLessThan(body.length);
  });

  it("still takes a signed issue_comment of several MiB (GitHub sends up to 25 MB)", async () => {
    const issue = uniqueIssue();
    const payload = commentPayload({ body: `@${HANDLE} $ echo large`, login: "octocat", issue });
    const body = paddedPayload(payload, 3 * MiB);
    const answer = await postStreaming(`${g.t.url}/github/webhooks`, "issue_comment", body, {
      chunked: false,
    });
    expect(answer.status).toBe(202);
    await waitFor(
      async () =>
        g.t.dispatch.store.findLatestBinding({
          platform: "github",
          workspace: g.repo,
          channel: String(issue),
          thread: null,
        }),
      { what: "the run of the large delivery" },
    );
  });

  it("bounds what unverified bodies hold together: past the budget, 503 until the holders are answered", async () => {
    // Three 24 MiB bodies (each under its cap) are sent but never finished: together they are over the
    // 64 MiB budget, so the server refuses one of them while it is still arriving.
    const holders = [0, 1, 2].map(() => startUnfinished(g.t.url, 24 * MiB));
    await waitFor(() => holders.some((h) => h.status() === 503), { what: "a body refused over the budget" });
    // Those within the budget are still being received, not refused.
    expect(holders.filter((h) => h.status() === undefined).length).toBeGreaterThanOrEqual(1);
    // The holders hang up; their bytes are given back and a delivery of the same size is taken again.
    for (const h of holders) h.abort();
    const issue = uniqueIssue();
    const payload = commentPayload({ body: `@${HANDLE} $ echo after`, login: "octocat", issue });
    await waitFor(
      async () =>
        (
          await postStreaming(
            `${g.t.url}/github/webhooks`,
            "issue_comment",
            paddedPayload(payload, 24 * MiB),
            {
              chunked: false,
            },
          )
        ).status === 202,
      { what: "the budget given back" },
    );
  });
});

/** Sends all but the last byte of an issue_comment body of `size` bytes; `status` once answered. */
function startUnfinished(url: string, size: number): { status: () => number | undefined; abort: () => void } {
  let status: number | undefined;
  const req = request(`${url}/github/webhooks`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "issue_comment",
      "x-github-delivery": randomUUID(),
      "x-hub-signature-256": `sha256=${"0".repeat(64)}`,
      "content-length": String(size),
    },
  });
  req.on("response", (res) => {
    status = res.statusCode;
    res.resume();
  });
  req.on("error", () => {});
  req.write(Buffer.alloc(size - 1, 0x20));
  return { status: () => status, abort: () => req.destroy() };
}
