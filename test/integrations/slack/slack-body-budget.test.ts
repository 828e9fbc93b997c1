import { type ClientRequest, request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_UNVERIFIED_BODY_BUDGET_BYTES } from "../../../src/integrations/unverified-body-budget.ts";
import { waitFor } from "../../support/dispatch.ts";
import { type SlackDispatch, startSlackDispatch } from "./support.ts";

const MiB = 1024 * 1024;

/**
 * What unverified Slack bodies may hold together (src/integrations/unverified-body-budget.ts): a body
 * that declares its length is counted in full as soon as its headers arrive, so once the declared bytes
 * of unanswered requests fill the budget, the next request is refused before it sends a byte of its
 * body; the bytes are given back when those requests end.
 */
describe("POST /slack/events: the budget of unverified bodies", () => {
  let s: SlackDispatch;
  beforeAll(async () => {
    s = await startSlackDispatch();
  });
  afterAll(() => s.stop());

  /** Sends the headers of a 1 MiB form body and none of the body; the status once answered. */
  function unfinished(): { req: ClientRequest; status: () => number | undefined } {
    let status: number | undefined;
    const req = request(`${s.t.url}/slack/events`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "content-length": String(MiB),
        "x-slack-request-timestamp": String(Math.floor(Date.now() / 1000)),
        "x-slack-signature": `v0=${"0".repeat(64)}`,
      },
    });
    req.on("response", (res) => {
      status = res.statusCode;
      res.resume();
    });
    req.on("error", () => {});
    req.flushHeaders();
    return { req, status: () => status };
  }

  it("refuses a request once declared bodies fill it, and takes deliveries again once they end", async () => {
    const fill = DEFAULT_UNVERIFIED_BODY_BUDGET_BYTES / MiB;
    const holders = Array.from({ length: fill }, () => unfinished());
    // Every holder's headers have arrived once a later request is refused: requests are taken in order
    // per connection only, so wait for the refusal rather than assume which one gets it.
    const extra: Array<ReturnType<typeof unfinished>> = [];
    await waitFor(
      () => {
        extra.push(unfinished());
        return [...holders, ...extra].some((h) => h.status() === 503);
      },
      { what: "a request refused over the budget", intervalMs: 200 },
    );
    const all = [...holders, ...extra];
    // The refused one was answered at once; the ones within the budget still wait for their bodies.
    expect(all.filter((h) => h.status() === 503).length).toBeGreaterThanOrEqual(1);
    expect(all.filter((h) => h.status() === undefined).length).toBeGreaterThanOrEqual(fill - 1);

    for (const h of all) h.req.destroy();
    await waitFor(
      async () =>
        (await s.command({ text: "help", trigger_id: `t.${Date.now()}` }, {})).status === 200 || undefined,
      { what: "a command acknowledged once the holders hung up" },
    );
  });
});
